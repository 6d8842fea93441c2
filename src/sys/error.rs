//! Errors of the I/O layer, phrased for a person at a serial console: what
//! failed, why, and (through [`Error::hint`]) what to do about it.

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// What went wrong in the I/O layer.
#[derive(Debug)]
pub enum Error {
    /// No tracefs or debugfs is mounted and we may not mount one.
    NotMounted,
    /// Mounting tracefs/debugfs failed.
    Mount {
        /// `tracefs` or `debugfs`.
        fstype: &'static str,
        /// Where it was to be mounted.
        target: PathBuf,
        /// Why mount(2) failed.
        err: io::Error,
    },
    /// A directory given with `-T` does not exist.
    NoSuchDir(PathBuf),
    /// A directory exists but has no `events/`: not a tracing root.
    NotTracefs(PathBuf),
    /// `-B NAME` names an instance that does not exist (read-only applets do
    /// not create one).
    NoInstance {
        /// The name given.
        name: String,
        /// The instances there are.
        existing: Vec<String>,
    },
    /// Any other I/O failure on a tracefs path.
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        err: io::Error,
    },
    /// The kernel refused a value (filter, trigger, probe…); `kernel` is its
    /// error_log entry when it wrote one.
    Rejected {
        /// The file written.
        path: PathBuf,
        /// The value written.
        value: String,
        /// The write's error.
        err: io::Error,
        /// The kernel's error_log entry, when it wrote one.
        kernel: Option<String>,
    },
    /// Another trbox run holds the lock on this tracing directory; `holder`
    /// is "pid N (APPLET)" when /proc/locks shows it, else empty.
    Busy {
        /// "pid N (APPLET)", or empty when unknown.
        holder: String,
        /// The tracing directory.
        path: PathBuf,
    },
    /// An output file (`tr-cat -o`) that is there already and is not ours
    /// to write over: a symlink, another user's file, a hard link…
    NotOverwritten {
        /// The output file.
        path: PathBuf,
        /// What it is instead of ours.
        why: String,
    },
    /// A tracefs file whose text the core could not parse.
    Format {
        /// The file.
        path: PathBuf,
        /// The line (1-based; 0: not known).
        line: u32,
        /// What could not be parsed.
        what: String,
    },
    /// `current_tracer` cannot be set to a tracer this kernel lacks.
    NoTracer {
        /// The tracer asked for.
        name: String,
        /// The tracers this kernel has.
        available: Vec<String>,
    },
    /// A trigger whose command this kernel lacks (`hist` without
    /// CONFIG_HIST_TRIGGERS): the event's `trigger` file lists the ones it
    /// has.
    NoTrigger {
        /// The trigger's command.
        name: String,
        /// The commands this kernel has, as the file lists them.
        available: String,
    },
    /// A CPU asked for (`--cpus`) that a recording or a tracefs tree has
    /// no buffer for.
    NoCpu {
        /// The trace.dat or the tracefs tree.
        path: PathBuf,
        /// The CPU asked for.
        cpu: u32,
        /// The CPUs it has.
        existing: Vec<u32>,
    },
    /// EPERM on a function-tracing file (current_tracer = function…,
    /// set_ftrace_filter, set_graph_function…): dynamic ftrace is refused.
    FtraceRefused {
        /// The file whose write was refused.
        path: PathBuf,
    },
    /// An ELF file (a uprobe's target) without the wanted function, or not
    /// readable as ELF.
    Elf {
        /// The ELF file.
        path: PathBuf,
        /// What is wrong with it.
        err: crate::elf::Error,
    },
    /// A trace.dat file that cannot be opened or read (`what`: why).
    TraceDat {
        /// The file.
        path: PathBuf,
        /// Why.
        what: String,
    },
    /// `-B NAME` names a buffer a trace.dat does not hold (`existing`: the
    /// ones it does, as a person reads them).
    NoBuffer {
        /// The trace.dat.
        path: PathBuf,
        /// The buffer asked for.
        name: String,
        /// The buffers it holds.
        existing: Vec<String>,
    },
    /// A file that is neither a trace.dat, a trbox stream nor a console log
    /// with a recording (`what`: why the console log reader gave up).
    NotARecording {
        /// The file.
        path: PathBuf,
        /// Why the console log reader gave up.
        what: String,
    },
    /// `tr-cat -N HOST:PORT`: the listener could not be reached, or did not
    /// answer as trace-cmd's listener does.
    Net {
        /// HOST:PORT, as given.
        addr: String,
        /// The step that failed ("cannot connect", "the handshake"…), or
        /// what the listener said instead.
        what: String,
        /// The socket's error, when one failed.
        err: Option<io::Error>,
    },
    /// `tr-cat -N ADDR` where ADDR is not an IPv4 address and a port.
    NetAddr(String),
    /// A board build asked for host-side work (`what`: which).
    HostOnly {
        /// The work asked for.
        what: String,
    },
    /// Writing the output failed (not a closed pipe: that is a normal end).
    Output(io::Error),
    /// The stop signals' handlers could not be installed.
    Signals(io::Error),
}

