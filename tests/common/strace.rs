//! What a trbox run reads and writes, in order, as `strace -f -y` sees it:
//! for tests of the order of its tracefs changes (set-up, traced window,
//! read-out, restore), which no file shows afterwards.

use super::{cmd, trbox, TempDir};
use std::process::Output;

/// One read or write on a named file.
#[derive(Debug)]
pub struct Io {
    pub write: bool,
    pub path: String,
    /// What was written (as strace quotes it, e.g. `0\n`); empty for reads.
    pub data: String,
}

/// Run `prefix… trbox ARGS…` (prefix: e.g. `timeout -s INT 2`) under
/// strace, bounded by a minute; its output and every read/write on a file
/// whose path starts with one of `under`, in order. None when strace does
/// not run here.
pub fn run_io(prefix: &[&str], args: &[&str], under: &[&str]) -> Option<(Output, Vec<Io>)> {
    if !super::cprog::have("strace") {
        super::skip_tool("strace", "no strace to follow the run's reads and writes");
        return None;
    }
    let d = TempDir::new("strace");
    let log = d.path().join("log");
    let exe = trbox();
    let mut argv =
        vec!["-k", "5", "60", "strace", "-f", "-y", "-qq", "-s", "32", "-e", "trace=read,write", "-e", "signal=none"];
    argv.extend(["-o", log.to_str().unwrap()]);
    argv.extend_from_slice(prefix);
    argv.push(exe.to_str().unwrap());
    argv.extend_from_slice(args);
    let o = cmd(std::path::Path::new("timeout"), &argv).output().expect("run strace");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    Some((o, text.lines().filter_map(|l| parse(l, under)).collect()))
}

/// `PID write(7</sys/kernel/tracing/tracing_on>, "0\n", 2) = 2` (also
/// `<unfinished ...>` lines, which name the file too).
fn parse(line: &str, under: &[&str]) -> Option<Io> {
    // strace pads the pid column: `812   write(` as well as `81234 write(`.
    let call = line.split_once(' ')?.1.trim_start();
    let write = call.starts_with("write(");
    if !write && !call.starts_with("read(") {
        return None;
    }
    let (_, rest) = call.split_once('<')?;
    let (path, rest) = rest.split_once(">, ")?;
    if !under.iter().any(|u| path.starts_with(u)) {
        return None;
    }
    let data =
        if write { rest.strip_prefix('"').and_then(|r| r.split_once("\", ")).map_or("", |(d, _)| d) } else { "" };
    Some(Io { write, path: path.to_string(), data: data.to_string() })
}
