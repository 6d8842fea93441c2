//! `--on-threshold` and `--on-end`: what tr-lat does when the kernel stops
//! tracing at a threshold, and at the end, in rtla 7.2's grammar
//! (tools/tracing/rtla/src/actions.c).

use crate::applets::cli::{self, Error};
use trbox::sys::Tracefs;

/// An action of --on-threshold / --on-end, in rtla 7.2's grammar
/// (tools/tracing/rtla/src/actions.c): the trace file's text into FILE
/// (default MODE_trace.txt), a signal, a shell command (waited for), or
/// `continue`: tracing on again, measuring goes on.
pub(super) enum Action {
    Trace(Option<String>),
    Signal(i32, u32),
    Shell(String),
    Continue,
}

pub(super) fn action(v: &str) -> Result<Action, String> {
    let (kind, rest) = v.split_once(',').unwrap_or((v, ""));
    let arg = |k: &str| rest.split(',').find_map(|p| p.strip_prefix(k)?.strip_prefix('='));
    let num = |k: &str| arg(k).and_then(|n| n.parse().ok());
    Ok(match kind {
        "trace" => Action::Trace(arg("file").map(String::from)),
        "signal" => match (num("num"), arg("pid")) {
            (Some(n), Some("parent")) => Action::Signal(n, std::os::unix::process::parent_id()),
            (Some(n), Some(_)) if num("pid").is_some() => Action::Signal(n, num("pid").unwrap_or_default() as u32),
            _ => return Err("signal,num=N,pid=PID|parent".into()),
        },
        "shell" if rest.starts_with("command=") => Action::Shell(rest[8..].into()),
        "continue" if rest.is_empty() => Action::Continue,
        _ => return Err("trace[,file=F], signal,num=N,pid=P, shell,command=CMD or continue".into()),
    })
}

/// Run `acts` in order (as rtla does); whether one is `continue`. A
/// failed action is a note, the others still run.
pub(super) fn run_actions(t: &Tracefs, acts: &[Action], mode: &str) -> bool {
    let mut go_on = false;
    for act in acts {
        let r = match act {
            Action::Trace(f) => {
                let f = f.clone().unwrap_or_else(|| format!("{mode}_trace.txt"));
                t.read("trace").map_err(Error::from).and_then(|x| {
                    std::fs::write(&f, x).map_err(|e| Error::from(trbox::sys::Error::io(std::path::Path::new(&f), e)))
                })
            }
            // SAFETY: a plain system call.
            Action::Signal(n, pid) => match unsafe { libc::kill(*pid as i32, *n) } {
                0 => Ok(()),
                _ => Err(Error::runtime(format!("signal {n} to {pid}: {}", std::io::Error::last_os_error()))),
            },
            Action::Shell(c) => trbox::sys::child::Paused::spawn("sh", &["-c".into(), c.clone()])
                .and_then(|mut p| p.release().map(|_| p.wait()))
                .map(drop)
                .map_err(|e| Error::runtime(format!("shell,command={c}: {e}"))),
            Action::Continue => {
                go_on = true;
                Ok(())
            }
        };
        if let Err(e) = r {
            cli::note(&e);
        }
    }
    go_on
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_as_rtla_writes_them() {
        assert!(matches!(action("trace"), Ok(Action::Trace(None))));
        assert!(matches!(action("trace,file=/tmp/t.txt"), Ok(Action::Trace(Some(f))) if f == "/tmp/t.txt"));
        assert!(matches!(action("signal,num=10,pid=42"), Ok(Action::Signal(10, 42))));
        assert!(
            matches!(action("signal,num=2,pid=parent"), Ok(Action::Signal(2, p)) if p == std::os::unix::process::parent_id())
        );
        assert!(matches!(action("shell,command=echo a,b"), Ok(Action::Shell(c)) if c == "echo a,b"));
        assert!(matches!(action("continue"), Ok(Action::Continue)));
        for bad in ["", "signal,num=x,pid=1", "signal,pid=1", "shell", "continue,x", "stop"] {
            assert!(action(bad).is_err(), "{bad}");
        }
    }
}
