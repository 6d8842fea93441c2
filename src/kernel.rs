//! What a kernel version implies for the text of a trace: the facts no
//! format file carries (they live in the kernel's `trace_output.c`,
//! `trace_syscalls.c` and `trace_functions_graph.c` of that version), in
//! one place. The version comes from `uname(2)` (live), a copy's `uname`
//! file or a trace.dat's UNAME option ([`KernelProfile::source`]); the
//! renderers ask through [`crate::printfmt::KernelInfo`].
//!
//! | fact | versions | kernel source |
//! |---|---|---|
//! | `LatColumns::Four`: `d.h2` | before 5.13 | 5.10 `trace_print_lat_fmt()` |
//! | `LatColumns::Five`: `d.h2.` (+ migrate-disable) | 5.13 on | 5.13 `trace_print_lat_fmt()` |
//! | `LatColumns::RtLazy`: `d.Lh2..` | RT patch sets with lazy preemption (6.1-rt) | their `trace_output.c` |
//! | `SyscallStyle::Since6_17`: `arg: 0x%lx` | 6.17 on | 6.17 `print_syscall_enter()` |
//! | `SyscallStyle::UserData`: user strings and buffers after their pointers, `sys_openat` with flag names | 6.19 on | 7.2 `print_syscall_enter()`, `sys_enter_openat_print()` |
//! | `O_ACCMODE`, `O_TMPFILE_BIT`: the openat flags the print fmt leaves out | every version with `SyscallStyle::UserData` | 7.2 include/uapi/asm-generic/fcntl.h |
//! | `syscall_size_arg`: a user buffer's size is the argument after it | 6.19 on | 7.2 `check_faultable_syscall()` |
//! | `FTRACE_REGS_MAX_ARGS`: funcgraph-args records 6 `long`s, prints `...` past them | 6.15 on (funcgraph-args, CONFIG_FUNCTION_TRACE_ARGS) | 7.2 include/linux/ftrace_regs.h, trace_output.c `print_function_args()` |
//! | `TRACE_TRIGGER_SINCE`: `trace_trigger=EVENT.TRIGGER` on the command line | 6.2 on | 6.2 kernel/trace/trace_events.c `setup_trace_triggers()` |
//! | `TRACE_INSTANCE_SINCE`: `trace_instance=NAME,SYS:EVENT` | 6.3 on | 6.3 kernel/trace/trace.c `boot_instance()` |
//! | `PERSISTENT_SINCE`: `reserve_mem=SIZE:ALIGN:LABEL` + `trace_instance=NAME@LABEL` (a buffer kept across a warm reboot) | 6.12 on | 6.12 kernel/trace/trace.c `enable_instances()`, mm/memblock.c `reserve_mem()` |
//! | `DUMP_INSTANCE_SINCE`: `ftrace_dump_on_oops=0,NAME[=2]` (instances; the sysctl a string) | 6.9 on | 6.9 kernel/trace/trace.c `ftrace_dump_by_param()` |
//! | `FieldsStyle`: a previous boot's events when the kernel moved, by their fields (`print_event_fields()`) | 6.12 on | 6.12, 7.2 trace.c `print_trace_fmt()`, trace_output.c `print_fields()` |
//! | `KSYM_END_EXCLUDED_SINCE`: `is_ksym_addr()` leaves the end symbols (`_etext`, `_einittext`, `_end`) out | 5.16 on (before: `<=`) | 5.15 include/linux/kallsyms.h, 5.16 include/asm-generic/sections.h |
//! | `option_default`: each `options/` file's value at boot, in the top buffer and in a new instance | 5.10 to 7.2 (names come and go; no default changed) | trace.c `TRACE_DEFAULT_FLAGS`, `ZEROED_TRACE_FLAGS`; the tracers' `tracer_flags` (trace_functions.c, trace_functions_graph.c, blktrace.c, trace_nop.c) |
//! | `NEWEST_RULES`: the newest version these rules were checked against | 7.2 | the sid boards' fixtures |
//!
//! A trace.dat without a UNAME option (trace-cmd before 2.7 wrote none)
//! still tells its kernel apart by what it holds: `infer` brackets the
//! release from the set of ftrace events and sched_switch's print fmt
//! (table there).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// How the syscall tracer prints a `sys_enter_*` argument
/// (`print_syscall_enter()`, kernel/trace/trace_syscalls.c): its own text,
/// not the event's print fmt, and no format file tells the versions apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SyscallStyle {
    /// `arg: %lx` (`dfd: ffffffffffffff9c`): kernels before 6.17.
    Before6_17,
    /// `arg: %lu` below 10, else `arg: 0x%lx`: 6.17 and later.
    Since6_17,
    /// As [`Since6_17`](Self::Since6_17), and the enter events copy what
    /// some pointer arguments point to into `__data_loc` fields named
    /// `__ARG_val` (7.2 `syscall_enter_define_fields()`), which the kernel
    /// prints right after that argument, never as arguments of their own
    /// (7.2 `print_syscall_enter()`):
    /// - a string: ` "%.*s"` of the copy (already made printable, with
    ///   `...` where it was cut, when it was recorded: `sys_fault_user()`);
    /// - a buffer (`__print_dynamic_array` in the print fmt: write,
    ///   pwrite64, mq_timedsend): ` (` its bytes as `%02x` joined by `:`,
    ///   `, ...` when fewer were copied than the size argument asked for,
    ///   `)`; then, when any byte is printable ASCII, ` "` the bytes with
    ///   `.` for the others, `"...` or `"`.
    ///
    /// `sys_enter_openat` has its own text (`sys_enter_openat_print()`,
    /// unless `options/verbose` is set): `dfd` and `filename` in `%lu`,
    /// the file name, `flags:` by name (`O_RDONLY` when no access bit is
    /// set, `O_TMPFILE` before the print fmt's table, leftover bits as
    /// `0x%lx`, `|` between) and `mode: 0%03o` only when the flags hold
    /// `O_CREAT` or `O_TMPFILE`. 6.19 and later (the series "tracing: Have
    /// system call events record user data", posted for 6.19 in October
    /// 2025); a format file with `__ARG_val` fields shows it too.
    UserData,
}

