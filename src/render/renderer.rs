//! [`Renderer`]: records into the kernel's `trace` lines.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::cmdlines::Cmdlines;
use super::common_fields::CommonFields;
use super::hwlat::write_hwlat;
use super::json::write_json;
use super::memo::{Memo, MemoUse};
use super::prefix::{push_comm_pid, push_pid, Repeats, COMM_COL, COMM_MAX, PREFIX};
use crate::abi::Abi;
use crate::format::{EventFormat, EventTable, FieldLoc};
use crate::kernel::LatColumns;
use crate::printfmt::digits::{StackBuf, Stage};
use crate::printfmt::{StringLookup, SymbolLookup};

/// What `trace_timerlat_print` and `trace_osnoise_print` (trace_output.c)
/// write instead of these entries' print fmts, as print fmts over their
/// fields. 6.1 prints `thread` for any timerlat context but 0 (and writes
/// only 0 and 1); 6.5+ has `user-ret` for 2. osnoise's figure is the %
/// of CPU time left to the workload, in the kernel's u64 arithmetic.
const TRACER_FMTS: [(&str, &str); 2] = [
    (
        "timerlat",
        "\"#%-5u context %6s timer_latency %9llu ns\\n\", REC->seqnum, \
         REC->context == 2 ? \"user-ret\" : REC->context ? \"thread\" : \"irq\", REC->timer_latency",
    ),
    (
        "osnoise",
        "\"%llu %10llu %3llu.%05llu %7llu %6u %6u %6u %6u %6u\\n\", REC->runtime, REC->noise, \
         REC->runtime ? (REC->runtime - REC->noise) * 10000000 / REC->runtime / 100000 : 0, \
         REC->runtime ? (REC->runtime - REC->noise) * 10000000 / REC->runtime % 100000 : 0, \
         REC->max_sample, REC->hw_count, REC->nmi_count, REC->irq_count, REC->softirq_count, REC->thread_count",
    ),
];

/// How an event's body is produced: one per event type, built once.
// The print fmt program is the common case; boxing it would cost a
// pointer chase on every record.
#[allow(clippy::large_enum_variant)]
enum Body {
    /// ftrace's own records, printed by dedicated kernel functions.
    Function {
        ip: FieldLoc,
        parent: FieldLoc,
        /// Offset of `args[]` (6.15+: func-args fills it).
        args: Option<u32>,
    },
    KernelStack,
    Hwlat,
    /// A previous boot's event, its kernel moved since: field by field
    /// ([`crate::kernel::FieldsStyle`]).
    Fields(crate::kernel::FieldsStyle),
    /// The print fmt program; `named` puts `name: ` before it (all events
    /// but ftrace's print/bputs/bprint, which start with their ip).
    Fmt {
        prog: crate::printfmt::Program,
        named: bool,
        memo: MemoUse,
    },
}
/// Turns records into the kernel's `trace` lines. Programs are compiled on
/// first use of each event and kept.
pub(crate) struct Renderer<'a> {
    events: &'a EventTable,
    cmdlines: Cmdlines,
    abi: Abi,
    syms: Option<&'a dyn SymbolLookup>,
    strings: Option<&'a dyn StringLookup>,
    kernel: Option<&'a dyn crate::printfmt::KernelInfo>,
    common: Option<CommonFields>,
    /// Indexed by event id; `None` = not compiled yet.
    bodies: Vec<Option<Body>>,
    /// The comm-pid column of recent pids, by `pid % COLS`.
    cols: Vec<(i32, StackBuf<COL_MAX>)>,
    /// The line prefix being assembled (kept: no per-line initialising).
    pre: StackBuf<PREFIX>,
    repeats: Repeats,
    memo: Memo,
    /// Write the body alone, without the prefix ([`Renderer::body_of`]).
    bare: bool,
}

/// Cached comm-pid columns: direct-mapped by pid, enough for the tasks
/// of a busy board.
const COLS: usize = 256;
/// Longest cached column (`%16s-%-7d` of a kernel comm is at most 28).
const COL_MAX: usize = 32;

impl<'a> Renderer<'a> {
    /// A renderer for records of `events`, with task names from
    /// `cmdlines`; `abi` is the traced kernel's byte order and `long`
    /// size; `in_ns`: the trace clock counts nanoseconds (see
    /// [`crate::render::clock_in_ns`]), printed as `secs.usecs`; else a
    /// counter's raw ticks are printed as they are.
    pub(crate) fn new(events: &'a EventTable, cmdlines: Cmdlines, abi: Abi, in_ns: bool) -> Self {
        let common = CommonFields::of_table(events);
        Renderer {
            events,
            cmdlines,
            abi,
            syms: None,
            strings: None,
            kernel: None,
            common,
            bodies: Vec::new(),
            cols: Vec::new(),
            pre: StackBuf::new(),
            repeats: Repeats::new(in_ns),
            memo: Memo::new(),
            bare: false,
        }
    }

