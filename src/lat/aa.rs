//! Auto-analysis of a timerlat stop (sans-IO), as rtla's does it
//! (tools/tracing/rtla/src/timerlat_aa.c, rtla 6.3 to 7.2): when the
//! kernel stops tracing at a threshold, the records of the stopped CPU's
//! last period say where its latency went.
//!
//! Per CPU, as timerlat_aa.c: the timerlat IRQ entry (`ftrace:timerlat`,
//! context 0) opens a period and names the task it interrupted (its
//! `common_pid`: the blocking thread, or 0 for idle); the first
//! `osnoise:irq_noise` after it is the timer IRQ's own handler (its `start`
//! minus the expected time is the IRQ handler delay); the later
//! `irq_noise`, `softirq_noise`, `nmi_noise` and `thread_noise` are what
//! delayed the thread (the blocking thread's first `thread_noise` is its
//! own share); the thread's entry (context 1, 2 with user threads) closes
//! the period. Before the IRQ, the last IRQ or NMI noise is kept: it may
//! have delayed the timer IRQ itself. `--dump-tasks`: the task
//! `sched_switch` ran last on every CPU and the function of a kworker's
//! `workqueue_execute_start`.
//!
//! The parts add up to the latency: a noise that began before the expected
//! time counts only from then (rtla prints it whole, which can pass
//! 100%), and what no event accounts for (scheduling, the context switch,
//! the exit from idle) is its own line, `other`.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::{Ev, Unit, SOFTIRQS};
use crate::abi::Endian;
use crate::format::EventTable;
use crate::json;
use crate::printfmt::SymbolLookup;
use crate::render::Cmdlines;

/// The events read, with their fields, in the order of the `K_*` kinds.
const EVENTS: [(&str, &[&str]); 7] = [
    ("osnoise:nmi_noise", &["start", "duration"]),
    ("osnoise:irq_noise", &["start", "duration", "vector", "desc"]),
    ("osnoise:softirq_noise", &["start", "duration", "vector"]),
    ("osnoise:thread_noise", &["start", "duration", "comm"]),
    ("ftrace:timerlat", &["seqnum", "context", "timer_latency"]),
    ("sched:sched_switch", &["next_pid", "next_comm"]),
    ("workqueue:workqueue_execute_start", &["function"]),
];
const K_NMI: usize = 0;
const K_IRQ: usize = 1;
const K_SOFTIRQ: usize = 2;
const K_THREAD: usize = 3;
const K_TIMERLAT: usize = 4;
const K_SWITCH: usize = 5;
const K_WORK: usize = 6;

/// Interferences kept per CPU and period (their sums go on past it).
const MAX_PARTS: usize = 256;

/// One source of interference after the timer IRQ: its kind (`K_*`),
/// name and number (IRQ and vector, softirq vector, thread pid), and its
/// time after the expected one, all its occurrences summed.
#[derive(Debug, Clone)]
struct Part {
    kind: usize,
    name: String,
    key: i64,
    ns: u64,
}

/// One CPU's state, as timerlat_aa.c's `timerlat_aa_data`.
#[derive(Debug, Clone, Default)]
struct Cpu {
    /// Between the IRQ entry and the thread's (TIMERLAT_WAITING_THREAD).
    waiting: bool,
    /// The last IRQ entry: seqnum, latency, time.
    irq: (u64, u64, u64),
    /// The last thread (or user-return) entry.
    thread: (u64, u64, u64),
    /// The task the timer IRQ interrupted, and its name once seen.
    run: (i64, String),
    /// Its thread noise after the IRQ.
    blocking: u64,
    /// The timer IRQ's own handler: start, duration.
    timer_irq: Option<(u64, u64)>,
    /// The last IRQ or NMI before the timer IRQ: start, duration.
    prev: (u64, u64),
    /// The timer IRQ came out of idle (its delay then is the exit).
    from_idle: bool,
    parts: Vec<Part>,
    /// --dump-tasks: what sched_switch ran last, and a kworker's function.
    now: (i64, String),
    work: u64,
}

/// The auto-analysis of one run: fed every record, asked at a stop.
pub(crate) struct Analysis {
    endian: Endian,
    evs: [Option<Ev>; 7],
    cpus: Vec<Cpu>,
}