impl Error {
    /// An I/O failure on `path`. Not inlined: one copy of the path's
    /// conversion per argument type, not one per call site.
    #[inline(never)]
    pub(crate) fn io(path: impl Into<PathBuf>, err: io::Error) -> Self {
        Error::Io { path: path.into(), err }
    }

    /// What the user can do about it, when there is something to say.
    pub fn hint(&self) -> Option<Cow<'static, str>> {
        match self {
            Error::Elf { err, .. } => err.hint().map(Cow::Owned),
            _ => self.fixed_hint().map(Cow::Borrowed),
        }
    }

    fn fixed_hint(&self) -> Option<&'static str> {
        match self {
            Error::NotMounted => Some("run as root (trbox mounts tracefs itself), or: mount -t tracefs nodev /sys/kernel/tracing"),
            Error::Mount { err, .. } => match err.raw_os_error() {
                Some(libc::EPERM) if lockdown_active() => Some("the kernel is locked down (see /sys/kernel/security/lockdown): tracing is forbidden"),
                Some(libc::EPERM) => Some("mounting needs CAP_SYS_ADMIN (a container may forbid it): mount tracefs on the host and pass -T DIR"),
                Some(libc::ENODEV) => Some("this kernel has no tracefs: it was built without CONFIG_FTRACE / CONFIG_TRACING"),
                _ => None,
            },
            Error::NoSuchDir(_) | Error::NotTracefs(_) => Some("point -T (or TRBOX_TRACEFS) at a tracing root such as /sys/kernel/tracing, or a copy of one"),
            Error::Rejected { kernel: Some(_), .. } => None,
            Error::Rejected { err, .. } if err.raw_os_error() == Some(libc::EINVAL) => {
                Some("check the syntax against the event's format (tr-event --format SYS:EVENT) and the README file in tracefs")
            }
            Error::Rejected { err, .. } if err.raw_os_error() == Some(libc::ENOENT) => {
                Some("the event or symbol does not exist on this kernel")
            }
            Error::Rejected { err, .. } | Error::Io { err, .. } if err.raw_os_error() == Some(libc::EEXIST) => {
                Some("a probe, trigger or instance of that name is already there (another tool's, or a run that was killed): choose another name, or remove the old one")
            }
            Error::Rejected { .. } => None,
            Error::Busy { .. } => Some("wait for it with --wait, or stop it first"),
            Error::NotOverwritten { .. } => Some("remove it first, or record to another name"),
            Error::Format { .. } => Some("this kernel writes a layout trbox does not know: please report it with the file attached"),
            Error::NoTrigger { .. } => Some("the event's trigger file lists the triggers this kernel has"),
            Error::NoCpu { .. } => Some("--cpus takes a CPU list (0-1,3) of the CPUs it has"),
            Error::NoTracer { name, .. } if tracer_config(name).is_some() => None,
            Error::NoTracer { .. } => Some("a tracer is listed in available_tracers only when the kernel is built with it"),
            Error::FtraceRefused { .. } => Some(
                "function tracers and function filters are unavailable (a locked-down kernel, or sysctl kernel.ftrace_enabled=0); events (tr-event), uprobes, the nop tracer and tr-cat still work",
            ),
            Error::Elf { .. } | Error::TraceDat { .. } | Error::Output(_) | Error::Signals(_) => None,
            Error::Net { err: Some(e), .. } if matches!(e.raw_os_error(), Some(libc::ETIMEDOUT | libc::EHOSTUNREACH | libc::ENETUNREACH)) => {
                Some("the host does not answer: check the board's network (ip addr; ping HOST), and that the listener runs there (trace-cmd listen -p PORT, or tr-cat --listen PORT)")
            }
            Error::Net { .. } => Some("start the listener on the host first (trace-cmd listen -p PORT, or tr-cat --listen PORT)"),
            Error::NetAddr(_) => Some("HOST is an IPv4 address (trbox resolves no names), e.g. -N 10.0.2.2:12345"),
            Error::NoBuffer { .. } => Some("-B NAME picks one; -B '' the top buffer; without -B every buffer is shown"),
            Error::NotARecording { .. } => Some("record on the board with: tr-cat -o - --console [-e EV] [-t S] [-- CMD]"),
            Error::HostOnly { .. } => {
                Some("copy the file to a machine with the host build of trbox (cargo build --release)")
            }
            Error::NoInstance { .. } => Some("create it with an applet that writes (it creates instances), or: mkdir <tracefs>/instances/NAME"),
            Error::Io { err, .. } => match err.raw_os_error() {
                Some(libc::EACCES) => Some("tracefs is readable by root only: run as root (e.g. with sudo)"),
                Some(libc::EPERM) if lockdown_active() => Some("the kernel is locked down (see /sys/kernel/security/lockdown)"),
                Some(libc::EPERM) => Some("the kernel refuses this operation (lockdown, a security module, or dynamic ftrace disabled)"),
                _ => None,
            },
        }
    }

    /// A usage error rather than a runtime one: what was asked cannot be
    /// done by this build at all.
    pub(crate) fn is_usage(&self) -> bool {
        matches!(self, Error::HostOnly { .. })
    }

    /// The errno behind the failure, if there is one.
    pub(crate) fn errno(&self) -> Option<i32> {
        match self {
            Error::Mount { err, .. } | Error::Io { err, .. } | Error::Rejected { err, .. } => err.raw_os_error(),
            Error::FtraceRefused { .. } => Some(libc::EPERM),
            Error::Net { err: Some(e), .. } => e.raw_os_error(),
            _ => None,
        }
    }
}

