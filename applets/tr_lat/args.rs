//! tr-lat's options (argh: the help text, docs and completions come from
//! here) and which mode takes which: the checks made before anything is
//! set up.

use super::actions::{action, Action};
use crate::applets::cli::{self, Common, Error};
use crate::applets::command;
use argh::{ArgsInfo, FromArgs};
use trbox::lat::Mode;

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
kernel's wakeup tracer, all tasks). An option that names modes is for those only (hwnoise's \
are osnoise's); the others are for every mode, but the max-latency tracers take only -t, \
--json, -k and the options that name them.")]
pub(crate) struct Args {
    /// what to measure (see below)
    #[argh(positional, arg_name = "MODE")]
    pub(super) mode: Option<String>,
    /// wakeup: real-time (and deadline) tasks only
    #[argh(switch)]
    pub(super) rt: bool,
    /// wakeup/irq/syscall: only these processes (set_event_pid);
    /// repeatable
    #[argh(option, short = 'P', arg_name = "PID")]
    pub(super) pid: Vec<u32>,
    /// timerlat/osnoise: the policy of the tracer's threads, f:PRIO, r:PRIO
    /// or o:NICE (rtla's -P)
    #[argh(option, arg_name = "POLICY", from_str_fn(policy))]
    pub(super) priority: Option<trbox::sys::sched::Sched>,
    /// stop after S seconds
    #[argh(option, short = 't', arg_name = "S")]
    pub(super) time: Option<cli::Seconds>,
    /// print histograms (per key) instead of the tables
    #[argh(switch)]
    pub(super) hist: bool,
    /// every task in the tables (default over 20 tasks: by comm, the 20
    /// highest)
    #[argh(switch)]
    pub(super) all: bool,
    /// histogram bucket width (default 1 us)
    #[argh(option, arg_name = "WIDTH")]
    pub(super) bucket: Option<u64>,
    /// histogram buckets before the overflow row (256)
    #[argh(option, short = 'E', arg_name = "N")]
    pub(super) entries: Option<usize>,
    /// print nanoseconds instead of microseconds
    #[argh(switch)]
    pub(super) ns: bool,
    /// JSON: one object per key (or CPU)
    #[argh(switch)]
    pub(super) json: bool,
    /// with --json: also one object per latency
    #[argh(switch)]
    pub(super) samples: bool,
    /// timerlat: timer period (osnoise/timerlat_period_us); osnoise: the
    /// sampling period (osnoise/period_us); hwlat: the window
    #[argh(option, short = 'p', arg_name = "US")]
    pub(super) period: Option<u64>,
    /// timerlat/osnoise: only these CPUs (osnoise/cpus, e.g. 0-1,3)
    #[argh(option, arg_name = "CPUS")]
    pub(super) cpus: Option<cli::Cpus>,
    /// timerlat: stop when an IRQ latency exceeds US; osnoise: when a single
    /// noise does (osnoise/stop_tracing_us); hwlat/max-latency tracers:
    /// tracing_thresh (rtla's -i)
    #[argh(option, arg_name = "US")]
    pub(super) irq_us: Option<u64>,
    /// timerlat: stop when a thread latency exceeds US; osnoise: when the
    /// noise of a period does (osnoise/stop_tracing_total_us; rtla's -T)
    #[argh(option, arg_name = "US")]
    pub(super) total_us: Option<u64>,
    /// hwlat: the busy loop's time of each window (hwlat_detector/width)
    #[argh(option, arg_name = "US")]
    pub(super) width: Option<u64>,
    /// wakeup: the kernel's wakeup tracer
    #[argh(switch)]
    pub(super) max: bool,
    /// max-latency tracers: save each maximum as DIR/1.txt, 2.txt... (DIR
    /// exists)
    #[argh(option, short = 'o', arg_name = "DIR")]
    pub(super) output: Option<String>,
    /// timerlat: save the kernel stack when a thread latency exceeds US
    /// (osnoise/print_stack)
    #[argh(option, short = 's', arg_name = "US")]
    pub(super) stack_us: Option<u64>,
    /// timerlat: user-space threads (timerlatu/N reading timerlat_fd,
    /// 6.7+: the default there, as in rtla 7.2), and the return to user
    #[argh(switch, short = 'u')]
    pub(super) user_threads: bool,
    /// timerlat: measure your own tasks reading timerlat_fd (no threads)
    #[argh(switch, short = 'U')]
    pub(super) user_load: bool,
    /// timerlat: the kernel's timerlat/N threads (rtla's -k)
    #[argh(switch)]
    pub(super) kernel_threads: bool,
    /// timerlat/osnoise: when the kernel stops at a threshold, do this
    /// (rtla's grammar: trace[,file=F], signal,num=N,pid=P|parent,
    /// shell,command=CMD, continue: go on measuring); repeatable
    #[argh(option, arg_name = "ACTION", from_str_fn(action))]
    pub(super) on_threshold: Vec<Action>,
    /// at the end, do this (as --on-threshold); repeatable
    #[argh(option, arg_name = "ACTION", from_str_fn(action))]
    pub(super) on_end: Vec<Action>,
    /// timerlat/osnoise/hwlat: leave out the first S seconds (warm-up)
    #[argh(option, arg_name = "S")]
    pub(super) warm_up: Option<cli::Seconds>,
    /// timerlat/osnoise/hwlat: hold /dev/cpu_dma_latency at US while
    /// measuring (no deep idle states)
    #[argh(option, arg_name = "US")]
    pub(super) dma_latency: Option<i32>,
    /// timerlat/osnoise/hwlat: the buffer's size per CPU (buffer_size_kb)
    #[argh(option, arg_name = "KB")]
    pub(super) trace_buffer_size: Option<u64>,
    /// timerlat/osnoise/hwlat: tr-lat's own work on these CPUs
    /// (housekeeping)
    #[argh(option, short = 'H', arg_name = "CPUS")]
    pub(super) house_keeping: Option<cli::Cpus>,
    /// timerlat: stop at a latency over US (IRQ or thread, with its
    /// stack) and print only the analysis of the stop, no tables
    #[argh(option, arg_name = "US")]
    pub(super) aa_only: Option<u64>,
    /// timerlat: no auto-analysis of a stop (its last records instead)
    #[argh(switch)]
    pub(super) no_aa: bool,
    /// timerlat: with the analysis of a stop, the task each CPU ran last
    #[argh(switch)]
    pub(super) dump_tasks: bool,
    /// timerlat/osnoise: the measuring threads into this cgroup (v2;
    /// --cgroup alone: tr-lat's own; a name: --cgroup=NAME)
    #[argh(option, arg_name = "NAME")]
    pub(super) cgroup: Option<String>,
    /// timerlat/osnoise/hwlat: the measured CPUs' idle states deeper than
    /// N disabled while measuring (cpuidle stateM/disable; -1: all)
    #[argh(option, arg_name = "N")]
    pub(super) deepest_idle_state: Option<i32>,
    /// read what the buffer holds now, setting nothing up; the read takes
    /// the events out (no raw read leaves them): a second -r finds none
    #[argh(switch, short = 'r')]
    pub(super) read: bool,
    /// leave the events (or tracer) set up when done
    #[argh(switch, short = 'k')]
    pub(super) keep: bool,
}

