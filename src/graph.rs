//! The function_graph tracer's text layout, rendered from raw
//! `ftrace/funcgraph_entry` and `ftrace/funcgraph_exit` records the way
//! kernel/trace/trace_functions_graph.c prints the `trace` file.
//!
//! The kernel's output depends on state it keeps per CPU while it walks the
//! buffer (last pid, current depth, irq depth, the function entered at each
//! depth); [`GraphRenderer`] keeps the same state, so feeding it the records
//! in the kernel's order (timestamp merge across CPUs, lowest CPU first on
//! ties) reproduces the kernel's text line for line:
//!
//! ```text
//!  0)               |  do_sys_openat2() {
//!  0)   2.048 us    |    rcu_all_qs();
//!  0) ! 212.144 us  |  } /* mutex_unlock */
//! ```
//!
//! A call whose exit is the next record of the same CPU is one leaf line; the
//! caller passes that next record (a peek) and is told to skip it
//! ([`Outcome::SkipNext`]). Records of other events become `/* … */` comment
//! lines; the ftrace `function` and `kernel_stack` records are left to the
//! normal one-line renderer ([`Outcome::NotGraph`]), as the kernel does.
//!
//! Fields are found by name in each event's format, so the 6.1 layout
//! (`func, depth, overrun, calltime, rettime`), 32-bit kernels (packed u64s)
//! and newer layouts (`retval`, other orders and sizes) all work.
//!
//! [`stats`] aggregates the same records into folded stacks and per-function
//! totals. Nothing here panics on any record bytes.

pub mod flame;
pub mod stacks;
pub mod stats;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use crate::abi::{Abi, Endian};
use crate::format::{EventFormat, EventTable, Field, FieldLoc as Loc};
use crate::printfmt::{Ctx, KernelInfo, Program, StringLookup, SymbolLookup};
use crate::render::{write_lat_flags, Cmdlines, CommonFields};

/// `FTRACE_RETFUNC_DEPTH`: the depths whose entered function the kernel
/// remembers (for the `} /* func */` form).
pub const RETFUNC_DEPTH: usize = 50;

/// Indentation is capped here (the kernel's line buffer is one page; a
/// hostile depth must not produce gigabytes of spaces).
const MAX_INDENT_DEPTH: i64 = 1000;

/// CPUs with their own state; records of higher CPU numbers share one slot.
const MAX_CPUS: usize = 4096;

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

/// The funcgraph trace options (and the two global options the layout
/// depends on). [`Default`] is the kernel's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphOpts {
    /// `funcgraph-cpu` (on)
    pub cpu: bool,
    /// `funcgraph-overhead` (on): the `+ ! # * @ $` marks.
    pub overhead: bool,
    /// `funcgraph-proc` (off): `comm-pid` column.
    pub proc_: bool,
    /// `funcgraph-duration` (on)
    pub duration: bool,
    /// `funcgraph-abstime` (off)
    pub abstime: bool,
    /// `funcgraph-irqs` (on): off hides functions called in irq entry code.
    pub irqs: bool,
    /// `funcgraph-tail` (off): always `} /* func */`.
    pub tail: bool,
    /// `funcgraph-overrun` (off)
    pub overrun: bool,
    /// `funcgraph-retval` (off; 6.5+ kernels with a `retval` field)
    pub retval: bool,
    /// `funcgraph-retval-hex` (off)
    pub retval_hex: bool,
    /// `context-info` (on): the CPU/duration columns at all.
    pub context_info: bool,
    /// `latency-format` (off): the `d..2.` column.
    pub latency: bool,
}

impl Default for GraphOpts {
    fn default() -> Self {
        GraphOpts {
            cpu: true,
            overhead: true,
            proc_: false,
            duration: true,
            abstime: false,
            irqs: true,
            tail: false,
            overrun: false,
            retval: false,
            retval_hex: false,
            context_info: true,
            latency: false,
        }
    }
}

impl GraphOpts {
    /// Read the options from the text of `trace_options` (`funcgraph-cpu`,
    /// `nofuncgraph-proc`, …); options not named keep their defaults.
    pub fn from_trace_options(text: &str) -> Self {
        let mut o = GraphOpts::default();
        for word in text.split_ascii_whitespace() {
            let (on, name) = match word.strip_prefix("no") {
                Some(n) => (false, n),
                None => (true, word),
            };
            let slot = match name {
                "funcgraph-cpu" => &mut o.cpu,
                "funcgraph-overhead" => &mut o.overhead,
                "funcgraph-proc" => &mut o.proc_,
                "funcgraph-duration" => &mut o.duration,
                "funcgraph-abstime" => &mut o.abstime,
                "funcgraph-irqs" => &mut o.irqs,
                "funcgraph-tail" => &mut o.tail,
                "funcgraph-overrun" => &mut o.overrun,
                "funcgraph-retval" => &mut o.retval,
                "funcgraph-retval-hex" => &mut o.retval_hex,
                "context-info" => &mut o.context_info,
                "latency-format" => &mut o.latency,
                _ => continue,
            };
            *slot = on;
        }
        o
    }
}

// ---------------------------------------------------------------------------
// Durations
// ---------------------------------------------------------------------------

/// The overhead mark for a duration in ns (`trace_find_mark`): strictly
/// greater than 1 s `$`, 100 ms `@`, 10 ms `*`, 1 ms `#`, 100 µs `!`,
/// 10 µs `+`, else a space.
pub fn overhead_mark(ns: u64) -> char {
    const MARKS: [(u64, char); 6] =
        [(1_000_000_000, '$'), (100_000_000, '@'), (10_000_000, '*'), (1_000_000, '#'), (100_000, '!'), (10_000, '+')];
    MARKS.iter().find(|m| ns > m.0).map_or(' ', |m| m.1)
}

/// `trace_print_graph_duration`: microseconds with up to three decimals, at
/// most 7 digits in all, `" us "` and padding to the column width.
/// `long_size` 4 truncates the microseconds to 32 bits like a 32-bit
/// kernel's `%lu` of an `unsigned long`.
pub fn write_duration<W: Write + ?Sized>(w: &mut W, ns: u64, long_size: u32) -> fmt::Result {
    let mut us = ns / 1000;
    let rem = ns % 1000;
    if long_size == 4 {
        us &= 0xffff_ffff;
    }
    let mut digits = [0u8; 20];
    let mut n = 0;
    let mut v = us;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 || n == digits.len() {
            break;
        }
    }
    for d in digits[..n].iter().rev() {
        w.write_char(char::from(*d))?;
    }
    let mut len = n;
    if len < 7 {
        // snprintf(nsecs_str, min(5, 8 - len), "%03lu", rem): at most
        // 8 - len - 1 of the three digits.
        let keep = (8 - len - 1).min(4);
        let r = [b'0' + (rem / 100) as u8, b'0' + (rem / 10 % 10) as u8, b'0' + (rem % 10) as u8];
        let shown = keep.min(3);
        w.write_char('.')?;
        for d in &r[..shown] {
            w.write_char(char::from(*d))?;
        }
        len += shown + 1;
    }
    w.write_str(" us ")?;
    for _ in len..8 {
        w.write_char(' ')?;
    }
    Ok(())
}

