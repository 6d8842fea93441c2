//! Ctrl-C, SIGTERM and SIGHUP (and the end of `-t`, SIGALRM) become a stop
//! request the applet's loop sees (a flag plus a self-pipe to wake poll()),
//! so that it returns normally and the [`State`](super::state::State)
//! restores tracefs on the way out. A stop also closes the run's traced
//! window at once ([`shut_on_stop`]).
//! The applets install the handlers; the library never does: a read that
//! follows is handed the flag and the wake-up descriptor ([`stop`]).
//! SIGPIPE stays ignored (Rust's default): writes fail with EPIPE instead,
//! which the output layer turns into a stop as well.

use super::stop::Stop;
use std::io;
use std::os::unix::io::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

static STOP: AtomicI32 = AtomicI32::new(0);
/// Set with `STOP`: the flag a [`Stop`] looks at.
static STOPPED: AtomicBool = AtomicBool::new(false);
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
static WAKE_RD: AtomicI32 = AtomicI32::new(-1);
static SHUT_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    // Once only (swap): the file may be a regular one in a test's tree.
    let shut = SHUT_FD.swap(-1, Ordering::SeqCst);
    if shut >= 0 {
        // SAFETY: write(2) is async-signal-safe; the buffer is valid.
        unsafe { libc::write(shut, b"0\n".as_ptr().cast(), 2) };
    }
    STOP.store(sig, Ordering::SeqCst);
    STOPPED.store(true, Ordering::SeqCst);
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
pub(crate) fn install() -> io::Result<RawFd> {
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
        // No SA_RESTART: blocking calls return EINTR and the loop can look
        // at the flag.
        handle(sig, 0)?;
    }
    Ok(fds[0])
}

fn handle(sig: libc::c_int, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: a zeroed sigaction with a valid handler.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = flags;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `-t`: a stop request once `d` has passed (SIGALRM, taken like Ctrl-C),
/// which reaches the applet also while its loop is busy reading; `None`
/// cancels it. Writes it interrupts are restarted (SA_RESTART): unlike
/// Ctrl-C, the end of a run's time must not cut its output short.
pub(crate) fn stop_after(d: Option<Duration>) -> io::Result<()> {
    // A zero it_value would disarm instead.
    let d = d.map_or(Duration::ZERO, |d| d.max(Duration::from_micros(1)));
    handle(libc::SIGALRM, libc::SA_RESTART)?;
    let zero = libc::timeval { tv_sec: 0, tv_usec: 0 };
    // `as _`: time_t and suseconds_t are the libc crate's (deprecated) aliases.
    let value = libc::timeval { tv_sec: d.as_secs() as _, tv_usec: d.subsec_micros() as _ };
    let it = libc::itimerval { it_interval: zero, it_value: value };
    // SAFETY: a valid itimerval for the call.
    if unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The signal that asked us to stop, if one did.
pub(crate) fn stop_requested() -> Option<i32> {
    match STOP.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// What ends a read: `done()` (asked first), or a stop request (a signal,
/// -t, [`request_stop`]), which also wakes its waits once the handlers are
/// installed ([`install`]).
pub(crate) fn stop(done: &dyn Fn() -> bool) -> Stop<'_> {
    let wake = Some(WAKE_RD.load(Ordering::SeqCst)).filter(|&fd| fd >= 0);
    Stop::when(done).or_flag(&STOPPED, wake)
}

/// Ask the loop to stop (time limit reached, command exited…).
pub(crate) fn request_stop() {
    on_signal(-1);
}

/// On the next stop (a signal, or [`request_stop`]) write `0` to `fd` before
/// anything else: the switch of a traced window (`tracing_on`), so that the
/// window closes when the stop comes, not when the loop gets round to it.
/// -1 disarms; the caller keeps `fd` open while armed.
pub(crate) fn shut_on_stop(fd: RawFd) {
    SHUT_FD.store(fd, Ordering::SeqCst);
}