/// Syscall events record user data ([`SyscallStyle::UserData`]) from here on.
pub(crate) const USER_DATA_SINCE: (u32, u32) = (6, 19);

/// The syscall argument style of a kernel version. An unknown version
/// gets the style of the kernels boards run today (before 6.17).
pub(crate) fn syscall_style(version: Option<(u32, u32)>) -> SyscallStyle {
    match version {
        Some(v) if v >= USER_DATA_SINCE => SyscallStyle::UserData,
        Some(v) if v >= (6, 17) => SyscallStyle::Since6_17,
        _ => SyscallStyle::Before6_17,
    }
}

/// [`syscall_style`] of an event whose format may itself say more: only
/// 6.19 and later kernels give `sys_enter_*` events `__ARG_val` fields, so
/// a format with them is printed in the [`SyscallStyle::UserData`] way
/// whatever the version says (a copy without `uname`).
pub(crate) fn syscall_style_of(version: Option<(u32, u32)>, has_user_data: bool) -> SyscallStyle {
    if has_user_data {
        return SyscallStyle::UserData;
    }
    syscall_style(version)
}

/// Whether an event's format shows 6.19's syscall user data: a
/// `sys_enter_*` event with a `__data_loc` field `__ARG_val` beside its
/// argument ARG (7.2 `syscall_enter_define_fields()`).
pub(crate) fn records_user_data(ev: &crate::format::EventFormat) -> bool {
    ev.system == "syscalls"
        && ev.name.starts_with("sys_enter_")
        && ev.fields.iter().any(|f| {
            matches!(f.kind, crate::format::FieldKind::DataLoc { .. })
                && f.name
                    .strip_prefix("__")
                    .and_then(|r| r.strip_suffix("_val"))
                    .is_some_and(|a| ev.fields.iter().any(|g| g.name == a))
        })
}

/// `O_ACCMODE`: the access-mode bits, the same on every architecture
/// (include/uapi/asm-generic/fcntl.h); `sys_enter_openat_print()` prints
/// `O_RDONLY` when none is set.
pub(crate) const O_ACCMODE: u64 = 3;

/// `__O_TMPFILE` (1 << 22 in include/uapi/asm-generic/fcntl.h, which arm,
/// arm64 and x86 take): `O_TMPFILE` is it with `O_DIRECTORY`, and is the
/// first entry of `sys_enter_openat_print()`'s flag table, which the
/// event's print fmt does not list (the other flags' values are there, per
/// architecture: `{ 0x4000, "O_DIRECTORY" }` on arm64 and arm).
pub(crate) const O_TMPFILE_BIT: u64 = 1 << 22;