impl Args {
    /// The mode; hwnoise is the osnoise tracer (with IRQs disabled).
    pub(super) fn mode(&self) -> &str {
        match self.mode.as_deref().unwrap_or_default() {
            "hwnoise" => "osnoise",
            m => m,
        }
    }

    /// `hwnoise`: osnoise with OSNOISE_IRQ_DISABLE, as rtla hwnoise runs
    /// it: only what the hardware and firmware take (rtla 7.2's
    /// osnoise_hist/top with irq_disable, trace_osnoise.c 6.3+).
    pub(super) fn hw(&self) -> bool {
        self.mode.as_deref() == Some("hwnoise")
    }

    /// The auto-analysis of a timerlat stop (rtla's timerlat_aa.c): where
    /// a threshold is set and --no-aa is not.
    pub(super) fn aa(&self, mode: Mode) -> bool {
        mode == Mode::Timerlat && stop_armed(self, mode) && !self.no_aa
    }
}

fn policy(v: &str) -> Result<trbox::sys::sched::Sched, String> {
    trbox::sys::sched::Sched::parse(v).ok_or_else(|| "give f:PRIO, r:PRIO or o:NICE (e.g. f:95)".into())
}

/// The options of `own` (tr-lat's words before `-- CMD`), rtla's
/// spellings taken: `--cgroup` alone, `--aa-only US`.
pub(super) fn parse(own: &[String]) -> Result<(Common, Args), Error> {
    // rtla's -C/--cgroup takes its name attached (--cgroup=NAME) or none.
    // (-C is --clock in trbox: one letter, one meaning.)
    let own: Vec<String> = own.iter().map(|w| if w == "--cgroup" { "--cgroup=".into() } else { w.clone() }).collect();
    let (common, mut a) = cli::parse::<Args>("tr-lat", &own)?;
    // rtla's --aa-only US: every threshold at US, the stack too.
    if let Some(us) = a.aa_only {
        (a.irq_us, a.total_us, a.stack_us) = (Some(us), Some(us), Some(us));
    }
    if a.mode.is_none() {
        return Err(
            Error::usage("which latency? a MODE is needed").hint("e.g. tr-lat wakeup -t 5; see 'tr-lat --help'")
        );
    }
    Ok((common, a))
}

