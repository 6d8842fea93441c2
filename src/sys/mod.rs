//! The thin std layer: finding and reading tracefs. Everything that decides
//! what bytes mean lives in the core modules; this only moves them.

pub(crate) mod child;
pub(crate) mod elf;
mod error;
pub(crate) mod guard;
pub(crate) mod kallsyms;
pub(crate) mod kvars;
pub(crate) mod lock;
pub(crate) mod net;
pub(crate) mod pages;
pub(crate) mod prefetch;
pub(crate) mod raw;
pub mod read;
pub(crate) mod record;
pub(crate) mod reset;
pub(crate) mod sched;
pub(crate) mod signals;
pub(crate) mod state;
pub(crate) mod status;
pub mod stop;
pub(crate) mod thread;
pub mod trace;
// The text of a build without the decoder (`minimal`); the host build
// keeps it for its test.
#[cfg_attr(feature = "decode", allow(dead_code))]
pub(crate) mod trace_pipe;
mod tracedat;
mod tracefs;
pub(crate) mod watch;

pub use error::{describe, Error};
pub(crate) use kallsyms::read_live_ahead;
pub(crate) use tracefs::{event_dir, instance_name_problem, read_text, Found, Held, Tracefs};

/// `bytes` in an anonymous file (memfd_create; a deleted temporary file
/// where that is missing), to read like any trace.dat through pread.
pub(crate) fn anonymous_file(bytes: &[u8]) -> std::io::Result<std::fs::File> {
    use std::io::Write as _;
    use std::os::unix::io::FromRawFd;
    // SAFETY: a NUL-terminated name; the fd is ours.
    let fd = unsafe { libc::memfd_create(c"trbox-stream".as_ptr(), libc::MFD_CLOEXEC) };
    let mut f = if fd >= 0 {
        // SAFETY: a fresh fd nobody else owns.
        unsafe { std::fs::File::from_raw_fd(fd) }
    } else {
        let p = std::env::temp_dir().join(format!("trbox-stream-{}", std::process::id()));
        let f = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&p)?;
        let _ = std::fs::remove_file(&p);
        f
    };
    f.write_all(bytes)?;
    Ok(f)
}

/// The terminal on standard output: (rows, columns), or None when it is
/// not one or does not say (a serial console's size is 0 until `stty`
/// sets it).
pub(crate) fn terminal_size() -> Option<(usize, usize)> {
    // SAFETY: TIOCGWINSZ fills a zeroed winsize; fd 1 is only looked at.
    let mut w: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut w) } == 0;
    (ok && w.ws_row > 0 && w.ws_col > 0).then(|| (usize::from(w.ws_row), usize::from(w.ws_col)))
}

/// Are we root (effective uid 0)?
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `uname(2)`: sysname, nodename, release, version, machine.
pub(crate) fn uname() -> Option<[String; 5]> {
    // SAFETY: uname fills a zeroed struct.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let f = |s: &[libc::c_char]| {
        String::from_utf8_lossy(&s.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect::<Vec<u8>>()).into_owned()
    };
    Some([f(&u.sysname), f(&u.nodename), f(&u.release), f(&u.version), f(&u.machine)])
}
