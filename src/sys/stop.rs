//! How the caller of a read that follows a live buffer ends it ([`Stop`]):
//! the library installs no signal handler of its own. An applet passes in
//! its own test (a command's end) and the flag its signal handlers set
//! (see `signals`), with the descriptor they wake a
//! poll() through; a host program passes whatever ends its read.

use std::os::unix::io::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// When a read stops following, and what wakes it from a wait for data.
/// It is asked between records and after each wait: once it says stop,
/// what the buffer holds is read out (a following read), and the read
/// ends.
#[derive(Clone, Copy)]
pub struct Stop<'a> {
    done: &'a dyn Fn() -> bool,
    flag: Option<&'a AtomicBool>,
    wake: Option<RawFd>,
}

fn never() -> bool {
    false
}

impl<'a> Stop<'a> {
    /// No stop: the read runs to the end of what it reads (a file, a
    /// drained buffer) or of its time limit.
    pub fn never() -> Stop<'static> {
        Stop { done: &never, flag: None, wake: None }
    }

    /// A stop once `done()` says so. It is asked first, every time, also
    /// after a stop came another way (an applet clears its progress line
    /// then).
    pub fn when(done: &'a dyn Fn() -> bool) -> Self {
        Stop { done, flag: None, wake: None }
    }

    /// Also a stop once `flag` is set (by a signal handler, another
    /// thread); `wake`, when given, becomes readable then (the read end of
    /// a self-pipe): it ends a wait for data at once.
    pub fn or_flag(self, flag: &'a AtomicBool, wake: Option<RawFd>) -> Self {
        Stop { flag: Some(flag), wake, ..self }
    }

    /// Whether to stop now.
    pub fn asked(&self) -> bool {
        (self.done)() || self.flag.is_some_and(|f| f.load(Ordering::SeqCst))
    }

    /// What to poll() besides the buffers: readable once a stop is asked.
    pub fn wake(&self) -> Option<RawFd> {
        self.wake
    }
}