/// Which modes take an option: bits of the modes below.
type Modes = u8;
const WAKEUP: Modes = 1;
const IRQ: Modes = 1 << 1;
const SYSCALL: Modes = 1 << 2;
const TIMERLAT: Modes = 1 << 3;
/// osnoise and hwnoise (the osnoise tracer with IRQs disabled).
const OSNOISE: Modes = 1 << 4;
const HWLAT: Modes = 1 << 5;
/// The max-latency tracers (wakeup_rt, wakeup --max, irqsoff...).
const MAX: Modes = 1 << 6;
/// Every mode but the max-latency tracers, which print the kernel's text
/// of each maximum and measure nothing themselves.
const MEASURING: Modes = WAKEUP | IRQ | SYSCALL | TIMERLAT | OSNOISE | HWLAT;
/// The modes that read plain tracepoints (no tracer set up).
const TRACEPOINTS: Modes = WAKEUP | IRQ | SYSCALL;

/// The modes' names in messages, by bit.
const MODE_NAMES: [&str; 7] = ["wakeup", "irq", "syscall", "timerlat", "osnoise", "hwlat", "the max-latency tracers"];

/// An option that only some modes take: its long name (as argh declares
/// it), whether it was given, and those modes.
struct Rule {
    name: &'static str,
    given: fn(&Args) -> bool,
    modes: Modes,
}

