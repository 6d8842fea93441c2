//! tr-lat's max-latency modes: the kernel's wakeup_rt, wakeup, wakeup_dl,
//! irqsoff, preemptoff and preemptirqsoff tracers, each new maximum as
//! the kernel's trace text.

use super::args::Args;
use super::setup::instead;
use crate::applets::cli::{self, Common, Error};
use crate::applets::command;
use crate::applets::session::Live;
use std::io::Write as _;
use trbox::lat;
use trbox::sys::read::Out;
use trbox::sys::{signals, Tracefs};

/// The max-latency tracers (wakeup_rt, irqsoff...): the tracer runs (with
/// tracing_thresh = --irq-us US); each new maximum, or each latency over the
/// threshold, is noticed through tracing_max_latency (inotify, which the
/// kernel sends since 5.5; a read every 100 ms before) and printed, or
/// saved as DIR/N.txt, as the kernel's `trace` text of the max buffer
/// (snapshot_raw is EBUSY for these tracers: the text is all there is).
/// Its options are checked ([`super::args::check`]).
pub(super) fn max_latency(common: &Common, a: &Args) -> Result<(), Error> {
    let name = a.mode();
    if common.instance.is_some() {
        return Err(Error::usage(format!("tr-lat {name} runs at the top level (the max buffer is the top level's)")));
    }
    let t = Tracefs::open(common.tracefs.as_deref())?;
    crate::applets::session::require_live(&t)?;
    t.require_tracer(name).map_err(|e| Error::from(e).hint(instead(name)))?;
    let live = Live::enter(t, common, a.keep)?;
    let (t, wake) = (&live.t, live.wake);
    let mut st = live.state(a.keep, None)?;
    if let Some(us) = a.irq_us {
        st.set("tracing_thresh", &us.to_string())?;
    }
    st.set("tracing_max_latency", "0")?;
    st.set_tracer(name)?;
    let w = command::Window::open(&mut st, t.tracing_on_file(), a.time.map(|s| s.0))?;
    let watch = trbox::sys::watch::Watch::new(&t.path("tracing_max_latency"));
    let (mut last, mut n) = (0, 0);
    let mut out = Out::stdout();
    while signals::stop_requested().is_none() && !out.broken() {
        let told = watch.wait(wake, 100);
        let v = t.read("tracing_max_latency").ok().and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0);
        if v == 0 || !told && v == last || signals::stop_requested().is_some() {
            continue;
        }
        // The kernel raises the value before it swaps the max buffer in: a
        // trace without its "# latency: N us" line is read again. N, not
        // the value read before, goes with the trace.
        let text = t.read("trace")?;
        let Some(v) = text.split("# latency: ").nth(1).and_then(|r| r.split(' ').next()?.parse::<u64>().ok()) else {
            continue;
        };
        last = v;
        n += 1;
        let file = a.output.as_ref().map(|d| format!("{d}/{n}.txt"));
        if let Some(f) = &file {
            // Created (never a symlink followed, nor a file not ours written over).
            trbox::sys::record::create_output(f.as_ref())
                .and_then(|mut o| o.write_all(text.as_bytes()).map_err(|e| trbox::sys::Error::io(f, e)))?;
        }
        if a.json {
            let _ = lat::write_max_json(&mut out, name, n, v, file.as_deref(), &text);
        } else {
            let _ = match &file {
                Some(f) => writeln!(out, "{name} maximum {n}: {v} us, saved as {f}"),
                None => writeln!(out, "# {name} maximum {n}: {v} us (tracing_max_latency)\n{text}"),
            };
        }
        out.line_done();
    }
    drop(w);
    drop(st);
    out.finish()?;
    if n == 0 {
        let over = a.irq_us.map(|us| format!(" over {us} us")).unwrap_or_default();
        cli::note(&Error::runtime(format!("no {name} latency{over} was recorded")).hint("try a longer -t, under load"));
    }
    Ok(())
}