/// The whole duration column of a line with a duration (`print_graph_duration`
/// with data): mark, space, duration, `"|  "`.
pub fn write_duration_column<W: Write + ?Sized>(w: &mut W, ns: u64, overhead: bool, long_size: u32) -> fmt::Result {
    if overhead {
        w.write_char(overhead_mark(ns))?;
        w.write_char(' ')?;
    } else {
        w.write_str("  ")?;
    }
    write_duration(w, ns, long_size)?;
    w.write_str("|  ")
}

/// `print_graph_proc`: `comm-pid` (comm cut to 7 bytes) centred in 14
/// columns.
pub fn write_proc<W: Write + ?Sized>(w: &mut W, comm: &str, pid: i32) -> fmt::Result {
    let mut cut = comm.len().min(7);
    while !comm.is_char_boundary(cut) {
        cut -= 1;
    }
    let comm = comm.get(..cut).unwrap_or("");
    let mut pid_buf = heapless::String::<12>::new();
    let _ = write!(pid_buf, "{pid}");
    let len = comm.len() + pid_buf.len() + 1;
    let spaces = 14usize.saturating_sub(len);
    for _ in 0..spaces / 2 {
        w.write_char(' ')?;
    }
    write!(w, "{comm}-{pid_buf}")?;
    for _ in 0..spaces - spaces / 2 {
        w.write_char(' ')?;
    }
    Ok(())
}

/// The two `#` header lines the kernel prints above a graph (after
/// `# tracer: function_graph` and `#`), for these options.
pub fn write_header<W: Write + ?Sized>(w: &mut W, o: &GraphOpts) -> fmt::Result {
    if !o.context_info {
        return Ok(());
    }
    if o.latency {
        let size = if o.abstime { 16 } else { 0 } + if o.cpu { 4 } else { 0 } + if o.proc_ { 17 } else { 0 };
        const SP: &str = "                                     ";
        let sp = SP.get(..size).unwrap_or(SP);
        writeln!(w, "#{sp}  _-----=> irqs-off        ")?;
        writeln!(w, "#{sp} / _----=> need-resched    ")?;
        writeln!(w, "#{sp}| / _---=> hardirq/softirq ")?;
        writeln!(w, "#{sp}|| / _--=> preempt-depth   ")?;
        writeln!(w, "#{sp}||| /                      ")?;
    }
    w.write_char('#')?;
    if o.abstime {
        w.write_str("     TIME       ")?;
    }
    if o.cpu {
        w.write_str(" CPU")?;
    }
    if o.proc_ {
        w.write_str("  TASK/PID       ")?;
    }
    if o.latency {
        w.write_str("||||   ")?;
    }
    if o.duration {
        w.write_str("  DURATION   ")?;
    }
    w.write_str("               FUNCTION CALLS\n#")?;
    if o.abstime {
        w.write_str("      |         ")?;
    }
    if o.cpu {
        w.write_str(" |  ")?;
    }
    if o.proc_ {
        w.write_str("   |    |        ")?;
    }
    if o.latency {
        w.write_str("||||   ")?;
    }
    if o.duration {
        w.write_str("   |   |      ")?;
    }
    w.write_str("               |   |   |   |\n")
}

// ---------------------------------------------------------------------------
// Record decoding
// ---------------------------------------------------------------------------

/// A graph record's field: a scalar of 1, 2, 4 or 8 bytes.
fn loc_of(f: &Field) -> Option<Loc> {
    matches!(f.size, 1 | 2 | 4 | 8).then(|| f.loc())
}

#[derive(Debug, Clone, Copy)]
struct EntLayout {
    id: u32,
    func: Loc,
    depth: Loc,
    /// Offset of `args[]` (6.15+: funcgraph-args fills it).
    args: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
struct RetLayout {
    id: u32,
    func: Loc,
    depth: Loc,
    overrun: Option<Loc>,
    calltime: Option<Loc>,
    rettime: Option<Loc>,
    retval: Option<Loc>,
}

/// One decoded graph record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphRec {
    /// `funcgraph_entry`: a traced function was called.
    /// `args`: where the record's arguments start, when it carries them
    /// (funcgraph-args: [`crate::kernel::FTRACE_REGS_MAX_ARGS`] `long`s).
    Entry {
        /// `common_pid`: the task that made the call.
        pid: i32,
        /// The called function's address (`graph_ent.func`).
        func: u64,
        /// Call depth, 0 for the outermost function traced.
        depth: i64,
        /// Byte offset of the first argument in the payload.
        args: Option<u32>,
    },
    /// `funcgraph_exit`: a traced function returned.
    Exit {
        /// `common_pid`: the task that returned.
        pid: i32,
        /// The returning function's address.
        func: u64,
        /// Call depth, as its entry had.
        depth: i64,
        /// Returns the task's return stack lost (it was full): the entries
        /// and exits around it no longer pair.
        overrun: u64,
        /// Trace-clock time of the call.
        calltime: u64,
        /// Trace-clock time of the return; `rettime - calltime` is the
        /// duration printed.
        rettime: u64,
        /// The return value, where the format has a `retval` field (6.5+,
        /// CONFIG_FUNCTION_GRAPH_RETVAL).
        retval: Option<u64>,
    },
}

/// Finds the funcgraph events in an event table (by name, fields by name)
/// and decodes their records.
#[derive(Debug, Clone)]
pub struct GraphEvents {
    endian: Endian,
    long_mask: u64,
    ents: Vec<EntLayout>,
    rets: Vec<RetLayout>,
    common: Option<CommonFields>,
    /// `common_type` location.
    type_loc: Option<Loc>,
}

fn field<'a>(ev: &'a EventFormat, name: &str) -> Option<&'a Field> {
    ev.field(name)
}

impl GraphEvents {
    /// Finds `funcgraph_entry`/`funcgraph_exit` in `events` and where each
    /// field lies, whatever the kernel version's layout; `abi` is the
    /// traced kernel's byte order and `long` size.
    pub fn new(events: &EventTable, abi: Abi) -> Self {
        let mut g = GraphEvents {
            endian: abi.endian,
            long_mask: abi.long_mask(),
            ents: Vec::new(),
            rets: Vec::new(),
            common: None,
            type_loc: None,
        };
        for ev in events.iter() {
            if g.common.is_none() {
                g.common = Some(CommonFields::of(ev));
                g.type_loc = ev.common.iter().find(|f| f.name == "common_type").and_then(loc_of);
            }
            if ev.system != "ftrace" {
                continue;
            }
            let loc = |n: &str| field(ev, n).and_then(loc_of);
            match ev.name.as_str() {
                "funcgraph_entry" | "fgraph_retaddr_entry" => {
                    if let (Some(func), Some(depth)) = (loc("func"), loc("depth")) {
                        let args = field(ev, "args").map(|f| f.offset);
                        g.ents.push(EntLayout { id: ev.id, func, depth, args });
                    }
                }
                "funcgraph_exit" => {
                    if let (Some(func), Some(depth)) = (loc("func"), loc("depth")) {
                        g.rets.push(RetLayout {
                            id: ev.id,
                            func,
                            depth,
                            overrun: loc("overrun"),
                            calltime: loc("calltime"),
                            rettime: loc("rettime"),
                            retval: loc("retval"),
                        });
                    }
                }
                _ => {}
            }
        }
        g
    }