/// The argument that gives the length of user buffer argument `arg`: the
/// one after it (7.2 `check_faultable_syscall()`: write, pwrite64 and
/// mq_timedsend, buffer at 1 and size at 2, are the only buffers).
pub(crate) fn syscall_size_arg(arg: usize) -> usize {
    arg + 1
}

/// How many arguments a funcgraph entry record carries when the
/// funcgraph-args option is on (`FTRACE_REGS_MAX_ARGS`, 6 in 7.2's
/// include/linux/ftrace_regs.h; no architecture overrides it): the kernel
/// prints them only when the record holds at least this many `long`s after
/// `depth`, and prints `...` for parameters past them
/// (`print_function_args()`).
pub(crate) const FTRACE_REGS_MAX_ARGS: usize = 6;

/// `trace_trigger=` on the kernel command line (event name, no system:
/// `setup_trace_triggers()` in 6.2's trace_events.c).
pub(crate) const TRACE_TRIGGER_SINCE: (u32, u32) = (6, 2);
/// `trace_instance=` (6.3's trace.c `boot_instance()`, with its events).
pub(crate) const TRACE_INSTANCE_SINCE: (u32, u32) = (6, 3);
/// An instance on memory kept across a warm reboot: `trace_instance=NAME@LABEL`
/// of the memory `reserve_mem=SIZE:ALIGN:LABEL` names (6.12's trace.c
/// `enable_instances()`).
pub(crate) const PERSISTENT_SINCE: (u32, u32) = (6, 12);
/// `ftrace_dump_on_oops` naming instances (`ftrace_dump_by_param()`,
/// 6.9's trace.c; before, the sysctl is an int: 0, 1, 2).
pub(crate) const DUMP_INSTANCE_SINCE: (u32, u32) = (6, 9);

/// The trace options (`options/NAME`) and the value a kernel boots with,
/// for every option of 5.10 to 7.2: trace.c's `TRACE_DEFAULT_FLAGS`
/// (`global_trace.trace_flags`) for the core ones, each tracer's
/// `tracer_flags.val` for its own (`funcgraph-*`, `func_*`, `blk_*`,
/// `test_nop_*`). Options come with kernel releases (of the boards'
/// kernels, 5.10 has no `hash-ptr`, 6.1 no `fields` nor
/// `trace_printk_dest`, 6.12 no `copy_trace_marker`, 6.18 no
/// `bitmask-list`) and none has changed its default since: a kernel
/// without one has no file for it. A boot's `trace_options=` may have
/// changed one.
const OPTION_DEFAULTS: &[(&str, bool)] = &[
    ("print-parent", true),
    ("sym-offset", false),
    ("sym-addr", false),
    ("verbose", false),
    ("raw", false),
    ("hex", false),
    ("bin", false),
    ("block", false),
    ("fields", false),
    ("trace_printk", true),
    ("annotate", true),
    ("userstacktrace", false),
    ("sym-userobj", false),
    ("printk-msg-only", false),
    ("context-info", true),
    ("latency-format", false),
    ("record-cmd", true),
    ("record-tgid", false),
    ("overwrite", true),
    ("disable_on_free", false),
    ("irq-info", true),
    ("markers", true),
    ("event-fork", false),
    ("trace_printk_dest", true),
    ("copy_trace_marker", true),
    ("pause-on-trace", false),
    ("hash-ptr", true),
    ("bitmask-list", false),
    ("function-trace", true),
    ("function-fork", false),
    ("display-graph", false),
    ("branch", false),
    ("stacktrace", false),
    ("func_stack_trace", false),
    ("func-no-repeats", false),
    ("func-args", false),
    ("funcgraph-overrun", false),
    ("funcgraph-cpu", true),
    ("funcgraph-overhead", true),
    ("funcgraph-proc", false),
    ("funcgraph-duration", true),
    ("funcgraph-abstime", false),
    ("funcgraph-irqs", true),
    ("funcgraph-tail", false),
    ("funcgraph-retval", false),
    ("funcgraph-retval-hex", false),
    ("funcgraph-retaddr", false),
    ("funcgraph-args", false),
    ("sleep-time", true),
    ("graph-time", true),
    ("blk_classic", false),
    ("blk_cgroup", false),
    ("blk_cgname", false),
    ("test_nop_accept", false),
    ("test_nop_refuse", false),
];

