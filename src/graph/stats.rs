//! Aggregations over funcgraph records (sans-IO): folded stacks for flame
//! graphs (`--folded`) and per-function totals (`--top N`).
//!
//! Call stacks are kept per task (pid), so a task that sleeps, or moves to
//! another CPU, keeps its stack. Each exit record is one completed call of
//! inclusive time `rettime - calltime`; its *self* time is that minus the
//! inclusive time of the calls completed directly below it.
//!
//! Folded output (`a;b;c WEIGHT`, one line per distinct path) weighs each
//! path by the self time spent in its last frame, in ns: flamegraph.pl,
//! speedscope and Perfetto add those up again, so every frame in the
//! picture shows its inclusive time, and the weights of all lines sum to the
//! inclusive time of the root calls ([`GraphStats::roots_total`]).
//!
//! Exits whose entry is missing (the buffer started inside the call, or
//! `tracing_thresh` writes exits only) are placed under the frames of the
//! same task that are still open above their depth.

use crate::strmap::StrMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::{write_name, GraphEvents, GraphRec};
use crate::abi::Abi;
use crate::format::EventTable;
use crate::printfmt::SymbolLookup;
use crate::render::Cmdlines;

/// Deepest stack kept per task (deeper frames are still counted in the
/// per-function totals).
const MAX_STACK: usize = 512;

/// Longest call duration taken as is (2^40 ns, about 12.7 days).
pub(crate) const MAX_CALL_NS: u64 = 1 << 40;

#[derive(Debug, Clone)]
struct Frame {
    func: u64,
    depth: i64,
    /// Inclusive time of the completed calls directly below.
    children: u64,
}

/// Totals for one function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FuncStat {
    /// Completed calls (exit records).
    pub(crate) count: u64,
    /// Sum of inclusive times, ns (recursive calls count at each level).
    pub(crate) total: u64,
    /// Sum of self times, ns.
    pub(crate) self_: u64,
    /// Longest single call, ns.
    pub(crate) max: u64,
}

impl FuncStat {
    fn add(&mut self, o: &FuncStat) {
        self.count += o.count;
        self.total = self.total.saturating_add(o.total);
        self.self_ = self.self_.saturating_add(o.self_);
        self.max = self.max.max(o.max);
    }
}

/// How `--top` sorts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum TopBy {
    /// Time in the function, its callees included.
    Total,
    /// Time in the function less its callees' time.
    Self_,
}

/// One row of the top table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TopRow {
    /// The function (symbol name, or its address when unknown).
    pub(crate) name: String,
    /// Its counts and times.
    pub(crate) stat: FuncStat,
}

/// Folded stacks and per-function totals from a stream of records.
pub(crate) struct GraphStats {
    ev: GraphEvents,
    per_comm: bool,
    /// Open frames per task (a short list: the tasks inside traced calls).
    stacks: Vec<(i32, Vec<Frame>)>,
    /// Path of function addresses (after the index of the comm in `comms`
    /// when `per_comm`) as a [`path_key`] → self ns.
    folded: StrMap,
    comms: Vec<String>,
    /// Per function address, sorted by it.
    funcs: Vec<(u64, FuncStat)>,
    roots_total: u64,
    calls: u64,
}

impl GraphStats {
    /// `per_comm`: start every folded line with the task's comm.
    pub(crate) fn new(events: &EventTable, abi: Abi, per_comm: bool) -> Self {
        GraphStats {
            ev: GraphEvents::new(events, abi),
            per_comm,
            stacks: Vec::new(),
            folded: StrMap::new(),
            comms: Vec::new(),
            funcs: Vec::new(),
            roots_total: 0,
            calls: 0,
        }
    }

    /// Feed one record (any event; others are ignored). `cmdlines` names
    /// the task for the comm prefix.
    pub(crate) fn record(&mut self, payload: &[u8], cmdlines: &Cmdlines) {
        match self.ev.decode(payload) {
            Some(GraphRec::Entry { pid, func, depth, .. }) => self.entry(pid, func, depth),
            Some(GraphRec::Exit { pid, func, depth, calltime, rettime, .. }) => {
                let comm = self.per_comm.then(|| self.comm_index(cmdlines.comm(pid)));
                // No real call lasts 12 days: longer ones are garbage, and the
                // cap keeps every sum far from overflowing.
                self.exit(pid, comm, func, depth, rettime.saturating_sub(calltime).min(MAX_CALL_NS));
            }
            None => {}
        }
    }

