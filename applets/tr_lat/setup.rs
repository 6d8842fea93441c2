//! tr-lat's set-up of tracefs for a measuring mode, every change through a
//! `State` (undone at the end): the events of a tracepoint mode, or the
//! timerlat, osnoise or hwlat tracer with its osnoise/ files, in an
//! instance of its own where the kernel lets it run there.

use super::actions::Action;
use super::args::{mode_name, stop_armed, Args};
use crate::applets::cli::{self, Error};
use trbox::lat::{self, Mode};
use trbox::sys::event_dir;
use trbox::sys::state::State;
use trbox::sys::Tracefs;

/// --json: what the run set up, one line before the tables: as the kernel
/// reads it back (period, CPUs, stop thresholds, print_stack, osnoise
/// options, buffer size; hwlat's window, width and threshold) and as
/// tr-lat did it (whose threads, policy, warm-up, dma latency,
/// housekeeping CPUs, cgroup, idle states, the analysis, the actions).
pub(super) fn settings_json(t: &Tracefs, top: &Tracefs, a: &Args, mode: Mode, user: bool) -> String {
    use std::fmt::Write as _;
    let files: &[(&str, &str)] = match mode {
        Mode::Hwlat => &[("window_us", "hwlat_detector/window"), ("width_us", "hwlat_detector/width")],
        Mode::Timerlat => &[("period_us", "osnoise/timerlat_period_us"), ("stack_us", "osnoise/print_stack")],
        _ => &[("period_us", "osnoise/period_us"), ("runtime_us", "osnoise/runtime_us")],
    };
    let stops = [("irq_us", "osnoise/stop_tracing_us"), ("total_us", "osnoise/stop_tracing_total_us")];
    let hw = [("irq_us", "tracing_thresh")];
    let stops: &[_] = if mode == Mode::Hwlat { &hw } else { &stops };
    let mut w = format!("{{\"table\":\"settings\",\"mode\":\"{}\"", a.mode.as_deref().unwrap_or_default());
    // As the kernel reads them back: a number as it is, else a string.
    let mut kernel = |k: &str, v: &str| {
        let v = v.trim();
        let _ = write!(w, ",\"{k}\":");
        let _ = if v.parse::<i64>().is_ok() || v == "null" { w.write_str(v) } else { trbox::json::string(&mut w, v) };
    };
    for (k, f) in files.iter().chain(stops) {
        if let Ok(v) = top.read(f) {
            kernel(k, &v);
        }
    }
    kernel("buffer_size_kb", &t.read("buffer_size_kb").unwrap_or_default());
    // Milliseconds past i64 (292 million years) as i64::MAX.
    let ms = |s: Option<cli::Seconds>| s.map(|s| i64::try_from(s.0.as_millis()).unwrap_or(i64::MAX));
    let nums = [
        ("warm_up_ms", ms(a.warm_up)),
        ("dma_latency_us", a.dma_latency.map(i64::from)),
        ("deepest_idle_state", a.deepest_idle_state.map(i64::from)),
        ("time_ms", ms(a.time)),
    ];
    for (k, v) in nums {
        let _ = match v {
            Some(v) => write!(w, ",\"{k}\":{v}"),
            None => write!(w, ",\"{k}\":null"),
        };
    }
    let threads = match (mode, user, a.user_load) {
        (Mode::Timerlat, _, true) => "user-load",
        (Mode::Timerlat, true, _) => "user",
        _ => "kernel",
    };
    let strs = [
        ("threads", Some(threads.to_string())),
        ("cpus", top.read("osnoise/cpus").ok().filter(|_| mode != Mode::Hwlat).map(|c| c.trim().into())),
        ("osnoise_options", top.read("osnoise/options").ok().filter(|_| mode != Mode::Hwlat).map(|c| c.trim().into())),
        (
            "priority",
            a.priority.map(|p| {
                use trbox::sys::sched::Sched;
                let (c, v) = match p {
                    Sched::Fifo(v) => ('f', v),
                    Sched::Rr(v) => ('r', v),
                    Sched::Other(v) => ('o', v),
                };
                format!("{c}:{v}")
            }),
        ),
        ("house_keeping", a.house_keeping.as_ref().map(ToString::to_string)),
        ("cgroup", a.cgroup.clone()),
    ];
    for (k, v) in strs {
        let _ = write!(w, ",\"{k}\":");
        let _ = match v {
            Some(v) => trbox::json::string(&mut w, &v),
            None => w.write_str("null"),
        };
    }
    let _ = write!(w, ",\"analysis\":{}", a.aa(mode));
    for (k, acts) in [("on_threshold", &a.on_threshold), ("on_end", &a.on_end)] {
        let _ = write!(w, ",\"{k}\":[");
        for (i, act) in acts.iter().enumerate() {
            let t = match act {
                Action::Trace(Some(f)) => format!("trace,file={f}"),
                Action::Trace(None) => "trace".into(),
                Action::Signal(n, p) => format!("signal,num={n},pid={p}"),
                Action::Shell(c) => format!("shell,command={c}"),
                Action::Continue => "continue".into(),
            };
            let _ = w.write_str(if i > 0 { "," } else { "" });
            let _ = trbox::json::string(&mut w, &t);
        }
        w.push(']');
    }
    w.push_str("}\n");
    w
}