/// The core options a new instance starts with off whatever the top
/// buffer has (trace.c `ZEROED_TRACE_FLAGS`: the fork options, and since
/// 6.12/6.17 where trace_printk and trace_marker writes go).
const ZEROED_IN_INSTANCES: &[&str] = &["event-fork", "function-fork", "trace_printk_dest", "copy_trace_marker"];

/// The value `options/NAME` has at boot: in the top buffer, or in an
/// instance made while the top buffer had its defaults (an instance
/// starts with the top's options, less `ZEROED_IN_INSTANCES`). `None`
/// for an option this table does not know (a kernel newer than
/// [`NEWEST_RULES`]).
pub(crate) fn option_default(name: &str, instance: bool) -> Option<bool> {
    let (_, on) = OPTION_DEFAULTS.iter().find(|(n, _)| *n == name)?;
    Some(*on && !(instance && ZEROED_IN_INSTANCES.contains(&name)))
}

/// How a kernel prints the events of a persistent buffer's previous boot
/// when its kernel has moved since (KASLR: a non-zero text or data delta
/// in 6.12's `last_boot_info`, a `[kernel]` address other than this boot's
/// `_text` from 6.15): not by their print fmt, whose pointers may be
/// stale, but field by field, as `options/fields` does
/// (`print_trace_fmt()` calls `print_event_fields()` for every event but
/// ftrace's own, kernel/trace/trace.c). `print_fields()`
/// (kernel/trace/trace_output.c) writes ` name=value` per field in format
/// order, `<OVERFLOW>` past the record's end:
/// - `char[N]`: `%.*s`; `__data_loc`/`__rel_loc` `char`: `%.*s` of it;
///   `char *`: `(0x%px)` (the kernel reads the string at the pointer, in
///   memory this reader does not have);
/// - 1 byte: `'%c'` when printable, then `(%d)` unsigned; 2: `0x%x (%d)`
///   unsigned; 4: a `__data_loc`/`__rel_loc` array as `%02x` bytes
///   joined by `,`, else `0x%x (%d)`; 8: `0x%llx (%lld)`; other sizes
///   `<INVALID-SIZE>`; a `__data_loc cpumask_t` `<INVALID-TYPE>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldsStyle {
    /// As above, every event but ftrace's: 6.12 to 6.15.
    Plain,
    /// Fields of `sizeof(long)` as `%pS (%lld)` (`%pS (%d)` on 32 bits) of
    /// the value moved by `trace_adjust_address()` (only when that lands
    /// in the kernel image or a module); a 4-byte `caller_offs` or
    /// `parent_offs` first as `%pS ` of `_stext` plus it, moved: 6.16
    /// ("tracing: Show function names when possible when listing fields",
    /// "tracing: Adjust addresses for printing out fields", "tracing: Show
    /// preempt and irq events callsites from the offsets in field print",
    /// all in the 6.16 merge).
    Symbols,
    /// As [`Symbols`](Self::Symbols), and the syscall events print as
    /// usual ("tracing: Have persistent ring buffer print syscalls
    /// normally"), and a `__data_loc` string with a byte that is not
    /// printable ASCII prints with `.` for such bytes, then ` (` its bytes
    /// as `%02x` joined by `:` `)` ("tracing: Check for printable
    /// characters when printing field dyn strings"): 6.19 on (7.2).
    SyscallsByFmt,
}

/// [`FieldsStyle`] of a kernel version; an unknown one gets the newest
/// kernel's ([`NEWEST_RULES`]).
pub(crate) fn fields_style(version: Option<(u32, u32)>) -> FieldsStyle {
    match version.unwrap_or(NEWEST_RULES) {
        v if v >= USER_DATA_SINCE => FieldsStyle::SyscallsByFmt,
        v if v >= (6, 16) => FieldsStyle::Symbols,
        _ => FieldsStyle::Plain,
    }
}

/// `is_ksym_addr()` stops before `_etext`, `_einittext` and `_end` from
/// here on; before, an address equal to one of them was the kernel's too
/// ([`crate::kallsyms::Kallsyms::set_kernel`]).
pub(crate) const KSYM_END_EXCLUDED_SINCE: (u32, u32) = (5, 16);