impl Analysis {
    /// Map the events `events` has (any of them may be missing: then
    /// what it tells is missing from the analysis).
    pub(crate) fn new(events: &EventTable, endian: Endian) -> Analysis {
        let evs = EVENTS.map(|(name, fields)| events.by_name(name).and_then(|e| Ev::of(e, fields).ok()));
        Analysis { endian, evs, cpus: Vec::new() }
    }

    /// Feed one record of `cpu` at `ts`.
    pub(crate) fn record(&mut self, cpu: u32, ts: u64, p: &[u8]) {
        self.feed(cpu, ts, p);
    }

    fn feed(&mut self, cpu: u32, ts: u64, p: &[u8]) -> Option<()> {
        let e = self.endian;
        let id = u32::from(e.uint(p, 0, 2)? as u16);
        let kind = self.evs.iter().position(|v| v.as_ref().is_some_and(|v| v.id == id))?;
        let ev = self.evs.get(kind)?.as_ref()?;
        let i = usize::try_from(cpu).ok().filter(|&i| i < super::MAX_OPEN)?;
        if self.cpus.len() <= i {
            self.cpus.resize(i + 1, Cpu::default());
        }
        let c = self.cpus.get_mut(i)?;
        let int = |n| ev.int(n, p, e).map(|v| v as u64);
        match kind {
            K_TIMERLAT => {
                let v = (int(0)?, int(2)?, ts);
                if int(1)? == 0 {
                    c.waiting = true;
                    c.irq = v;
                    c.run = (i64::from(ev.common.read(e, p).2), String::new());
                    c.parts.clear();
                    c.blocking = 0;
                    c.timer_irq = None;
                    c.from_idle = false;
                } else {
                    c.thread = v;
                    c.waiting = false;
                }
            }
            K_SWITCH => {
                c.now.0 = ev.int(0, p, e)?;
                super::set(&mut c.now.1, &ev.text(1, p, e));
                c.work = 0;
            }
            K_WORK => c.work = int(0)?,
            _ => {
                let (start, ns) = (int(0)?, int(1)?);
                if !c.waiting {
                    // Before the timer IRQ: the last one may have delayed it.
                    if kind <= K_IRQ {
                        c.prev = (start, ns);
                    }
                    return None;
                }
                if kind == K_IRQ && c.timer_irq.is_none() {
                    let exp = c.irq.2.saturating_sub(c.irq.1);
                    c.timer_irq = Some((start, ns));
                    c.from_idle = c.run.0 == 0 && exp > c.prev.0 + c.prev.1;
                    return None;
                }
                let exp = c.irq.2.saturating_sub(c.irq.1);
                // Its share after the expected time.
                let ns = ns.saturating_sub(exp.saturating_sub(start));
                let (name, key) = match kind {
                    K_IRQ => (ev.text(3, p, e), int(2)? as i64),
                    K_SOFTIRQ => {
                        let v = int(2)?;
                        let n = usize::try_from(v).ok().and_then(|v| SOFTIRQS.get(v)).copied().unwrap_or("?");
                        (Cow::Borrowed(n), v as i64)
                    }
                    K_THREAD => {
                        let pid = i64::from(ev.common.read(e, p).2);
                        // The interrupted task, each time it runs again
                        // (rtla counts its later runs as interference).
                        if pid == c.run.0 {
                            c.blocking = c.blocking.saturating_add(ns);
                            super::set(&mut c.run.1, &ev.text(2, p, e));
                            return None;
                        }
                        (ev.text(2, p, e), pid)
                    }
                    _ => (Cow::Borrowed("nmi"), 0),
                };
                // One line per IRQ, softirq or task, its times summed.
                let full = c.parts.len() >= MAX_PARTS;
                match c.parts.iter_mut().find(|p| p.kind == kind && p.key == key && *p.name == *name) {
                    Some(p) => p.ns = p.ns.saturating_add(ns),
                    None if !full => c.parts.push(Part { kind, name: name.into_owned(), key, ns }),
                    None => {}
                }
            }
        }
        Some(())
    }

