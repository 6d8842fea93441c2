//! Tracing from boot, sans-IO: the kernel command line and the bootconfig
//! (boot-time tracing, `ftrace.*` keys) that make the settings of a trbox
//! run before the first process starts (`--boot`).
//!
//! | setting | command line | bootconfig | kernel source |
//! |---|---|---|---|
//! | tracer | `ftrace=T` (top only) | `ftrace.[instance.I.]tracer` | trace.c `set_cmdline_ftrace()` |
//! | buffer KiB per CPU | `trace_buf_size=NK` (top) | `…buffer_size = NKB` | trace.c `set_buf_size()` (memparse) |
//! | clock | `trace_clock=C` (top) | `…trace_clock` | trace.c `set_trace_boot_clock()` |
//! | options | `trace_options=a,noB` (top) | `…options` | trace.c `set_trace_boot_options()` |
//! | function filters | `ftrace_filter=`, `ftrace_notrace=` (top) | `…ftrace.filters`, `…ftrace.notraces` | ftrace.c `set_ftrace_filter()` |
//! | graph filter, depth | `ftrace_graph_filter=`, `ftrace_graph_max_depth=` | `kernel.` + the same | ftrace.c `set_graph_function()`, `set_graph_max_depth_function()` |
//! | events | `trace_event=S:E,…`; `trace_instance=I,S:E,…` | `…events` | trace_events.c `setup_trace_event()` |
//! | event filter | — | `…event.S.E.filter` | trace_boot.c `trace_boot_init_one_event()` |
//! | trigger | `trace_trigger=E.T[ if F],…` (event name only) | `…event.S.E.actions` | trace_events.c `setup_trace_triggers()` |
//! | tracing off | — | `…tracing_on = 0` | trace_boot.c |
//! | dump on oops | `ftrace_dump_on_oops[=2]`, `=0,I[=2]` | `kernel.` + the same | trace.c |
//!
//! A bootconfig's `kernel.K = V` is passed on as the command line's `K=V`
//! (init/main.c `xbc_make_cmdline()`), so every command-line form has one.
//! Versions: [`crate::kernel`]; boot-time tracing itself is 5.6+
//! (CONFIG_BOOT_CONFIG, CONFIG_BOOTTIME_TRACING).

use crate::ctl::DumpOnOops;
use crate::kernel::{DUMP_INSTANCE_SINCE, PERSISTENT_SINCE, TRACE_INSTANCE_SINCE, TRACE_TRIGGER_SINCE};
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// The kernel command line's tracing parameters
/// (Documentation/admin-guide/kernel-parameters.txt): kernel/trace's
/// start with these (`ftrace=`, `ftrace_filter=`, `trace_event=`,
/// `trace_instance=`, `tp_printk`, `traceoff_on_warning`, …), and
/// `reserve_mem=` holds a persistent buffer's memory.
const PARAMS: [&str; 8] = [
    "ftrace",
    "trace_",
    "tp_printk",
    "traceoff_on_warning",
    "alloc_snapshot",
    "kprobe_event",
    "fgraph_",
    "reserve_mem",
];

/// The words of a kernel command line (`/proc/cmdline`) that set up
/// tracing at boot, in their order: what `tr-on` shows as set up at boot.
pub(crate) fn from_cmdline(cmdline: &str) -> Vec<&str> {
    cmdline.split_whitespace().filter(|w| PARAMS.iter().any(|p| w.starts_with(p))).collect()
}

/// What a run would set; the applets fill what they have.
#[derive(Debug, Default)]
pub(crate) struct Settings<'a> {
    /// The instance to set up (`-B`); `None`: the top buffer, the only one
    /// the plain command line reaches for most settings.
    pub(crate) instance: Option<&'a str>,
    /// The tracer (`function`, `function_graph`, …).
    pub(crate) tracer: Option<&'a str>,
    /// Ring buffer size per CPU, in KiB.
    pub(crate) buffer_kb: Option<u64>,
    /// The trace clock (`local`, `global`, `mono`, …).
    pub(crate) clock: Option<&'a str>,
    /// `OPT` or `noOPT`.
    pub(crate) options: &'a [String],
    /// `set_ftrace_filter` patterns.
    pub(crate) functions: &'a [String],
    /// `set_ftrace_notrace` patterns.
    pub(crate) notrace: &'a [String],
    /// `set_graph_function` patterns.
    pub(crate) graph_functions: &'a [String],
    /// `max_graph_depth`.
    pub(crate) graph_depth: Option<u32>,
    /// `SYS:EVENT`, `SYS:GLOB` (or the set_event forms `SYS:*`, `EVENT`).
    pub(crate) events: &'a [String],
    /// A filter expression for every event in `events` (bootconfig only).
    pub(crate) filter: Option<&'a str>,
    /// Event triggers, `EVENT.TRIGGER[ if FILTER]`.
    pub(crate) triggers: &'a [String],
    /// Leave `tracing_on` at 0: set up but not recording.
    pub(crate) off: bool,
    /// Dump the buffers on an oops.
    pub(crate) dump_on_oops: Option<DumpOnOops>,
    /// MiB of memory that survives a warm reboot for the instance's buffer
    /// (a persistent ring buffer; `instance` must be set).
    pub(crate) persist_mb: Option<u64>,
}