/// The newest kernel version whose text these rules were checked against
/// line for line (the sid boards' fixtures, 7.2.13). A newer kernel gets
/// the rules of this one, and says so under `-v`
/// ([`KernelProfile`]'s `Display`).
pub(crate) const NEWEST_RULES: (u32, u32) = (7, 2);

/// The latency columns of the line prefix (`trace_print_lat_fmt()`,
/// kernel/trace/trace_output.c), which no format file describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LatColumns {
    /// `d.h2`: irqs-off (`d`; `X` for an architecture without irq flags),
    /// need-resched (`N`, `n`, `p`), hard/softirq, then the whole preempt
    /// count as `%x` (two digits from 16 on) or `.`: kernels before 5.13
    /// (5.10's trace_output.c).
    Four,
    /// `d.h2.`: the preempt depth and the migrate-disable depth as one hex
    /// digit each (5.13 added the migrate-disable column), `b`/`D` with
    /// bottom halves off (5.18), the lazy need-resched marks (6.13).
    Five,
    /// `d.Lh2..`: PREEMPT_RT kernels with the RT patch set's lazy
    /// preemption (6.1-rt; its events have a `common_preempt_lazy_count`
    /// field): irqs-off, need-resched (`n` only), need-resched-lazy (`L`,
    /// flag 0x20), hard/softirq, preempt depth, preempt-lazy depth (`%x`),
    /// migrate-disable depth.
    RtLazy,
}

/// The latency columns of a kernel version and whether its events carry
/// `common_preempt_lazy_count`; an unknown version gets those of today's
/// kernels.
pub(crate) fn lat_columns(version: Option<(u32, u32)>, lazy_count: bool) -> LatColumns {
    match version {
        _ if lazy_count => LatColumns::RtLazy,
        Some(v) if v < (5, 13) => LatColumns::Four,
        _ => LatColumns::Five,
    }
}

/// The oldest release a trace can come from and the first it cannot (each
/// `None` when unknown), as (major, minor).
pub(crate) type Bracket = (Option<(u32, u32)>, Option<(u32, u32)>);

/// The traced kernel as far as the text of a trace depends on it: its
/// version, and where that came from (`uname(2)`, a copy's `uname` file,
/// a trace.dat's UNAME option).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelProfile {
    /// (major, minor); `None`: unknown.
    pub(crate) version: Option<(u32, u32)>,
    /// Where the version was looked for, as a person reads it.
    pub(crate) source: String,
    /// Inferred (`infer`), not read: the oldest release the trace can
    /// come from and the first it cannot, as far as known; `version` is
    /// then the one whose text is used (the oldest, else the newest before).
    pub(crate) inferred: Option<Bracket>,
}

impl KernelProfile {
    /// The profile of a `uname -a`, `/proc/version` or release text (`None`:
    /// nothing to read), found at `source`.
    pub(crate) fn from_text(text: Option<&str>, source: String) -> KernelProfile {
        KernelProfile { version: text.and_then(version_in), source, ..Default::default() }
    }

    /// The profile of a trace that does not name its kernel, from what
    /// [`infer`] found in it; `source` says where the clues were.
    pub(crate) fn inferred(inf: &Inference, source: &str) -> KernelProfile {
        // A bound alone still picks the text: the newest release before it.
        let version = inf.since.or_else(|| inf.before.map(|(ma, mi)| if mi > 0 { (ma, mi - 1) } else { (ma - 1, 99) }));
        let mut source = format!("inferred from {source}");
        if !inf.clues.is_empty() {
            source.push_str(": ");
            source.push_str(&inf.clues.join(", "));
        }
        let inferred = version.map(|_| (inf.since, inf.before));
        KernelProfile { version, source, inferred }
    }

    /// How the syscall tracer prints `sys_enter_*` arguments on this kernel.
    pub(crate) fn syscall_style(&self) -> SyscallStyle {
        syscall_style(self.version)
    }

    /// The latency columns of the line prefix on this kernel; `lazy_count`:
    /// its events carry `common_preempt_lazy_count`.
    pub(crate) fn lat_columns(&self, lazy_count: bool) -> LatColumns {
        lat_columns(self.version, lazy_count)
    }
}