    /// The `common_pid` of a record.
    pub(crate) fn pid(&self, payload: &[u8]) -> i32 {
        self.common.map_or(0, |c| c.read(self.abi.endian, payload).2)
    }

    /// The pid → comm table in use.
    pub(crate) fn cmdlines(&self) -> &Cmdlines {
        &self.cmdlines
    }

    /// Replace the pid → comm table (re-read while following a live buffer).
    pub(crate) fn set_cmdlines(&mut self, c: Cmdlines) {
        self.cmdlines = c;
        self.cols.clear();
    }

    /// Symbols for `%ps`/`%pS` and function/stack records.
    pub(crate) fn with_symbols(mut self, s: &'a dyn SymbolLookup) -> Self {
        self.syms = Some(s);
        self
    }

    /// What the format files leave out (kernel version, enum values…).
    pub(crate) fn with_kernel(mut self, k: &'a dyn crate::printfmt::KernelInfo) -> Self {
        self.kernel = Some(k);
        let cols = self.repeats.cols.map(|_| self.lat_columns());
        self.repeats.set_cols(cols);
        self
    }

    /// The `irq-info` option (on by default): off leaves the latency
    /// columns out of the prefix. Call after [`Renderer::with_kernel`].
    pub(crate) fn with_irq_info(mut self, on: bool) -> Self {
        let cols = on.then(|| self.lat_columns());
        self.repeats.set_cols(cols);
        self
    }

    /// The latency columns of this kernel ([`crate::kernel::lat_columns`]).
    fn lat_columns(&self) -> LatColumns {
        let lazy = self.common.is_some_and(|c| c.has_lazy_count());
        crate::kernel::lat_columns(self.kernel.and_then(|k| k.kernel_version()), lazy)
    }

    /// printk_formats for bprint/bputs and string pointers.
    pub(crate) fn with_strings(mut self, s: &'a dyn StringLookup) -> Self {
        self.strings = Some(s);
        self
    }

