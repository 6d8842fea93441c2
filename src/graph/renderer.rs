//! The function_graph renderer: the per-CPU state the kernel keeps while
//! it walks the buffer (last pid, depth, irq depth, the function entered at
//! each depth) and the lines it writes for each record: entries, exits,
//! leaves, irq markers and the `/* … */` comments of other events.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::columns::{write_duration_column, write_proc};
use super::{write_name, GraphEvents, GraphOpts, GraphRec, MAX_CPUS, MAX_INDENT_DEPTH, RETFUNC_DEPTH};
use crate::abi::Abi;
use crate::format::EventTable;
use crate::printfmt::{Ctx, KernelInfo, Program, StringLookup, SymbolLookup};
use crate::render::{write_lat_flags, Cmdlines};

/// What the caller does after [`GraphRenderer::record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
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
pub(crate) const IRQENTRY_FALLBACK: &[&str] = &[
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
pub(crate) enum IrqText {
    /// `[__irqentry_text_start, __irqentry_text_end)`.
    Range(u64, u64),
    /// Not known: functions named in [`IRQENTRY_FALLBACK`] count.
    Fallback,
}

impl IrqText {
    /// From a symbol table's `__irqentry_text_start` / `__irqentry_text_end`.
    pub(crate) fn from_kallsyms(k: &crate::kallsyms::Kallsyms) -> IrqText {
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
pub(crate) struct GraphRenderer<'a> {
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
    pub(crate) fn new(
        events: &'a EventTable,
        cmdlines: &'a Cmdlines,
        abi: Abi,
        syms: Option<&'a dyn SymbolLookup>,
    ) -> Self {
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
    pub(crate) fn with_strings(mut self, s: &'a dyn StringLookup) -> Self {
        self.strings = Some(s);
        self
    }

    /// Kernel facts for the print fmts of comment events (as
    /// [`crate::render::Renderer::with_kernel`]).
    pub(crate) fn with_kernel(mut self, k: &'a dyn KernelInfo) -> Self {
        self.kernel = Some(k);
        self
    }

    /// The `funcgraph-*` options to render with (the traced kernel's
    /// `trace_options`, or the defaults).
    pub(crate) fn with_opts(mut self, o: GraphOpts) -> Self {
        self.opts = o;
        self
    }

    /// The number of possible CPUs (`nr_cpu_ids`): the CPU column is as wide
    /// as the highest CPU number. Default: 1 digit.
    pub(crate) fn with_cpu_count(mut self, n: u32) -> Self {
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
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn with_irq_text(mut self, t: IrqText) -> Self {
        self.set_irq_text(t);
        self
    }

    /// [`with_irq_text`](Self::with_irq_text) once the renderer is in use:
    /// finding the range parses the symbol table, which a file with no
    /// graph record never needs.
    pub(crate) fn set_irq_text(&mut self, t: IrqText) {
        self.irq = t;
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
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn record<W: Write + ?Sized>(
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
    pub(crate) fn record_in<W: Write + ?Sized>(
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
                if self.ev.is_graph_id(id) {
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