/// One line for `-v`: the version, where it came from, and the text it
/// implies.
impl fmt::Display for KernelProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let style = match self.syscall_style() {
            SyscallStyle::Before6_17 => "before 6.17 (`arg: %lx`)",
            SyscallStyle::Since6_17 => "6.17 and later (`arg: 0x%lx`)",
            SyscallStyle::UserData => "6.19 and later (`arg: 0x%lx \"user data\"`)",
        };
        let lat = match self.lat_columns(false) {
            LatColumns::Four => "kernels before 5.13 (`d.h2`)",
            _ => "kernels since 5.13 (`d.h2.`)",
        };
        let dotted = |(ma, mi): (u32, u32)| format!("{ma}.{mi}");
        match (self.version, self.inferred) {
            (_, Some((Some(s), Some(b)))) => write!(f, "kernel version {} or later, before {}", dotted(s), dotted(b))?,
            (_, Some((None, Some(b)))) => write!(f, "kernel version before {}", dotted(b))?,
            (_, Some((Some(s), None))) => write!(f, "kernel version {} or later", dotted(s))?,
            (Some(v), _) => write!(f, "kernel version {}", dotted(v))?,
            (None, _) => f.write_str("kernel version unknown")?,
        }
        write!(f, " ({}): latency columns of {lat}, syscall events in the style of kernels {style}", self.source)?;
        if let Some(v) = self.version.filter(|&v| v > NEWEST_RULES) {
            let (major, minor) = NEWEST_RULES;
            write!(
                f,
                "; {}.{} is newer than the newest kernel trbox knows the text of ({major}.{minor}): \
                 its rules are used, and lines may differ from the kernel's own",
                v.0, v.1
            )?;
        }
        Ok(())
    }
}

/// What a trace's own metadata says of its kernel's release: the oldest
/// release it can come from, the first it cannot, and the clues, as a person
/// reads them. Empty when nothing told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Inference {
    /// The oldest release the trace can come from.
    pub(crate) since: Option<(u32, u32)>,
    /// The first release it cannot come from.
    pub(crate) before: Option<(u32, u32)>,
    /// What told, as a person reads it.
    pub(crate) clues: Vec<String>,
}

/// ftrace's own events (`events/ftrace/*`, one per `FTRACE_ENTRY` of
/// kernel/trace/trace_entries.h, built whatever the config: arm64 files
/// carry `mmiotrace_rw` too) and the release that added each. A trace.dat
/// stores the whole set, so a missing one is a clue as good as a present
/// one. (DepSurf's per-release symbol tables agree: `trace_hwlat_print`
/// and `trace_raw_data` absent in 4.8, present in 4.10;
/// `trace_func_repeats_print` absent in 5.11, present in 5.13;
/// `trace_osnoise_print` absent in 5.13.)
///
/// | event | added in | kernel change |
/// |---|---|---|
/// | `hwlat` | 4.9 | the hwlat tracer |
/// | `raw_data` | 4.10 | `trace_marker_raw` |
/// | `func_repeats` | 5.13 | the function tracer's `func-no-repeats` |
/// | `osnoise`, `timerlat` | 5.14 | the osnoise and timerlat tracers |
const FTRACE_EVENTS_ADDED: &[(&str, (u32, u32))] =
    &[("hwlat", (4, 9)), ("raw_data", (4, 10)), ("func_repeats", (5, 13)), ("osnoise", (5, 14)), ("timerlat", (5, 14))];

/// 4.14 reworked the task states sched_switch prints (include/trace/events/
/// sched.h: `TASK_REPORT`): `"I"` (TASK_IDLE) came, `"K"` (TASK_WAKEKILL),
/// `"W"`, `"x"`, `"N"` went.
const SCHED_SWITCH_STATES: (u32, u32) = (4, 14);