/// An instance of this run's own for `tracer`, where the kernel lets the
/// tracer run in one (timerlat and osnoise from 5.17: an instance's
/// available_tracers lists only those), so that the top buffer and its
/// tracer stay as they are; it is removed at the end. None otherwise (the
/// top buffer is used, and restored).
pub(super) fn own_instance(t: &Tracefs, tracer: &str) -> Option<Tracefs> {
    let mut i = t.top_level();
    i.enter_or_create_instance(&format!("trbox-lat-{}", std::process::id())).ok()?;
    i.read("available_tracers").ok()?.split_whitespace().any(|x| x == tracer).then_some(i)
}

/// syscall: the kernel has the per-call events (their names, one system
/// to enable), read instead of raw_syscalls.
fn has_syscall_events(t: &Tracefs, mode: Mode) -> bool {
    mode == Mode::Syscall && t.exists(&format!("{}/enable", event_dir(lat::SYSCALL_EVENTS)))
}

/// The events of a tracepoint mode exist? Otherwise one line naming what
/// is missing, and what works instead.
fn need_events(t: &Tracefs, mode: Mode) -> Result<(), Error> {
    if has_syscall_events(t, mode) {
        return Ok(());
    }
    for spec in mode.events().iter().filter(|s| !s.starts_with('?')) {
        if !spec.split('|').any(|e| t.exists(&format!("{}/format", event_dir(e)))) {
            let name = spec.replace('|', " or ");
            let other = match mode {
                Mode::Wakeup => "tr-lat irq and syscall need no sched events",
                Mode::Irq => "tr-lat wakeup and syscall need no irq events",
                _ => "tr-lat wakeup and irq need no syscall events",
            };
            return Err(Error::runtime(format!(
                "this kernel has no {name} event (see tr-event --list), which tr-lat {} reads",
                mode_name(mode)
            ))
            .hint(other));
        }
    }
    Ok(())
}

/// The events to enable: the first of each alternative the kernel has,
/// optional ones when present.
fn wanted_events(t: &Tracefs, mode: Mode) -> Vec<String> {
    if has_syscall_events(t, mode) {
        return vec![lat::SYSCALL_EVENTS.to_string()];
    }
    mode.events()
        .iter()
        .filter_map(|spec| {
            spec.trim_start_matches('?').split('|').find(|e| t.exists(&format!("{}/enable", event_dir(e))))
        })
        .map(String::from)
        .collect()
}

/// The osnoise/ files a timerlat or osnoise run sets (through `st`:
/// restored). Only what the kernel has: a missing file is named.
fn tracer_settings(st: &mut State, a: &Args, mode: Mode) -> Result<(), Error> {
    // -p sets a period and the part of it that runs: osnoise runtime_us
    // (the whole period, as by default), hwlat width (--width). The kernel
    // wants the part no longer than the period: shrinking the period below
    // the part as it is now, the part goes first.
    let (big, small, small_v) = match mode {
        Mode::Timerlat => ("osnoise/timerlat_period_us", "osnoise/runtime_us", None),
        Mode::Osnoise => ("osnoise/period_us", "osnoise/runtime_us", a.period),
        _ => ("hwlat_detector/window", "hwlat_detector/width", a.width),
    };
    let now = st.tracefs().read(small).ok().and_then(|r| r.trim().parse::<u64>().ok());
    let mut pair = [(big, a.period), (small, small_v)];
    if small_v.is_some() && a.period.is_some_and(|v| now.is_some_and(|s| v < s)) {
        pair.reverse();
    }
    let us = |v: Option<u64>| v.map(|v| v.to_string());
    let [(f0, v0), (f1, v1)] = pair;
    let wanted = [
        (f0, us(v0)),
        (f1, us(v1)),
        ("osnoise/cpus", a.cpus.as_ref().map(ToString::to_string)),
        (if mode == Mode::Hwlat { "tracing_thresh" } else { "osnoise/stop_tracing_us" }, us(a.irq_us)),
        ("osnoise/stop_tracing_total_us", us(a.total_us)),
        ("osnoise/print_stack", us(a.stack_us)),
    ];
    for (file, v) in wanted {
        let Some(v) = v else { continue };
        if !st.tracefs().exists(file) {
            return Err(Error::runtime(format!("this kernel has no {file} (too old for this option)")));
        }
        st.set(file, &v).map_err(|e| match file {
            // ERANGE, EINVAL: a CPU this system does not have.
            "osnoise/cpus" => Error::from(e).hint("/sys/devices/system/cpu/online lists this system's CPUs"),
            _ => e.into(),
        })?;
    }
    Ok(())
}

