//! tr-lat: real-time latency. From plain tracepoints (wakeup, irq,
//! syscall: any kernel with sched, irq and raw_syscalls events), or from the
//! kernel's timerlat and osnoise tracers (tables like `rtla timerlat top` /
//! `rtla osnoise top`). The measurement is `trbox::lat`; this module sets
//! tracefs up (and back), streams the records into it and prints. Its
//! parts: the options and which mode takes which ([`args`]), the set-up
//! ([`setup`]), `--on-threshold`/`--on-end` ([`actions`]), the max-latency
//! tracers ([`max`]), and the measuring and its output ([`measure`], on a
//! terminal redrawn in place: [`screen`]).

mod actions;
mod args;
mod max;
mod measure;
mod screen;
mod setup;

pub(crate) use args::Args;

use crate::applets::cli::Error;
use crate::applets::command::{self, Follow};
use crate::applets::session::Live;
use args::{stop_armed, Checked};
use std::cell::Cell;
use std::io::Write as _;
use std::time::{Duration, Instant};
use trbox::sys::read::{Out, RawOpts, Reader};
use trbox::sys::state::State;
use trbox::sys::stop::Stop;
use trbox::sys::{signals, Tracefs};

pub(crate) fn main(args: &[String]) -> Result<(), Error> {
    let (own, cmd) = command::split(args);
    let (common, a) = args::parse(own)?;
    let common = &common;
    let args::Run::Measure(checked) = args::check(&a, cmd)? else {
        return max::max_latency(common, &a);
    };
    let Checked { mode, tracer, .. } = checked;
    // First thing: a Ctrl-C during the set-up below (which may make an
    // instance) ends the run through the normal path, undoing it.
    let wake = signals::install().map_err(trbox::sys::Error::Signals)?;
    // The warm-up is not part of -t's time.
    let limit = a.time.map(|s| s.0 + a.warm_up.map(|w| w.0).unwrap_or_default());
    // -H: the readers (threads started later) inherit it.
    if let Some(c) = &a.house_keeping {
        trbox::sys::sched::pin_self(&c.0).map_err(|e| Error::runtime(format!("-H {c}: {e}")))?;
    }
    let _root: Option<Tracefs>;
    let mut t = Tracefs::open(common.tracefs.as_deref())?;
    if !t.is_live() || a.read {
        return measure::read_buffer(t, common, &a, &checked, cmd);
    }
    setup::require(&t, &a, mode, tracer)?;
    if let Some(i) = &common.instance {
        t.enter_or_create_instance(i)?;
        t.keep_instance = a.keep;
    } else if tracer && !a.keep {
        if let Some(i) = setup::own_instance(&t, a.mode()) {
            // The root is kept (a tracefs we mounted is unmounted at its
            // drop, after the instance's).
            _root = Some(std::mem::replace(&mut t, i));
        }
    }
    let top = t.top_level();
    let live = Live::lock(t, common.wait, wake)?;
    let t = &live.t;
    let stopped = Cell::new(false);
    let status = {
        // osnoise/ is global (the top level), the tracer and events are the
        // buffer's: two undo logs, the buffer's restored first.
        let mut global = State::new(&top);
        global.set_keep(a.keep);
        let mut st = live.state(a.keep, Some(&mut global))?;
        let user = setup::user_threads(&top, &a, mode)?;
        if tracer {
            setup::tracer(&mut global, &top, &a, mode, user)?;
        }
        let cgroup = setup::cgroup(&a)?;
        let _dma = setup::dma_latency(&a)?;
        let cpus = setup::user_cpus(&top, &a, user)?;
        let child = command::whom(&mut st, cmd, &a.pid, Follow { events: !tracer, functions: false })?;
        setup::enable(&mut st, &a, mode, tracer)?;
        // -u: tr-lat's own threads, started before the window opens (the
        // tracer is set: timerlat_fd opens; tracing_on switched on does not
        // restart the tracer, only off stops it and ends them), so that
        // they measure the whole window, as the kernel's threads do.
        let threads = trbox::sys::sched::UserThreads::start(&top.path("osnoise"), &cpus, a.priority).map_err(
            |(cpu, step, e)| {
                Error::runtime(format!(
                    "-u: timerlatu/{cpu}: {}: {e}",
                    ["affinity", "policy", "timerlat_fd", "pipe"][step.min(3) as usize]
                ))
            },
        )?;
        let on = t.tracing_on_file();
        // The tasks whose wakeups count: the command (its children follow
        // through sched_process_fork), or -P.
        let only: Vec<u32> = child.pid().into_iter().chain(a.pid.iter().copied()).collect();
        let show = |i: Reader, o: &RawOpts, stop: &Stop<'_>| {
            // A stop threshold: the kernel switches tracing off itself.
            // Looked at every 50 ms (this is called for each record: a read
            // of tracing_on each time cost more CPU than the decoding).
            let armed = tracer && stop_armed(&a, mode);
            let looked = Cell::new(Instant::now());
            let kernel_stop = || {
                let d = stop.asked();
                if armed && !d && !stopped.get() && looked.get().elapsed() >= Duration::from_millis(50) {
                    looked.set(Instant::now());
                    if t.read(on).is_ok_and(|v| v.trim() == "0") && signals::stop_requested().is_none() {
                        if actions::run_actions(t, &a.on_threshold, a.mode()) {
                            log::warn!("a threshold stopped tracing: on again (--on-threshold continue)");
                            let _ = t.write(on, "1");
                        } else {
                            stopped.set(true);
                            signals::request_stop();
                        }
                    }
                }
                d
            };
            // The tracer's threads run now (tracing is on).
            setup::running_threads(cgroup.as_deref(), &a, mode, user)?;
            measure::measure(i, &a, mode, o, &kernel_stop, &stopped, &only)
        };
        if a.json && tracer {
            let mut o = Out::stdout();
            let _ = o.write_all(setup::settings_json(t, &top, &a, mode, user).as_bytes());
            o.finish()?;
        }
        let r = command::stream(
            t,
            &mut st,
            &child,
            RawOpts {
                json: a.json,
                reading: measure::reading(&a, mode, tracer),
                kernel: common.kernel.clone(),
                ..Default::default()
            },
            limit,
            false,
            &show,
            Some(&|w| measure::none_measured(&a, mode, w)),
        );
        actions::run_actions(t, &a.on_end, a.mode());
        drop(threads);
        drop(st);
        drop(global);
        r?
    };
    command::exit_with(status)
}
