//! What a kernel version implies for the text of a trace: the facts no
//! format file carries (they live in the kernel's `trace_output.c`,
//! `trace_syscalls.c` and `trace_functions_graph.c` of that version), in
//! one place. The version comes from `uname(2)` (live), a copy's `uname`
//! file or a trace.dat's UNAME option ([`KernelProfile::source`]); the
//! renderers ask through [`crate::printfmt::KernelInfo`].
//!
//! | fact | versions | kernel source |
//! |---|---|---|
//! | [`LatColumns::Four`]: `d.h2` | before 5.13 | 5.10 `trace_print_lat_fmt()` |
//! | [`LatColumns::Five`]: `d.h2.` (+ migrate-disable) | 5.13 on | 5.13 `trace_print_lat_fmt()` |
//! | [`LatColumns::RtLazy`]: `d.Lh2..` | RT patch sets with lazy preemption (6.1-rt) | their `trace_output.c` |
//! | [`SyscallStyle::Since6_17`]: `arg: 0x%lx` | 6.17 on | 6.17 `print_syscall_enter()` |
//! | [`SyscallStyle::UserData`]: user strings and buffers after their pointers, `sys_openat` with flag names | 6.19 on | 7.2 `print_syscall_enter()`, `sys_enter_openat_print()` |
//! | [`O_ACCMODE`], [`O_TMPFILE_BIT`]: the openat flags the print fmt leaves out | every version with [`SyscallStyle::UserData`] | 7.2 include/uapi/asm-generic/fcntl.h |
//! | [`syscall_size_arg`]: a user buffer's size is the argument after it | 6.19 on | 7.2 `check_faultable_syscall()` |
//! | [`FTRACE_REGS_MAX_ARGS`]: funcgraph-args records 6 `long`s, prints `...` past them | 6.15 on (funcgraph-args, CONFIG_FUNCTION_TRACE_ARGS) | 7.2 include/linux/ftrace_regs.h, trace_output.c `print_function_args()` |
//! | [`NEWEST_RULES`]: the newest version these rules were checked against | 7.2 | the sid boards' fixtures |

use alloc::string::String;
use core::fmt;

/// How the syscall tracer prints a `sys_enter_*` argument
/// (`print_syscall_enter()`, kernel/trace/trace_syscalls.c): its own text,
/// not the event's print fmt, and no format file tells the versions apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyscallStyle {
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

/// The syscall argument style of a kernel version. An unknown version
/// gets the style of the kernels boards run today (before 6.17).
pub fn syscall_style(version: Option<(u32, u32)>) -> SyscallStyle {
    match version {
        Some(v) if v >= (6, 19) => SyscallStyle::UserData,
        Some(v) if v >= (6, 17) => SyscallStyle::Since6_17,
        _ => SyscallStyle::Before6_17,
    }
}

/// [`syscall_style`] of an event whose format may itself say more: only
/// 6.19 and later kernels give `sys_enter_*` events `__ARG_val` fields, so
/// a format with them is printed in the [`SyscallStyle::UserData`] way
/// whatever the version says (a copy without `uname`).
pub fn syscall_style_of(version: Option<(u32, u32)>, has_user_data: bool) -> SyscallStyle {
    if has_user_data {
        return SyscallStyle::UserData;
    }
    syscall_style(version)
}