    /// Does the table have both graph events?
    pub fn present(&self) -> bool {
        !self.ents.is_empty() && !self.rets.is_empty()
    }

    /// The event id of a record.
    pub fn record_id(&self, p: &[u8]) -> Option<u32> {
        self.type_loc.and_then(|l| l.uint(p, self.endian)).map(|v| v as u32)
    }

    /// (flags, preempt_count, pid) of any record.
    pub fn common(&self, p: &[u8]) -> (u8, u8, i32) {
        self.common.map_or((0, 0, 0), |c| c.read(self.endian, p))
    }

    /// Decode a graph record; `None` for other events (or a record too short
    /// for its func/depth fields).
    pub fn decode(&self, p: &[u8]) -> Option<GraphRec> {
        let id = self.record_id(p)?;
        let e = self.endian;
        let pid = self.common(p).2;
        if let Some(l) = self.ents.iter().find(|l| l.id == id) {
            // print_graph_entry_*(): `args_size >= FTRACE_REGS_MAX_ARGS *
            // sizeof(long)`, args_size being what follows `args` in the record.
            let long = if self.long_mask == u64::MAX { 8 } else { 4 };
            let args = l.args.filter(|&a| p.len() >= a as usize + crate::kernel::FTRACE_REGS_MAX_ARGS * long);
            return Some(GraphRec::Entry {
                pid,
                func: l.func.uint(p, e)? & self.long_mask,
                depth: l.depth.int(p, e)?,
                args,
            });
        }
        let l = self.rets.iter().find(|l| l.id == id)?;
        let opt = |x: Option<Loc>| x.and_then(|x| x.uint(p, e)).unwrap_or(0);
        Some(GraphRec::Exit {
            pid,
            func: l.func.uint(p, e)? & self.long_mask,
            depth: l.depth.int(p, e)?,
            overrun: opt(l.overrun),
            calltime: opt(l.calltime),
            rettime: opt(l.rettime),
            retval: l.retval.and_then(|x| x.uint(p, e)),
        })
    }

    fn is_exit_id(&self, id: u32) -> bool {
        self.rets.iter().any(|l| l.id == id)
    }
}

// ---------------------------------------------------------------------------
// The renderer
// ---------------------------------------------------------------------------

/// What the caller does after [`GraphRenderer::record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The record was handled (lines written, or nothing when the kernel
    /// prints nothing for it).
    Done,
    /// A leaf line was written: the peeked next record of the same CPU is
    /// its exit and must be skipped.
    SkipNext,
    /// Not for the graph layout: render it as a normal one-line event
    /// (ftrace `function` and `kernel_stack` records, unknown event ids).
    NotGraph,
}

#[derive(Clone)]
struct CpuState {
    last_pid: i32,
    depth: i64,
    depth_irq: i64,
    enter_funcs: [u64; RETFUNC_DEPTH],
}

impl Default for CpuState {
    fn default() -> Self {
        CpuState { last_pid: -1, depth: 0, depth_irq: -1, enter_funcs: [0; RETFUNC_DEPTH] }
    }
}

/// Names of functions the kernel places in `.irqentry.text` (through
/// `__irq_entry` / `__exception_irq_entry`), used for the irq markers only
/// when the symbol table has no `__irqentry_text_start`/`_end` pair.
pub const IRQENTRY_FALLBACK: &[&str] = &[
    "gic_handle_irq",
    "armada_370_xp_handle_irq",
    "hip04_handle_irq",
    "aic_handle_irq",
    "asm_do_IRQ",
    "do_IRQ",
    "smp_apic_timer_interrupt",
];

/// Where the irq entry code is (for the `==========>` markers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IrqText {
    /// `[__irqentry_text_start, __irqentry_text_end)`.
    Range(u64, u64),
    /// Not known: functions named in [`IRQENTRY_FALLBACK`] count.
    Fallback,
    /// No markers at all.
    None,
}

impl IrqText {
    /// From a symbol table's `__irqentry_text_start` / `__irqentry_text_end`.
    pub fn from_kallsyms(k: &crate::kallsyms::Kallsyms) -> IrqText {
        match (k.address_of("__irqentry_text_start"), k.address_of("__irqentry_text_end")) {
            (Some(s), Some(e)) if s <= e => IrqText::Range(s, e),
            _ => IrqText::Fallback,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Entry,
    Return,
}

/// Renders a function_graph buffer. Feed every record in merged order; see
/// the module documentation.
pub struct GraphRenderer<'a> {
    ev: GraphEvents,
    events: &'a EventTable,
    cmdlines: &'a Cmdlines,
    abi: Abi,
    syms: Option<&'a dyn SymbolLookup>,
    strings: Option<&'a dyn StringLookup>,
    /// What the format files leave out (the kernel version decides the
    /// syscall events' layout in comments).
    kernel: Option<&'a dyn KernelInfo>,
    opts: GraphOpts,
    cpu_width: usize,
    irq: IrqText,
    cpus: Vec<CpuState>,
    spare: CpuState,
    /// Compiled print fmts of comment events, by id.
    progs: Vec<Option<Program>>,
    scratch: String,
    /// State slot of the current record (the CPU, or the caller's task
    /// index with [`GraphRenderer::record_in`]).
    slot: u32,
}

impl<'a> GraphRenderer<'a> {
    /// `long_size` is the traced kernel's `sizeof(long)` (4 or 8).
    pub fn new(events: &'a EventTable, cmdlines: &'a Cmdlines, abi: Abi, syms: Option<&'a dyn SymbolLookup>) -> Self {
        GraphRenderer {
            ev: GraphEvents::new(events, abi),
            events,
            cmdlines,
            abi,
            syms,
            strings: None,
            kernel: None,
            opts: GraphOpts::default(),
            cpu_width: 1,
            irq: IrqText::Fallback,
            cpus: Vec::new(),
            spare: CpuState::default(),
            progs: Vec::new(),
            scratch: String::new(),
            slot: 0,
        }
    }

    /// printk_formats, for trace_printk comments (`bprint`/`bputs`).
    pub fn with_strings(mut self, s: &'a dyn StringLookup) -> Self {
        self.strings = Some(s);
        self
    }

    /// Kernel facts for the print fmts of comment events (as
    /// [`crate::render::Renderer::with_kernel`]).
    pub fn with_kernel(mut self, k: &'a dyn KernelInfo) -> Self {
        self.kernel = Some(k);
        self
    }

    /// The `funcgraph-*` options to render with (the traced kernel's
    /// `trace_options`, or the defaults).
    pub fn with_opts(mut self, o: GraphOpts) -> Self {
        self.opts = o;
        self
    }

