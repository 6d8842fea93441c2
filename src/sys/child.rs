//! `-- CMD`: the traced command is forked stopped before exec, so its pid
//! can go into the pid filter first; then it is released. (std's Command
//! cannot do this: its spawn() waits for the exec to happen.)

use std::ffi::CString;
use std::io;

pub struct Paused {
    pid: libc::pid_t,
    /// Closing it lets the child exec.
    go: Option<libc::c_int>,
    /// Readable once the child exec'd (EOF) or failed to (an errno).
    status_fd: libc::c_int,
    reaped: Option<i32>,
}

fn cstr(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in argument"))
}

fn pipe() -> io::Result<(libc::c_int, libc::c_int)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

impl Paused {
    /// Fork `prog args…` (looked up in PATH), held before exec.
    pub fn spawn(prog: &str, args: &[String]) -> io::Result<Paused> {
        let file = cstr(prog)?;
        let mut argv_c = vec![file.clone()];
        for a in args {
            argv_c.push(cstr(a)?);
        }
        let mut argv: Vec<*const libc::c_char> = argv_c.iter().map(|c| c.as_ptr()).collect();
        argv.push(std::ptr::null());
        let (go_rd, go_wr) = pipe()?;
        let (st_rd, st_wr) = pipe()?;
        // SAFETY: the child only calls async-signal-safe functions (close,
        // read, signal reset, execvp, write, _exit) before exec.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: closing our own fds.
            unsafe {
                for fd in [go_rd, go_wr, st_rd, st_wr] {
                    libc::close(fd);
                }
            }
            return Err(e);
        }
        if pid == 0 {
            // SAFETY: child side, see above.
            unsafe {
                libc::close(go_wr);
                libc::close(st_rd);
                // Our signal handlers are not for the command.
                for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                let mut b = 0u8;
                while libc::read(go_rd, (&mut b as *mut u8).cast(), 1) < 0 {}
                libc::execvp(file.as_ptr(), argv.as_ptr());
                let err = *libc::__errno_location();
                let bytes = err.to_ne_bytes();
                libc::write(st_wr, bytes.as_ptr().cast(), bytes.len());
                libc::_exit(127);
            }
        }
        // SAFETY: parent side: close the child's ends.
        unsafe {
            libc::close(go_rd);
            libc::close(st_wr);
        }
        Ok(Paused { pid, go: Some(go_wr), status_fd: st_rd, reaped: None })
    }

    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Let the command run; an error when its exec failed (not found…).
    pub fn release(&mut self) -> io::Result<()> {
        if let Some(fd) = self.go.take() {
            // SAFETY: our fd.
            unsafe { libc::close(fd) };
        }
        let mut b = [0u8; 4];
        // SAFETY: reading into a valid buffer from our fd; EOF = exec done.
        let n = loop {
            let n = unsafe { libc::read(self.status_fd, b.as_mut_ptr().cast(), 4) };
            if n >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break n;
            }
        };
        if n == 4 {
            let _ = self.wait();
            return Err(io::Error::from_raw_os_error(i32::from_ne_bytes(b)));
        }
        Ok(())
    }

    /// The exit status once it ended (128+signal when killed), without
    /// blocking.
    pub fn try_wait(&mut self) -> Option<i32> {
        if self.reaped.is_none() {
            let mut st = 0;
            // SAFETY: waiting for our own child.
            if unsafe { libc::waitpid(self.pid, &mut st, libc::WNOHANG) } == self.pid {
                self.reaped = Some(decode(st));
            }
        }
        self.reaped
    }

    /// Wait for the end.
    pub fn wait(&mut self) -> i32 {
        while self.reaped.is_none() {
            let mut st = 0;
            // SAFETY: waiting for our own child.
            let r = unsafe { libc::waitpid(self.pid, &mut st, 0) };
            if r == self.pid {
                self.reaped = Some(decode(st));
            } else if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                self.reaped = Some(1);
            }
        }
        self.reaped.unwrap_or(1)
    }

    /// Send a signal (if it still runs).
    pub fn signal(&self, sig: i32) {
        if self.reaped.is_none() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(self.pid, sig) };
        }
    }
}

fn decode(st: libc::c_int) -> i32 {
    if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else if libc::WIFSIGNALED(st) {
        128 + libc::WTERMSIG(st)
    } else {
        1
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        if let Some(fd) = self.go.take() {
            // Never released (an error came first): do not let it run.
            self.signal(libc::SIGKILL);
            // SAFETY: our fd.
            unsafe { libc::close(fd) };
            let _ = self.wait();
        }
        // SAFETY: our fd.
        unsafe { libc::close(self.status_fd) };
    }
}