/// Whether an event's format shows 6.19's syscall user data: a
/// `sys_enter_*` event with a `__data_loc` field `__ARG_val` beside its
/// argument ARG (7.2 `syscall_enter_define_fields()`).
pub fn records_user_data(ev: &crate::format::EventFormat) -> bool {
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
pub const O_ACCMODE: u64 = 3;

/// `__O_TMPFILE` (1 << 22 in include/uapi/asm-generic/fcntl.h, which arm,
/// arm64 and x86 take): `O_TMPFILE` is it with `O_DIRECTORY`, and is the
/// first entry of `sys_enter_openat_print()`'s flag table, which the
/// event's print fmt does not list (the other flags' values are there, per
/// architecture: `{ 0x4000, "O_DIRECTORY" }` on arm64 and arm).
pub const O_TMPFILE_BIT: u64 = 1 << 22;

/// The argument that gives the length of user buffer argument `arg`: the
/// one after it (7.2 `check_faultable_syscall()`: write, pwrite64 and
/// mq_timedsend, buffer at 1 and size at 2, are the only buffers).
pub fn syscall_size_arg(arg: usize) -> usize {
    arg + 1
}

/// How many arguments a funcgraph entry record carries when the
/// funcgraph-args option is on (`FTRACE_REGS_MAX_ARGS`, 6 in 7.2's
/// include/linux/ftrace_regs.h; no architecture overrides it): the kernel
/// prints them only when the record holds at least this many `long`s after
/// `depth`, and prints `...` for parameters past them
/// (`print_function_args()`).
pub const FTRACE_REGS_MAX_ARGS: usize = 6;

/// The newest kernel version whose text these rules were checked against
/// line for line (the sid boards' fixtures, 7.2.13). A newer kernel gets
/// the rules of this one, and says so under `-v`
/// ([`KernelProfile`]'s `Display`).
pub const NEWEST_RULES: (u32, u32) = (7, 2);

/// The latency columns of the line prefix (`trace_print_lat_fmt()`,
/// kernel/trace/trace_output.c), which no format file describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatColumns {
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
pub fn lat_columns(version: Option<(u32, u32)>, lazy_count: bool) -> LatColumns {
    match version {
        _ if lazy_count => LatColumns::RtLazy,
        Some(v) if v < (5, 13) => LatColumns::Four,
        _ => LatColumns::Five,
    }
}

/// The traced kernel as far as the text of a trace depends on it: its
/// version, and where that came from (`uname(2)`, a copy's `uname` file,
/// a trace.dat's UNAME option).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelProfile {
    /// (major, minor); `None`: unknown.
    pub version: Option<(u32, u32)>,
    /// Where the version was looked for, as a person reads it.
    pub source: String,
    /// The version is only a lower bound, read from the format files
    /// ([`KernelProfile::at_least_from_formats`]).
    pub at_least: bool,
}

impl KernelProfile {
    /// The profile of a `uname -a`, `/proc/version` or release text (`None`:
    /// nothing to read), found at `source`.
    pub fn from_text(text: Option<&str>, source: String) -> KernelProfile {
        KernelProfile { version: text.and_then(crate::ctl::kernel_version), source, at_least: false }
    }

    /// With no version known, what the format files prove: syscall events
    /// with user data ([`records_user_data`]) exist from 6.19 on, so the
    /// kernel is at least that (and its text follows 6.19's rules for every
    /// syscall event, not only those with user data).
    pub fn at_least_from_formats<'e>(&mut self, mut events: impl Iterator<Item = &'e crate::format::EventFormat>) {
        if self.version.is_none() && events.any(records_user_data) {
            self.version = Some((6, 19));
            self.at_least = true;
        }
    }

    /// How the syscall tracer prints `sys_enter_*` arguments on this kernel.
    pub fn syscall_style(&self) -> SyscallStyle {
        syscall_style(self.version)
    }

    /// The latency columns of the line prefix on this kernel; `lazy_count`:
    /// its events carry `common_preempt_lazy_count`.
    pub fn lat_columns(&self, lazy_count: bool) -> LatColumns {
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
        match self.version {
            Some((major, minor)) if self.at_least => write!(
                f,
                "kernel version {major}.{minor} or later (its syscall events record user data; no version read)"
            )?,
            Some((major, minor)) => write!(f, "kernel version {major}.{minor}")?,
            None => f.write_str("kernel version unknown")?,
        }
        write!(f, " ({}): syscall events in the style of kernels {style}", self.source)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn the_kernel_version_picks_the_syscall_style() {
        let board = KernelProfile::from_text(Some("Linux trbox 6.1.0-50-arm64 #1 SMP"), "from uname".into());
        assert_eq!(board.version, Some((6, 1)));
        assert_eq!(board.syscall_style(), SyscallStyle::Before6_17);
        assert_eq!(
            board.to_string(),
            "kernel version 6.1 (from uname): syscall events in the style of kernels before 6.17 (`arg: %lx`)"
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
}