    fn entry(&mut self, pid: i32, func: u64, depth: i64) {
        let st = task_stack(&mut self.stacks, pid);
        // Anything at this depth or deeper is over (its exit was lost).
        let lost = abandon(st, |f| f.depth >= depth);
        self.roots_total = self.roots_total.saturating_add(lost);
        if st.len() < MAX_STACK {
            st.push(Frame { func, depth, children: 0 });
        }
    }

    fn comm_index(&mut self, comm: &str) -> u64 {
        match self.comms.iter().position(|c| c == comm) {
            Some(i) => i as u64,
            None => {
                self.comms.push(String::from(comm));
                self.comms.len() as u64 - 1
            }
        }
    }

    fn exit(&mut self, pid: i32, comm: Option<u64>, func: u64, depth: i64, dur: u64) {
        let st = task_stack(&mut self.stacks, pid);
        // Frames deeper than this exit never saw theirs.
        let mut lost = abandon(st, |f| f.depth > depth);
        let (children, own_frame) = match st.last() {
            Some(f) if f.depth == depth && f.func == func => (f.children, true),
            _ => (0, false),
        };
        if !own_frame {
            // A frame at this depth for another function: its exit was lost.
            lost = lost.saturating_add(abandon(st, |f| f.depth >= depth));
        }
        self.roots_total = self.roots_total.saturating_add(lost);
        let parents = if own_frame { st.len().saturating_sub(1) } else { st.len() };
        let path = path_key(comm.into_iter().chain(st.iter().take(parents).map(|f| f.func)).chain([func]));
        if own_frame {
            st.pop();
        }
        let self_ns = dur.saturating_sub(children);
        match st.last_mut() {
            Some(parent) => parent.children = parent.children.saturating_add(dur),
            None => self.roots_total = self.roots_total.saturating_add(dur),
        }
        if st.is_empty() {
            self.stacks.retain(|(_, s)| !s.is_empty());
        }
        // A child longer than its parent (clock quirks) would make the sum of
        // self times exceed the root; account the excess to the root total
        // so the two always agree.
        if children > dur {
            self.roots_total = self.roots_total.saturating_add(children - dur);
        }
        let slot = self.folded.entry(&path, 0);
        *slot = slot.saturating_add(self_ns);
        let one = FuncStat { count: 1, total: dur, self_: self_ns, max: dur };
        match self.funcs.binary_search_by_key(&func, |f| f.0) {
            Ok(i) => {
                if let Some(f) = self.funcs.get_mut(i) {
                    f.1.add(&one);
                }
            }
            Err(i) => self.funcs.insert(i, (func, one)),
        }
        self.calls = self.calls.saturating_add(1);
    }