    /// The number of possible CPUs (`nr_cpu_ids`): the CPU column is as wide
    /// as the highest CPU number. Default: 1 digit.
    pub fn with_cpu_count(mut self, n: u32) -> Self {
        let mut hi = n.saturating_sub(1);
        let mut w = 1;
        while hi >= 10 {
            hi /= 10;
            w += 1;
        }
        self.cpu_width = w;
        self
    }

    /// Where the irq entry code is (default [`IrqText::Fallback`]).
    pub fn with_irq_text(mut self, t: IrqText) -> Self {
        self.set_irq_text(t);
        self
    }

    /// [`with_irq_text`](Self::with_irq_text) once the renderer is in use:
    /// finding the range parses the symbol table, which a file with no
    /// graph record never needs.
    pub fn set_irq_text(&mut self, t: IrqText) {
        self.irq = t;
    }

    /// The graph events found in the table.
    pub fn graph_events(&self) -> &GraphEvents {
        &self.ev
    }

    /// Forget the per-CPU state (a new read of the buffer).
    pub fn reset(&mut self) {
        self.cpus.clear();
        self.spare = CpuState::default();
    }

    /// The state slot of the record being rendered.
    fn state(&mut self) -> &mut CpuState {
        let i = self.slot as usize;
        if i >= MAX_CPUS {
            return &mut self.spare;
        }
        if self.cpus.len() <= i {
            self.cpus.resize(i + 1, CpuState::default());
        }
        match self.cpus.get_mut(i) {
            Some(s) => s,
            None => &mut self.spare,
        }
    }

    fn ctx(&self) -> Ctx<'a> {
        Ctx { abi: self.abi, syms: self.syms, strings: self.strings }
    }

    /// `%ps` of a function address.
    fn write_sym<W: Write + ?Sized>(&self, w: &mut W, addr: u64) -> fmt::Result {
        write_name(w, self.syms, addr)
    }

    /// A function's arguments after its name ([`write_function_args`]).
    fn write_args<W: Write + ?Sized>(&self, w: &mut W, func: u64, p: &[u8], at: Option<u32>) -> fmt::Result {
        crate::printfmt::write_function_args(w, self.syms, self.kernel, self.abi, func, p, at)
    }

    fn in_irq_text(&self, addr: u64) -> bool {
        match self.irq {
            IrqText::Range(s, e) => addr >= s && addr < e,
            IrqText::None => false,
            IrqText::Fallback => match self.syms.and_then(|s| s.lookup(addr)) {
                Some(s) => s.module.is_none() && IRQENTRY_FALLBACK.contains(&s.name),
                None => false,
            },
        }
    }

    fn write_cpu<W: Write + ?Sized>(&self, w: &mut W, cpu: u32) -> fmt::Result {
        write!(w, " {cpu:>width$}) ", width = self.cpu_width)
    }

    fn write_abstime<W: Write + ?Sized>(&self, w: &mut W, ts: u64) -> fmt::Result {
        let mut secs = ts / 1_000_000_000;
        if self.abi.long_size == 4 {
            secs &= 0xffff_ffff;
        }
        let us = (ts % 1_000_000_000) / 1000;
        write!(w, "{secs:5}.{us:06} |  ")
    }

    /// The CPU / proc / latency columns (with context-info).
    fn write_context<W: Write + ?Sized>(&self, w: &mut W, cpu: u32, ts: u64, p: &[u8]) -> fmt::Result {
        if !self.opts.context_info {
            return Ok(());
        }
        let (flags, preempt, pid) = self.ev.common(p);
        if self.opts.abstime {
            self.write_abstime(w, ts)?;
        }
        if self.opts.cpu {
            self.write_cpu(w, cpu)?;
        }
        if self.opts.proc_ {
            write_proc(w, self.cmdlines.comm(pid), pid)?;
            w.write_str(" | ")?;
        }
        if self.opts.latency {
            w.write_char(' ')?;
            let mut lat = heapless::String::<8>::new();
            let lazy = self.ev.common.is_some_and(|c| c.has_lazy_count());
            let cols = crate::kernel::lat_columns(self.kernel.and_then(|k| k.kernel_version()), lazy);
            let lazy_count = self.ev.common.map_or(0, |c| c.lazy_count(p));
            let _ = write_lat_flags(&mut lat, flags, preempt, lazy_count, cols);
            w.write_str(&lat)?;
            w.write_str(" | ")?;
        }
        Ok(())
    }

    fn fill<W: Write + ?Sized>(&self, w: &mut W, s: &str) -> fmt::Result {
        if self.opts.duration && self.opts.context_info {
            w.write_str(s)
        } else {
            Ok(())
        }
    }

    /// `print_graph_irq`: the marker line when `addr` is irq entry code.
    fn irq_marker<W: Write + ?Sized>(&self, w: &mut W, cpu: u32, ts: u64, p: &[u8], addr: u64, m: Mark) -> fmt::Result {
        if !self.in_irq_text(addr) {
            return Ok(());
        }
        self.write_context(w, cpu, ts, p)?;
        self.fill(w, "  ")?;
        w.write_str(if m == Mark::Entry { "==========>" } else { "<==========" })?;
        self.fill(w, " |")?;
        w.write_char('\n')
    }

    /// `verif_pid`: the context-switch block when this CPU's pid changed.
    fn verif_pid<W: Write + ?Sized>(&mut self, w: &mut W, cpu: u32, pid: i32) -> fmt::Result {
        let st = self.state();
        if st.last_pid == pid {
            return Ok(());
        }
        let prev = st.last_pid;
        st.last_pid = pid;
        if prev == -1 {
            return Ok(());
        }
        w.write_str(" ------------------------------------------\n")?;
        self.write_cpu(w, cpu)?;
        write_proc(w, self.cmdlines.comm(prev), prev)?;
        w.write_str(" => ")?;
        write_proc(w, self.cmdlines.comm(pid), pid)?;
        w.write_str("\n ------------------------------------------\n\n")
    }

    /// `print_graph_prologue`.
    fn prologue<W: Write + ?Sized>(&mut self, w: &mut W, cpu: u32, ts: u64, p: &[u8], irq: Option<u64>) -> fmt::Result {
        let pid = self.ev.common(p).2;
        self.verif_pid(w, cpu, pid)?;
        if let Some(addr) = irq {
            self.irq_marker(w, cpu, ts, p, addr, Mark::Entry)?;
        }
        self.write_context(w, cpu, ts, p)
    }

    fn indent<W: Write + ?Sized>(w: &mut W, depth: i64) -> fmt::Result {
        for _ in 0..depth.clamp(0, MAX_INDENT_DEPTH) * 2 {
            w.write_char(' ')?;
        }
        Ok(())
    }

    /// ` ret=…` the way `print_graph_retval` prints it.
    fn write_retval<W: Write + ?Sized>(&self, w: &mut W, retval: u64) -> fmt::Result {
        let mut err = 0i64;
        if !self.opts.retval_hex && retval != 0 {
            // A 32-bit error code in a 64-bit register, or a 32-bit long.
            let v = if self.abi.long_size == 4 || (retval & 0x8000_0000 != 0 && retval >> 32 == 0) {
                i64::from(retval as u32 as i32)
            } else {
                retval as i64
            };
            // IS_ERR_VALUE: the last 4095 values.
            if (-4095..0).contains(&v) {
                err = v;
            }
        }
        if self.opts.retval_hex || err == 0 {
            write!(w, " ret=0x{retval:x}")
        } else {
            write!(w, " ret={err}")
        }
    }