/// Which mode takes which option: the one place that says it; [`check`]
/// refuses the first option given here that the mode does not take, and
/// the message names the modes that do. The options not here (-t,
/// --json, -k) go with every mode. --aa-only comes first: it gives
/// --irq-us, --total-us and --stack-us their values ([`parse`]).
const RULES: &[Rule] = &[
    Rule { name: "--aa-only", given: |a| a.aa_only.is_some(), modes: TIMERLAT },
    Rule { name: "--rt", given: |a| a.rt, modes: WAKEUP },
    Rule { name: "--pid", given: |a| !a.pid.is_empty(), modes: TRACEPOINTS },
    Rule { name: "--read", given: |a| a.read, modes: MEASURING },
    Rule { name: "--hist", given: |a| a.hist, modes: MEASURING },
    Rule { name: "--all", given: |a| a.all, modes: MEASURING },
    Rule { name: "--bucket", given: |a| a.bucket.is_some(), modes: MEASURING },
    Rule { name: "--entries", given: |a| a.entries.is_some(), modes: MEASURING },
    Rule { name: "--ns", given: |a| a.ns, modes: MEASURING },
    Rule { name: "--samples", given: |a| a.samples, modes: MEASURING },
    Rule { name: "--on-end", given: |a| !a.on_end.is_empty(), modes: MEASURING },
    Rule { name: "--output", given: |a| a.output.is_some(), modes: MAX },
    Rule { name: "--irq-us", given: |a| a.irq_us.is_some(), modes: TIMERLAT | OSNOISE | HWLAT | MAX },
    Rule { name: "--period", given: |a| a.period.is_some(), modes: TIMERLAT | OSNOISE | HWLAT },
    Rule { name: "--warm-up", given: |a| a.warm_up.is_some(), modes: TIMERLAT | OSNOISE | HWLAT },
    Rule { name: "--dma-latency", given: |a| a.dma_latency.is_some(), modes: TIMERLAT | OSNOISE | HWLAT },
    Rule { name: "--trace-buffer-size", given: |a| a.trace_buffer_size.is_some(), modes: TIMERLAT | OSNOISE | HWLAT },
    Rule { name: "--house-keeping", given: |a| a.house_keeping.is_some(), modes: TIMERLAT | OSNOISE | HWLAT },
    Rule { name: "--deepest-idle-state", given: |a| a.deepest_idle_state.is_some(), modes: TIMERLAT | OSNOISE | HWLAT },
    Rule { name: "--width", given: |a| a.width.is_some(), modes: HWLAT },
    Rule { name: "--cpus", given: |a| a.cpus.is_some(), modes: TIMERLAT | OSNOISE },
    Rule { name: "--total-us", given: |a| a.total_us.is_some(), modes: TIMERLAT | OSNOISE },
    Rule { name: "--priority", given: |a| a.priority.is_some(), modes: TIMERLAT | OSNOISE },
    Rule { name: "--cgroup", given: |a| a.cgroup.is_some(), modes: TIMERLAT | OSNOISE },
    Rule { name: "--on-threshold", given: |a| !a.on_threshold.is_empty(), modes: TIMERLAT | OSNOISE },
    Rule { name: "--stack-us", given: |a| a.stack_us.is_some(), modes: TIMERLAT },
    Rule { name: "--user-threads", given: |a| a.user_threads, modes: TIMERLAT },
    Rule { name: "--user-load", given: |a| a.user_load, modes: TIMERLAT },
    Rule { name: "--kernel-threads", given: |a| a.kernel_threads, modes: TIMERLAT },
    Rule { name: "--no-aa", given: |a| a.no_aa, modes: TIMERLAT },
    Rule { name: "--dump-tasks", given: |a| a.dump_tasks, modes: TIMERLAT },
];