    /// Inclusive time of the calls that completed with no completed caller
    /// (their caller's exit is not in the data), ns. Equals the sum of all
    /// folded weights.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn roots_total(&self) -> u64 {
        // Calls completed under frames still open count as roots too.
        let open: u64 = self.stacks.iter().flat_map(|(_, s)| s).map(|f| f.children).fold(0, u64::saturating_add);
        self.roots_total.saturating_add(open)
    }

    /// Completed calls seen.
    pub(crate) fn calls(&self) -> u64 {
        self.calls
    }

    /// Folded lines, names resolved and merged: `(line without weight,
    /// weight)`, sorted by line.
    pub(crate) fn folded(&self, syms: Option<&dyn SymbolLookup>) -> Vec<(String, u64)> {
        let mut out = StrMap::new();
        for (key, w) in self.folded.iter() {
            let mut line = String::new();
            let mut path = key_path(key);
            if self.per_comm {
                if let Some(c) = path.next() {
                    push_frame(&mut line, self.comms.get(c as usize).map_or("", String::as_str));
                    line.push(';');
                }
            }
            for (i, f) in path.enumerate() {
                if i > 0 {
                    line.push(';');
                }
                let mut name = String::new();
                let _ = write_name(&mut name, syms, f);
                push_frame(&mut line, &name);
            }
            *out.entry(&line, 0) += w;
        }
        out.sorted().into_iter().map(|(l, w)| (String::from(l), w)).collect()
    }

    /// Write the folded lines (`a;b;c WEIGHT\n`), zero weights left out.
    pub(crate) fn write_folded<W: Write + ?Sized>(&self, w: &mut W, syms: Option<&dyn SymbolLookup>) -> fmt::Result {
        for (line, weight) in self.folded(syms) {
            if weight > 0 {
                writeln!(w, "{line} {weight}")?;
            }
        }
        Ok(())
    }

    /// Per-function totals by resolved name, all of them, sorted by `by`
    /// (descending; ties by name).
    pub(crate) fn functions(&self, syms: Option<&dyn SymbolLookup>, by: TopBy) -> Vec<TopRow> {
        // Functions with the same name (several addresses) are merged.
        let mut v: Vec<TopRow> = Vec::new();
        let mut at = StrMap::new();
        for (f, s) in &self.funcs {
            let mut name = String::new();
            let _ = write_name(&mut name, syms, *f);
            let i = *at.entry(&name, v.len() as u64) as usize;
            match v.get_mut(i) {
                Some(r) => r.stat.add(s),
                None => v.push(TopRow { name, stat: *s }),
            }
        }
        let key = |r: &TopRow| match by {
            TopBy::Total => r.stat.total,
            TopBy::Self_ => r.stat.self_,
        };
        // Names are unique: an unstable sort is deterministic (and smaller).
        v.sort_unstable_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.name.cmp(&b.name)));
        v
    }

    /// The top `n` functions by `by`.
    pub(crate) fn top(&self, syms: Option<&dyn SymbolLookup>, n: usize, by: TopBy) -> Vec<TopRow> {
        let mut v = self.functions(syms, by);
        v.truncate(n);
        v
    }

    /// The top table, 80 columns: calls, total, self, max (µs), function.
    pub(crate) fn write_top<W: Write + ?Sized>(
        &self,
        w: &mut W,
        syms: Option<&dyn SymbolLookup>,
        n: usize,
        by: TopBy,
    ) -> fmt::Result {
        writeln!(w, "{:>9} {:>13} {:>13} {:>12}  FUNCTION", "CALLS", "TOTAL(us)", "SELF(us)", "MAX(us)")?;
        for r in self.top(syms, n, by) {
            write!(w, "{:>9} ", r.stat.count)?;
            write_us(w, r.stat.total, 13)?;
            w.write_char(' ')?;
            write_us(w, r.stat.self_, 13)?;
            w.write_char(' ')?;
            write_us(w, r.stat.max, 12)?;
            writeln!(w, "  {}", r.name)?;
        }
        Ok(())
    }
}

/// ns as µs with 3 decimals, right-aligned in `width`.
fn write_us<W: Write + ?Sized>(w: &mut W, ns: u64, width: usize) -> fmt::Result {
    let mut s = heapless::String::<32>::new();
    let _ = write!(s, "{}.{:03}", ns / 1000, ns % 1000);
    write!(w, "{s:>width$}")
}

/// The open frames of `pid` (a new empty list if it has none).
fn task_stack(stacks: &mut Vec<(i32, Vec<Frame>)>, pid: i32) -> &mut Vec<Frame> {
    let i = match stacks.iter().position(|(p, _)| *p == pid) {
        Some(i) => i,
        None => {
            stacks.push((pid, Vec::new()));
            stacks.len() - 1
        }
    };
    &mut stacks[i].1
}

/// Pop the frames on top of `st` that match `over` (their exits were lost);
/// returns the inclusive time of the calls completed under them, which then
/// have no completed caller.
fn abandon(st: &mut Vec<Frame>, over: impl Fn(&Frame) -> bool) -> u64 {
    let mut lost = 0u64;
    while st.last().is_some_and(&over) {
        if let Some(f) = st.pop() {
            lost = lost.saturating_add(f.children);
        }
    }
    lost
}

/// Chars per value in a [`path_key`] (7 bits each).
const KEY_WIDTH: usize = 10;

/// A path of values (addresses, ids) as a key of the one map type in the
/// binary, `BTreeMap<String, u64>` (also the event table's by-name index):
/// each value as ten ASCII chars of 7 bits, so equal paths give equal keys.
/// Their order is not the paths' order: the maps keyed so are re-sorted on
/// output.
pub(crate) fn path_key(values: impl Iterator<Item = u64>) -> String {
    let mut key = String::new();
    for v in values {
        for i in 0..KEY_WIDTH {
            key.push(char::from(((v >> (7 * i)) & 0x7f) as u8));
        }
    }
    key
}

/// The values of a [`path_key`].
pub(crate) fn key_path(key: &str) -> impl Iterator<Item = u64> + '_ {
    key.as_bytes().chunks_exact(KEY_WIDTH).map(|c| c.iter().rev().fold(0, |v, &b| v << 7 | u64::from(b)))
}

