//! A run's guard: a process forked when the run starts changing the kernel
//! for good (tracing on, events enabled, pages moving), that outlives an
//! end the run cannot catch — SIGKILL (`kill -9`, the OOM killer, a
//! watchdog's `timeout -s KILL`), SIGQUIT, a crash — and then does what the
//! run's own end would have done: put tracefs back, finish its file.
//!
//! It holds a copy of the run as it was at the fork (memory is copied), and
//! the run sends it what changes after that as notes through a pipe. The
//! run's death closes the pipe (EOF without the closing word) and wakes it.
//! A normal end says the closing word and waits for the guard to exit, so
//! nothing of the run outlives it (the guard shares the run's tracefs lock:
//! the next run would find it held). Signals the terminal sends the whole
//! group (Ctrl-C, Ctrl-\) are ignored by the guard: the run handles them,
//! or dies of them and wakes it.
//!
//! Cost: a fork and a few bytes per wake-up of the run; the guard sleeps in
//! read(2) meanwhile.

use std::io;

/// What the guard's code sees: a note the run sent, in order, or the run's
/// death (the last call).
pub(crate) enum Event<'a> {
    Note(&'a [u8]),
    Orphaned,
    /// After [`Event::Orphaned`], from a guarded State
    /// ([`super::state::State::guard`]): the State is put back.
    PutBack,
}

/// The run's end of the pipe to its guard.
pub(crate) struct Guard {
    pid: libc::pid_t,
    notes: Notes,
}

/// A way to send the guard notes (a part of the run that changes what its
/// end would have to do holds one).
pub(crate) struct Notes {
    fd: std::fs::File,
}

impl Guard {
    /// Fork the guard. In it, `on` sees each note and then, if the run dies
    /// before it drops the Guard (its normal end), [`Event::Orphaned`];
    /// it runs on the copy of everything `on` borrowed, and the guard then
    /// exits. None (logged) when there is no pipe or fork.
    pub(crate) fn watch(on: &mut dyn FnMut(Event<'_>)) -> Option<Guard> {
        let (rd, wr) = match super::child::pipe() {
            Ok(p) => p,
            Err(e) => {
                log::warn!("no guard for this run (pipe: {e}): a SIGKILL would leave tracefs as the run set it");
                return None;
            }
        };
        // SAFETY: fork(2); the child runs only the code below and exits.
        match unsafe { libc::fork() } {
            -1 => {
                log::warn!("no guard for this run (fork: {})", io::Error::last_os_error());
                // SAFETY: our own fds.
                unsafe {
                    libc::close(rd);
                    libc::close(wr);
                }
                None
            }
            0 => {
                // SAFETY: our own fd.
                unsafe { libc::close(wr) };
                quiet();
                serve(rd, on);
                // SAFETY: _exit(2): no destructors of the run's copy (its
                // State would put tracefs back a second time).
                unsafe { libc::_exit(0) }
            }
            pid => {
                // SAFETY: our own fd.
                unsafe { libc::close(rd) };
                use std::os::unix::io::FromRawFd;
                // SAFETY: the pipe's write end, ours alone.
                Some(Guard { pid, notes: Notes { fd: unsafe { std::fs::File::from_raw_fd(wr) } } })
            }
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Another sender of notes to this guard.
    pub(crate) fn notes(&self) -> Option<Notes> {
        Some(Notes { fd: self.notes.fd.try_clone().ok()? })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // The closing word: an empty note.
        write_all(&self.notes.fd, &0u32.to_ne_bytes());
        // SAFETY: the guard's pid, ours to reap (the pipe's end is closed
        // with the Notes after this).
        unsafe {
            let mut st = 0;
            while libc::waitpid(self.pid, &mut st, 0) == -1
                && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
            {}
        }
    }
}

impl Notes {
    /// Send a note, the concatenation of `parts` (whole: the guard never
    /// sees half of one). A guard gone is not the run's concern.
    pub(crate) fn send(&self, parts: &[&[u8]]) {
        let Ok(len) = u32::try_from(parts.iter().map(|p| p.len()).sum::<usize>()) else { return };
        if len == 0 {
            return;
        }
        // One thread sends (the run's): nothing comes between the writes.
        write_all(&self.fd, &len.to_ne_bytes());
        for p in parts {
            write_all(&self.fd, p);
        }
    }
}

/// The guard's standard input and output are /dev/null (a pipeline's
/// reader sees its end when the run ends); stderr stays, for what it
/// says. The terminal's signals to the group are the run's. Its name is
/// its own (`ps`: trbox-guard), so that `killall -9 tr-cat` kills the run
/// and not its guard.
fn quiet() {
    // SAFETY: plain syscalls on fds 0 and 1, signal dispositions and the
    // thread's name (a NUL-terminated string).
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"trbox-guard".as_ptr());
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            libc::close(null);
        }
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
}

/// The guard's life: notes until the closing word (return) or EOF.
fn serve(rd: libc::c_int, on: &mut dyn FnMut(Event<'_>)) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // SAFETY: a valid buffer of its length.
        let n = unsafe { libc::read(rd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            on(Event::Orphaned);
            return;
        }
        buf.extend_from_slice(chunk.get(..n as usize).unwrap_or_default());
        let mut at = 0;
        while let Some(head) = buf.get(at..at + 4).and_then(|h| <[u8; 4]>::try_from(h).ok()) {
            let len = u32::from_ne_bytes(head) as usize;
            if len == 0 {
                return; // the closing word
            }
            let Some(note) = buf.get(at + 4..at + 4 + len) else { break };
            on(Event::Note(note));
            at += 4 + len;
        }
        buf.drain(..at);
    }
}

/// std's write_all retries EINTR (a stop signal meanwhile); EPIPE (the
/// guard gone; SIGPIPE is ignored) ends it.
fn write_all(mut f: &std::fs::File, b: &[u8]) {
    use std::io::Write;
    let _ = f.write_all(b);
}