    fn ctx(&self) -> crate::printfmt::Ctx<'a> {
        crate::printfmt::Ctx { abi: self.abi, syms: self.syms, strings: self.strings }
    }

    fn body_for(&self, ev: &EventFormat) -> Body {
        let loc = |n: &str| ev.field(n).map(crate::format::Field::loc);
        // print_trace_fmt() (6.12, 7.2 trace.c): a previous boot's events
        // whose kernel has moved, by their fields, but for ftrace's own
        // (type up to __TRACE_LAST_TYPE: func_repeats' ID + 1, the last of
        // trace.h's enum trace_type in both) and, 6.19 on, the syscalls.
        if self.syms.and_then(|s| s.last_boot()).is_some_and(|v| v.moved.moved(v.text)) {
            let style = crate::kernel::fields_style(self.kernel.and_then(|k| k.kernel_version()));
            let own = match self.events.get_by_name("ftrace", "func_repeats") {
                Some(last) => ev.id <= last.id + 1,
                None => ev.system == "ftrace",
            };
            let by_fmt = own || style == crate::kernel::FieldsStyle::SyscallsByFmt && ev.system == "syscalls";
            if !by_fmt {
                return Body::Fields(style);
            }
        }
        if ev.system == "ftrace" {
            match ev.name.as_str() {
                "function" => {
                    if let (Some(ip), Some(parent)) = (loc("ip"), loc("parent_ip")) {
                        return Body::Function { ip, parent, args: ev.field("args").map(|f| f.offset) };
                    }
                }
                "kernel_stack" => return Body::KernelStack,
                "hwlat" => return Body::Hwlat,
                _ => {}
            }
        }
        let own = TRACER_FMTS.iter().find(|t| ev.system == "ftrace" && t.0 == ev.name).map(|t| {
            let mut k = ev.clone();
            k.print_fmt = String::from(t.1);
            k
        });
        let ev = own.as_ref().unwrap_or(ev);
        let prog = match self.kernel {
            Some(k) => crate::printfmt::Program::compile_with(ev, self.abi.long_size, k),
            None => crate::printfmt::Program::compile(ev, self.abi.long_size),
        };
        let ftrace_text =
            ev.system == "ftrace" && (own.is_some() || matches!(ev.name.as_str(), "print" | "bputs" | "bprint"));
        // The body memo pays where payloads repeat (the replicated bench
        // file, a board's `dd bs=1`), not on a real capture of this
        // machine: there the host build runs 2% less CPU without it
        // (docs/performance.md). Host builds leave it out but under test.
        let memo_on = cfg!(test) || !cfg!(feature = "host");
        let memo = MemoUse::new(prog.reads_from().filter(|_| memo_on));
        Body::Fmt { named: prog.name_prefix() && !ftrace_text, prog, memo }
    }

    /// `ip` the way `seq_print_ip_sym` prints it (default flags).
    fn ip_sym<W: Write>(&self, w: &mut W, ip: u64) -> fmt::Result {
        crate::printfmt::write_ip_sym(w, ip, self.syms)
    }

    /// The line prefix up to and including its `": "`, assembled in
    /// `self.pre` (a comm too long for it is written to `w` first).
    fn prefix<W: Write>(&mut self, w: &mut W, common: CommonFields, cpu: u32, ts: u64, payload: &[u8]) -> fmt::Result {
        let (flags, preempt, pid) = common.read(self.abi.endian, payload);
        self.pre.clear();
        if self.bare {
            return Ok(());
        }
        comm_col(&mut self.cols, &self.cmdlines, w, &mut self.pre, pid)?;
        let lazy = common.lazy_count(payload);
        self.repeats.push(&mut self.pre, cpu, flags, preempt, lazy, ts);
        Ok(())
    }

    /// Write the body of record `payload` of event `ev`: its line(s)
    /// without the prefix of task, CPU, latency columns and time, newline
    /// included (the library's `Text::body`, in the std layer).
    #[cfg(feature = "std")]
    pub(crate) fn body_of<W: Write>(&mut self, w: &mut W, ev: &EventFormat, payload: &[u8]) -> fmt::Result {
        self.bare = true;
        let r = self.record_of(w, ev, 0, 0, payload);
        self.bare = false;
        r
    }

    /// Write one record's line(s), newline included.
    pub(crate) fn record<W: Write>(&mut self, w: &mut W, cpu: u32, ts: u64, payload: &[u8]) -> fmt::Result {
        let e = self.abi.endian;
        let Some(ev) = self.events.event_of(payload, e) else {
            self.prefix(w, self.common.unwrap_or_default(), cpu, ts, payload)?;
            w.write_str(self.pre.as_str())?;
            let id = self.events.record_id(payload, e).unwrap_or(0);
            return writeln!(w, "type: {id}");
        };
        self.record_of(w, ev, cpu, ts, payload)
    }

    /// [`record`](Self::record) for a record whose event the caller has
    /// looked up already.
    pub(crate) fn record_of<W: Write>(
        &mut self,
        w: &mut W,
        ev: &EventFormat,
        cpu: u32,
        ts: u64,
        payload: &[u8],
    ) -> fmt::Result {
        let e = self.abi.endian;
        // The common fields are laid out alike in every event of a kernel.
        let common = match self.common {
            Some(c) => c,
            None => CommonFields::of(ev),
        };
        self.prefix(w, common, cpu, ts, payload)?;
        let id = ev.id as usize;
        if self.bodies.len() <= id {
            self.bodies.resize_with(id + 1, || None);
        }
        if self.bodies[id].is_none() {
            let b = self.body_for(ev);
            self.bodies[id] = Some(b);
        }
        let ctx = self.ctx();
        let long = self.abi.long_size as usize;
        let Some(body) = self.bodies[id].as_mut() else { return w.write_str(self.pre.as_str()) };
        match body {
            Body::Fmt { prog, named, memo } => {
                let key = memo.key(payload);
                if let Some(k) = key {
                    let seen = self.memo.get(ev.id, k);
                    memo.count(seen.is_some());
                    if let Some(text) = seen {
                        self.pre.push_buf(text);
                        return w.write_str(self.pre.as_str());
                    }
                }
                // The line is assembled in the prefix buffer and written out
                // in one piece (or a few, if it is long or has strings).
                let start = self.pre.len();
                let mut st = Stage::new(&mut self.pre, w);
                if *named {
                    st.push(&ev.name)?;
                    st.push(": ")?;
                }
                prog.render_staged(&mut st, payload, &ctx)?;
                // trace_printk text carries its own newline (usually).
                if *named || st.last_byte() != b'\n' {
                    st.push("\n")?;
                }
                if let (Some(k), true) = (key, st.whole()) {
                    self.memo.put(ev.id, k, st.buf().as_str().get(start..).unwrap_or(""));
                }
                st.flush()
            }
            Body::Function { ip, parent, args } => {
                w.write_str(self.pre.as_str())?;
                let ip_v = ip.uint(payload, e).unwrap_or(0);
                let par = parent.uint(payload, e).unwrap_or(0);
                let args = *args;
                self.ip_sym(w, ip_v)?;
                // print_fn_trace() (7.2 trace_output.c): the arguments when
                // the record holds FTRACE_REGS_MAX_ARGS longs of them.
                let long = self.abi.long_size as usize;
                let args = args.filter(|&a| payload.len() >= a as usize + crate::kernel::FTRACE_REGS_MAX_ARGS * long);
                if args.is_some() {
                    crate::printfmt::write_function_args(w, self.syms, self.kernel, self.abi, ip_v, payload, args)?;
                }
                if par != 0 {
                    w.write_str(" <-")?;
                    self.ip_sym(w, par)?;
                }
                w.write_char('\n')
            }
            Body::Hwlat => {
                w.write_str(self.pre.as_str())?;
                write_hwlat(w, ev, payload, e)
            }
            Body::Fields(style) => {
                w.write_str(self.pre.as_str())?;
                match self.syms.and_then(|s| s.last_boot()) {
                    Some(lb) => super::fields::write_fields(w as &mut dyn Write, ev, payload, self.abi, *style, lb),
                    None => Ok(()),
                }
            }
            Body::KernelStack => {
                w.write_str(self.pre.as_str())?;
                w.write_str("<stack trace>\n")?;
                let (start, count) = match (ev.field("caller"), ev.field("size")) {
                    (Some(c), Some(s)) => (c.offset as usize, s.int(payload, e).unwrap_or(0).max(0) as usize),
                    _ => return Ok(()),
                };
                let max = if long == 4 { u64::from(u32::MAX) } else { u64::MAX };
                // The record may hold more entries than `caller[8]` says.
                for i in 0..count {
                    let Some(a) = e.uint(payload, start + i * long, long) else { break };
                    if a == max {
                        break;
                    }
                    w.write_str(" => ")?;
                    if a == FTRACE_TRAMPOLINE_MARKER {
                        w.write_str("[FTRACE TRAMPOLINE]\n")?;
                        continue;
                    }
                    self.ip_sym(w, a)?;
                    w.write_char('\n')?;
                }
                Ok(())
            }
        }
    }

    /// One record as [`write_json`]'s line, assembled in the line buffer
    /// and written in one piece (or a few, when long): a write per field
    /// and quote was most of `--json`'s time.
    pub(crate) fn json_of<W: Write>(
        &mut self,
        w: &mut W,
        ev: &EventFormat,
        cpu: u32,
        buffer: Option<&str>,
        ts: u64,
        payload: &[u8],
    ) -> fmt::Result {
        let pid = self.pid(payload);
        self.pre.clear();
        let mut st = Stage::new(&mut self.pre, w);
        write_json(&mut st, ev, &self.cmdlines, self.abi.endian, cpu, buffer, ts, pid, payload)?;
        st.flush()
    }
}