/// A frame name in a folded line: `;` separates frames and the last space
/// separates the weight, so both are replaced.
pub(crate) fn push_frame(line: &mut String, name: &str) {
    for c in name.chars() {
        line.push(match c {
            ';' => ':',
            ' ' | '\n' | '\t' => '_',
            c => c,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ent, ret, table};
    use super::*;

    struct Syms;
    impl SymbolLookup for Syms {
        fn lookup(&self, addr: u64) -> Option<crate::printfmt::Sym<'_>> {
            let name = match addr {
                0x100 => "a",
                0x200 => "b",
                0x300 => "c",
                _ => return None,
            };
            Some(crate::printfmt::Sym { name, offset: 0, size: 0x100, module: None })
        }
    }

    #[test]
    fn path_keys() {
        let paths: [&[u64]; 4] = [&[], &[0], &[u64::MAX, 0xffff_ffff_8100_0000, 1 << 63, 0x7f], &[3, 0x80, 0x3fff]];
        for p in paths {
            let k = path_key(p.iter().copied());
            assert!(k.is_ascii());
            assert_eq!(key_path(&k).collect::<Vec<_>>(), p);
        }
        assert_ne!(path_key([0x80].into_iter()), path_key([1].into_iter()));
    }

    #[test]
    fn folded_and_top() {
        let t = table();
        let c = Cmdlines::parse("7 sh\n");
        let mut s = GraphStats::new(&t, crate::abi::Abi::new(crate::abi::Endian::Little, 8), false);
        for r in [
            ent(7, 0x100, 0),
            ent(7, 0x200, 1),
            ent(7, 0x300, 2),
            ret(7, 0x300, 2, 10, 40),
            ret(7, 0x200, 1, 5, 100),
            ent(7, 0x300, 1),
            ret(7, 0x300, 1, 100, 120),
            ret(7, 0x100, 0, 0, 200),
            // An exit whose entry was lost, then one at the root.
            ret(8, 0x200, 3, 0, 50),
        ] {
            s.record(&r, &c);
        }
        let f = s.folded(Some(&Syms));
        assert_eq!(
            f,
            [
                ("a".into(), 200 - 95 - 20),
                ("a;b".into(), 95 - 30),
                ("a;b;c".into(), 30),
                ("a;c".into(), 20),
                ("b".into(), 50)
            ]
        );
        assert_eq!(f.iter().map(|x| x.1).sum::<u64>(), s.roots_total());
        assert_eq!(s.roots_total(), 250);
        let top = s.top(Some(&Syms), 2, TopBy::Total);
        assert_eq!(top[0].name, "a");
        assert_eq!(top[0].stat, FuncStat { count: 1, total: 200, self_: 85, max: 200 });
        assert_eq!(top[1].name, "b");
        assert_eq!(top[1].stat, FuncStat { count: 2, total: 145, self_: 115, max: 95 });
        let mut out = String::new();
        s.write_top(&mut out, Some(&Syms), 3, TopBy::Self_).unwrap();
        assert!(out.lines().all(|l| l.len() <= 80), "{out}");
        let mut pc = GraphStats::new(&t, crate::abi::Abi::new(crate::abi::Endian::Little, 8), true);
        pc.record(&ent(7, 0x100, 0), &c);
        pc.record(&ret(7, 0x100, 0, 0, 9), &c);
        let mut out = String::new();
        pc.write_folded(&mut out, None).unwrap();
        assert_eq!(out, "sh;0x100 9\n");
    }

    /// Regression (fuzz): huge durations and deep nesting neither overflow
    /// nor break the folded-sum invariant.
    #[test]
    fn huge_durations() {
        let t = table();
        let c = Cmdlines::default();
        let mut s = GraphStats::new(&t, crate::abi::Abi::new(crate::abi::Endian::Little, 8), false);
        for i in 0..200 {
            s.record(&ent(1, 0x100 + i, i as i32), &c);
        }
        for i in (0..200).rev() {
            s.record(&ret(1, 0x100 + i, i as i32, 0, u64::MAX - i), &c);
        }
        for _ in 0..100 {
            s.record(&ret(2, 0x100, 0, 0, u64::MAX), &c);
        }
        let sum = s.folded(None).iter().fold(0u64, |a, x| a.saturating_add(x.1));
        assert_eq!(sum, s.roots_total());
        assert!(s.top(None, 1, TopBy::Total)[0].stat.total <= 101 * MAX_CALL_NS);
    }
}
