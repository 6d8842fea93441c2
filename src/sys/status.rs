//! Read-only snapshot of the tracing state for `tr-on` (like `trace-cmd
//! stat`). Every item is read on its own, so a file the kernel refuses (EPERM
//! with dynamic ftrace disabled, lockdown) or lacks spoils only that item.

use super::error::Error;
use super::tracefs::Tracefs;
use crate::ctl::{self, CpuStats};
use std::io;

/// Why an item could not be shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unavailable {
    /// This kernel has no such file.
    Absent,
    /// EPERM / EACCES.
    NotPermitted(&'static str),
    /// Anything else, already described.
    Failed(String),
}

/// A value read, or why it could not be.
pub(crate) type Item<T> = Result<T, Unavailable>;

fn unavail(e: Error) -> Unavailable {
    match e {
        Error::Io { err, .. } => match (err.kind(), err.raw_os_error()) {
            (io::ErrorKind::NotFound, _) => Unavailable::Absent,
            (_, Some(libc::EPERM)) => Unavailable::NotPermitted("EPERM"),
            (_, Some(libc::EACCES)) => Unavailable::NotPermitted("EACCES"),
            _ => Unavailable::Failed(super::error::describe(&err)),
        },
        e => Unavailable::Failed(e.to_string()),
    }
}

fn item<T>(r: Result<T, Error>) -> Item<T> {
    r.map_err(unavail)
}

/// One event that is enabled or carries a filter or trigger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EventState {
    /// `sys:event`
    pub(crate) name: String,
    /// The `enable` file: `1`, `0`, or `0*`/`1*` (soft mode, used by triggers).
    pub(crate) enable: String,
    /// Its `filter`, when set.
    pub(crate) filter: Option<String>,
    /// Its `trigger` lines.
    pub(crate) triggers: Vec<String>,
}

/// Per-CPU buffer statistics and size.
#[derive(Debug, Clone)]
pub(crate) struct CpuState {
    /// The CPU.
    pub(crate) cpu: u32,
    /// Its `per_cpu/cpuN/stats`.
    pub(crate) stats: Item<CpuStats>,
    /// Its `per_cpu/cpuN/buffer_size_kb`.
    pub(crate) buffer_kb: Item<String>,
}

/// Everything `tr-on` shows.
#[derive(Debug, Clone)]
pub(crate) struct Status {
    /// `current_tracer`.
    pub(crate) tracer: Item<String>,
    /// `available_tracers`.
    pub(crate) available_tracers: Item<Vec<String>>,
    /// `tracing_on`, or `tracing_enabled` on old kernels; the bool says
    /// which file it came from (true = old name).
    pub(crate) tracing_on: Item<(String, bool)>,
    /// `trace_clock`.
    pub(crate) clock: Item<String>,
    /// `buffer_size_kb`.
    pub(crate) buffer_kb: Item<String>,
    /// `buffer_total_size_kb`.
    pub(crate) buffer_total_kb: Item<String>,
    /// `buffer_subbuf_size_kb`.
    pub(crate) subbuf_kb: Item<String>,
    /// `tracing_thresh`.
    pub(crate) tracing_thresh: Item<String>,
    /// The events that are enabled or carry a filter or trigger.
    pub(crate) events: Item<Vec<EventState>>,
    /// `set_ftrace_filter`.
    pub(crate) ftrace_filter: Item<Vec<String>>,
    /// `set_ftrace_notrace`.
    pub(crate) ftrace_notrace: Item<Vec<String>>,
    /// `set_graph_function`.
    pub(crate) graph_function: Item<Vec<String>>,
    /// `set_ftrace_pid`.
    pub(crate) ftrace_pid: Item<Vec<String>>,
    /// `set_event_pid`.
    pub(crate) event_pid: Item<Vec<String>>,
    /// `options/function-fork` and `options/event-fork`: with them on, the
    /// kernel takes exited pids out of the lists, and an emptied list
    /// reads empty while it still filters out every task.
    pub(crate) function_fork: Item<String>,
    /// `options/event-fork`.
    pub(crate) event_fork: Item<String>,
    /// Every `options/NAME` file and whether it is on.
    pub(crate) options: Item<Vec<(String, bool)>>,
    /// `dynamic_events`: the probes defined.
    pub(crate) dynamic_events: Item<Vec<String>>,
    /// The instances under `instances/`.
    pub(crate) instances: Item<Vec<String>>,
    /// Each CPU's buffer.
    pub(crate) cpus: Item<Vec<CpuState>>,
}

fn lines(r: Item<String>) -> Item<Vec<String>> {
    r.map(|t| {
        ctl::entries(&t)
            // set_ftrace_pid says "no pid" on old kernels; set_ftrace_filter a
            // "#### all functions enabled ####" banner (skipped as a comment).
            .filter(|l| *l != "no pid")
            .map(String::from)
            .collect()
    })
}