/// `modes` for a person: "timerlat, osnoise and hwlat".
fn mode_list(modes: Modes) -> String {
    let names: Vec<&str> =
        MODE_NAMES.iter().enumerate().filter(|(i, _)| modes & 1 << i != 0).map(|(_, n)| *n).collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The usage error of option `name`, which `modes` take, given to `mode`.
fn not_for(name: &str, modes: Modes, mode: &str) -> Error {
    Error::usage(format!("{name} is for {}, not for {mode}", mode_list(modes)))
        .hint("see 'tr-lat --help' for which mode takes which option")
}

/// What a run of `a` is, once its options are checked.
pub(super) enum Run {
    /// A max-latency tracer (wakeup_rt, wakeup --max, irqsoff...).
    Max,
    /// A measuring mode.
    Measure(Checked),
}

/// What a measuring mode's options ask for, once checked.
#[derive(Clone, Copy)]
pub(super) struct Checked {
    /// The mode.
    pub(crate) mode: Mode,
    /// timerlat, osnoise, hwlat: a tracer runs (not plain tracepoints).
    pub(crate) tracer: bool,
    /// The first option given that only a tracer's modes take (it sets
    /// the tracer up), by its long name.
    pub(crate) tracer_opt: Option<&'static str>,
}

/// The mode of `a` and whether its options go with it (and with `cmd`).
pub(super) fn check(a: &Args, cmd: &[String]) -> Result<Run, Error> {
    // The mode as given: hwnoise, wakeup --max.
    let shown = match a.mode.as_deref().unwrap_or_default() {
        "wakeup" if a.max => "wakeup --max",
        m => m,
    };
    let max = a.max || a.mode() != "wakeup" && MAX_TRACERS.contains(&a.mode());
    let (bits, mode) = if max {
        if !MAX_TRACERS.contains(&a.mode()) {
            return Err(not_for("--max", WAKEUP, shown));
        }
        (MAX, None)
    } else {
        let Some(mode) = Mode::parse(a.mode()) else {
            return Err(Error::usage(format!("unknown mode '{}'", a.mode())).hint(
                "modes: wakeup, irq, syscall, timerlat, osnoise, hwnoise, hwlat, wakeup_rt, wakeup --max, wakeup_dl, irqsoff, preemptoff, preemptirqsoff",
            ));
        };
        // timerlat, osnoise and hwnoise: rtla's parity (feature rtla).
        if !cfg!(feature = "rtla") && matches!(mode, Mode::Timerlat | Mode::Osnoise) {
            return Err(crate::applets::cli::left_out(
                &format!("tr-lat {}", a.mode.as_deref().unwrap_or_default()),
                "rtla",
            ));
        }
        let bit = match mode {
            Mode::Wakeup => WAKEUP,
            Mode::Irq => IRQ,
            Mode::Syscall => SYSCALL,
            Mode::Timerlat => TIMERLAT,
            Mode::Osnoise => OSNOISE,
            Mode::Hwlat => HWLAT,
        };
        (bit, Some(mode))
    };
    let given = || RULES.iter().filter(|r| (r.given)(a));
    if let Some(r) = given().find(|r| r.modes & bits == 0) {
        return Err(not_for(r.name, r.modes, shown));
    }
    let Some(mode) = mode else {
        if !cmd.is_empty() {
            return Err(Error::usage(format!("tr-lat {} traces the whole system: no -- CMD", a.mode())));
        }
        return Ok(Run::Max);
    };
    let tracer = matches!(mode, Mode::Timerlat | Mode::Osnoise | Mode::Hwlat);
    command::one_target(&a.pid, cmd)?;
    if tracer && !cmd.is_empty() {
        return Err(Error::usage(format!("{} measures CPUs, not processes: no -- CMD", a.mode()))
            .hint("use --cpus CPUS, and -t S"));
    }
    if a.no_aa && (a.aa_only.is_some() || a.dump_tasks) {
        return Err(Error::usage("--no-aa goes with neither --aa-only nor --dump-tasks"));
    }
    // rtla takes a value under -1 for "not given"; here it is a mistake.
    if a.deepest_idle_state.is_some_and(|n| n < -1) {
        return Err(Error::usage("--deepest-idle-state: a state's number, or -1 for all of them"));
    }
    if (!a.on_threshold.is_empty() || a.dump_tasks) && !stop_armed(a, mode) {
        return Err(Error::usage("--on-threshold and --dump-tasks need a stop threshold: --irq-us or --total-us"));
    }
    if a.samples && !a.json {
        return Err(Error::usage("--samples goes with --json"));
    }
    if [a.user_threads, a.user_load, a.kernel_threads].iter().filter(|&&x| x).count() > 1 {
        return Err(Error::usage("one of -u, -U and --kernel-threads"));
    }
    let tracer_opt = given().find(|r| r.modes & TRACEPOINTS == 0).map(|r| r.name);
    Ok(Run::Measure(Checked { mode, tracer, tracer_opt }))
}

pub(super) fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Wakeup => "wakeup",
        Mode::Irq => "irq",
        Mode::Syscall => "syscall",
        Mode::Timerlat => "timerlat",
        Mode::Osnoise => "osnoise",
        Mode::Hwlat => "hwlat",
    }
}

/// A stop threshold is set: the kernel may stop tracing by itself.
pub(super) fn stop_armed(a: &Args, mode: Mode) -> bool {
    mode != Mode::Hwlat && (a.irq_us.is_some() || a.total_us.is_some())
}
