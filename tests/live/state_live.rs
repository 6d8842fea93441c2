//! The state layer against the live tracefs: every change is undone, values
//! already set are not written, and rejected values carry the kernel's reason.

use super::common;
use common::*;
use trbox::sys::state::State;
use trbox::sys::{Error, Tracefs};

#[test]
fn changes_are_restored_exactly() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let t = Tracefs::at(&root).unwrap();
    {
        let mut st = State::new(&t);
        let ev = "events/sched/sched_switch";
        assert!(st.set(&format!("{ev}/enable"), "1").unwrap());
        assert!(!st.set(&format!("{ev}/enable"), "1").unwrap(), "same value written twice");
        assert!(st.set_filter(ev, Some("prev_pid != 0")).unwrap());
        assert!(st.add_trigger(ev, "stacktrace if prev_pid == 1").unwrap());
        assert!(!st.add_trigger(ev, "stacktrace if prev_pid == 1").unwrap());
        assert!(st.set("options/sym-offset", "1").unwrap());
        assert!(st.set("trace_clock", "global").unwrap());
        assert!(!st.set("trace_clock", "global").unwrap());
        st.set_list("set_event_pid", &[std::process::id().to_string()]).unwrap();
        assert_eq!(std::fs::read_to_string(root.join(format!("{ev}/filter"))).unwrap().trim(), "prev_pid != 0");
        assert!(std::fs::read_to_string(root.join(format!("{ev}/trigger"))).unwrap().contains("stacktrace"));
        assert_eq!(trbox::ctl::selected(&std::fs::read_to_string(root.join("trace_clock")).unwrap()), Some("global"));
    }
    assert_same_state(&before, &snapshot(&root));
}

#[test]
fn rejected_filter_shows_the_kernel_reason_and_leaves_nothing() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let t = Tracefs::at(&root).unwrap();
    {
        let mut st = State::new(&t);
        let e = st.set_filter("events/sched/sched_switch", Some("prev_pid ==")).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::Rejected { .. }), "{msg}");
        if root.join("error_log").exists() {
            assert!(msg.contains("Command: prev_pid =="), "{msg}");
            assert!(msg.lines().last().unwrap().trim() == "^", "{msg}");
        }
        // A command the event's trigger file does not list is not written
        // (with triggers on the event, the file lists those instead).
        let listed = std::fs::read_to_string(root.join("events/sched/sched_switch/trigger")).unwrap();
        let e = st.add_trigger("events/sched/sched_switch", "nosuchtrigger").unwrap_err();
        match trbox::ctl::available_triggers(&listed) {
            Some(_) => assert!(matches!(&e, Error::NoTrigger { name, .. } if name == "nosuchtrigger"), "{e}"),
            None => assert!(matches!(e, Error::Rejected { .. }), "{e}"),
        }
    }
    assert_same_state(&before, &snapshot(&root));
}

/// What tr-on and tr-graph select through the state layer: tracers (a
/// missing one names those the kernel has), options, function lists (EPERM
/// where dynamic ftrace is refused), all undone.
#[test]
fn tracer_options_and_function_lists() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    let t = Tracefs::at(&root).unwrap();
    let avail = std::fs::read_to_string(root.join("available_tracers")).unwrap();
    {
        let mut st = State::new(&t);
        match st.set_tracer("no_such_tracer").unwrap_err() {
            Error::NoTracer { name, available } => {
                assert_eq!(name, "no_such_tracer");
                assert!(available.iter().any(|a| a == "nop"), "{available:?}");
            }
            e => panic!("{e}"),
        }
        assert!(!st.set_tracer("nop").unwrap());
        // A tracer other than nop, one that starts no busy kernel thread
        // (hwlat, osnoise and timerlat do): set, then undone below.
        let quiet = ["blk", "wakeup", "wakeup_rt", "wakeup_dl", "irqsoff", "function", "function_graph"];
        match quiet.iter().find(|q| avail.split_whitespace().any(|t| t == **q)) {
            Some(other) => match st.set_tracer(other) {
                Ok(changed) => {
                    assert!(changed);
                    assert_eq!(std::fs::read_to_string(root.join("current_tracer")).unwrap().trim(), *other);
                }
                // Dynamic ftrace refused (lockdown, or this machine's kernel).
                Err(e @ Error::FtraceRefused { .. }) if other.starts_with("function") => {
                    assert!(e.to_string().contains("refuses dynamic ftrace"), "{e}")
                }
                Err(e) => panic!("{other}: {e}"),
            },
            None => skip_absent(&format!("no tracer but nop and busy ones here: {avail}")),
        }
        assert!(st.set_option("sym-offset", true).unwrap());
        assert!(!st.set_option("sym-offset", true).unwrap());
        match st.set_functions("set_ftrace_filter", &["vfs_read".into()]) {
            Ok(changed) => assert!(changed),
            Err(e @ Error::FtraceRefused { .. }) => {
                assert!(e.to_string().contains("refuses dynamic ftrace"), "{e}");
                assert!(e.hint().unwrap().contains("tr-event"), "{e}");
            }
            Err(e) => panic!("{e}"),
        }
        match st.set_functions("set_ftrace_notrace", &["no_such_function_xyz".into()]) {
            Err(Error::FtraceRefused { .. } | Error::Rejected { .. }) => {}
            r => panic!("{:?}", r.map_err(|e| e.to_string())),
        }
    }
    assert_same_state(&before, &snapshot(&root));
}
