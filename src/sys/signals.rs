//! Ctrl-C, SIGTERM and SIGHUP become a stop request the applet's loop sees
//! (a flag plus a self-pipe to wake poll()), so that it returns normally and
//! the [`State`](super::state::State) restores tracefs on the way out.
//! SIGPIPE stays ignored (Rust's default): writes fail with EPIPE instead,
//! which the output layer turns into a stop as well.

use std::io;
use std::os::unix::io::RawFd;
use std::sync::atomic::{AtomicI32, Ordering};

static STOP: AtomicI32 = AtomicI32::new(0);
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
static WAKE_RD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP.store(sig, Ordering::SeqCst);
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe; the buffer is valid.
        unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) };
    }
}

/// Install the handlers (once; later calls return the same fd); returns the
/// read end of the wake-up pipe (readable once a stop was requested), for
/// poll(). Call it first thing, before slow set-up, so that an early Ctrl-C
/// still ends the run through the normal path.
pub fn install() -> io::Result<RawFd> {
    let rd = WAKE_RD.load(Ordering::SeqCst);
    if rd >= 0 {
        return Ok(rd);
    }
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    WAKE_FD.store(fds[1], Ordering::SeqCst);
    WAKE_RD.store(fds[0], Ordering::SeqCst);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction with a valid handler; no SA_RESTART so
        // blocking calls return EINTR and the loop can look at the flag.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(fds[0])
}

/// The signal that asked us to stop, if one did.
pub fn stop_requested() -> Option<i32> {
    match STOP.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Ask the loop to stop (time limit reached, command exited…).
pub fn request_stop() {
    on_signal(-1);
}