/// The tracepoint mode that works where the kernel lacks `tracer`.
pub(super) fn instead(tracer: &str) -> &'static str {
    match tracer.as_bytes().first() {
        Some(b'w') => "tr-lat wakeup [--rt] measures wakeup latency from the sched tracepoints, without it",
        Some(b'i' | b'p') => "tr-lat irq measures IRQ and softirq handler times from the irq tracepoints, without it",
        _ => "tr-lat wakeup, irq and syscall measure latencies from plain tracepoints, without it",
    }
}

/// The tracer a mode runs is there, or a tracepoint mode's events are.
pub(super) fn require(t: &Tracefs, a: &Args, mode: Mode, tracer: bool) -> Result<(), Error> {
    if tracer {
        return t.require_tracer(a.mode()).map_err(|e| Error::from(e).hint(instead(a.mode())));
    }
    need_events(t, mode)
}

/// timerlat: whose threads measure, user-space ones (true) or the
/// kernel's (rtla 7.2's timerlat_apply_config: user threads where cpu0's
/// timerlat_fd is, else the kernel's).
pub(super) fn user_threads(top: &Tracefs, a: &Args, mode: Mode) -> Result<bool, Error> {
    if mode != Mode::Timerlat || a.kernel_threads {
        return Ok(false);
    }
    let fd = top.exists("osnoise/per_cpu/cpu0/timerlat_fd");
    if !fd && (a.user_threads || a.user_load) {
        return Err(Error::runtime(
            "this kernel has no osnoise/per_cpu/cpuN/timerlat_fd (6.7+): no user-space timerlat threads",
        )
        .hint("without -u/-U, tr-lat timerlat measures from the kernel's threads"));
    }
    if !fd {
        log::info!("no timerlat_fd (6.7+): the kernel's timerlat threads measure");
    }
    Ok(fd)
}

/// The global (top level's) files of a tracer mode, through `global`: the
/// osnoise/ or hwlat_detector/ settings, hwnoise's and timerlat's osnoise
/// options, and the idle states of --deepest-idle-state.
pub(super) fn tracer(global: &mut State, top: &Tracefs, a: &Args, mode: Mode, user: bool) -> Result<(), Error> {
    tracer_settings(global, a, mode)?;
    if a.hw() && global.set_osnoise_option("OSNOISE_IRQ_DISABLE", true)?.is_none() {
        return Err(Error::runtime("this kernel's osnoise/options has no OSNOISE_IRQ_DISABLE (6.3+)")
            .hint("tr-lat osnoise measures all the noise"));
    }
    if mode == Mode::Timerlat && global.set_osnoise_option("OSNOISE_WORKLOAD", !user)?.is_none() && user {
        return Err(Error::runtime("this kernel's osnoise/options has no OSNOISE_WORKLOAD")
            .hint("tr-lat timerlat --kernel-threads works here"));
    }
    // rtla's --deepest-idle-state N: on the measured CPUs, every cpuidle
    // state past N disabled (put back after).
    if let Some(n) = a.deepest_idle_state {
        let online = top.cpus()?;
        for c in a.cpus.as_ref().map_or(online, |c| c.0.clone()) {
            let states = trbox::sys::sched::idle_states_past(c, n).map_err(|dir| {
                Error::runtime(format!("this system has no cpuidle ({}): no idle state to disable", dir.display()))
                    .hint("--dma-latency US keeps the CPUs out of deep idle states")
            })?;
            for disable in states {
                global.set_file(&disable, "1")?;
            }
        }
    }
    Ok(())
}