/// The `reserve_mem=` label of a persistent instance's memory (at most 15
/// characters: mm/memblock.c `RESERVE_MEM_NAME_SIZE`).
pub(crate) const PERSIST_LABEL: &str = "trbox";

/// The text `--boot` prints: a command line (one line), a bootconfig (a
/// line per key) and a `# ` line for each setting a form cannot carry.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Boot {
    /// Kernel command-line arguments, space separated, no newline.
    pub(crate) cmdline: String,
    /// Bootconfig lines (`ftrace.… = …`), each ending in a newline.
    pub(crate) bootconfig: String,
    /// `# ` lines, one per setting that one of the two forms cannot carry.
    pub(crate) notes: String,
}

impl Boot {
    /// `K=V` on the command line, `"V"` where the kernel's argument parser
    /// needs quotes (a space: `next_arg()` in lib/cmdline.c takes `K="v w"`).
    fn arg(&mut self, k: &str, v: &str) {
        if !self.cmdline.is_empty() {
            self.cmdline.push(' ');
        }
        self.cmdline.push_str(k);
        if v.is_empty() {
            return;
        }
        let q = v.contains([' ', '\t']);
        self.cmdline.push('=');
        for p in [if q { "\"" } else { "" }, v, if q { "\"" } else { "" }] {
            self.cmdline.push_str(p);
        }
    }

    /// `PREFIXK = V1, V2` (each value quoted, `'` when it holds `"`); no
    /// values: the bare key.
    fn key<'v>(&mut self, prefix: &str, k: &str, vals: impl IntoIterator<Item = &'v str>, quoted: bool) {
        let c = &mut self.bootconfig;
        c.push_str(prefix);
        c.push_str(k);
        for (i, v) in vals.into_iter().enumerate() {
            c.push_str(if i == 0 { " = " } else { ", " });
            let q = if !quoted {
                ""
            } else if v.contains('"') {
                "'"
            } else {
                "\""
            };
            for p in [q, v, q] {
                c.push_str(p);
            }
        }
        c.push('\n');
    }

    fn note(&mut self, parts: &[&str]) {
        self.notes.push_str("# ");
        for p in parts {
            self.notes.push_str(p);
        }
        self.notes.push('\n');
    }

    fn since(&mut self, what: &str, v: (u32, u32)) {
        self.note(&[what, ": ", &v.0.to_string(), ".", &v.1.to_string(), "+"]);
    }
}

/// `SYS:EVENT` when the spec names one event (no glob): bootconfig's
/// per-event keys and `trace_trigger=` need one.
fn one_event(spec: &str) -> Option<(&str, &str)> {
    let (s, e) = spec.split_once(':')?;
    let plain = |x: &str| !x.is_empty() && !x.contains(['*', '?', '[', '.', ' ']);
    (plain(s) && plain(e)).then_some((s, e))
}