/// Bracket the traced kernel's release from what a trace holds: the names
/// of its ftrace events (`events/ftrace/*`; none: no clue from them) and
/// sched_switch's print fmt, if it has the event. Only the tightest clue of
/// each side is kept; a present event newer than a missing one (a vendor's
/// backport) leaves the upper bound out.
pub(crate) fn infer<'a>(
    ftrace_events: impl IntoIterator<Item = &'a str>,
    sched_switch_fmt: Option<&str>,
    user_data: bool,
) -> Inference {
    let names: Vec<&str> = ftrace_events.into_iter().collect();
    let mut since: Option<((u32, u32), String)> = None;
    let mut before: Option<((u32, u32), String)> = None;
    let mut lower = |v: (u32, u32), clue: String| {
        if !matches!(&since, Some((s, _)) if v <= *s) {
            since = Some((v, clue));
        }
    };
    let mut upper = |v: (u32, u32), clue: String| {
        if !matches!(&before, Some((b, _)) if v >= *b) {
            before = Some((v, clue));
        }
    };
    // A set without `function` is not ftrace's whole set (or no set at all).
    let whole_set = names.contains(&"function");
    for &(ev, v) in FTRACE_EVENTS_ADDED {
        if names.contains(&ev) {
            lower(v, format!("ftrace event {ev} ({}.{} on)", v.0, v.1));
        } else if whole_set {
            upper(v, format!("no ftrace event {ev} (added in {}.{})", v.0, v.1));
        }
    }
    if let Some(fmt) = sched_switch_fmt {
        let v = SCHED_SWITCH_STATES;
        if fmt.contains("\"I\"") {
            lower(v, format!("sched_switch prev_state \"I\" ({}.{} on)", v.0, v.1));
        } else if fmt.contains("\"K\"") {
            upper(v, format!("sched_switch prev_state \"K\" (before {}.{})", v.0, v.1));
        }
    }
    // Syscall events that record user data ([`records_user_data`]).
    if user_data {
        let v = USER_DATA_SINCE;
        lower(v, format!("syscall events record user data ({}.{} on)", v.0, v.1));
    }
    if let (Some((s, _)), Some((b, _))) = (&since, &before) {
        if s >= b {
            before = None;
        }
    }
    let mut inf = Inference::default();
    for (bound, found) in [(&mut inf.since, since), (&mut inf.before, before)] {
        if let Some((v, clue)) = found {
            *bound = Some(v);
            inf.clues.push(clue);
        }
    }
    inf
}