/// --cgroup: the cgroup's `cgroup.procs` (tr-lat's own cgroup without a
/// name).
pub(super) fn cgroup(a: &Args) -> Result<Option<std::path::PathBuf>, Error> {
    let Some(n) = &a.cgroup else { return Ok(None) };
    trbox::sys::sched::cgroup_procs(n)
        .map(Some)
        .map_err(|e| Error::runtime(format!("--cgroup: {e}")).hint("mount -t cgroup2 none /sys/fs/cgroup"))
}

/// --dma-latency: the request held open (the kernel drops it when the file
/// is closed, when tr-lat ends, however).
pub(super) fn dma_latency(a: &Args) -> Result<Option<std::fs::File>, Error> {
    let Some(us) = a.dma_latency else { return Ok(None) };
    trbox::sys::sched::hold_dma_latency(us)
        .map(Some)
        .map_err(|e| Error::runtime(format!("--dma-latency: /dev/cpu_dma_latency: {e}")))
}

/// The CPUs of timerlat's user-space threads: osnoise/cpus (every possible
/// CPU by default: the kernel prints its mask up to nr_cpu_ids); an
/// offline one's thread ends at once (UserThreads::start), as rtla's does.
/// None without such threads (`user` false, or -U: the user's own tasks).
pub(super) fn user_cpus(top: &Tracefs, a: &Args, user: bool) -> Result<Vec<u32>, Error> {
    if !user || a.user_load {
        return Ok(Vec::new());
    }
    let text = top.read("osnoise/cpus")?;
    trbox::ctl::cpu_list(&text)
        .map_err(|r| Error::runtime(format!("osnoise/cpus: cannot read '{r}' as a CPU list")).hint("please report it"))
}

/// The buffer's files, through `st`: a tracer mode's tracer (with the
/// osnoise events of the auto-analysis, the events of --dump-tasks, the
/// buffer's size), or a tracepoint mode's events.
pub(super) fn enable(st: &mut State, a: &Args, mode: Mode, tracer: bool) -> Result<(), Error> {
    let t = st.tracefs();
    if !tracer {
        for e in wanted_events(t, mode) {
            st.set(&format!("{}/enable", event_dir(&e)), "1")?;
        }
        return Ok(());
    }
    // A stop threshold: the osnoise events too (which IRQ, softirq,
    // thread or single noise came before the stop), as rtla's
    // auto-analysis enables them.
    if stop_armed(a, mode) && !a.no_aa && t.exists("events/osnoise/enable") {
        st.set("events/osnoise/enable", "1")?;
    }
    // --dump-tasks: what each CPU runs, and a kworker's function.
    for e in ["sched/sched_switch", "workqueue/workqueue_execute_start"].iter().filter(|_| a.dump_tasks) {
        let f = format!("events/{e}/enable");
        if t.exists(&f) {
            st.set(&f, "1")?;
        }
    }
    if let Some(kb) = a.trace_buffer_size {
        st.set("buffer_size_kb", &kb.to_string())?;
    }
    // The tracers raise it at each new maximum: put back after.
    st.set("tracing_max_latency", "0")?;
    st.set_tracer(a.mode())?;
    Ok(())
}

/// Once the tracer's threads run (tracing is on): --cgroup moves the
/// measuring threads into `cgroup` (its cgroup.procs), --priority sets the
/// kernel's threads' policy.
pub(super) fn running_threads(cgroup: Option<&std::path::Path>, a: &Args, mode: Mode, user: bool) -> Result<(), Error> {
    if let (Some(procs), false) = (cgroup, a.user_load) {
        let prefix = match (user, mode) {
            (true, _) => "timerlatu/",
            (_, Mode::Timerlat) => "timerlat/",
            _ => "osnoise/",
        };
        trbox::sys::sched::set_threads_cgroup(prefix, procs)
            .map_err(|e| Error::runtime(format!("--cgroup: the {prefix}N threads: {e}")))?;
    }
    if let Some(s) = a.priority.filter(|_| !user) {
        let prefix = if mode == Mode::Timerlat { "timerlat/" } else { "osnoise/" };
        trbox::sys::sched::set_threads(prefix, s)
            .map_err(|e| Error::runtime(format!("--priority: the {prefix}N threads: {e}")))?;
    }
    Ok(())
}