/// The boot-time forms of `s`.
pub(crate) fn boot(s: &Settings) -> Boot {
    let mut b = Boot::default();
    let inst = s.instance;
    let pre = match inst {
        Some(i) => ["ftrace.instance.", i, "."].concat(),
        None => "ftrace.".into(),
    };
    let top = inst.is_none();
    // What only the top buffer has on the command line.
    let mut top_only: Vec<&str> = Vec::new();
    let kb = s.buffer_kb.map(|k| k.to_string());
    let opts = s.options.join(",");
    let f = s.functions.join(",");
    let n = s.notrace.join(",");
    let kbk = kb.as_ref().map(|k| [k, "K"].concat());
    let kbkb = kb.as_ref().map(|k| [k, "KB"].concat());
    for (given, param, key, v, conf, quoted, opt) in [
        (s.tracer.is_some(), "ftrace", "tracer", s.tracer.unwrap_or(""), None, true, "the tracer"),
        (kb.is_some(), "trace_buf_size", "buffer_size", kbk.as_deref().unwrap_or(""), kbkb.as_deref(), false, "-b"),
        (s.clock.is_some(), "trace_clock", "trace_clock", s.clock.unwrap_or(""), None, true, "-C"),
        (!opts.is_empty(), "trace_options", "options", &opts, None, true, "-O"),
        (!f.is_empty(), "ftrace_filter", "ftrace.filters", &f, None, true, "-l"),
        (!n.is_empty(), "ftrace_notrace", "ftrace.notraces", &n, None, true, "-n"),
    ] {
        if !given {
            continue;
        }
        let list: Vec<&str> = match conf {
            Some(c) => Vec::from([c]),
            None => v.split(',').collect(),
        };
        b.key(&pre, key, list, quoted);
        if top {
            b.arg(param, v);
        } else {
            top_only.push(opt);
        }
    }
    // The graph filters are the top buffer's (no instance key).
    let g = s.graph_functions.join(",");
    let depth = s.graph_depth.map(|d| d.to_string());
    for (given, param, v, quoted) in [
        (!g.is_empty(), "ftrace_graph_filter", &*g, true),
        (depth.is_some(), "ftrace_graph_max_depth", depth.as_deref().unwrap_or(""), false),
    ] {
        if given {
            b.arg(param, v);
            b.key("kernel.", param, [v], quoted);
        }
    }
    let evs = s.events.join(",");
    if !evs.is_empty() {
        b.key(&pre, "events", s.events.iter().map(String::as_str), true);
    }
    if let Some(i) = inst {
        // A persistent instance: its memory first (reserve_mem is parsed
        // early, trace_instance= maps the memory its label names).
        let at = match s.persist_mb {
            Some(mb) => {
                b.arg("reserve_mem", &[&mb.to_string(), "M:4096:", PERSIST_LABEL].concat());
                ["@", PERSIST_LABEL].concat()
            }
            None => String::new(),
        };
        b.arg("trace_instance", &[i, &at, if evs.is_empty() { "" } else { "," }, &evs].concat());
        b.since("trace_instance=", TRACE_INSTANCE_SINCE);
        if s.persist_mb.is_some() {
            b.since("a persistent instance (reserve_mem=, NAME@LABEL)", PERSISTENT_SINCE);
            b.note(&[
                "its memory and events only on the command line; after a warm reboot it keeps the previous boot's \
                 events until read (tr-cat -o FILE -B ",
                i,
                ") or reset: docs/postmortem.md",
            ]);
        }
    } else if !evs.is_empty() {
        b.arg("trace_event", &evs);
    }
    // Per-event keys need one named event; the command line has no filter.
    let named: Vec<(&str, &str)> = s.events.iter().filter_map(|e| one_event(e)).collect();
    let globbed = named.len() < s.events.len();
    if let Some(f) = s.filter {
        for (sys, ev) in &named {
            b.key(&pre, &["event.", sys, ".", ev, ".filter"].concat(), [f], true);
        }
        b.note(&["-f: bootconfig only"]);
    }
    if !s.triggers.is_empty() {
        let mut tt = String::new();
        for (sys, ev) in &named {
            b.key(&pre, &["event.", sys, ".", ev, ".actions"].concat(), s.triggers.iter().map(String::as_str), true);
            for t in s.triggers {
                for p in [if tt.is_empty() { "" } else { "," }, ev, ".", t] {
                    tt.push_str(p);
                }
            }
        }
        if !top {
            top_only.push("-R");
        } else if !tt.is_empty() {
            b.arg("trace_trigger", &tt);
            b.since("trace_trigger=", TRACE_TRIGGER_SINCE);
        }
    }
    if globbed && (s.filter.is_some() || !s.triggers.is_empty()) {
        b.note(&["-f/-R: on named events only (SYS:EVENT), not on a glob"]);
    }
    if s.off {
        b.key(&pre, "tracing_on", ["0"], false);
        b.note(&["--off: bootconfig only"]);
    }
    if let Some(d) = s.dump_on_oops {
        let v = d.value(inst);
        let v = if d == DumpOnOops::AllCpus && top { "" } else { &v };
        b.arg("ftrace_dump_on_oops", v);
        b.key("kernel.", "ftrace_dump_on_oops", (!v.is_empty()).then_some(v), true);
        if !top {
            b.since("ftrace_dump_on_oops=0,NAME", DUMP_INSTANCE_SINCE);
        }
    }
    if !top_only.is_empty() {
        b.note(&[&top_only.join(", "), " of an instance: bootconfig only"]);
    }
    b
}

#[cfg(test)]
mod tests {
    #[test]
    fn tracing_words_of_a_command_line() {
        let l = "console=ttyAMA0 ftrace=function trace_buf_size=64K quiet trace_event=sched:sched_switch \
                 reserve_mem=12M:4096:trace trace_instance=boot_mapped@trace tp_printk tracer=1";
        assert_eq!(
            from_cmdline(l),
            [
                "ftrace=function",
                "trace_buf_size=64K",
                "trace_event=sched:sched_switch",
                "reserve_mem=12M:4096:trace",
                "trace_instance=boot_mapped@trace",
                "tp_printk"
            ]
        );
        assert!(from_cmdline("console=ttyS0 quiet").is_empty());
    }

