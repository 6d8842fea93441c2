//! `tr-on --reset`: put a buffer (the top level or one instance) back to a
//! clean default, like perf-tools' reset-ftrace: tracer nop, every event off
//! with no filter or trigger, no pid or function filters, no dynamic events,
//! the trace options at their kernel defaults, clock `local`,
//! tracing on. Buffer sizes and other instances are left alone. Only values
//! that differ are written; a file that cannot be changed does not stop the
//! rest.

use super::error::Error;
use super::state::State;
use super::tracefs::Tracefs;
use crate::ctl;

/// Pid and function lists, emptied.
const LISTS: &[&str] = &[
    "set_event_pid",
    "set_event_notrace_pid",
    "set_ftrace_pid",
    "set_ftrace_notrace_pid",
    "set_ftrace_filter",
    "set_ftrace_notrace",
    "set_graph_function",
    "set_graph_notrace",
    "stack_trace_filter",
];

/// The pid lists of [`LISTS`].
const PID_LISTS: &[&str] = &["set_event_pid", "set_event_notrace_pid", "set_ftrace_pid", "set_ftrace_notrace_pid"];

/// A pid list file that names no pid (`no pid` on older kernels).
fn no_pids(text: &str) -> bool {
    ctl::entries(text).all(|l| l == "no pid")
}

/// Reset `t` (top level or instance). Returns what could not be reset; the
/// caller tells EPERM (skipped: the kernel refuses that file) from real
/// failures.
pub(crate) fn reset(t: &Tracefs) -> Vec<Error> {
    let mut st = State::new(t);
    st.set_keep(true);
    let mut failed = Vec::new();
    let mut note = |r: Result<bool, Error>| {
        if let Err(e) = r {
            failed.push(e);
        }
    };
    if t.exists("current_tracer") {
        note(st.set("current_tracer", "nop"));
    }
    // Triggers first: they hold events in soft mode and may use synthetic
    // events, which could not be removed while in use.
    let systems = t.list_dir("events").unwrap_or_default();
    let mut event_dirs = Vec::new();
    for sys in &systems {
        let sys_dir = format!("events/{sys}");
        if !t.path(&sys_dir).is_dir() {
            continue;
        }
        for ev in t.list_dir(&sys_dir).unwrap_or_default() {
            let dir = format!("{sys_dir}/{ev}");
            if t.path(&dir).is_dir() {
                event_dirs.push(dir);
            }
        }
    }
    for dir in &event_dirs {
        let rel = format!("{dir}/trigger");
        let Ok(text) = t.read(&rel) else { continue };
        for tr in ctl::triggers(&text) {
            note(t.append(&rel, &format!("!{}", trigger_removal(tr))).map(|()| true));
        }
    }
    if t.exists("events/enable") {
        note(st.set("events/enable", "0"));
    }
    for dir in &event_dirs {
        let rel = format!("{dir}/filter");
        if t.read(&rel).is_ok_and(|f| ctl::filter(&f).is_some()) {
            note(t.write(&rel, "0").map(|()| true));
        }
    }
    // A system's filter file shows help (`#` lines) when none is set.
    for sys in &systems {
        let rel = format!("events/{sys}/filter");
        if t.read(&rel).is_ok_and(|f| ctl::entries(&f).any(|l| l != "none")) {
            note(t.write(&rel, "0").map(|()| true));
        }
    }
    for rel in LISTS {
        if !t.exists(rel) {
            continue;
        }
        if PID_LISTS.contains(rel) {
            // Written even when it reads empty: once the kernel takes the
            // last (exited) pid out of a list, the file reads empty but the
            // empty list still filters out every task (kernel/trace
            // trace_events.c, ftrace.c: the list is freed only by a write).
            // Where the kernel refuses the file (EPERM) it cannot hold one.
            match t.write(rel, "") {
                Err(e) if e.errno() == Some(libc::EPERM) && t.read(rel).is_ok_and(|l| no_pids(&l)) => {}
                r => note(r.map(|()| true)),
            }
        } else {
            note(st.set_list(rel, &[]));
        }
    }
    // Dynamic events are global (no such files in an instance); truncating
    // the file removes them all, now that none is enabled.
    let dyn_files: &[&str] =
        if t.exists("dynamic_events") { &["dynamic_events"] } else { &["kprobe_events", "uprobe_events"] };
    for rel in dyn_files {
        if t.read(rel).is_ok_and(|d| ctl::entries(&d).next().is_some()) {
            note(t.write(rel, "").map(|()| true));
        }
    }
    // Each option this kernel has, back to its value at boot (one it is
    // newer than trbox's table for stays as it is).
    for name in t.list_dir("options").unwrap_or_default() {
        if let Some(on) = crate::kernel::option_default(&name, t.instance.is_some()) {
            note(st.set_option(&name, on));
        }
    }
    if t.read("trace_clock").is_ok_and(|c| ctl::choices(&c).contains(&"local")) {
        note(st.set("trace_clock", "local"));
    }
    for rel in ["tracing_thresh", "max_graph_depth"] {
        if t.exists(rel) {
            note(st.set(rel, "0"));
        }
    }
    let on = t.tracing_on_file();
    if t.exists(on) {
        note(st.set(on, "1"));
    }
    failed
}

/// The text that removes a trigger as the `trigger` file lists it: the
/// kernel matches most triggers by command alone (`!stacktrace`), the
/// event-enabling ones by their target, hist triggers by their keys.
fn trigger_removal(listed: &str) -> &str {
    let t = listed.trim();
    let t = t.strip_suffix("[active]").or_else(|| t.strip_suffix("[paused]")).unwrap_or(t).trim_end();
    let t = t.split(" if ").next().unwrap_or(t).trim_end();
    if t.starts_with("hist") {
        return t;
    }
    let parts = if t.starts_with("enable_") || t.starts_with("disable_") { 3 } else { 1 };
    let end = t.match_indices(':').nth(parts - 1).map_or(t.len(), |(i, _)| i);
    &t[..end]
}

#[cfg(test)]
mod tests {
    use super::trigger_removal;

    #[test]
    fn removal_text() {
        assert_eq!(trigger_removal("stacktrace:unlimited"), "stacktrace");
        assert_eq!(trigger_removal("traceoff:1 if prev_pid == 1"), "traceoff");
        assert_eq!(trigger_removal("enable_event:sched:sched_wakeup:unlimited"), "enable_event:sched:sched_wakeup");
        assert_eq!(
            trigger_removal("hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]"),
            "hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048"
        );
        assert_eq!(trigger_removal("snapshot"), "snapshot");
    }
}
