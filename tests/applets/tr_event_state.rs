//! tr-event and what a run leaves behind: the targets of event triggers as
//! they were found, the events `-k` keeps; a trigger the kernel lacks;
//! `--json`.

use super::common;
use common::*;
use std::path::Path;

fn enable(root: &Path, ev: &str) -> String {
    std::fs::read_to_string(root.join("events").join(ev).join("enable")).unwrap().trim().to_string()
}

/// An enable_event trigger that fired leaves its target enabled for real
/// once it is removed, a disable_event one its target disabled: the
/// kernel drops the soft mode and keeps what the trigger set
/// (trace_events.c `__ftrace_event_enable_disable()`). The run puts the
/// target back as it found it (issue 39).
#[test]
fn an_event_triggers_target_is_left_as_found() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let mut g = Guard::new(&root);
    let target = "sched/sched_process_exit";
    for (on, trigger) in
        [("0", "enable_event:sched:sched_process_exit"), ("1", "disable_event:sched:sched_process_exit")]
    {
        assert!(g.set(&format!("events/{target}/enable"), on));
        let before = snapshot(&root);
        let o = run(&["tr-event", "sched:sched_process_exec", "-R", trigger, "--", "true"]);
        let (after, left) = (snapshot(&root), enable(&root, target));
        // Put back by hand what a failing run left, before any assertion.
        std::fs::write(root.join("events").join(target).join("enable"), on).unwrap();
        assert_eq!(o.status.code(), Some(0), "{trigger}: {}", stderr(&o));
        // It fired: the exec was recorded.
        assert!(stdout(&o).contains("sched_process_exec:"), "{trigger}: {}", stdout(&o));
        assert_eq!(left, on, "{trigger}");
        assert_same_state(&before, &after);
    }
    drop(g);
}

/// A trigger whose command the kernel lacks (hist without
/// CONFIG_HIST_TRIGGERS) is named with the ones it has, from the event's
/// trigger file, not "check the syntax" (issue 39); nothing is changed.
#[test]
fn a_trigger_the_kernel_lacks_is_named() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let listed = std::fs::read_to_string(root.join("events/sched/sched_switch/trigger")).unwrap();
    let have = trbox::ctl::available_triggers(&listed);
    let mut cases = vec![("nosuch:1", "nosuch", "")];
    match &have {
        Some(h) if !h.contains(&"hist") => {
            cases.push(("hist:keys=prev_pid", "hist", " (CONFIG_HIST_TRIGGERS is not set)"))
        }
        _ => skip_absent("this kernel has hist triggers (or sched_switch has a trigger): only a made-up one is tried"),
    }
    for (trigger, name, config) in cases {
        let o = run(&["tr-event", "sched:sched_switch", "-R", trigger, "-t", "0.2"]);
        assert_eq!(o.status.code(), Some(2), "{trigger}: {}", stderr(&o));
        let e = stderr(&o);
        if let Some(h) = &have {
            let want =
                format!("tr-event: this kernel has no '{name}' trigger{config}; its triggers: {}\n", h.join(" "));
            assert!(e.starts_with(&want), "{trigger}: {e}");
        }
        assert!(!e.contains("check the syntax"), "{e}");
    }
    assert_same_state(&before, &snapshot(&root));
}

/// `-k`: the events stay enabled after the run (the filter too).
#[test]
fn keep_leaves_the_events_enabled() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let ev = "sched/sched_process_exec";
    let was = enable(&root, ev);
    let o = run(&["tr-event", "sched:sched_process_exec", "-k", "--", "true"]);
    let kept = enable(&root, ev);
    std::fs::write(root.join("events").join(ev).join("enable"), &was).unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(kept, "1");
    assert_same_state(&before, &snapshot(&root));
}

/// `--json`: one JSON object per event, the event named in it.
#[test]
fn json_prints_one_object_per_event() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let o = run(&["tr-event", "sched:sched_process_exec", "--json", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().any(|l| l.contains(r#""event":"sched:sched_process_exec""#)), "{out}");
    assert!(out.lines().all(|l| l.starts_with('{') && l.ends_with('}')), "{out}");
    assert_same_state(&before, &snapshot(&root));
}