/// Describe an io::Error briefly: "permission denied (EACCES)" rather than
/// "Permission denied (os error 13)".
pub fn describe(err: &io::Error) -> String {
    let name = match err.raw_os_error() {
        Some(libc::EPERM) => "operation not permitted (EPERM)",
        Some(libc::EACCES) => "permission denied (EACCES)",
        Some(libc::ENOENT) => "no such file (ENOENT)",
        Some(libc::ENODEV) => "no such device (ENODEV)",
        Some(libc::EBUSY) => "busy (EBUSY)",
        Some(libc::EINVAL) => "invalid argument (EINVAL)",
        Some(libc::ENOSPC) => "no space left (ENOSPC)",
        Some(libc::ENOTDIR) => "not a directory (ENOTDIR)",
        Some(libc::EEXIST) => "already exists (EEXIST)",
        Some(libc::ECONNREFUSED) => "connection refused (ECONNREFUSED)",
        Some(libc::ECONNRESET) => "connection reset (ECONNRESET)",
        Some(libc::ETIMEDOUT) => "timed out (ETIMEDOUT)",
        Some(libc::EHOSTUNREACH) => "no route to host (EHOSTUNREACH)",
        Some(libc::ENETUNREACH) => "network unreachable (ENETUNREACH)",
        Some(libc::EPIPE) => "broken pipe (EPIPE)",
        _ => return err.to_string(),
    };
    name.to_string()
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotMounted => write!(f, "tracefs is not mounted, and only root can mount it"),
            Error::Mount { fstype, target, err } => {
                write!(f, "cannot mount {fstype} on {}: {}", target.display(), describe(err))
            }
            Error::NoSuchDir(p) => write!(f, "{}: no such directory", p.display()),
            Error::NotTracefs(p) => write!(f, "{}: not a tracefs tree (no events/ directory)", p.display()),
            Error::NoInstance { name, existing } if existing.is_empty() => {
                write!(f, "no instance '{name}' (there are no instances)")
            }
            Error::NoInstance { name, existing } => {
                write!(f, "no instance '{name}' (existing: {})", existing.join(", "))
            }
            Error::Io { path, err } => write!(f, "{}: {}", path.display(), describe(err)),
            Error::Rejected { path, value, err, kernel } => {
                write!(f, "the kernel rejected '{value}' in {}: {}", path.display(), describe(err))?;
                match kernel {
                    Some(k) => write!(f, "\n{k}"),
                    None => Ok(()),
                }
            }
            Error::Busy { holder, path } => {
                let h = if holder.is_empty() { "another trbox run" } else { holder.as_str() };
                write!(f, "{} is in use by {h}", path.display())
            }
            Error::NotOverwritten { path, why } => write!(f, "{}: exists and {why}: not overwritten", path.display()),
            Error::Format { path, line, what } => write!(f, "{}:{line}: cannot parse ({what})", path.display()),
            Error::NoTracer { name, available } => {
                let have = if available.is_empty() { "none".to_string() } else { available.join(" ") };
                match tracer_config(name) {
                    Some(cfg) => write!(f, "this kernel has no {name} tracer ({cfg} is not set); its tracers: {have}"),
                    None => write!(f, "this kernel has no '{name}' tracer; its tracers: {have}"),
                }
            }
            Error::NoTrigger { name, available } => {
                let config = match name.as_str() {
                    "hist" | "enable_hist" | "disable_hist" => " (CONFIG_HIST_TRIGGERS is not set)",
                    "snapshot" => " (CONFIG_TRACER_SNAPSHOT is not set)",
                    _ => "",
                };
                write!(f, "this kernel has no '{name}' trigger{config}; its triggers: {available}")
            }
            Error::NoCpu { path, cpu, existing } => {
                let have = crate::ctl::cpu_list_text(existing);
                write!(f, "{}: no CPU {cpu} (its CPUs: {have})", path.display())
            }
            Error::FtraceRefused { path } => {
                // Relative to the tracing root when the path shows it.
                let p = path.to_string_lossy();
                let short = p.rsplit_once("/tracing/").map_or(&*p, |(_, r)| r);
                write!(f, "the kernel refuses dynamic ftrace (writing {short}: operation not permitted)")
            }
            Error::Elf { path, err } => write!(f, "{}: {err}", path.display()),
            Error::TraceDat { path, what } => write!(f, "{}: {what}", path.display()),
            Error::NoBuffer { path, name, existing } => {
                write!(f, "{}: no buffer '{name}' (it has: {})", path.display(), existing.join(", "))
            }
            Error::NotARecording { path, what } => write!(
                f,
                "{}: neither a trace.dat, a trbox stream nor a console log with a recording: {what}",
                path.display()
            ),
            Error::Net { addr, what, err } => {
                write!(f, "listener {addr}: {what}")?;
                match err {
                    Some(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                        write!(f, ": the listener closed the connection")
                    }
                    Some(e) => write!(f, ": {}", describe(e)),
                    None => Ok(()),
                }
            }
            Error::NetAddr(addr) => write!(f, "-N {addr}: not an IPv4 address and port (A.B.C.D:PORT)"),
            Error::HostOnly { what } => write!(f, "this trbox is a board build: {what} is done on the host"),
            Error::Output(e) => write!(f, "cannot write output: {e}"),
            Error::Signals(e) => write!(f, "cannot install signal handlers: {e}"),
        }
    }
}

