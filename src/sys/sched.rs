//! Scheduling of the latency tracers' kernel threads (`timerlat/N`,
//! `osnoise/N`), as rtla's `-P` sets it: the kernel creates them with its
//! own defaults (timerlat: SCHED_FIFO 95 on 6.1) when the tracer starts,
//! and they end with it, so nothing is left to restore. And timerlat's
//! user-space threads ([`UserThreads`]), as rtla's `-u` starts them.

use std::io;
use std::path::Path;

/// A policy and its value, in rtla's spelling: `f:PRIO` SCHED_FIFO,
/// `r:PRIO` SCHED_RR, `o:NICE` SCHED_OTHER at that nice value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sched {
    /// SCHED_FIFO at this priority.
    Fifo(i32),
    /// SCHED_RR at this priority.
    Rr(i32),
    /// SCHED_OTHER at this nice value.
    Other(i32),
}

impl Sched {
    /// `f:PRIO`, `r:PRIO` or `o:NICE`.
    pub(crate) fn parse(s: &str) -> Option<Sched> {
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

/// Give task `pid` (0: the caller) the policy `s`: 0, or -1 with errno.
/// Async-signal-safe (plain system calls): a forked child calls it.
fn set_one(pid: i32, s: Sched) -> i32 {
    let (policy, prio) = match s {
        Sched::Fifo(p) => (libc::SCHED_FIFO, p),
        Sched::Rr(p) => (libc::SCHED_RR, p),
        Sched::Other(_) => (libc::SCHED_OTHER, 0),
    };
    // SAFETY: sched_param is plain integers (musl's has more fields than
    // glibc's): all zero is a valid value.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = prio;
    // The system call itself: musl's sched_setscheduler() is a stub
    // (ENOSYS), POSIX's per-process meaning not being Linux's.
    // SAFETY: plain syscalls on a pid, with a valid sched_param.
    let mut r = unsafe { libc::syscall(libc::SYS_sched_setscheduler, pid, policy, &param) } as i32;
    if let (Sched::Other(nice), 0) = (s, r) {
        // SAFETY: as above.
        r = unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, nice) };
    }
    r
}

/// Give every task whose comm starts with `prefix` the policy `s`. The
/// kernel's refusal (EINVAL for a priority out of range, EPERM) is the
/// error, and so is finding none (NotFound).
pub(crate) fn set_threads(prefix: &str, s: Sched) -> io::Result<()> {
    each_thread(prefix, |pid| match set_one(pid, s) {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    })
}

/// rtla's -C (tr-lat's --cgroup): the `cgroup.procs` of the cgroup v2 directory `name` below
/// the cgroup2 mount, or, with `name` empty, of this process's own cgroup
/// (the `0::PATH` line of /proc/self/cgroup); it must exist.
pub(crate) fn cgroup_procs(name: &str) -> io::Result<std::path::PathBuf> {
    let mi = std::fs::read_to_string("/proc/self/mountinfo")?;
    let mount = mi.lines().filter_map(|l| crate::mountinfo::parse_line(l).ok()).find(|m| m.fstype == "cgroup2");
    let Some(m) = mount else {
        return Err(io::Error::other("no cgroup v2 (cgroup2) is mounted"));
    };
    let own = std::fs::read_to_string("/proc/self/cgroup")?;
    let rel = match name {
        "" => own.lines().find_map(|l| l.strip_prefix("0::")).unwrap_or("/"),
        n => n,
    };
    let procs = std::path::Path::new(&m.mount_point).join(rel.trim_start_matches('/')).join("cgroup.procs");
    std::fs::metadata(&procs).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", procs.display())))?;
    Ok(procs)
}

/// Move every task whose comm starts with `prefix` into the cgroup of
/// `procs` ([`cgroup_procs`]). The kernel's refusal is the error (EINVAL
/// for a kernel thread bound to its CPU).
pub(crate) fn set_threads_cgroup(prefix: &str, procs: &std::path::Path) -> io::Result<()> {
    each_thread(prefix, |pid| std::fs::write(procs, pid.to_string()))
}

