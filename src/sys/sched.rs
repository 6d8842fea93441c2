//! Scheduling of the latency tracers' kernel threads (`timerlat/N`,
//! `osnoise/N`), as rtla's `-P` sets it: the kernel creates them with its
//! own defaults (timerlat: SCHED_FIFO 95 on 6.1) when the tracer starts,
//! and they end with it, so nothing is left to restore.

use std::io;

/// A policy and its value, in rtla's spelling: `f:PRIO` SCHED_FIFO,
/// `r:PRIO` SCHED_RR, `o:NICE` SCHED_OTHER at that nice value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sched {
    /// SCHED_FIFO at this priority.
    Fifo(i32),
    /// SCHED_RR at this priority.
    Rr(i32),
    /// SCHED_OTHER at this nice value.
    Other(i32),
}

impl Sched {
    /// `f:PRIO`, `r:PRIO` or `o:NICE`.
    pub fn parse(s: &str) -> Option<Sched> {
        let (p, v) = s.split_once(':')?;
        let v = v.parse().ok()?;
        match p {
            "f" => Some(Sched::Fifo(v)),
            "r" => Some(Sched::Rr(v)),
            "o" => Some(Sched::Other(v)),
            _ => None,
        }
    }
}

/// Give every task whose comm starts with `prefix` the policy `s`. The
/// kernel's refusal (EINVAL for a priority out of range, EPERM) is the
/// error, and so is finding none (NotFound).
pub fn set_threads(prefix: &str, s: Sched) -> io::Result<()> {
    let (policy, prio) = match s {
        Sched::Fifo(p) => (libc::SCHED_FIFO, p),
        Sched::Rr(p) => (libc::SCHED_RR, p),
        Sched::Other(_) => (libc::SCHED_OTHER, 0),
    };
    // SAFETY: sched_param is plain integers (musl's has more fields than
    // glibc's): all zero is a valid value.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = prio;
    let mut found = false;
    for e in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else { continue };
        if !std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.starts_with(prefix)) {
            continue;
        }
        // The system call itself: musl's sched_setscheduler() is a stub
        // (ENOSYS), POSIX's per-process meaning not being Linux's.
        // SAFETY: plain syscalls on a pid, with a valid sched_param.
        let mut r = unsafe { libc::syscall(libc::SYS_sched_setscheduler, pid, policy, &param) } as i32;
        if let (Sched::Other(nice), 0) = (s, r) {
            // SAFETY: as above.
            r = unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, nice) };
        }
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        found = true;
    }
    if found {
        Ok(())
    } else {
        Err(io::ErrorKind::NotFound.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtla_spellings() {
        assert_eq!(Sched::parse("f:95"), Some(Sched::Fifo(95)));
        assert_eq!(Sched::parse("r:1"), Some(Sched::Rr(1)));
        assert_eq!(Sched::parse("o:-5"), Some(Sched::Other(-5)));
        assert_eq!(Sched::parse("95"), None);
        assert_eq!(Sched::parse("d:1:2"), None);
        assert_eq!(Sched::parse("f:x"), None);
    }

    #[test]
    fn no_such_threads_is_an_error() {
        assert_eq!(set_threads("no-such-trbox-thread/", Sched::Other(0)).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