    /// The analysis of each CPU whose last IRQ latency reached `irq_ns` or
    /// thread latency `thread_ns` (0: no such threshold), as text (rtla's
    /// lines, in `unit`) or JSON lines (`{"table":"analysis",...}`); with
    /// `tasks`, what every CPU ran last. Whether a CPU was analysed.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write(
        &self,
        w: &mut dyn Write,
        irq_ns: u64,
        thread_ns: u64,
        unit: Unit,
        json: bool,
        tasks: Option<&dyn SymbolLookup>,
        cmdlines: &Cmdlines,
    ) -> Result<bool, fmt::Error> {
        let mut found = false;
        for (cpu, c) in self.cpus.iter().enumerate() {
            if !(irq_ns > 0 && c.irq.1 >= irq_ns || thread_ns > 0 && c.thread.1 >= thread_ns) {
                continue;
            }
            found = true;
            write_cpu(w, cpu, c, unit, json, cmdlines)?;
        }
        let Some(syms) = tasks else { return Ok(found) };
        if !json {
            w.write_str("\nPrinting CPU tasks:\n")?;
        }
        for (cpu, c) in self.cpus.iter().enumerate() {
            let f = match c.work {
                0 => String::new(),
                a => syms.lookup(a).map_or_else(|| alloc::format!("{a:#x}"), |s| String::from(s.name)),
            };
            if json {
                write!(w, "{{\"table\":\"tasks\",\"cpu\":{cpu},\"pid\":{},\"comm\":", c.now.0)?;
                json::string(w, &c.now.1)?;
                w.write_str(",\"kworker\":")?;
                json::string(w, &f)?;
                w.write_str("}\n")?;
            } else {
                let k = if f.is_empty() { "" } else { " kworker:" };
                writeln!(w, "    [{cpu:03}] {:>24}:{}{k}{f}", c.now.1, c.now.0)?;
            }
        }
        Ok(found)
    }
}

