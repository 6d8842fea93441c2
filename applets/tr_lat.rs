//! tr-lat: real-time latency. From plain tracepoints (wakeup, irq,
//! syscall: any kernel with sched, irq and raw_syscalls events), or from the
//! kernel's timerlat and osnoise tracers (tables like `rtla timerlat top` /
//! `rtla osnoise top`). The measurement is `trbox::lat`; this module sets
//! tracefs up (and back), streams the records into it and prints.

use crate::cli::{self, Common, Error};
use crate::command::{self, Follow};
use crate::session::Live;
use argh::{ArgsInfo, FromArgs};
use std::cell::Cell;
use std::io::Write as _;
use std::time::{Duration, Instant};
use trbox::lat::{self, Lat, Mode, Table, Unit};
use trbox::sys::event_dir;
use trbox::sys::read::Out;
use trbox::sys::read::{self, Filter, Input, Item, RawOpts, Reading};
use trbox::sys::state::State;
use trbox::sys::{signals, Tracefs};

/// The kernel's max-latency tracers (hwlat is a mode: its samples are
/// records). `wakeup` names the tracepoint mode: the kernel's wakeup
/// tracer is `wakeup --max`.
const MAX_TRACERS: &[&str] = &["wakeup_rt", "wakeup", "wakeup_dl", "irqsoff", "preemptoff", "preemptirqsoff"];

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help"))]
/// Real-time latency from plain tracepoints, on any kernel (wakeup, irq,
/// syscall), or from the kernel's tracers: timerlat, osnoise and hwlat as
/// rtla shows them, and the max-latency tracers' each new maximum as the
/// kernel's trace text. Values in us (--ns: ns).
#[cfg_attr(
    feature = "host",
    argh(
        example = "{command_name} wakeup --rt -t 10",
        example = "{command_name} syscall -P 42 --hist",
        example = "{command_name} timerlat -p 1000 --cpus 0-1 --priority f:95 -t 10",
        example = "{command_name} hwlat -p 1000000 --width 500000 -t 5",
        example = "{command_name} irqsoff -o /tmp/max -t 10",
        example = "{command_name} wakeup -r   # read the buffer out (or a copy, -T)"
    )
)]
#[argh(note = "MODE is wakeup, irq, syscall, timerlat, osnoise, hwnoise, hwlat, or a max-latency \
tracer: wakeup_rt, wakeup_dl, irqsoff, preemptoff, preemptirqsoff (wakeup --max: the \
kernel's wakeup tracer, all tasks).")]
pub struct Args {
    /// what to measure (see below)
    #[argh(positional, arg_name = "MODE")]
    mode: Option<String>,
    /// wakeup: real-time (and deadline) tasks only
    #[argh(switch)]
    rt: bool,
    /// only these processes (set_event_pid); repeatable
    #[argh(option, short = 'P', arg_name = "PID")]
    pid: Vec<u32>,
    /// timerlat/osnoise: the policy of the tracer's threads, f:PRIO, r:PRIO
    /// or o:NICE (rtla's -P)
    #[argh(option, arg_name = "POLICY", from_str_fn(policy))]
    priority: Option<trbox::sys::sched::Sched>,
    /// stop after S seconds
    #[argh(option, short = 't', arg_name = "S")]
    time: Option<cli::Seconds>,
    /// print histograms (per key) instead of the tables
    #[argh(switch)]
    hist: bool,
    /// every task in the tables (default over 20 tasks: by comm, the 20
    /// highest)
    #[argh(switch)]
    all: bool,
    /// histogram bucket width (default 1 us)
    #[argh(option, arg_name = "WIDTH")]
    bucket: Option<u64>,
    /// histogram buckets before the overflow row (256)
    #[argh(option, short = 'E', arg_name = "N")]
    entries: Option<usize>,
    /// print nanoseconds instead of microseconds
    #[argh(switch)]
    ns: bool,
    /// JSON: one object per key (or CPU)
    #[argh(switch)]
    json: bool,
    /// with --json: also one object per latency
    #[argh(switch)]
    samples: bool,
    /// timerlat: timer period (osnoise/timerlat_period_us); osnoise: the
    /// sampling period (osnoise/period_us); hwlat: the window
    #[argh(option, short = 'p', arg_name = "US")]
    period: Option<u64>,
    /// timerlat/osnoise: only these CPUs (osnoise/cpus, e.g. 0-1,3)
    #[argh(option, arg_name = "CPUS")]
    cpus: Option<cli::Cpus>,
    /// timerlat: stop when an IRQ latency exceeds US; osnoise: when a single
    /// noise does (osnoise/stop_tracing_us); max-latency tracers:
    /// tracing_thresh (rtla's -i)
    #[argh(option, arg_name = "US")]
    irq_us: Option<u64>,
    /// timerlat: stop when a thread latency exceeds US; osnoise: when the
    /// noise of a period does (osnoise/stop_tracing_total_us; rtla's -T)
    #[argh(option, arg_name = "US")]
    total_us: Option<u64>,
    /// hwlat: the busy loop's time of each window (hwlat_detector/width)
    #[argh(option, arg_name = "US")]
    width: Option<u64>,
    /// wakeup: the kernel's wakeup tracer
    #[argh(switch)]
    max: bool,
    /// max-latency tracers: save each maximum as DIR/1.txt, 2.txt... (DIR
    /// exists)
    #[argh(option, short = 'o', arg_name = "DIR")]
    output: Option<String>,
    /// timerlat: save the kernel stack when a thread latency exceeds US
    /// (osnoise/print_stack)
    #[argh(option, short = 's', arg_name = "US")]
    stack_us: Option<u64>,
    /// timerlat: user-space threads (timerlatu/N reading timerlat_fd,
    /// 6.7+: the default there, as in rtla 7.2), and the return to user
    #[argh(switch, short = 'u')]
    user_threads: bool,
    /// timerlat: measure your own tasks reading timerlat_fd (no threads)
    #[argh(switch, short = 'U')]
    user_load: bool,
    /// timerlat: the kernel's timerlat/N threads (rtla's -k)
    #[argh(switch)]
    kernel_threads: bool,
    /// timerlat/osnoise: when the kernel stops at a threshold, do this
    /// (rtla's grammar: trace[,file=F], signal,num=N,pid=P|parent,
    /// shell,command=CMD, continue: go on measuring); repeatable
    #[argh(option, arg_name = "ACTION", from_str_fn(action))]
    on_threshold: Vec<Action>,
    /// at the end, do this (as --on-threshold); repeatable
    #[argh(option, arg_name = "ACTION", from_str_fn(action))]
    on_end: Vec<Action>,
    /// timerlat/osnoise: leave out the first S seconds (warm-up)
    #[argh(option, arg_name = "S")]
    warm_up: Option<cli::Seconds>,
    /// timerlat/osnoise: hold /dev/cpu_dma_latency at US while measuring
    /// (no deep idle states)
    #[argh(option, arg_name = "US")]
    dma_latency: Option<i32>,
    /// timerlat/osnoise: the buffer's size per CPU (buffer_size_kb)
    #[argh(option, arg_name = "KB")]
    trace_buffer_size: Option<u64>,
    /// timerlat/osnoise: tr-lat's own work on these CPUs (housekeeping)
    #[argh(option, short = 'H', arg_name = "CPUS")]
    house_keeping: Option<cli::Cpus>,
    /// timerlat: stop at a latency over US (IRQ or thread, with its
    /// stack) and print only the analysis of the stop, no tables
    #[argh(option, arg_name = "US")]
    aa_only: Option<u64>,
    /// timerlat: no auto-analysis of a stop (its last records instead)
    #[argh(switch)]
    no_aa: bool,
    /// timerlat: with the analysis of a stop, the task each CPU ran last
    #[argh(switch)]
    dump_tasks: bool,
    /// timerlat/osnoise: the measuring threads into this cgroup (v2;
    /// --cgroup alone: tr-lat's own; a name: --cgroup=NAME)
    #[argh(option, arg_name = "NAME")]
    cgroup: Option<String>,
    /// timerlat/osnoise: the measured CPUs' idle states deeper than N
    /// disabled while measuring (cpuidle stateM/disable; -1: all)
    #[argh(option, arg_name = "N")]
    deepest_idle_state: Option<i32>,
    /// read what the buffer holds now, setting nothing up; the read takes
    /// the events out (no raw read leaves them): a second -r finds none
    #[argh(switch, short = 'r')]
    read: bool,
    /// leave the events (or tracer) set up when done
    #[argh(switch, short = 'k')]
    keep: bool,
}

impl Args {
    /// The mode; hwnoise is the osnoise tracer (with IRQs disabled).
    fn mode(&self) -> &str {
        match self.mode.as_deref().unwrap_or_default() {
            "hwnoise" => "osnoise",
            m => m,
        }
    }

    /// `hwnoise`: osnoise with OSNOISE_IRQ_DISABLE, as rtla hwnoise runs
    /// it: only what the hardware and firmware take (rtla 7.2's
    /// osnoise_hist/top with irq_disable, trace_osnoise.c 6.3+).
    fn hw(&self) -> bool {
        self.mode.as_deref() == Some("hwnoise")
    }

    /// The auto-analysis of a timerlat stop (rtla's timerlat_aa.c): where
    /// a threshold is set and --no-aa is not.
    fn aa(&self, mode: Mode) -> bool {
        mode == Mode::Timerlat && stop_armed(self, mode) && !self.no_aa
    }
}

/// An action of --on-threshold / --on-end, in rtla 7.2's grammar
/// (tools/tracing/rtla/src/actions.c): the trace file's text into FILE
/// (default MODE_trace.txt), a signal, a shell command (waited for), or
/// `continue`: tracing on again, measuring goes on.
pub enum Action {
    Trace(Option<String>),
    Signal(i32, u32),
    Shell(String),
    Continue,
}

fn action(v: &str) -> Result<Action, String> {
    let (kind, rest) = v.split_once(',').unwrap_or((v, ""));
    let arg = |k: &str| rest.split(',').find_map(|p| p.strip_prefix(k)?.strip_prefix('='));
    let num = |k: &str| arg(k).and_then(|n| n.parse().ok());
    Ok(match kind {
        "trace" => Action::Trace(arg("file").map(String::from)),
        "signal" => match (num("num"), arg("pid")) {
            (Some(n), Some("parent")) => Action::Signal(n, std::os::unix::process::parent_id()),
            (Some(n), Some(_)) if num("pid").is_some() => Action::Signal(n, num("pid").unwrap_or_default() as u32),
            _ => return Err("signal,num=N,pid=PID|parent".into()),
        },
        "shell" if rest.starts_with("command=") => Action::Shell(rest[8..].into()),
        "continue" if rest.is_empty() => Action::Continue,
        _ => return Err("trace[,file=F], signal,num=N,pid=P, shell,command=CMD or continue".into()),
    })
}

/// Run `acts` in order (as rtla does); whether one is `continue`. A
/// failed action is a note, the others still run.
fn run_actions(t: &Tracefs, acts: &[Action], mode: &str) -> bool {
    let mut go_on = false;
    for act in acts {
        let r = match act {
            Action::Trace(f) => {
                let f = f.clone().unwrap_or_else(|| format!("{mode}_trace.txt"));
                t.read("trace").map_err(Error::from).and_then(|x| {
                    std::fs::write(&f, x).map_err(|e| Error::from(trbox::sys::Error::io(std::path::Path::new(&f), e)))
                })
            }
            // SAFETY: a plain system call.
            Action::Signal(n, pid) => match unsafe { libc::kill(*pid as i32, *n) } {
                0 => Ok(()),
                _ => Err(Error::runtime(format!("signal {n} to {pid}: {}", std::io::Error::last_os_error()))),
            },
            Action::Shell(c) => trbox::sys::child::Paused::spawn("sh", &["-c".into(), c.clone()])
                .and_then(|mut p| p.release().map(|_| p.wait()))
                .map(drop)
                .map_err(|e| Error::runtime(format!("shell,command={c}: {e}"))),
            Action::Continue => {
                go_on = true;
                Ok(())
            }
        };
        if let Err(e) = r {
            cli::note(&e);
        }
    }
    go_on
}

fn policy(v: &str) -> Result<trbox::sys::sched::Sched, String> {
    trbox::sys::sched::Sched::parse(v).ok_or_else(|| "give f:PRIO, r:PRIO or o:NICE (e.g. f:95)".into())
}

pub fn main(args: &[String]) -> Result<(), Error> {
    let (own, cmd) = command::split(args);
    // rtla's -C/--cgroup takes its name attached (--cgroup=NAME) or none.
    // (-C is --clock in trbox: one letter, one meaning.)
    let own: Vec<String> = own.iter().map(|w| if w == "--cgroup" { "--cgroup=".into() } else { w.clone() }).collect();
    let (common, mut a) = cli::parse::<Args>("tr-lat", &own)?;
    // rtla's --aa-only US: every threshold at US, the stack too.
    if let Some(us) = a.aa_only {
        (a.irq_us, a.total_us, a.stack_us) = (Some(us), Some(us), Some(us));
    }
    let common = &common;
    if a.mode.is_none() {
        return Err(
            Error::usage("which latency? a MODE is needed").hint("e.g. tr-lat wakeup -t 5; see 'tr-lat --help'")
        );
    }
    if a.max || a.mode() != "wakeup" && MAX_TRACERS.contains(&a.mode()) {
        if !MAX_TRACERS.contains(&a.mode()) {
            return Err(Error::usage(format!("--max: {} is no max-latency tracer", a.mode())));
        }
        return max_latency(common, &a, cmd);
    }
    let Some(mode) = Mode::parse(a.mode()) else {
        return Err(Error::usage(format!("unknown mode '{}'", a.mode())).hint(
            "modes: wakeup, irq, syscall, timerlat, osnoise, hwnoise, hwlat, wakeup_rt, wakeup --max, wakeup_dl, irqsoff, preemptoff, preemptirqsoff",
        ));
    };
    // timerlat, osnoise and hwnoise: rtla's parity (feature rtla).
    if !cfg!(feature = "rtla") && matches!(mode, Mode::Timerlat | Mode::Osnoise) {
        return Err(crate::cli::left_out(&format!("tr-lat {}", a.mode.as_deref().unwrap_or_default()), "rtla"));
    }
    let tracer = matches!(mode, Mode::Timerlat | Mode::Osnoise | Mode::Hwlat);
    if a.output.is_some() {
        return Err(Error::usage("-o DIR saves the max traces of the max-latency tracers (wakeup_rt, irqsoff...)"));
    }
    if a.width.is_some() && mode != Mode::Hwlat || mode == Mode::Hwlat && (a.total_us.is_some() || a.cpus.is_some()) {
        return Err(Error::usage("--width is a hwlat option; --cpus and --total-us are not"));
    }
    command::one_target(&a.pid, cmd)?;
    if tracer && (!a.pid.is_empty() || !cmd.is_empty()) {
        return Err(Error::usage(format!("{} measures CPUs, not processes: no -P and no -- CMD", a.mode()))
            .hint("use --cpus CPUS, and -t S"));
    }
    if a.no_aa && (a.aa_only.is_some() || a.dump_tasks) {
        return Err(Error::usage("--no-aa goes with neither --aa-only nor --dump-tasks"));
    }
    // rtla takes a value under -1 for "not given"; here it is a mistake.
    if a.deepest_idle_state.is_some_and(|n| n < -1) {
        return Err(Error::usage("--deepest-idle-state: a state's number, or -1 for all of them"));
    }
    // The first option given that sets up a tracer, by its long name.
    let tracer_opt = [
        (a.warm_up.is_some(), "--warm-up"),
        (a.cgroup.is_some(), "--cgroup"),
        (a.deepest_idle_state.is_some(), "--deepest-idle-state"),
        (a.no_aa, "--no-aa"),
        (a.dump_tasks, "--dump-tasks"),
        (a.dma_latency.is_some(), "--dma-latency"),
        (a.trace_buffer_size.is_some(), "--trace-buffer-size"),
        (a.house_keeping.is_some(), "--house-keeping"),
        (a.user_threads, "--user-threads"),
        (a.user_load, "--user-load"),
        (a.kernel_threads, "--kernel-threads"),
        (a.period.is_some(), "--period"),
        (a.cpus.is_some(), "--cpus"),
        (a.irq_us.is_some(), "--irq-us"),
        (a.total_us.is_some(), "--total-us"),
        (a.stack_us.is_some(), "--stack-us"),
        (a.width.is_some(), "--width"),
    ]
    .into_iter()
    .find_map(|(given, name)| given.then_some(name));
    let tracer_opts = tracer_opt.is_some();
    if let (false, Some(o)) = (tracer, tracer_opt) {
        return Err(Error::usage(format!("{o} sets up the timerlat, osnoise or hwlat tracer: not for {}", a.mode()))
            .hint("see 'tr-lat --help' for which mode takes which option"));
    }
    if a.priority.is_some() && !matches!(mode, Mode::Timerlat | Mode::Osnoise) {
        return Err(Error::usage("--priority is for timerlat and osnoise"));
    }
    if a.rt && mode != Mode::Wakeup {
        return Err(Error::usage("--rt is for the wakeup mode"));
    }
    if (!a.on_threshold.is_empty() || a.dump_tasks) && !stop_armed(&a, mode) {
        return Err(Error::usage("--on-threshold and --dump-tasks need a stop threshold: --irq-us or --total-us"));
    }
    if a.samples && !a.json {
        return Err(Error::usage("--samples goes with --json"));
    }
    if (a.stack_us.is_some() || a.user_threads || a.user_load || a.kernel_threads || a.no_aa || a.dump_tasks)
        && mode != Mode::Timerlat
    {
        return Err(Error::usage(
            "-s, -u, -U, --kernel-threads, --aa-only, --no-aa and --dump-tasks are timerlat options",
        ));
    }
    if [a.user_threads, a.user_load, a.kernel_threads].iter().filter(|&&x| x).count() > 1 {
        return Err(Error::usage("one of -u, -U and --kernel-threads"));
    }
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
        if !cmd.is_empty() || tracer_opts {
            return Err(Error::usage("a copy of a tracefs tree (or -r) is only read: no -- CMD and no tracer options"));
        }
        if let Some(i) = &common.instance {
            t.enter_instance(i)?;
        }
        let held = t.held();
        let o = RawOpts { reading: reading(&a, mode, tracer), ..RawOpts::all(false, a.json, None, None) };
        let shown = measure(Input::tree(&t, &o)?, &a, mode, &o, &|| false, &Cell::new(false), &[])?;
        if !shown {
            let e = none_measured(&a, mode, "in the buffer");
            let again = format!("'tr-lat {} -t S' measures as it records", a.mode());
            // (A copy's stats need not be those of the pages copied.)
            cli::note(&match (t.is_live(), command::empty_buffer(&e.msg, held, &again)) {
                (true, Some(empty)) => empty,
                (true, None) => Error::runtime(e.msg).hint(format!(
                    "its {} events hold none that tr-lat {} pairs; {again}",
                    held.entries,
                    a.mode()
                )),
                (false, _) => e,
            });
        }
        command::note_consumed(&t, held);
        return Ok(());
    }
    if tracer {
        t.require_tracer(a.mode()).map_err(|e| Error::from(e).hint(instead(a.mode())))?;
    } else {
        need_events(&t, mode)?;
    }
    if let Some(i) = &common.instance {
        t.enter_or_create_instance(i)?;
        t.keep_instance = a.keep;
    } else if tracer && !a.keep {
        if let Some(i) = own_instance(&t, a.mode()) {
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
        global.keep = a.keep;
        let mut st = live.state(a.keep)?;
        // timerlat: whose threads (rtla 7.2's timerlat_apply_config: user
        // threads where cpu0's timerlat_fd is, else the kernel's).
        let user = mode == Mode::Timerlat && !a.kernel_threads && {
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
            fd
        };
        if tracer {
            tracer_settings(&mut global, &a, mode)?;
            if a.hw() && global.set_osnoise_option("OSNOISE_IRQ_DISABLE", true)?.is_none() {
                return Err(Error::runtime("this kernel's osnoise/options has no OSNOISE_IRQ_DISABLE (6.3+)")
                    .hint("tr-lat osnoise measures all the noise"));
            }
            if mode == Mode::Timerlat && global.set_osnoise_option("OSNOISE_WORKLOAD", !user)?.is_none() && user {
                return Err(Error::runtime("this kernel's osnoise/options has no OSNOISE_WORKLOAD")
                    .hint("tr-lat timerlat --kernel-threads works here"));
            }
            // rtla's --deepest-idle-state N: on the measured CPUs, every
            // cpuidle state past N disabled (put back after).
            if let Some(n) = a.deepest_idle_state {
                let online = top.cpus()?;
                let cpus = a.cpus.as_ref().map_or(online, |c| c.0.clone());
                for c in cpus {
                    let dir = std::path::PathBuf::from(format!("/sys/devices/system/cpu/cpu{c}/cpuidle"));
                    let states = std::fs::read_dir(&dir).map_err(|_| {
                        Error::runtime(format!(
                            "this system has no cpuidle ({}): no idle state to disable",
                            dir.display()
                        ))
                        .hint("--dma-latency US keeps the CPUs out of deep idle states")
                    })?;
                    for e in states.flatten() {
                        let m = e.file_name().to_str().and_then(|s| s.strip_prefix("state")?.parse::<i32>().ok());
                        if m.is_some_and(|m| m > n) {
                            global.set_file(&e.path().join("disable"), "1")?;
                        }
                    }
                }
            }
        }
        let cgroup =
            match &a.cgroup {
                Some(n) => Some(trbox::sys::sched::cgroup_procs(n).map_err(|e| {
                    Error::runtime(format!("--cgroup: {e}")).hint("mount -t cgroup2 none /sys/fs/cgroup")
                })?),
                None => None,
            };
        // Closed (the kernel's request dropped) when tr-lat ends, however.
        let _dma = match a.dma_latency {
            Some(us) => Some(
                trbox::sys::sched::hold_dma_latency(us)
                    .map_err(|e| Error::runtime(format!("--dma-latency: /dev/cpu_dma_latency: {e}")))?,
            ),
            None => None,
        };
        // osnoise/cpus (every possible CPU by default: the kernel prints
        // its mask up to nr_cpu_ids); an offline one's thread ends at once
        // (UserThreads::start), as rtla's does.
        let cpus: Vec<u32> = match user && !a.user_load {
            true => {
                let text = top.read("osnoise/cpus")?;
                trbox::ctl::cpu_list(&text).map_err(|r| {
                    Error::runtime(format!("osnoise/cpus: cannot read '{r}' as a CPU list")).hint("please report it")
                })?
            }
            false => Vec::new(),
        };
        let child = command::whom(&mut st, cmd, &a.pid, Follow { events: !tracer, functions: false })?;
        if tracer {
            // A stop threshold: the osnoise events too (which IRQ, softirq,
            // thread or single noise came before the stop), as rtla's
            // auto-analysis enables them.
            if stop_armed(&a, mode) && !a.no_aa && t.exists("events/osnoise/enable") {
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
        } else {
            for e in wanted_events(t, mode) {
                st.set(&format!("{}/enable", event_dir(&e)), "1")?;
            }
        }
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
        let show = |i: Input<'_>, o: &RawOpts, done: &dyn Fn() -> bool| {
            // A stop threshold: the kernel switches tracing off itself.
            // Looked at every 50 ms (this is called for each record: a read
            // of tracing_on each time cost more CPU than the decoding).
            let armed = tracer && stop_armed(&a, mode);
            let looked = Cell::new(Instant::now());
            let kernel_stop = || {
                let d = done();
                if armed && !d && !stopped.get() && looked.get().elapsed() >= Duration::from_millis(50) {
                    looked.set(Instant::now());
                    if t.read(on).is_ok_and(|v| v.trim() == "0") && signals::stop_requested().is_none() {
                        if run_actions(t, &a.on_threshold, a.mode()) {
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
            // --cgroup: the measuring threads (running now) into the cgroup.
            if let (Some(procs), false) = (&cgroup, a.user_load) {
                let prefix = match (user, mode) {
                    (true, _) => "timerlatu/",
                    (_, Mode::Timerlat) => "timerlat/",
                    _ => "osnoise/",
                };
                trbox::sys::sched::set_threads_cgroup(prefix, procs)
                    .map_err(|e| Error::runtime(format!("--cgroup: the {prefix}N threads: {e}")))?;
            }
            // The tracer's threads run now (tracing is on): their policy.
            if let Some(s) = a.priority.filter(|_| !user) {
                let prefix = if mode == Mode::Timerlat { "timerlat/" } else { "osnoise/" };
                trbox::sys::sched::set_threads(prefix, s)
                    .map_err(|e| Error::runtime(format!("--priority: the {prefix}N threads: {e}")))?;
            }
            measure(i, &a, mode, o, &kernel_stop, &stopped, &only)
        };
        if a.json && tracer {
            let mut o = Out::stdout();
            let _ = o.write_all(settings_json(t, &top, &a, mode, user).as_bytes());
            o.finish()?;
        }
        let r = command::stream(
            t,
            &mut st,
            &child,
            a.json,
            limit,
            reading(&a, mode, tracer),
            false,
            &show,
            Some(&|w| none_measured(&a, mode, w)),
        );
        run_actions(t, &a.on_end, a.mode());
        drop(threads);
        drop(st);
        drop(global);
        r?
    };
    command::exit_with(status)
}

/// --json: what the run set up, one line before the tables: as the kernel
/// reads it back (period, CPUs, stop thresholds, print_stack, osnoise
/// options, buffer size; hwlat's window, width and threshold) and as
/// tr-lat did it (whose threads, policy, warm-up, dma latency,
/// housekeeping CPUs, cgroup, idle states, the analysis, the actions).
fn settings_json(t: &Tracefs, top: &Tracefs, a: &Args, mode: Mode, user: bool) -> String {
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

/// What a run of `mode` reads: its events' systems only; a `tracer`'s
/// entries once a second (as rtla does), the tracepoints as they come.
fn reading(a: &Args, mode: Mode, tracer: bool) -> Reading {
    let systems = if a.dump_tasks { &["osnoise", "sched", "workqueue"] } else { mode.systems() };
    Reading { systems: Some(systems), pace: tracer.then_some(Duration::from_secs(1)), ..Default::default() }
}

/// An instance of this run's own for `tracer`, where the kernel lets the
/// tracer run in one (timerlat and osnoise from 5.17: an instance's
/// available_tracers lists only those), so that the top buffer and its
/// tracer stay as they are; it is removed at the end. None otherwise (the
/// top buffer is used, and restored).
fn own_instance(t: &Tracefs, tracer: &str) -> Option<Tracefs> {
    let mut i = t.top_level();
    i.enter_or_create_instance(&format!("trbox-lat-{}", std::process::id())).ok()?;
    i.read("available_tracers").ok()?.split_whitespace().any(|x| x == tracer).then_some(i)
}

/// The events of a tracepoint mode exist? Otherwise one line naming what
/// is missing, and what works instead.
/// syscall: the kernel has the per-call events (their names, one system
/// to enable), read instead of raw_syscalls.
fn has_syscall_events(t: &Tracefs, mode: Mode) -> bool {
    mode == Mode::Syscall && t.exists(&format!("{}/enable", event_dir(lat::SYSCALL_EVENTS)))
}

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

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Wakeup => "wakeup",
        Mode::Irq => "irq",
        Mode::Syscall => "syscall",
        Mode::Timerlat => "timerlat",
        Mode::Osnoise => "osnoise",
        Mode::Hwlat => "hwlat",
    }
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

/// A stop threshold is set: the kernel may stop tracing by itself.
fn stop_armed(a: &Args, mode: Mode) -> bool {
    mode != Mode::Hwlat && (a.irq_us.is_some() || a.total_us.is_some())
}

/// The tracepoint mode that works where the kernel lacks `tracer`.
fn instead(tracer: &str) -> &'static str {
    match tracer.as_bytes().first() {
        Some(b'w') => "tr-lat wakeup [--rt] measures wakeup latency from the sched tracepoints, without it",
        Some(b'i' | b'p') => "tr-lat irq measures IRQ and softirq handler times from the irq tracepoints, without it",
        _ => "tr-lat wakeup, irq and syscall measure latencies from plain tracepoints, without it",
    }
}

/// The max-latency tracers (wakeup_rt, irqsoff...): the tracer runs (with
/// tracing_thresh = --irq-us US); each new maximum, or each latency over the
/// threshold, is noticed through tracing_max_latency (inotify, which the
/// kernel sends since 5.5; a read every 100 ms before) and printed, or
/// saved as DIR/N.txt, as the kernel's `trace` text of the max buffer
/// (snapshot_raw is EBUSY for these tracers: the text is all there is).
fn max_latency(common: &Common, a: &Args, cmd: &[String]) -> Result<(), Error> {
    let name = a.mode();
    if !cmd.is_empty() || !a.pid.is_empty() || a.read || a.hist || a.period.is_some() || a.cpus.is_some() {
        return Err(Error::usage(format!(
            "tr-lat {name} traces the whole system: only --irq-us US, -o DIR, -t S, --json"
        )));
    }
    if common.instance.is_some() {
        return Err(Error::usage(format!("tr-lat {name} runs at the top level (the max buffer is the top level's)")));
    }
    let t = Tracefs::open(common.tracefs.as_deref())?;
    crate::session::require_live(&t)?;
    t.require_tracer(name).map_err(|e| Error::from(e).hint(instead(name)))?;
    let live = Live::enter(t, common, a.keep)?;
    let (t, wake) = (&live.t, live.wake);
    let mut st = live.state(a.keep)?;
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

/// Records kept per CPU to show what led to a kernel stop.
const TAIL: usize = 24;

/// Feed the records into the accumulators, print as the options say;
/// whether anything was measured (or a stop reported).
fn measure(
    input: Input<'_>,
    a: &Args,
    mode: Mode,
    o: &RawOpts,
    done: &dyn Fn() -> bool,
    stopped: &Cell<bool>,
    only: &[u32],
) -> Result<bool, Error> {
    let unit = Unit { ns: a.ns };
    let scale = if a.ns { 1 } else { 1000 };
    let hist = (a.hist || a.json && (a.bucket.is_some() || a.entries.is_some())).then(|| {
        (a.bucket.unwrap_or(1).saturating_mul(scale).max(1), a.entries.unwrap_or(256).clamp(1, lat::MAX_ENTRIES))
    });
    let mut acc: Option<Result<Lat, lat::Missing>> = None;
    let mut live = Out::stdout();
    let mut line = String::new();
    // With a stop threshold: the last records and latency of each CPU.
    let mut tail: Vec<Tail> = Vec::new();
    let keep_tail = stop_armed(a, mode) && !a.read;
    // --warm-up: records before the first one's time + S are left out.
    let warm = a.warm_up.map(|w| w.0.as_nanos() as u64);
    let mut from = None;
    // On a terminal the table is shown again about once a second (when
    // records come), in place; elsewhere once, at the end.
    let mut refreshed = (!a.json && !a.read && a.aa_only.is_none() && cli::is_tty()).then(Instant::now);
    // The auto-analysis of a stop, fed every record.
    let mut aa: Option<lat::aa::Analysis> = None;
    let want_aa = a.aa(mode) && !a.read;
    let mut screen = refreshed.is_some().then(crate::screen::Screen::new);
    // trbox's own threads are left out by the measurement itself (no
    // latency of theirs), not by the output filter: a switch from one of
    // them to a woken task is that task's end of latency.
    let own = o.filter.not_self.then(trbox::sys::thread::own_tids);
    let o = &RawOpts { filter: Filter { not_self: false, ..o.filter.clone() }, ..o.clone() };
    let meta = read::collect(input, o, done, &mut |m, it| {
        if let (true, Item::Record { cpu, ts, payload, .. }) = (keep_tail, &it) {
            let i = *cpu as usize;
            if tail.len() <= i {
                tail.resize_with(i + 1, Default::default);
            }
            // The oldest record's buffer is reused for the newest.
            let q = &mut tail[i].0;
            let mut rec = if q.len() == TAIL { q.remove(0).1 } else { Vec::new() };
            rec.clear();
            rec.extend_from_slice(payload);
            q.push((*ts, rec));
        }
        if let (true, Item::Record { cpu, ts, payload, .. }) = (want_aa, &it) {
            aa.get_or_insert_with(|| lat::aa::Analysis::new(&m.trace.events, m.trace.endian))
                .record(*cpu, *ts, payload);
        }
        let Ok(l) = acc.get_or_insert_with(|| {
            let mut l = Lat::new(mode, &m.trace.events, m.trace.endian, a.rt, hist)?;
            if !only.is_empty() {
                l.only(&only.iter().map(|&p| i64::from(p)).collect::<Vec<_>>());
            }
            if let Some(own) = &own {
                l.leave_out(&own.iter().map(|&p| i64::from(p)).collect::<Vec<_>>());
            }
            Ok(l)
        }) else {
            return;
        };
        match it {
            Item::Record { ts, .. } if warm.is_some_and(|w| ts < *from.get_or_insert(ts + w)) => {}
            Item::Record { cpu, ts, payload, .. } => {
                if let (Some(at), Some(screen)) =
                    (refreshed.as_mut().filter(|at| at.elapsed() >= REFRESH), screen.as_mut())
                {
                    *at = Instant::now();
                    // The screen's own escapes go out as they are; the
                    // table's comms are shown escaped.
                    let mut o = Out::stdout_raw();
                    let table = read::for_terminal(&render(a, l, &m.trace.cmdlines, false));
                    let _ = o.write_all(screen.redraw(&table).as_bytes());
                    let _ = o.finish();
                }
                if let Some(s) = l.record(cpu, ts, payload) {
                    if let Some(t) = tail.get_mut(cpu as usize) {
                        t.1 = Some(s);
                    }
                    if a.samples {
                        line.clear();
                        let _ = lat::write_sample(&mut line, &s);
                        let _ = live.write_all(line.as_bytes());
                    }
                }
            }
            Item::Lost { .. } => l.lose(),
        }
    })?;
    live.finish()?;
    let l = match acc {
        None => return Ok(false),
        Some(Err(e)) => {
            return Err(Error::runtime(format!("cannot measure {}: {e}", mode_name(mode)))
                .hint("is this a trace of the right events?"))
        }
        Some(Ok(l)) => l,
    };
    let shown = l.measured() > 0;
    if !shown && !stopped.get() {
        return Ok(false);
    }
    // After the redraws, the clearing escape of render's and its table
    // escaped by render.
    let mut out = if refreshed.is_some() { Out::stdout_raw() } else { Out::stdout() };
    let mut text = match a.aa_only {
        Some(_) => String::new(),
        None => render(a, &l, &meta.trace.cmdlines, refreshed.is_some()),
    };
    if a.json {
        let _ = lat::write_problems_json(&mut text, &meta.trace.problems);
    }
    let _ = out.write_all(text.as_bytes());
    out.finish()?;
    if !meta.trace.in_ns() {
        cli::note(
            &Error::runtime("the trace clock does not count nanoseconds: the values are in its own ticks")
                .hint("set trace_clock to local, global or mono"),
        );
    }
    if l.lost > 0 {
        log::warn!("{} losses on the ring buffer: what was open then is not counted", l.lost);
    }
    let read = l.timer_irqs();
    if l.taken > read {
        log::warn!(
            "{} of the {} timer IRQs the kernel counted (seqnum) are not in the tables: lost on the ring buffer, or while tracing was off",
            l.taken - read,
            l.taken
        );
    }
    log::info!("{} begins or ends without their pair (the window cut them, or a loss): not counted", l.unpaired);
    if stopped.get() {
        stop_report(&meta, &tail, a, unit, aa.as_ref())?;
    }
    Ok(true)
}

/// How often a terminal's table is drawn again.
const REFRESH: Duration = Duration::from_secs(1);

/// The tables (or histograms, or JSON lines) of `l`; with `tty`, after the
/// escape that clears the terminal and homes the cursor (the last, whole
/// table after the redraws that fit the screen), its control characters
/// escaped.
fn render(a: &Args, l: &Lat, cmdlines: &trbox::render::Cmdlines, tty: bool) -> String {
    let unit = Unit { ns: a.ns };
    let mut text = String::new();
    let _ = if a.json {
        lat::write_json(&mut text, l, unit, cmdlines)
    } else if a.hist {
        lat::write_hists(&mut text, l, unit, cmdlines)
    } else {
        lat::write_tables(&mut text, l, unit, cmdlines, (!a.all).then_some(lat::TOP))
    };
    if tty {
        // Written raw (Out::stdout_raw): the table's comms escaped here.
        text = format!("\x1b[H\x1b[2J{}", read::for_terminal(&text));
    }
    text
}

/// The kernel stopped tracing at a threshold: which CPU (the one whose
/// last latency is over its threshold, the latest if several: the kernel's
/// own "stop tracing hit on cpu N" goes through the trace_printk buffers,
/// which a kernel without trace_printk users, like Debian's, never
/// allocates), how long, and its records up to the stop, stacks included.
fn stop_report(
    meta: &read::Meta,
    tail: &[Tail],
    a: &Args,
    unit: Unit,
    aa: Option<&lat::aa::Analysis>,
) -> Result<(), Error> {
    let over = |s: &lat::Sample| {
        let us = if matches!(s.table, Table::TimerIrq | Table::Single) { a.irq_us } else { a.total_us };
        us.is_some_and(|us| s.ns >= us.saturating_mul(1000))
    };
    let found = tail
        .iter()
        .enumerate()
        .filter_map(|(cpu, (q, last))| last.filter(over).map(|s| (cpu, q, s)))
        .max_by_key(|w| w.2.end);
    let msg = "the kernel stopped tracing at a threshold";
    let Some((cpu, q, s)) = found else {
        cli::note(&Error::runtime(msg).hint("no latency over it was among the records read (a loss?)"));
        return Ok(());
    };
    let mut out = Out::stdout();
    // The analysis (rtla's), then only the stack among the records.
    let mut text = String::from("\n");
    let ns = |us: Option<u64>| us.unwrap_or(0).saturating_mul(1000);
    let tasks = a.dump_tasks.then_some(&meta.trace.symbols as &dyn trbox::printfmt::SymbolLookup);
    let c = &meta.trace.cmdlines;
    let analysed =
        aa.is_some_and(|aa| aa.write(&mut text, ns(a.irq_us), ns(a.total_us), unit, a.json, tasks, c).unwrap_or(false));
    let stack = meta.trace.events.by_name("ftrace:kernel_stack").map(|e| e.id);
    if analysed {
        let _ = out.write_all(if a.json { &text[1..] } else { &text }.as_bytes());
    } else {
        let _ = write!(out, "\n# CPU {cpu}: its last records, up to the stop\n");
    }
    let mut r = trbox::render::Renderer::new(
        &meta.trace.events,
        meta.trace.cmdlines.clone(),
        meta.trace.abi(),
        meta.trace.in_ns(),
    )
    .with_symbols(&meta.trace.symbols);
    for (ts, p) in q {
        let id = p.get(..2).map(|b| u32::from(meta.trace.endian.uint(b, 0, 2).unwrap_or(0) as u16));
        if !analysed || !a.json && id.is_some() && id == stack {
            let _ = r.record(&mut out, cpu as u32, *ts, p);
        }
    }
    out.finish()?;
    let mut v = String::new();
    let _ = unit.write(&mut v, s.ns);
    cli::note(&Error::runtime(format!("{msg}: CPU {cpu}, {} {v} {}", s.table.name().replace('_', " "), unit.name())));
    Ok(())
}

/// The last records of one CPU and its last latency.
type Tail = (Vec<(u64, Vec<u8>)>, Option<lat::Sample>);

/// Nothing measured (`when`: how long the window was open).
fn none_measured(a: &Args, mode: Mode, when: &str) -> Error {
    let (what, hint) = match mode {
        Mode::Wakeup if a.rt => {
            ("no wakeup of a real-time task was measured", "is an RT task running? (chrt -f 50 CMD)")
        }
        Mode::Wakeup => ("no wakeup was measured", "did the traced task sleep and wake up?"),
        Mode::Irq => ("no IRQ handler or softirq was measured", "try a longer -t"),
        Mode::Syscall => ("no system call was measured", "did the traced task make system calls?"),
        Mode::Timerlat if a.user_load => {
            ("no timerlat sample was recorded", "-U: a task pinned to CPU N reads osnoise/per_cpu/cpuN/timerlat_fd")
        }
        Mode::Timerlat => {
            ("no timerlat sample was recorded", "is the timerlat tracer allowed to run on these CPUs (--cpus)?")
        }
        Mode::Osnoise => ("no osnoise sample was recorded", "a period lasts osnoise/period_us: try a longer -t"),
        Mode::Hwlat => ("no hwlat sample was recorded", "hwlat records only samples over tracing_thresh (--irq-us US)"),
    };
    let whom = match a.pid.as_slice() {
        [] => String::new(),
        p => format!(" (pid {})", p.iter().map(u32::to_string).collect::<Vec<_>>().join(",")),
    };
    Error::runtime(format!("{what} {when}{whom}")).hint(hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_as_rtla_writes_them() {
        assert!(matches!(action("trace"), Ok(Action::Trace(None))));
        assert!(matches!(action("trace,file=/tmp/t.txt"), Ok(Action::Trace(Some(f))) if f == "/tmp/t.txt"));
        assert!(matches!(action("signal,num=10,pid=42"), Ok(Action::Signal(10, 42))));
        assert!(
            matches!(action("signal,num=2,pid=parent"), Ok(Action::Signal(2, p)) if p == std::os::unix::process::parent_id())
        );
        assert!(matches!(action("shell,command=echo a,b"), Ok(Action::Shell(c)) if c == "echo a,b"));
        assert!(matches!(action("continue"), Ok(Action::Continue)));
        for bad in ["", "signal,num=x,pid=1", "signal,pid=1", "shell", "continue,x", "stop"] {
            assert!(action(bad).is_err(), "{bad}");
        }
    }
}