impl std::error::Error for Error {}

/// The kernel option behind a tracer, for the ones people look for.
fn tracer_config(name: &str) -> Option<&'static str> {
    Some(match name {
        "function" => "CONFIG_FUNCTION_TRACER",
        "function_graph" => "CONFIG_FUNCTION_GRAPH_TRACER",
        "irqsoff" => "CONFIG_IRQSOFF_TRACER",
        "preemptoff" => "CONFIG_PREEMPT_TRACER",
        "preemptirqsoff" => "CONFIG_IRQSOFF_TRACER and CONFIG_PREEMPT_TRACER",
        "wakeup" | "wakeup_rt" | "wakeup_dl" => "CONFIG_SCHED_TRACER",
        "hwlat" => "CONFIG_HWLAT_TRACER",
        "osnoise" => "CONFIG_OSNOISE_TRACER",
        "timerlat" => "CONFIG_TIMERLAT_TRACER",
        "mmiotrace" => "CONFIG_MMIOTRACE",
        "blk" => "CONFIG_BLK_DEV_IO_TRACE",
        _ => return None,
    })
}

/// Is a kernel lockdown mode active? (`[none]` means no.)
pub(crate) fn lockdown_active() -> bool {
    std::fs::read_to_string("/sys/kernel/security/lockdown")
        .map(|t| crate::ctl::selected(&t).is_some_and(|m| m != "none"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eexist_reads_as_a_name_already_taken() {
        let e = || io::Error::from_raw_os_error(libc::EEXIST);
        assert_eq!(describe(&e()), "already exists (EEXIST)");
        let r = Error::Rejected {
            path: "/sys/kernel/tracing/uprobe_events".into(),
            value: "p:uprobes/x /bin/true:0x10".into(),
            err: e(),
            kernel: None,
        };
        assert_eq!(r.to_string(), "the kernel rejected 'p:uprobes/x /bin/true:0x10' in /sys/kernel/tracing/uprobe_events: already exists (EEXIST)");
        assert!(r.hint().unwrap().contains("already there"));
        let m = Error::io("/sys/kernel/tracing/instances/a", e());
        assert_eq!(m.to_string(), "/sys/kernel/tracing/instances/a: already exists (EEXIST)");
        assert!(m.hint().is_some());
        // The kernel's own error_log line says it better.
        let k = Error::Rejected {
            path: "x".into(),
            value: "v".into(),
            err: e(),
            kernel: Some("Event already exists".into()),
        };
        assert!(k.hint().is_none());
    }

    #[test]
    fn a_network_failure_names_the_listener_and_what_to_do() {
        let e = Error::Net {
            addr: "10.0.2.2:12345".into(),
            what: "cannot connect".into(),
            err: Some(io::Error::from_raw_os_error(libc::ECONNREFUSED)),
        };
        assert_eq!(e.to_string(), "listener 10.0.2.2:12345: cannot connect: connection refused (ECONNREFUSED)");
        assert!(e.hint().unwrap().contains("trace-cmd listen -p PORT"));
        assert_eq!(e.errno(), Some(libc::ECONNREFUSED));
        assert!(!e.is_usage());
        let t = Error::Net {
            addr: "10.0.2.2:12345".into(),
            what: "cannot connect".into(),
            err: Some(io::Error::from_raw_os_error(libc::ETIMEDOUT)),
        };
        assert!(t.hint().unwrap().contains("ping HOST"));
        let eof = Error::Net {
            addr: "10.0.2.2:12345".into(),
            what: "the handshake".into(),
            err: Some(io::ErrorKind::UnexpectedEof.into()),
        };
        assert_eq!(eof.to_string(), "listener 10.0.2.2:12345: the handshake: the listener closed the connection");
        let a = Error::NetAddr("board:1234".into());
        assert_eq!(a.to_string(), "-N board:1234: not an IPv4 address and port (A.B.C.D:PORT)");
        assert!(a.hint().unwrap().contains("IPv4"));
    }
}