/// One stopped CPU: its latency broken down into parts that sum to it.
fn write_cpu(w: &mut dyn Write, cpu: usize, c: &Cpu, unit: Unit, json: bool, cmdlines: &Cmdlines) -> fmt::Result {
    // An IRQ latency stop: the thread never ran (tracing stopped).
    let irq = c.irq.0 > c.thread.0;
    let (total, end) = if irq { (c.irq.1, c.irq.2) } else { (c.thread.1, c.thread.2) };
    let exp = c.irq.2.saturating_sub(c.irq.1);
    // At most the window [expected time, end].
    let inside = |ns: u64| ns.min(end.saturating_sub(exp));
    let (delay, dur) = match (irq, c.timer_irq) {
        (false, Some((s, d))) => (s.saturating_sub(exp), d),
        _ => (0, 0),
    };
    let blocking = inside(c.blocking);
    let mut kinds = [0u64; 4];
    for p in &c.parts {
        kinds[p.kind] += inside(p.ns);
    }
    if irq {
        kinds = [kinds[K_NMI], 0, 0, 0];
    }
    let counted = delay + dur + blocking + kinds.iter().sum::<u64>();
    let other = total.saturating_sub(counted);
    let comm = if c.run.1.is_empty() { String::from(cmdlines.comm(c.run.0 as i32)) } else { c.run.1.clone() };
    let lines: [(&str, &str, u64, bool); 9] = [
        ("irq_handler_delay", "IRQ handler delay", delay, !irq),
        ("irq_latency", "IRQ latency", c.irq.1, false),
        ("irq_duration", "Timerlat IRQ duration", dur, !irq),
        ("blocking", "Blocking thread", blocking, !irq),
        ("nmi", "NMI interference", kinds[K_NMI], true),
        ("irq", "IRQ interference", kinds[K_IRQ], true),
        ("softirq", "Softirq interference", kinds[K_SOFTIRQ], true),
        ("thread", "Thread interference", kinds[K_THREAD], true),
        ("other", "Other (in no event)", other, true),
    ];
    let kind = if irq { "IRQ" } else { "Thread" };
    if json {
        write!(
            w,
            "{{\"table\":\"analysis\",\"cpu\":{cpu},\"latency\":\"{}\",\"unit\":\"{}\",\"total\":",
            kind,
            unit.name()
        )?;
        unit.write(w, total)?;
        for (k, _, v, _) in lines {
            write!(w, ",\"{k}\":")?;
            unit.write(w, v)?;
        }
        write!(w, ",\"from_idle\":{},\"blocking_pid\":{},\"blocking_comm\":", c.from_idle, c.run.0)?;
        json::string(w, &comm)?;
        w.write_str(",\"parts\":[")?;
        for (i, p) in c.parts.iter().enumerate() {
            let k = ["nmi", "irq", "softirq", "thread"].get(p.kind).copied().unwrap_or("");
            write!(w, "{}{{\"kind\":\"{k}\",\"key\":{},\"name\":", if i > 0 { "," } else { "" }, p.key)?;
            json::string(w, &p.name)?;
            w.write_str(",\"dur\":")?;
            unit.write(w, inside(p.ns))?;
            w.write_char('}')?;
        }
        return w.write_str("]}\n");
    }
    writeln!(w, "## CPU {cpu} hit stop tracing, analyzing it ##")?;
    let row = |w: &mut dyn Write, label: &str, v: u64, pct: bool| -> fmt::Result {
        let mut s = String::new();
        unit.write(&mut s, v)?;
        write!(w, "  {label:<44}{s:>13} {}", unit.name())?;
        if pct {
            let p = (v as u128 * 10_000).checked_div(total as u128).unwrap_or(0);
            write!(w, " ({}.{:02} %)", p / 100, p % 100)?;
        }
        w.write_char('\n')
    };
    let detail = |w: &mut dyn Write, name: &str, key: i64, v: Option<u64>| -> fmt::Result {
        write!(w, "  {name:>24}:{key:<19}")?;
        if let Some(v) = v {
            let mut s = String::new();
            unit.write(&mut s, v)?;
            write!(w, "{s:>13} {}", unit.name())?;
        }
        w.write_char('\n')
    };
    if exp < c.prev.0 + c.prev.1 {
        row(w, "Previous IRQ interference: up to", c.prev.1, false)?;
    }
    for (i, (_, label, v, pct)) in lines.into_iter().enumerate() {
        // The delay and the blocking thread always (rtla's lines), the
        // kinds of interference where there was some.
        if i < 4 && (pct || i == 1) || v > 0 {
            let idle = if i == 0 && c.from_idle { "IRQ handler delay (exit from idle)" } else { label };
            row(w, idle, v, pct)?;
        }
        if i == 3 && !irq {
            detail(w, &comm, c.run.0, Some(blocking))?;
        }
        if i == 1 && irq {
            w.write_str("  Blocking thread:\n")?;
            detail(w, &comm, c.run.0, None)?;
        }
        if (4..8).contains(&i) {
            for p in c.parts.iter().filter(|p| p.kind == i - 4) {
                detail(w, &p.name, p.key, Some(inside(p.ns)))?;
            }
        }
    }
    writeln!(w, "{:-<72}", "")?;
    row(w, if irq { "IRQ latency" } else { "Thread latency" }, total, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{common_fields, EventFormat};

    const TIMERLAT: &str = concat!("name: timerlat\nID: 18\nformat:\n", common_fields!(), "\tfield:unsigned int seqnum;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:int context;\toffset:12;\tsize:4;\tsigned:1;\n\tfield:u64 timer_latency;\toffset:16;\tsize:8;\tsigned:0;\n\nprint fmt: \"x\"\n");
    const IRQ: &str = concat!("name: irq_noise\nID: 30\nformat:\n", common_fields!(), "\tfield:u64 start;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:u64 duration;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:__data_loc char[] desc;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:int vector;\toffset:28;\tsize:4;\tsigned:1;\n\nprint fmt: \"x\"\n");
    const THREAD: &str = concat!("name: thread_noise\nID: 31\nformat:\n", common_fields!(), "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:u64 start;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:u64 duration;\toffset:32;\tsize:8;\tsigned:0;\n\tfield:pid_t pid;\toffset:40;\tsize:4;\tsigned:1;\n\nprint fmt: \"x\"\n");

    fn rec(id: u16, pid: i32, fields: &[(usize, &[u8])], len: usize) -> Vec<u8> {
        let mut v = alloc::vec![0u8; len];
        v[..2].copy_from_slice(&id.to_le_bytes());
        v[4..8].copy_from_slice(&pid.to_le_bytes());
        for (off, b) in fields {
            v[*off..*off + b.len()].copy_from_slice(b);
        }
        v
    }

    /// A thread latency of 100 us: the timer expired at 1000, its IRQ
    /// began 2 us late and took 3, a busy loop (pid 42, running since
    /// before the expiry) held the CPU, a virtio IRQ took 5: the parts sum
    /// to the latency, the loop's share counted from the expiry.
    #[test]
    fn a_thread_stop_is_broken_down_into_parts_that_sum_to_it() {
        let mut t = EventTable::new();
        t.insert(EventFormat::parse(TIMERLAT, "ftrace", 8).unwrap());
        t.insert(EventFormat::parse(IRQ, "osnoise", 8).unwrap());
        t.insert(EventFormat::parse(THREAD, "osnoise", 8).unwrap());
        let mut aa = Analysis::new(&t, Endian::Little);
        let tl = |seq: u32, ctx: i32, lat: u64, pid| {
            rec(18, pid, &[(8, &seq.to_le_bytes()), (12, &ctx.to_le_bytes()), (16, &lat.to_le_bytes())], 24)
        };
        let irq = |start: u64, d: u64, name: &[u8], v: i32| {
            let loc = (32u32 | (name.len() as u32) << 16).to_le_bytes();
            rec(
                30,
                0,
                &[(8, &start.to_le_bytes()), (16, &d.to_le_bytes()), (24, &loc), (28, &v.to_le_bytes()), (32, name)],
                48,
            )
        };
        let thread = |pid, start: u64, d: u64| {
            rec(
                31,
                pid,
                &[(8, b"spin\0"), (24, &start.to_le_bytes()), (32, &d.to_le_bytes()), (40, &pid.to_le_bytes())],
                44,
            )
        };
        aa.record(1, 500, &irq(400, 50, b"virtio0\0", 33));
        aa.record(1, 1_010, &tl(7, 0, 10, 42));
        aa.record(1, 1_006, &irq(1_002, 3, b"arch_timer\0", 11));
        aa.record(1, 60_000, &irq(50_000, 2, b"virtio0\0", 33));
        aa.record(1, 61_000, &irq(60_500, 3, b"virtio0\0", 33));
        aa.record(1, 90_000, &thread(42, 0, 90_000));
        aa.record(1, 101_000, &tl(7, 1, 100_000, 7));
        let mut w = String::new();
        assert!(aa.write(&mut w, 0, 50_000, Unit { ns: true }, false, None, &Cmdlines::default()).unwrap());
        for l in [
            "## CPU 1 hit stop tracing, analyzing it ##",
            "  IRQ handler delay                                       2 ns (0.00 %)",
            "  Timerlat IRQ duration                                   3 ns (0.00 %)",
            "  Blocking thread                                     89000 ns (89.00 %)",
            "                      spin:42                         89000 ns",
            "  IRQ interference                                        5 ns (0.00 %)",
            "                   virtio0:33                             5 ns",
            "  Other (in no event)                                 10990 ns (10.99 %)",
            "  Thread latency                                     100000 ns (100.00 %)",
        ] {
            assert!(w.lines().any(|x| x == l), "{l}\n{w}");
        }
        let mut j = String::new();
        aa.write(&mut j, 0, 50_000, Unit { ns: true }, true, None, &Cmdlines::default()).unwrap();
        assert!(j.starts_with("{\"table\":\"analysis\",\"cpu\":1,\"latency\":\"Thread\",\"unit\":\"ns\",\"total\":100000,\"irq_handler_delay\":2,\"irq_latency\":10,\"irq_duration\":3,\"blocking\":89000,\"nmi\":0,\"irq\":5,\"softirq\":0,\"thread\":0,\"other\":10990,\"from_idle\":false,\"blocking_pid\":42,\"blocking_comm\":\"spin\",\"parts\":[{\"kind\":\"irq\",\"key\":33,\"name\":\"virtio0\",\"dur\":5}]}"), "{j}");
        // Under the threshold: nothing.
        assert!(!aa
            .write(&mut String::new(), 0, 200_000, Unit { ns: true }, false, None, &Cmdlines::default())
            .unwrap());
    }
}