/// What the stack tracer stores for a return address inside an ftrace
/// trampoline (kernel/trace/trace.h `FTRACE_TRAMPOLINE_MARKER`, INT_MAX; the
/// 6.12 x86_64 board's stacks have it); `trace_stack_print()` prints
/// `[FTRACE TRAMPOLINE]` for it. No kernel text lives there on any
/// architecture, so older kernels' stacks never hold it.
const FTRACE_TRAMPOLINE_MARKER: u64 = 0x7fff_ffff;

/// Push the comm-pid column of `pid`, from the cache when it is there.
fn comm_col<W: Write>(
    cols: &mut Vec<(i32, StackBuf<COL_MAX>)>,
    cmdlines: &Cmdlines,
    w: &mut W,
    b: &mut StackBuf<PREFIX>,
    pid: i32,
) -> fmt::Result {
    let slot = pid as u32 as usize % COLS;
    if let Some(c) = cols.get(slot).filter(|c| c.0 == pid && c.1.len() > 0) {
        b.push_buf(&c.1);
        return Ok(());
    }
    let comm = cmdlines.comm(pid);
    if comm.len() > COMM_MAX {
        w.write_str(comm)?;
        push_pid(b, pid);
        return Ok(());
    }
    let mut col = StackBuf::<COMM_COL>::new();
    push_comm_pid(&mut col, comm, pid);
    b.push_str(col.as_str());
    if col.len() <= COL_MAX {
        if cols.is_empty() {
            *cols = alloc::vec![(0, StackBuf::new()); COLS];
        }
        if let Some(c) = cols.get_mut(slot) {
            c.0 = pid;
            c.1.clear();
            c.1.push_str(col.as_str());
        }
    }
    Ok(())
}
