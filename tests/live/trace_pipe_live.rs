//! The kernel's own text of the live buffer (`sys::trace_pipe`, what tr-on
//! and tr-event show in a build without the decoder): what was recorded in
//! the window comes out, consumed, and an empty window says so.

use super::common;
use common::*;
use std::time::{Duration, Instant};
use trbox::sys::read::Out;
use trbox::sys::state::State;
use trbox::sys::stop::Stop;
use trbox::sys::trace_pipe::TracePipe;
use trbox::sys::Tracefs;

/// An instance of its own: the top buffer is anyone's.
fn instance(root: &std::path::Path, name: &str) -> Tracefs {
    let mut t = Tracefs::at(root).unwrap();
    t.enter_or_create_instance(name).unwrap();
    t
}

#[test]
fn a_window_comes_out_as_the_kernel_prints_it() {
    let Some(root) = live_tracefs() else { return };
    let _l = TracefsLock::take();
    let before = snapshot(&root);
    {
        let t = instance(&root, &format!("trbox-pipe-{}", std::process::id()));
        let mut st = State::new(&t);
        st.set("tracing_on", "0").unwrap();
        st.set("events/sched/sched_process_exec/enable", "1").unwrap();
        let pipe = TracePipe::open(&t).unwrap();
        st.set("tracing_on", "1").unwrap();
        std::process::Command::new("/bin/true").status().unwrap();
        // The window closes once the exec is in the buffer: the kernel
        // wrote it before `true` could exit.
        let started = Instant::now();
        let mut out = Out::memory();
        let done = || {
            t.write("tracing_on", "0").unwrap();
            true
        };
        assert!(pipe.follow(&mut out, &Stop::when(&done)).unwrap(), "no text from trace_pipe");
        let text = String::from_utf8_lossy(out.bytes()).into_owned();
        assert!(text.contains("sched_process_exec: filename=/bin/true"), "{text}");
        assert!(started.elapsed() < Duration::from_secs(10));
        // Consumed: a second reader of the closed window gets nothing.
        let mut again = Out::memory();
        assert!(!TracePipe::open(&t).unwrap().follow(&mut again, &Stop::when(&|| true)).unwrap());
        assert!(again.bytes().is_empty());
    }
    assert_same_state(&before, &snapshot(&root));
}