    use super::*;

    #[test]
    fn a_persistent_instance_from_boot() {
        let e = v(&["sched:sched_switch", "irq:*"]);
        let s = Settings { instance: Some("boot_mapped"), events: &e, persist_mb: Some(12), ..Default::default() };
        let b = boot(&s);
        assert_eq!(b.cmdline, "reserve_mem=12M:4096:trbox trace_instance=boot_mapped@trbox,sched:sched_switch,irq:*");
        assert!(b.notes.contains("# a persistent instance (reserve_mem=, NAME@LABEL): 6.12+\n"), "{}", b.notes);
        assert!(b.notes.contains("tr-cat -o FILE -B boot_mapped"), "{}", b.notes);
        let s = Settings { instance: Some("boot_mapped"), persist_mb: Some(4), ..Default::default() };
        assert_eq!(boot(&s).cmdline, "reserve_mem=4M:4096:trbox trace_instance=boot_mapped@trbox");
    }

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn top_level_function_run() {
        let (o, l) = (v(&["sym-offset"]), v(&["vfs_*", "ksys_read"]));
        let s = Settings {
            tracer: Some("function"),
            buffer_kb: Some(1408),
            clock: Some("global"),
            options: &o,
            functions: &l,
            dump_on_oops: Some(DumpOnOops::OopsCpu),
            ..Settings::default()
        };
        let b = boot(&s);
        assert_eq!(
            b.cmdline,
            "ftrace=function trace_buf_size=1408K trace_clock=global trace_options=sym-offset \
ftrace_filter=vfs_*,ksys_read ftrace_dump_on_oops=2"
        );
        assert_eq!(
            b.bootconfig,
            "ftrace.tracer = \"function\"
ftrace.buffer_size = 1408KB
ftrace.trace_clock = \"global\"
ftrace.options = \"sym-offset\"
ftrace.ftrace.filters = \"vfs_*\", \"ksys_read\"
kernel.ftrace_dump_on_oops = \"2\"
"
        );
        assert_eq!(b.notes, "");
    }

    #[test]
    fn events_filter_trigger() {
        let (e, r) = (v(&["sched:sched_switch", "irq:*"]), v(&["stacktrace if prev_state == 2"]));
        let s = Settings { events: &e, filter: Some("prev_pid != 0"), triggers: &r, ..Settings::default() };
        let b = boot(&s);
        assert_eq!(
            b.cmdline,
            "trace_event=sched:sched_switch,irq:* trace_trigger=\"sched_switch.stacktrace if prev_state == 2\""
        );
        assert_eq!(
            b.bootconfig,
            "ftrace.events = \"sched:sched_switch\", \"irq:*\"
ftrace.event.sched.sched_switch.filter = \"prev_pid != 0\"
ftrace.event.sched.sched_switch.actions = \"stacktrace if prev_state == 2\"
"
        );
        assert_eq!(
            b.notes,
            "# -f: bootconfig only\n# trace_trigger=: 6.2+\n# -f/-R: on named events only (SYS:EVENT), not on a glob\n"
        );
    }

    #[test]
    fn instance_and_graph() {
        let e = v(&["sched:sched_waking"]);
        let s = Settings {
            instance: Some("foo"),
            events: &e,
            clock: Some("mono"),
            off: true,
            dump_on_oops: Some(DumpOnOops::AllCpus),
            ..Settings::default()
        };
        let b = boot(&s);
        assert_eq!(b.cmdline, "trace_instance=foo,sched:sched_waking ftrace_dump_on_oops=0,foo");
        assert_eq!(
            b.bootconfig,
            "ftrace.instance.foo.trace_clock = \"mono\"
ftrace.instance.foo.events = \"sched:sched_waking\"
ftrace.instance.foo.tracing_on = 0
kernel.ftrace_dump_on_oops = \"0,foo\"
"
        );
        assert!(b.notes.contains("# -C of an instance: bootconfig only\n"), "{}", b.notes);
        let g = v(&["schedule"]);
        let s = Settings {
            tracer: Some("function_graph"),
            graph_functions: &g,
            graph_depth: Some(3),
            dump_on_oops: Some(DumpOnOops::AllCpus),
            ..Settings::default()
        };
        let b = boot(&s);
        assert_eq!(
            b.cmdline,
            "ftrace=function_graph ftrace_graph_filter=schedule ftrace_graph_max_depth=3 ftrace_dump_on_oops"
        );
        assert!(b.bootconfig.ends_with("\nkernel.ftrace_graph_max_depth = 3\nkernel.ftrace_dump_on_oops\n"));
    }
}
