//! `-- CMD`: the traced command is forked stopped before exec, so its pid
//! can go into the pid filter first; then it is released. (std's Command
//! cannot do this: its spawn() waits for the exec to happen.)
//!
//! The command's trace starts at its exec of the program: the program is
//! found in `$PATH` before the fork (execvp's search in the child would be
//! traced, a failed `execve` for each directory before the right one), and
//! the child holds by stopping itself (SIGSTOP), not in a read: resumed by
//! SIGCONT, its next system call is the `execve` (a read would show its
//! return first).

use std::ffi::{CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A command forked and held stopped before its `execve`, until
/// released.
pub(crate) struct Paused {
    pid: libc::pid_t,
    /// Not yet resumed (SIGCONT): dropped unreleased, it is killed.
    held: bool,
    /// Readable once the child exec'd (EOF) or failed to (an errno).
    status_fd: libc::c_int,
    reaped: Option<i32>,
}

fn cstr(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in argument"))
}

pub(crate) fn pipe() -> io::Result<(libc::c_int, libc::c_int)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// The program `prog` names, as execvp would find it: a name with a `/`
/// as it is, any other in the directories of `$PATH` (busybox's default
/// when it is unset), the first that is an executable file.
pub(crate) fn find_program(prog: &str) -> io::Result<PathBuf> {
    if prog.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    if prog.contains('/') {
        return Ok(PathBuf::from(prog));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/sbin:/usr/sbin:/bin:/usr/bin".into());
    let mut denied = false;
    for dir in path.as_bytes().split(|&b| b == b':') {
        // An empty entry is the current directory, as for execvp.
        let dir = if dir.is_empty() { Path::new(".") } else { Path::new(OsStr::from_bytes(dir)) };
        let cand = dir.join(prog);
        let Ok(c) = cstr_path(&cand) else { continue };
        // SAFETY: a NUL-terminated path.
        if unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0 && cand.is_file() {
            return Ok(cand);
        }
        denied |= io::Error::last_os_error().raw_os_error() == Some(libc::EACCES);
    }
    Err(io::Error::from_raw_os_error(if denied { libc::EACCES } else { libc::ENOENT }))
}

fn cstr_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))
}

impl Paused {
    /// Fork `prog args…` (found in PATH first), stopped before its exec.
    pub(crate) fn spawn(prog: &str, args: &[String]) -> io::Result<Paused> {
        let file = cstr_path(&find_program(prog)?)?;
        let mut argv_c = vec![cstr(prog)?];
        for a in args {
            argv_c.push(cstr(a)?);
        }
        let mut argv: Vec<*const libc::c_char> = argv_c.iter().map(|c| c.as_ptr()).collect();
        argv.push(std::ptr::null());
        // A file without `#!` runs under /bin/sh, as execvp does.
        let sh = cstr("/bin/sh")?;
        let mut sh_argv: Vec<*const libc::c_char> = vec![sh.as_ptr(), file.as_ptr()];
        sh_argv.extend(argv.iter().skip(1));
        let (st_rd, st_wr) = pipe()?;
        // Descriptors can be below this (the limit; 64 Ki at most).
        // SAFETY: a valid rlimit to fill.
        let top = unsafe {
            let mut l: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
            l.rlim_cur.min(1 << 16) as i32
        };
        // SAFETY: getpid(2).
        let run = unsafe { libc::getpid() };
        // SAFETY: the child only calls async-signal-safe functions (fcntl,
        // close, signal reset, prctl, getpid, getppid, kill, execv, write,
        // _exit) before exec.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: closing our own fds.
            unsafe {
                libc::close(st_rd);
                libc::close(st_wr);
            }
            return Err(e);
        }
        if pid == 0 {
            // SAFETY: child side, see above.
            unsafe {
                libc::close(st_rd);
                // What closes at the exec closes now: held, the command
                // must not keep the run's lock or its guard's pipe (whose
                // end tells the guard the run died) when the run is killed
                // before releasing it.
                for fd in 3..top {
                    if fd != st_wr && libc::fcntl(fd, libc::F_GETFD) & libc::FD_CLOEXEC != 0 {
                        libc::close(fd);
                    }
                }
                // Our signal handlers are not for the command.
                for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                // It dies with the run, as the run's end ends it (SIGTERM):
                // killed outright before the release, the run would leave
                // it stopped for good where no job control puts it in a
                // group of its own (a script, a test harness). Kept across
                // the exec: no system call of trbox's may come between the
                // release and the exec (the command's trace starts there).
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != run {
                    libc::_exit(127);
                }
                libc::kill(libc::getpid(), libc::SIGSTOP);
                libc::execv(file.as_ptr(), argv.as_ptr());
                if *libc::__errno_location() == libc::ENOEXEC {
                    libc::execv(sh.as_ptr(), sh_argv.as_ptr());
                }
                let err = *libc::__errno_location();
                let bytes = err.to_ne_bytes();
                libc::write(st_wr, bytes.as_ptr().cast(), bytes.len());
                libc::_exit(127);
            }
        }
        // SAFETY: parent side: close the child's end.
        unsafe { libc::close(st_wr) };
        let mut child = Paused { pid, held: true, status_fd: st_rd, reaped: None };
        // Wait until it has stopped itself: resumed before, the SIGCONT
        // would be lost and it would stop for good.
        let mut st = 0;
        loop {
            // SAFETY: waiting for our own child.
            let r = unsafe { libc::waitpid(pid, &mut st, libc::WUNTRACED) };
            if r == pid && libc::WIFSTOPPED(st) {
                break;
            }
            if r == pid {
                child.reaped = Some(decode(st));
                return Err(io::Error::other("the command ended before it was started"));
            }
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(child)
    }

    /// Its pid.
    pub(crate) fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Let the command run; an error when its exec failed (not found…).
    pub(crate) fn release(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.held) {
            // SAFETY: resuming our own stopped child.
            unsafe { libc::kill(self.pid, libc::SIGCONT) };
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
    pub(crate) fn try_wait(&mut self) -> Option<i32> {
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
    pub(crate) fn wait(&mut self) -> i32 {
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
    pub(crate) fn signal(&self, sig: i32) {
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
        if self.held {
            // Never released (an error came first): do not let it run.
            self.signal(libc::SIGKILL);
            let _ = self.wait();
        }
        // SAFETY: our fd.
        unsafe { libc::close(self.status_fd) };
    }
}