impl Status {
    /// Read it all from `t` (what cannot be read says why).
    pub(crate) fn read(t: &Tracefs) -> Status {
        let rd = |f: &str| item(t.read(f));
        let tracing_on = match rd("tracing_on") {
            Err(Unavailable::Absent) => rd("tracing_enabled").map(|s| (s.trim().to_string(), true)),
            r => r.map(|s| (s.trim().to_string(), false)),
        };
        let dynamic_events = match rd("dynamic_events") {
            Err(Unavailable::Absent) => {
                // Before ~5.0 probes live in two files; either may be absent.
                let k = rd("kprobe_events");
                let u = rd("uprobe_events");
                match (k, u) {
                    (Err(e), Err(_)) => Err(e),
                    (k, u) => Ok(format!("{}{}", k.unwrap_or_default(), u.unwrap_or_default())),
                }
            }
            r => r,
        };
        Status {
            tracer: rd("current_tracer").map(|s| s.trim().to_string()),
            available_tracers: rd("available_tracers").map(|s| s.split_whitespace().map(String::from).collect()),
            tracing_on,
            clock: rd("trace_clock").map(|s| ctl::selected(&s).unwrap_or(s.trim()).to_string()),
            buffer_kb: rd("buffer_size_kb").map(|s| s.trim().to_string()),
            buffer_total_kb: rd("buffer_total_size_kb").map(|s| s.trim().to_string()),
            subbuf_kb: rd("buffer_subbuf_size_kb").map(|s| s.trim().to_string()),
            tracing_thresh: rd("tracing_thresh").map(|s| s.trim().to_string()),
            events: read_events(t),
            ftrace_filter: lines(rd("set_ftrace_filter")),
            ftrace_notrace: lines(rd("set_ftrace_notrace")),
            graph_function: lines(rd("set_graph_function")),
            ftrace_pid: lines(rd("set_ftrace_pid")),
            event_pid: lines(rd("set_event_pid")),
            function_fork: rd("options/function-fork").map(|s| s.trim().to_string()),
            event_fork: rd("options/event-fork").map(|s| s.trim().to_string()),
            options: read_options(t),
            dynamic_events: lines(dynamic_events),
            instances: if t.instance.is_some() { Err(Unavailable::Absent) } else { item(t.instances()) },
            cpus: read_cpus(t),
        }
    }
}

fn read_events(t: &Tracefs) -> Item<Vec<EventState>> {
    let systems = item(t.list_dir("events"))?;
    // An event that set_event does not list is off ("0") and has no
    // trigger: only its filter is read, a third of the files. With syscall
    // events a kernel has some 2,000 events, and each file costs a path
    // walk in tracefs: a minute on a loaded TCG board.
    let on = t.set_events();
    let mut out = Vec::new();
    // ftrace's own events (the tracers' records) have no enable file.
    for sys in systems.iter().filter(|s| *s != "ftrace") {
        let sys_dir = format!("events/{sys}");
        let Ok(evs) = t.list_dir(&sys_dir) else { continue };
        for ev in evs {
            let dir = format!("{sys_dir}/{ev}");
            // Directories only: skip the system's own enable/filter files.
            let Ok(filter) = t.read(&format!("{dir}/filter")) else { continue };
            let filter = ctl::filter(&filter).map(String::from);
            let listed = on.as_ref().map_or(true, |on| on.iter().any(|(s, e)| s == sys && *e == ev));
            let (enable, triggers) = if listed {
                let Ok(enable) = t.read(&format!("{dir}/enable")) else { continue };
                let trig = t.read(&format!("{dir}/trigger")).unwrap_or_default();
                (enable.trim().to_string(), ctl::triggers(&trig).map(String::from).collect())
            } else {
                ("0".to_string(), Vec::new())
            };
            if enable != "0" || filter.is_some() || !triggers.is_empty() {
                out.push(EventState { name: format!("{sys}:{ev}"), enable, filter, triggers });
            }
        }
    }
    Ok(out)
}

fn read_options(t: &Tracefs) -> Item<Vec<(String, bool)>> {
    if !t.exists("options") {
        return Err(Unavailable::Absent);
    }
    let on = |n: String| {
        let v = t.read(&format!("options/{n}")).is_ok_and(|v| v.trim() == "1");
        (n, v)
    };
    Ok(item(t.list_dir("options"))?.into_iter().map(on).collect())
}

fn read_cpus(t: &Tracefs) -> Item<Vec<CpuState>> {
    let cpus = item(t.cpus())?;
    Ok(cpus
        .into_iter()
        .map(|cpu| {
            let d = format!("per_cpu/cpu{cpu}");
            CpuState {
                cpu,
                stats: item(t.read(&format!("{d}/stats"))).map(|s| CpuStats::parse(&s)),
                buffer_kb: item(t.read(&format!("{d}/buffer_size_kb"))).map(|s| s.trim().to_string()),
            }
        })
        .collect())
}