/// The (major, minor) kernel version in a `uname -a` / `/proc/version` /
/// release text: the first word that starts with `N.N`.
pub(crate) fn version_in(text: &str) -> Option<(u32, u32)> {
    text.split_whitespace().find_map(|w| {
        let mut it = w.split(|c: char| !c.is_ascii_digit());
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        w.starts_with(|c: char| c.is_ascii_digit()).then_some((major, minor))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn versions() {
        assert_eq!(version_in("Linux trbox-board 6.1.0-50-arm64 #1 SMP Debian 6.1.176-1"), Some((6, 1)));
        assert_eq!(version_in("Linux version 6.18.44-fc-v769 (gcc)"), Some((6, 18)));
        assert_eq!(version_in("6.8.0"), Some((6, 8)));
        assert_eq!(version_in("Linux host x"), None);
    }

    #[test]
    fn the_kernel_version_picks_the_syscall_style() {
        let board = KernelProfile::from_text(Some("Linux trbox 6.1.0-50-arm64 #1 SMP"), "from uname".into());
        assert_eq!(board.version, Some((6, 1)));
        assert_eq!(board.syscall_style(), SyscallStyle::Before6_17);
        assert_eq!(
            board.to_string(),
            "kernel version 6.1 (from uname): latency columns of kernels since 5.13 (`d.h2.`), syscall events in the style of kernels before 6.17 (`arg: %lx`)"
        );
        let new = KernelProfile::from_text(Some("6.18.2"), "uname(2)".into());
        assert_eq!(new.syscall_style(), SyscallStyle::Since6_17);
        let sid = KernelProfile::from_text(Some("7.2.13+deb14-arm64"), "uname(2)".into());
        assert_eq!(sid.syscall_style(), SyscallStyle::UserData);
        assert!(!sid.to_string().contains("newer"), "{sid}");
        let next = KernelProfile::from_text(Some("7.3.0"), "uname(2)".into()).to_string();
        assert!(next.ends_with("7.3 is newer than the newest kernel trbox knows the text of (7.2): its rules are used, and lines may differ from the kernel's own"), "{next}");
        assert_eq!(syscall_style_of(Some((6, 1)), true), SyscallStyle::UserData);
        assert_eq!(syscall_style_of(None, false), SyscallStyle::Before6_17);
        let unknown = KernelProfile::from_text(None, "no uname".into());
        assert_eq!(unknown.syscall_style(), SyscallStyle::Before6_17);
        assert!(unknown.to_string().starts_with("kernel version unknown (no uname): "));
    }

    #[test]
    fn the_kernel_version_picks_the_latency_columns() {
        let of = |t: &str| KernelProfile::from_text(Some(t), String::new());
        assert_eq!(of("5.10.0-35-arm64").lat_columns(false), LatColumns::Four);
        assert_eq!(of("5.13.0").lat_columns(false), LatColumns::Five);
        assert_eq!(of("6.12.48+deb13-arm64").lat_columns(false), LatColumns::Five);
        assert_eq!(of("6.1.0-40-rt-arm64").lat_columns(true), LatColumns::RtLazy);
        assert_eq!(KernelProfile::default().lat_columns(false), LatColumns::Five);
    }

    #[test]
    fn a_file_without_uname_is_placed_by_its_ftrace_events() {
        let base = ["function", "funcgraph_entry", "funcgraph_exit", "print", "bprint", "kernel_stack"];
        let with = |extra: &[&'static str]| base.iter().chain(extra).copied().collect::<Vec<_>>();
        // 4.4-like: nothing newer than the base set.
        let old = infer(with(&[]), None, false);
        assert_eq!((old.since, old.before), (None, Some((4, 9))));
        assert_eq!(old.clues, ["no ftrace event hwlat (added in 4.9)"]);
        let p = KernelProfile::inferred(&old, "x.dat");
        assert_eq!(p.lat_columns(false), LatColumns::Four);
        assert!(p.to_string().starts_with("kernel version before 4.9 (inferred from x.dat: no ftrace event hwlat"));
        // 4.10 to 5.12, narrowed by sched_switch's task states.
        let k = "print fmt: \"...\", __print_flags(REC->prev_state & (1024-1), \"|\", { 1, \"S\"} , { 128, \"K\" })";
        let mid = infer(with(&["hwlat", "raw_data"]), Some(k), false);
        assert_eq!((mid.since, mid.before), (Some((4, 10)), Some((4, 14))));
        let p = KernelProfile::inferred(&mid, "y.dat");
        assert_eq!(p.version, Some((4, 10)));
        assert_eq!(p.lat_columns(false), LatColumns::Four);
        assert!(p.to_string().starts_with("kernel version 4.10 or later, before 4.14 (inferred from y.dat: "));
        let i = "{ 0x0040, \"P\" }, { 0x0080, \"I\" }";
        let late = infer(with(&["hwlat", "raw_data"]), Some(i), false);
        assert_eq!((late.since, late.before), (Some((4, 14)), Some((5, 13))));
        assert_eq!(KernelProfile::inferred(&late, "").lat_columns(false), LatColumns::Four);
        // func_repeats: 5.13 on, the five columns.
        let new = infer(with(&["hwlat", "raw_data", "func_repeats", "osnoise", "timerlat"]), Some(i), false);
        assert_eq!((new.since, new.before), (Some((5, 14)), None));
        let p = KernelProfile::inferred(&new, "z.dat");
        assert_eq!(p.lat_columns(false), LatColumns::Five);
        assert!(p.to_string().starts_with("kernel version 5.14 or later (inferred from z.dat: ftrace event osnoise"));
        // No ftrace set at all (or only part of it): nothing told.
        let none = infer(["print"], None, false);
        assert_eq!(none, Inference::default());
        let p = KernelProfile::inferred(&none, "w.dat");
        assert_eq!((p.version, p.inferred), (None, None));
        assert!(p.to_string().starts_with("kernel version unknown (inferred from w.dat)"));
        // A backport newer than a missing event: the upper bound goes.
        // Syscall events with user data: 6.19 on, whatever else is there.
        let user = infer(with(&["hwlat", "raw_data", "func_repeats", "osnoise", "timerlat"]), None, true);
        assert_eq!((user.since, user.before), (Some(USER_DATA_SINCE), None));
        assert!(user.clues.iter().any(|c| c == "syscall events record user data (6.19 on)"), "{:?}", user.clues);
        let odd = infer(with(&["func_repeats"]), None, false);
        assert_eq!((odd.since, odd.before), (Some((5, 13)), None));
    }
}