/// `f` for every task whose comm starts with `prefix`; finding none is
/// NotFound, after looking again for up to [`THREADS_WAIT`]: on a loaded
/// board (a PREEMPT_RT one under TCG beside two others) `--priority` once
/// found no timerlat/N thread right after tracing went on.
fn each_thread(prefix: &str, mut f: impl FnMut(i32) -> io::Result<()>) -> io::Result<()> {
    let until = std::time::Instant::now() + THREADS_WAIT;
    loop {
        match each_thread_now(prefix, &mut f) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && std::time::Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

/// How long [`each_thread`] looks for the tracer's threads.
const THREADS_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

fn each_thread_now(prefix: &str, f: &mut impl FnMut(i32) -> io::Result<()>) -> io::Result<()> {
    let mut found = false;
    for e in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else { continue };
        if !std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.starts_with(prefix)) {
            continue;
        }
        f(pid)?;
        found = true;
    }
    if found {
        Ok(())
    } else {
        Err(io::ErrorKind::NotFound.into())
    }
}

/// Run the calling process (and the threads it starts later) on `cpus`
/// only: rtla's -H, housekeeping CPUs.
pub(crate) fn pin_self(cpus: &[u32]) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t, filled with CPU_SET, for this process.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpus.is_empty() || cpus.iter().any(|&c| c >= 1024) {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        for &c in cpus {
            libc::CPU_SET(c as usize, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Ask the kernel for at most `us` microseconds of wake-up latency (PM QoS
/// through /dev/cpu_dma_latency, as rtla's --dma-latency: a binary s32
/// written to it), for as long as the file stays open.
pub(crate) fn hold_dma_latency(us: i32) -> io::Result<std::fs::File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open("/dev/cpu_dma_latency")?;
    f.write_all(&us.to_ne_bytes())?;
    Ok(f)
}

/// The `disable` files of `cpu`'s cpuidle states deeper than `n` (their
/// number above it: /sys/devices/system/cpu/cpuN/cpuidle/stateM/disable),
/// as rtla's --deepest-idle-state disables them. Err: the cpuidle
/// directory, which this system (or CPU) does not have.
pub(crate) fn idle_states_past(cpu: u32, n: i32) -> Result<Vec<std::path::PathBuf>, std::path::PathBuf> {
    states_past(std::path::PathBuf::from(format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle")), n)
}

/// [`idle_states_past`] in the cpuidle directory `dir`.
fn states_past(dir: std::path::PathBuf, n: i32) -> Result<Vec<std::path::PathBuf>, std::path::PathBuf> {
    let Ok(states) = std::fs::read_dir(&dir) else { return Err(dir) };
    let deeper = |name: &str| name.strip_prefix("state").and_then(|m| m.parse::<i32>().ok()).is_some_and(|m| m > n);
    Ok(states
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(deeper))
        .map(|e| e.path().join("disable"))
        .collect())
}

/// timerlat's user-space threads: one process per CPU (`timerlatu/N`, as
/// rtla 7.2's timerlat_u.c forks them), pinned to its CPU, SCHED_FIFO 95
/// unless a policy is given, that opens `osnoise/per_cpu/cpuN/timerlat_fd`
/// and reads it: each read returns at the next period, the kernel
/// recording the IRQ, thread and return-to-user latencies (context 0, 1,
/// 2). Processes, not threads: the kernel stops such a reader with
/// SIGKILL when the tracer stops (trace_osnoise.c, stop_kthread), which
/// would end trbox itself. The kernel lets only a task pinned to that one
/// CPU open the file (EPERM), and only with the timerlat tracer on and
/// NO_OSNOISE_WORKLOAD in osnoise/options (EINVAL); once per CPU (EBUSY).
/// Dropped: each is killed and reaped (each also dies with trbox:
/// PR_SET_PDEATHSIG).
pub(crate) struct UserThreads(Vec<libc::pid_t>);

impl UserThreads {
    /// Start one per CPU of `cpus`; `osnoise` is the tracefs path of
    /// `osnoise/`. The first failure of a child is the error (its CPU, the
    /// step: 0 affinity, 1 policy, 2 open, 3 the pipe they report on; the
    /// kernel's errno), the others stopped.
    pub(crate) fn start(osnoise: &Path, cpus: &[u32], s: Option<Sched>) -> Result<UserThreads, (u32, u32, io::Error)> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: a valid array of two ints.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err((0, 3, io::Error::last_os_error()));
        }
        // SAFETY: no arguments.
        let parent = unsafe { libc::getpid() };
        let mut me = UserThreads(Vec::new());
        for &cpu in cpus {
            // Made before the fork: the child only makes system calls.
            let path = format!("{}/per_cpu/cpu{cpu}/timerlat_fd\0", osnoise.display());
            let name = format!("timerlatu/{cpu}\0");
            // SAFETY: the child makes only async-signal-safe calls (system
            // calls on values made before the fork) and ends in _exit.
            match unsafe { libc::fork() } {
                // SAFETY: as above.
                0 => unsafe { user_thread(cpu, &name, &path, s, fds[1], parent) },
                pid if pid > 0 => me.0.push(pid),
                _ => break,
            }
        }
        // A child writes its CPU, step and errno, or closes its end once
        // reading: EOF when all of them read (or a fork failed: fewer).
        let mut b = [0u32; 3];
        // SAFETY: our own descriptors; a buffer of 12 bytes.
        let n = unsafe {
            libc::close(fds[1]);
            let n = libc::read(fds[0], b.as_mut_ptr().cast(), 12);
            libc::close(fds[0]);
            n
        };
        if n == 12 || me.0.len() < cpus.len() {
            return Err((b[0], b[1], io::Error::from_raw_os_error(b[2] as i32)));
        }
        Ok(me)
    }
}

/// The child of [`UserThreads::start`] for `cpu`: `name` and `path` end
/// in a NUL.
///
/// # Safety
/// Called in a forked child only.
unsafe fn user_thread(cpu: u32, name: &str, path: &str, s: Option<Sched>, report: libc::c_int, parent: i32) -> ! {
    // SAFETY: system calls on values made before the fork.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // trbox ended before the death signal was asked for: nobody would
        // ever stop this reader.
        if libc::getppid() != parent {
            libc::_exit(1)
        }
        libc::prctl(libc::PR_SET_NAME, name.as_ptr());
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        let mut step = 0;
        if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0 {
            step = 1;
            if set_one(0, s.unwrap_or(Sched::Fifo(95))) == 0 {
                step = 2;
                let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::close(report);
                    let mut b = [0u8; 8];
                    while libc::read(fd, b.as_mut_ptr().cast(), 8) >= 0 || *libc::__errno_location() == libc::EINTR {}
                    libc::_exit(0)
                }
            }
        } else if *libc::__errno_location() == libc::EINVAL {
            // An offline CPU (osnoise/cpus and tracefs's per_cpu/ name
            // every possible CPU): nothing runs there to measure. rtla 7.2's
            // child for it ends the same way (timerlat_u.c, "is the CPU
            // online?"), the others measure.
            libc::close(report);
            libc::_exit(0)
        }
        let b = [cpu, step, *libc::__errno_location() as u32];
        libc::write(report, b.as_ptr().cast(), 12);
        libc::_exit(1)
    }
}

impl Drop for UserThreads {
    fn drop(&mut self) {
        for &pid in &self.0 {
            // SAFETY: our own children, killed and reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_states_past_n_are_the_deeper_ones() {
        let dir = std::env::temp_dir().join(format!("trbox-cpuidle-{}", std::process::id()));
        for d in ["state0", "state1", "state2", "state10", "driver"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let mut got = states_past(dir.clone(), 1).unwrap();
        got.sort();
        assert_eq!(got, [dir.join("state10/disable"), dir.join("state2/disable")]);
        assert_eq!(states_past(dir.clone(), -1).unwrap().len(), 4);
        assert!(states_past(dir.clone(), 10).unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(states_past(dir.clone(), 0), Err(dir));
    }

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
