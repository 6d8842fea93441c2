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
//! The files: `records` finds the graph events' fields and decodes a
//! record; `columns` writes the duration, overhead-mark, process and
//! header columns; `renderer` keeps the per-CPU state and writes the
//! lines; [`stats`] aggregates the same records into folded stacks and
//! per-function totals, `flame` draws them. (tr-stack's `kernel_stack`
//! counts are `crate::stacks`.) Nothing here panics on any record bytes.

pub(crate) mod columns;
pub(crate) mod flame;
pub(crate) mod records;
pub(crate) mod renderer;
pub(crate) mod stats;

use core::fmt::{self, Write};

use crate::printfmt::SymbolLookup;

pub(crate) use columns::write_header;
pub(crate) use records::{GraphEvents, GraphRec};
pub(crate) use renderer::{GraphRenderer, IrqText, Outcome};

/// `FTRACE_RETFUNC_DEPTH`: the depths whose entered function the kernel
/// remembers (for the `} /* func */` form).
pub(crate) const RETFUNC_DEPTH: usize = 50;

/// Indentation is capped here (the kernel's line buffer is one page; a
/// hostile depth must not produce gigabytes of spaces).
const MAX_INDENT_DEPTH: i64 = 1000;

/// CPUs with their own state; records of higher CPU numbers share one slot.
const MAX_CPUS: usize = 4096;

/// The funcgraph trace options (and the two global options the layout
/// depends on). [`Default`] is the kernel's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GraphOpts {
    /// `funcgraph-cpu` (on)
    pub(crate) cpu: bool,
    /// `funcgraph-overhead` (on): the `+ ! # * @ $` marks.
    pub(crate) overhead: bool,
    /// `funcgraph-proc` (off): `comm-pid` column.
    pub(crate) proc_: bool,
    /// `funcgraph-duration` (on)
    pub(crate) duration: bool,
    /// `funcgraph-abstime` (off)
    pub(crate) abstime: bool,
    /// `funcgraph-irqs` (on): off hides functions called in irq entry code.
    pub(crate) irqs: bool,
    /// `funcgraph-tail` (off): always `} /* func */`.
    pub(crate) tail: bool,
    /// `funcgraph-overrun` (off)
    pub(crate) overrun: bool,
    /// `funcgraph-retval` (off; 6.5+ kernels with a `retval` field)
    pub(crate) retval: bool,
    /// `funcgraph-retval-hex` (off)
    pub(crate) retval_hex: bool,
    /// `context-info` (on): the CPU/duration columns at all.
    pub(crate) context_info: bool,
    /// `latency-format` (off): the `d..2.` column.
    pub(crate) latency: bool,
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
    pub(crate) fn from_trace_options(text: &str) -> Self {
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

/// Render whole per-CPU streams of `(timestamp, payload)` records (index =
/// CPU number) in the kernel's order: smallest timestamp first, the lowest
/// CPU on ties, each record with its CPU's next one as the peek. Records the
/// graph does not take ([`Outcome::NotGraph`]) go to `normal`. For in-memory
/// data (tests, trace.dat); the live path drives [`GraphRenderer::record`]
/// from its own merge.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn render_streams<'p, W, I, F>(
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
    use crate::abi::Endian;
    use crate::format::{EventFormat, EventTable};
    use crate::render::Cmdlines;
    use alloc::string::{String, ToString};
    use alloc::vec::Vec;

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