    /// Render one record. `next_same_cpu` is the record that follows it on
    /// the same CPU (timestamp and payload), if any is known yet.
    pub fn record<W: Write + ?Sized>(
        &mut self,
        w: &mut W,
        cpu: u32,
        ts: u64,
        payload: &[u8],
        next_same_cpu: Option<(u64, &[u8])>,
    ) -> Result<Outcome, fmt::Error> {
        self.record_in(w, cpu, cpu, ts, payload, next_same_cpu)
    }

    /// Like [`record`](Self::record) with the graph state kept in `slot`
    /// instead of per CPU: per-task grouping gives each task its own slot
    /// (a small dense index) and peeks the next record *of that task*;
    /// `cpu` is only printed.
    pub fn record_in<W: Write + ?Sized>(
        &mut self,
        w: &mut W,
        slot: u32,
        cpu: u32,
        ts: u64,
        payload: &[u8],
        next_same_cpu: Option<(u64, &[u8])>,
    ) -> Result<Outcome, fmt::Error> {
        self.slot = slot;
        let Some(id) = self.ev.record_id(payload) else { return Ok(Outcome::NotGraph) };
        match self.ev.decode(payload) {
            Some(GraphRec::Entry { pid, func, depth, args }) => {
                self.entry(w, cpu, ts, payload, (pid, func, depth, args), next_same_cpu)
            }
            Some(GraphRec::Exit { func, depth, overrun, calltime, rettime, retval, .. }) => {
                self.exit(w, cpu, ts, payload, func, depth, overrun, rettime.wrapping_sub(calltime), retval)?;
                Ok(Outcome::Done)
            }
            None => {
                if self.ev.ents.iter().any(|l| l.id == id) || self.ev.rets.iter().any(|l| l.id == id) {
                    // A graph record too short for its fields.
                    return Ok(Outcome::NotGraph);
                }
                self.comment(w, cpu, ts, payload, id)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn entry<W: Write + ?Sized>(
        &mut self,
        w: &mut W,
        cpu: u32,
        ts: u64,
        p: &[u8],
        (pid, func, depth, args): (i32, u64, i64, Option<u32>),
        next: Option<(u64, &[u8])>,
    ) -> Result<Outcome, fmt::Error> {
        // check_irq_entry (only with funcgraph-irqs off).
        if !self.opts.irqs {
            let inside = self.state().depth_irq >= 0;
            if inside {
                return Ok(Outcome::Done);
            }
            if self.in_irq_text(func) {
                self.state().depth_irq = depth;
                return Ok(Outcome::Done);
            }
        }
        self.prologue(w, cpu, ts, p, Some(func))?;

        // get_return_for_leaf: the next record on this CPU is the exit of
        // the same function by the same task.
        let leaf = next.and_then(|(_, np)| {
            let nid = self.ev.record_id(np)?;
            if !self.ev.is_exit_id(nid) {
                return None;
            }
            match self.ev.decode(np)? {
                GraphRec::Exit { pid: npid, func: nfunc, calltime, rettime, retval, .. }
                    if npid == pid && nfunc == func =>
                {
                    Some((rettime.wrapping_sub(calltime), retval, nfunc))
                }
                _ => None,
            }
        });

        let st = self.state();
        if let Some((dur, retval, rfunc)) = leaf {
            st.depth = depth - 1;
            if let Some(slot) = usize::try_from(depth).ok().and_then(|d| st.enter_funcs.get_mut(d)) {
                *slot = 0;
            }
            if self.opts.duration && self.opts.context_info {
                write_duration_column(w, dur, self.opts.overhead, self.abi.long_size)?;
            }
            Self::indent(w, depth)?;
            self.write_sym(w, rfunc)?;
            self.write_args(w, rfunc, p, args)?;
            w.write_char(';')?;
            if self.opts.retval {
                if let Some(r) = retval {
                    w.write_str(" /*")?;
                    self.write_retval(w, r)?;
                    w.write_str(" */")?;
                }
            }
            w.write_char('\n')?;
            self.irq_marker(w, cpu, ts, p, rfunc, Mark::Return)?;
            Ok(Outcome::SkipNext)
        } else {
            st.depth = depth;
            if let Some(slot) = usize::try_from(depth).ok().and_then(|d| st.enter_funcs.get_mut(d)) {
                *slot = func;
            }
            self.fill(w, "              |  ")?;
            Self::indent(w, depth)?;
            self.write_sym(w, func)?;
            self.write_args(w, func, p, args)?;
            w.write_str(" {\n")?;
            Ok(Outcome::Done)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn exit<W: Write + ?Sized>(
        &mut self,
        w: &mut W,
        cpu: u32,
        ts: u64,
        p: &[u8],
        func: u64,
        depth: i64,
        overrun: u64,
        dur: u64,
        retval: Option<u64>,
    ) -> fmt::Result {
        // check_irq_return (only with funcgraph-irqs off).
        if !self.opts.irqs {
            let st = self.state();
            if st.depth_irq != -1 {
                if st.depth_irq >= depth {
                    st.depth_irq = -1;
                }
                return Ok(());
            }
        }
        let st = self.state();
        st.depth = depth - 1;
        let mut matched = true;
        if let Some(slot) = usize::try_from(depth).ok().and_then(|d| st.enter_funcs.get_mut(d)) {
            matched = *slot == func;
            *slot = 0;
        }
        self.prologue(w, cpu, ts, p, None)?;
        if self.opts.duration && self.opts.context_info {
            write_duration_column(w, dur, self.opts.overhead, self.abi.long_size)?;
        }
        Self::indent(w, depth)?;
        if self.opts.retval && retval.is_some() {
            w.write_str("} /* ")?;
            self.write_sym(w, func)?;
            if let Some(r) = retval {
                self.write_retval(w, r)?;
            }
            w.write_str(" */")?;
        } else if matched && !self.opts.tail {
            w.write_char('}')?;
        } else {
            w.write_str("} /* ")?;
            self.write_sym(w, func)?;
            w.write_str(" */")?;
        }
        w.write_char('\n')?;
        if self.opts.overrun {
            writeln!(w, " (Overruns: {})", overrun as u32)?;
        }
        self.irq_marker(w, cpu, ts, p, func, Mark::Return)
    }

    /// `print_graph_comment`: any other event as `/* body */` at the current
    /// depth.
    fn comment<W: Write + ?Sized>(
        &mut self,
        w: &mut W,
        cpu: u32,
        ts: u64,
        p: &[u8],
        id: u32,
    ) -> Result<Outcome, fmt::Error> {
        let events = self.events;
        let Some(ev) = events.get(id) else { return Ok(Outcome::NotGraph) };
        let ftrace = ev.system == "ftrace";
        if ftrace && matches!(ev.name.as_str(), "function" | "kernel_stack") {
            return Ok(Outcome::NotGraph);
        }
        let depth = self.state().depth;
        self.prologue(w, cpu, ts, p, None)?;
        self.fill(w, "              |  ")?;
        if depth > 0 {
            Self::indent(w, depth + 1)?;
        }
        w.write_str("/* ")?;
        let mut body = core::mem::take(&mut self.scratch);
        body.clear();
        let ctx = self.ctx();
        if ftrace && matches!(ev.name.as_str(), "print" | "bprint" | "bputs") {
            crate::printfmt::render_ftrace_text(&mut body, ev, p, &ctx)?;
        } else {
            let i = id as usize;
            if i < 65536 {
                if self.progs.len() <= i {
                    self.progs.resize_with(i + 1, || None);
                }
                if let Some(slot) = self.progs.get_mut(i) {
                    if slot.is_none() {
                        *slot = Some(match self.kernel {
                            Some(k) => Program::compile_with(ev, self.abi.long_size, k),
                            None => Program::compile(ev, self.abi.long_size),
                        });
                    }
                }
            }
            match self.progs.get(i).and_then(Option::as_ref) {
                Some(prog) => {
                    if prog.name_prefix() {
                        write!(body, "{}: ", ev.name)?;
                    }
                    prog.render(&mut body, p, &ctx)?;
                }
                None => {
                    write!(body, "{}: ", ev.name)?;
                    crate::printfmt::render_fields(&mut body, ev, p, self.abi)?;
                }
            }
        }
        let text = body.strip_suffix('\n').unwrap_or(&body);
        let r = w.write_str(text);
        self.scratch = body;
        r?;
        w.write_str(" */\n")?;
        Ok(Outcome::Done)
    }
}

/// Render whole per-CPU streams of `(timestamp, payload)` records (index =
/// CPU number) in the kernel's order: smallest timestamp first, the lowest
/// CPU on ties, each record with its CPU's next one as the peek. Records the
/// graph does not take ([`Outcome::NotGraph`]) go to `normal`. For in-memory
/// data (tests, trace.dat); the live path drives [`GraphRenderer::record`]
/// from its own merge.
pub fn render_streams<'p, W, I, F>(
    g: &mut GraphRenderer<'_>,
    w: &mut W,
    streams: &mut [core::iter::Peekable<I>],
    mut normal: F,
) -> fmt::Result
where
    W: Write + ?Sized,
    I: Iterator<Item = (u64, &'p [u8])>,
    F: FnMut(&mut W, u32, u64, &'p [u8]) -> fmt::Result,
{
    loop {
        let mut best: Option<(u64, usize)> = None;
        for (c, s) in streams.iter_mut().enumerate() {
            if let Some(&(ts, _)) = s.peek() {
                if best.map_or(true, |(b, _)| ts < b) {
                    best = Some((ts, c));
                }
            }
        }
        let Some((_, c)) = best else { return Ok(()) };
        let Some(s) = streams.get_mut(c) else { return Ok(()) };
        let Some((ts, p)) = s.next() else { return Ok(()) };
        let next = s.peek().copied();
        match g.record(w, c as u32, ts, p, next)? {
            Outcome::Done => {}
            Outcome::SkipNext => {
                s.next();
            }
            Outcome::NotGraph => normal(w, c as u32, ts, p)?,
        }
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

/// `%ps` of a function address: `name [module]`, or the address in hex.
pub(crate) fn write_name<W: Write + ?Sized>(w: &mut W, syms: Option<&dyn SymbolLookup>, addr: u64) -> fmt::Result {
    match syms.and_then(|s| s.lookup(addr)) {
        Some(s) => {
            w.write_str(s.name)?;
            if let Some(m) = s.module {
                write!(w, " [{m}]")?;
            }
            Ok(())
        }
        None => write!(w, "0x{addr:x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn dur(ns: u64) -> String {
        let mut s = String::new();
        write_duration_column(&mut s, ns, true, 8).unwrap();
        s
    }

    #[test]
    fn durations_like_the_kernel() {
        assert_eq!(dur(2048), "  2.048 us    |  ");
        assert_eq!(dur(19_824), "+ 19.824 us   |  ");
        assert_eq!(dur(212_144), "! 212.144 us  |  ");
        assert_eq!(dur(8_448_480), "# 8448.480 us |  ");
        assert_eq!(dur(14_177_550), "* 14177.55 us |  ");
        assert_eq!(dur(28_554_809), "* 28554.80 us |  ");
        assert_eq!(dur(123_456_789), "@ 123456.7 us |  ");
        assert_eq!(dur(1_234_567_890), "$ 1234567 us  |  ");
        assert_eq!(dur(12_345_678_901), "$ 12345678 us |  ");
        assert_eq!(dur(0), "  0.000 us    |  ");
        assert_eq!(dur(999), "  0.999 us    |  ");
        // Marks are strict: exactly 10 µs is not marked.
        assert_eq!(dur(10_000), "  10.000 us   |  ");
        assert_eq!(dur(10_001), "+ 10.001 us   |  ");
        let mut s = String::new();
        write_duration_column(&mut s, 2048, false, 8).unwrap();
        assert_eq!(s, "  2.048 us    |  ");
        // 32-bit kernels print the µs as a 32-bit unsigned long.
        let mut s = String::new();
        write_duration(&mut s, (1u64 << 32) * 1000 + 5_000, 4).unwrap();
        assert_eq!(s, "5.000 us    ");
    }

    #[test]
    fn marks() {
        let m = [
            (0, ' '),
            (10_000, ' '),
            (10_001, '+'),
            (100_001, '!'),
            (1_000_001, '#'),
            (10_000_001, '*'),
            (100_000_001, '@'),
            (1_000_000_001, '$'),
            (u64::MAX, '$'),
        ];
        for (ns, c) in m {
            assert_eq!(overhead_mark(ns), c, "{ns}");
        }
    }

    #[test]
    fn proc_column() {
        let p = |c: &str, pid| {
            let mut s = String::new();
            write_proc(&mut s, c, pid).unwrap();
            s
        };
        assert_eq!(p("busybox", 553), " busybox-553  ");
        assert_eq!(p("sh", 100), "    sh-100    ");
        assert_eq!(p("rcu_sched", 14), "  rcu_sch-14  ");
        assert_eq!(p("<idle>", 0), "   <idle>-0   ");
        assert_eq!(p("kworker/0:1", 16), "  kworker-16  ");
        assert_eq!(p("abcdefg", 1234567), "abcdefg-1234567");
    }

    #[test]
    fn header_default() {
        let mut s = String::new();
        write_header(&mut s, &GraphOpts::default()).unwrap();
        assert_eq!(
            s,
            "# CPU  DURATION                  FUNCTION CALLS\n# |     |   |                     |   |   |   |\n"
        );
    }

    #[test]
    fn options_parse() {
        let o =
            GraphOpts::from_trace_options("print-parent funcgraph-proc nofuncgraph-cpu funcgraph-tail nocontext-info");
        assert!(o.proc_ && !o.cpu && o.tail && !o.context_info && o.duration);
        assert_eq!(GraphOpts::from_trace_options(""), GraphOpts::default());
        let _ = "x".to_string();
    }

    // Synthetic records for a 64-bit little-endian 6.1 kernel.
    const FMT_ENT: &str = concat!("name: funcgraph_entry\nID: 11\nformat:\n", crate::format::common_fields!(), "\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:int depth;\toffset:16;\tsize:4;\tsigned:1;\n\nprint fmt: \"--> %ps (%d)\", (void *)REC->func, REC->depth\n");
    const FMT_RET: &str = concat!("name: funcgraph_exit\nID: 10\nformat:\n", crate::format::common_fields!(), "\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:int depth;\toffset:16;\tsize:4;\tsigned:1;\n\tfield:unsigned int overrun;\toffset:20;\tsize:4;\tsigned:0;\n\tfield:unsigned long long calltime;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:unsigned long long rettime;\toffset:32;\tsize:8;\tsigned:0;\n\nprint fmt: \"<-- %ps (%d) (start: %llx  end: %llx) over: %d\", (void *)REC->func, REC->depth, REC->calltime, REC->rettime, REC->depth\n");
    const FMT_PRINT: &str = concat!("name: print\nID: 5\nformat:\n", crate::format::common_fields!(), "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n\nprint fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n");

    pub(crate) fn table() -> EventTable {
        let mut t = EventTable::new();
        for f in [FMT_ENT, FMT_RET, FMT_PRINT] {
            t.insert(EventFormat::parse(f, "ftrace", 8).unwrap());
        }
        t
    }

    pub(crate) fn ent(pid: i32, func: u64, depth: i32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&11u16.to_le_bytes());
        v.extend_from_slice(&[0, 0]);
        v.extend_from_slice(&pid.to_le_bytes());
        v.extend_from_slice(&func.to_le_bytes());
        v.extend_from_slice(&depth.to_le_bytes());
        v.extend_from_slice(&[0; 4]);
        v
    }

    pub(crate) fn ret(pid: i32, func: u64, depth: i32, call: u64, rett: u64) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&10u16.to_le_bytes());
        v.extend_from_slice(&[0, 0]);
        v.extend_from_slice(&pid.to_le_bytes());
        v.extend_from_slice(&func.to_le_bytes());
        v.extend_from_slice(&depth.to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&call.to_le_bytes());
        v.extend_from_slice(&rett.to_le_bytes());
        v
    }

    fn print(pid: i32, text: &str) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&5u16.to_le_bytes());
        v.extend_from_slice(&[0, 0]);
        v.extend_from_slice(&pid.to_le_bytes());
        v.extend_from_slice(&0u64.to_le_bytes());
        v.extend_from_slice(text.as_bytes());
        v.push(0);
        v
    }

    struct Syms;
    impl SymbolLookup for Syms {
        fn lookup(&self, addr: u64) -> Option<crate::printfmt::Sym<'_>> {
            let name = match addr {
                0x100 => "outer",
                0x200 => "inner",
                0x300 => "leaf",
                0x400 => "gic_handle_irq",
                _ => return None,
            };
            Some(crate::printfmt::Sym { name, offset: 0, size: 0x100, module: None })
        }
    }

    /// Render a single-CPU list of records, peeking like the caller does.
    fn render(recs: &[(u32, Vec<u8>)], opts: GraphOpts) -> String {
        let t = table();
        let c = Cmdlines::parse("7 sh\n8 busybox\n");
        let syms = Syms;
        let mut g = GraphRenderer::new(&t, &c, crate::abi::Abi::new(Endian::Little, 8), Some(&syms)).with_opts(opts);
        let mut out = String::new();
        let mut i = 0;
        while i < recs.len() {
            let (cpu, p) = &recs[i];
            let next = recs[i + 1..].iter().find(|r| r.0 == *cpu).map(|r| (0u64, r.1.as_slice()));
            match g.record(&mut out, *cpu, 0, p, next).unwrap() {
                Outcome::SkipNext => {
                    // Drop the folded record (the first one of this CPU).
                    let j = i + 1 + recs[i + 1..].iter().position(|r| r.0 == *cpu).unwrap();
                    let mut rest: Vec<(u32, Vec<u8>)> = recs.to_vec();
                    rest.remove(j);
                    return out + &render_from(&mut g, &rest, i + 1);
                }
                Outcome::NotGraph => out.push_str("<normal>\n"),
                Outcome::Done => {}
            }
            i += 1;
        }
        out
    }

    fn render_from(g: &mut GraphRenderer<'_>, recs: &[(u32, Vec<u8>)], from: usize) -> String {
        let mut out = String::new();
        let mut recs: Vec<(u32, Vec<u8>)> = recs.to_vec();
        let mut i = from;
        while i < recs.len() {
            let cpu = recs[i].0;
            let p = recs[i].1.clone();
            let nj = recs[i + 1..].iter().position(|r| r.0 == cpu).map(|k| k + i + 1);
            let next = nj.map(|j| (0u64, recs[j].1.as_slice()));
            if g.record(&mut out, cpu, 0, &p, next).unwrap() == Outcome::SkipNext {
                recs.remove(nj.unwrap());
            }
            i += 1;
        }
        out
    }

    #[test]
    fn nesting_leaves_and_lost_entries() {
        let recs = vec![
            (0, ent(7, 0x100, 0)),
            (0, ent(7, 0x200, 1)),
            (0, ent(7, 0x300, 2)),
            (0, ret(7, 0x300, 2, 1000, 3048)),
            (0, print(7, "hello\n")),
            (0, ret(7, 0x200, 1, 500, 20_500)),
            (0, ret(7, 0x100, 0, 0, 150_000)),
            (0, ret(7, 0x999, 0, 0, 5)),
            (0, ent(8, 0x300, 0)),
            (1, ent(7, 0x100, 3)),
            (0, ret(8, 0x300, 0, 0, 1)),
        ];
        let got = render(&recs, GraphOpts::default());
        let want = " 0)               |  outer() {\n \
0)               |    inner() {\n \
0)   2.048 us    |      leaf();\n \
0)               |      /* hello */\n \
0) + 20.000 us   |    }\n \
0) ! 150.000 us  |  }\n \
0)   0.005 us    |  } /* 0x999 */\n \
------------------------------------------\n \
0)      sh-7      =>   busybox-8   \n \
------------------------------------------\n\n \
0)   0.001 us    |  leaf();\n \
1)               |        outer() {\n";
        assert_eq!(got, want);
    }

    #[test]
    fn irq_markers_and_hidden_irqs() {
        let recs = vec![
            (0, ent(7, 0x100, 0)),
            (0, ent(7, 0x400, 1)),
            (0, ent(7, 0x300, 2)),
            (0, ret(7, 0x300, 2, 0, 1000)),
            (0, ret(7, 0x400, 1, 0, 2000)),
            (0, ret(7, 0x100, 0, 0, 3000)),
        ];
        let got = render(&recs, GraphOpts::default());
        assert_eq!(
            got,
            " 0)               |  outer() {\n 0)   ==========> |\n 0)               |    gic_handle_irq() {\n 0)   1.000 us    |      leaf();\n 0)   2.000 us    |    }\n 0)   <========== |\n 0)   3.000 us    |  }\n"
        );
        let got = render(&recs, GraphOpts { irqs: false, ..GraphOpts::default() });
        assert_eq!(got, " 0)               |  outer() {\n 0)   3.000 us    |  }\n");
    }

    #[test]
    fn garbage_never_panics() {
        let t = table();
        let c = Cmdlines::default();
        let mut g = GraphRenderer::new(&t, &c, crate::abi::Abi::new(Endian::Little, 8), None);
        let mut out = String::new();
        let samples: Vec<Vec<u8>> = vec![
            vec![],
            vec![11],
            vec![11, 0, 0, 0, 1, 0, 0, 0],
            ent(1, 1, i32::MAX),
            ent(1, 1, i32::MIN),
            ret(1, 1, i32::MAX, 5, 1),
            ret(1, 1, -1, u64::MAX, 0),
            ret(1, 1, 49, 0, u64::MAX),
            ret(1, 1, 50, 0, 1)[..20].to_vec(),
            vec![5, 0, 0, 0, 0, 0, 0, 0, 1, 2],
            vec![0xff; 64],
        ];
        for (i, a) in samples.iter().enumerate() {
            for b in samples.iter() {
                for cpu in [0, 1, 4095, 4096, u32::MAX] {
                    let _ = g.record(&mut out, cpu, i as u64, a, Some((0, b)));
                    let _ = g.record(&mut out, cpu, i as u64, a, None);
                }
            }
        }
        // Hostile depths are capped.
        assert!(out.lines().all(|l| l.len() < 4096));
    }

    /// A newer layout (fields in another order, `retval`, unsigned depth)
    /// on a big-endian 32-bit kernel, with funcgraph-retval.
    #[test]
    fn newer_layout_retval_big_endian_32() {
        let c = crate::format::common_fields!();
        let ent = alloc::format!("name: funcgraph_entry\nID: 11\nformat:\n{c}\tfield:unsigned long func;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:unsigned int depth;\toffset:12;\tsize:4;\tsigned:0;\n\nprint fmt: \"x\"\n");
        let ret = alloc::format!("name: funcgraph_exit\nID: 10\nformat:\n{c}\tfield:unsigned long func;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:unsigned long retval;\toffset:12;\tsize:4;\tsigned:0;\n\tfield:unsigned int depth;\toffset:16;\tsize:4;\tsigned:0;\n\tfield:unsigned int overrun;\toffset:20;\tsize:4;\tsigned:0;\n\tfield:unsigned long long calltime;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:unsigned long long rettime;\toffset:32;\tsize:8;\tsigned:0;\n\nprint fmt: \"y\"\n");
        let mut t = EventTable::new();
        t.insert(EventFormat::parse(&ent, "ftrace", 4).unwrap());
        t.insert(EventFormat::parse(&ret, "ftrace", 4).unwrap());
        let e = |pid: i32, func: u32, depth: u32| {
            let mut v = alloc::vec![0, 11, 0, 0];
            v.extend_from_slice(&pid.to_be_bytes());
            v.extend_from_slice(&func.to_be_bytes());
            v.extend_from_slice(&depth.to_be_bytes());
            v
        };
        let r = |pid: i32, func: u32, rv: u32, depth: u32, a: u64, b: u64| {
            let mut v = alloc::vec![0, 10, 0, 0];
            v.extend_from_slice(&pid.to_be_bytes());
            v.extend_from_slice(&func.to_be_bytes());
            v.extend_from_slice(&rv.to_be_bytes());
            v.extend_from_slice(&depth.to_be_bytes());
            v.extend_from_slice(&0u32.to_be_bytes());
            v.extend_from_slice(&a.to_be_bytes());
            v.extend_from_slice(&b.to_be_bytes());
            v
        };
        let cl = Cmdlines::default();
        let syms = Syms;
        let opts = GraphOpts { retval: true, ..GraphOpts::default() };
        let mut g = GraphRenderer::new(&t, &cl, crate::abi::Abi::new(Endian::Big, 4), Some(&syms))
            .with_opts(opts)
            .with_cpu_count(12);
        let recs =
            [e(1, 0x100, 0), e(1, 0x300, 1), r(1, 0x300, 1, 0, 0, 1500), r(1, 0x100, (-22i32) as u32, 0, 0, 4000)];
        let mut out = String::new();
        assert_eq!(g.record(&mut out, 3, 0, &recs[0], Some((0, &recs[1]))).unwrap(), Outcome::Done);
        assert_eq!(g.record(&mut out, 3, 0, &recs[1], Some((0, &recs[2]))).unwrap(), Outcome::SkipNext);
        assert_eq!(g.record(&mut out, 3, 0, &recs[3], None).unwrap(), Outcome::Done);
        assert_eq!(
            out,
            "  3)               |  outer() {\n  3)   1.500 us    |    leaf(); /* ret=0x1 */\n  3)   4.000 us    |  } /* outer ret=-22 */\n"
        );
        let mut h = GraphRenderer::new(&t, &cl, crate::abi::Abi::new(Endian::Big, 4), Some(&syms))
            .with_opts(GraphOpts { retval: true, retval_hex: true, tail: true, ..GraphOpts::default() });
        let mut out = String::new();
        h.record(&mut out, 0, 0, &recs[3], None).unwrap();
        assert_eq!(out, " 0)   4.000 us    |  } /* outer ret=0xffffffea */\n");
    }

    /// Per-task slots: two tasks interleaved on one CPU keep their own
    /// nesting and leaf detection, with no context-switch blocks.
    #[test]
    fn per_task_slots() {
        let t = table();
        let c = Cmdlines::parse("7 sh\n8 busybox\n");
        let syms = Syms;
        let mut g = GraphRenderer::new(&t, &c, crate::abi::Abi::new(Endian::Little, 8), Some(&syms));
        let a = [ent(7, 0x100, 0), ent(7, 0x300, 1), ret(7, 0x300, 1, 0, 1000), ret(7, 0x100, 0, 0, 5000)];
        let b = [ent(8, 0x200, 0), ret(8, 0x200, 0, 0, 2000)];
        let mut out = String::new();
        // Merged order on CPU 0: a0 b0 a1 a2 b1 a3; each task peeks its own next.
        assert_eq!(g.record_in(&mut out, 0, 0, 0, &a[0], Some((0, &a[1]))).unwrap(), Outcome::Done);
        assert_eq!(g.record_in(&mut out, 1, 0, 0, &b[0], Some((0, &b[1]))).unwrap(), Outcome::SkipNext);
        assert_eq!(g.record_in(&mut out, 0, 0, 0, &a[1], Some((0, &a[2]))).unwrap(), Outcome::SkipNext);
        assert_eq!(g.record_in(&mut out, 0, 0, 0, &a[3], None).unwrap(), Outcome::Done);
        assert_eq!(
            out,
            " 0)               |  outer() {\n 0)   2.000 us    |  inner();\n 0)   1.000 us    |    leaf();\n 0)   5.000 us    |  }\n"
        );
    }
}
