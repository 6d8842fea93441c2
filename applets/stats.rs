//! `tr-cat --stats`: what a buffer or a trace.dat holds, in 80 columns —
//! the time span, events and losses per CPU, events per type and per task.

use crate::decode::{Item, Meta};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use trbox::render::{write_timestamp, CommonFields};

#[derive(Default)]
pub struct Stats {
    /// Per CPU: (events, lost events counted, losses of unknown size).
    cpus: BTreeMap<u32, (u64, u64, u64)>,
    by_event: BTreeMap<u32, u64>,
    by_pid: BTreeMap<i32, u64>,
    span: Option<(u64, u64)>,
}

impl Stats {
    pub fn add(&mut self, m: &Meta, it: Item<'_>) {
        let ts = match it {
            Item::Record { cpu, ts, payload } => {
                self.cpus.entry(cpu).or_default().0 += 1;
                if let Some(ev) = m.events.event_of(payload, m.endian) {
                    *self.by_event.entry(ev.id).or_default() += 1;
                    *self.by_pid.entry(CommonFields::of(ev).read(m.endian, payload).2).or_default() += 1;
                }
                ts
            }
            Item::Lost { cpu, ts, count } => {
                let c = self.cpus.entry(cpu).or_default();
                match count {
                    Some(n) => c.1 += n,
                    None => c.2 += 1,
                }
                ts
            }
        };
        self.span = Some(self.span.map_or((ts, ts), |(a, b)| (a.min(ts), b.max(ts))));
    }

    pub fn render(&self, m: &Meta) -> String {
        let mut o = String::new();
        let total: u64 = self.cpus.values().map(|c| c.0).sum();
        let _ = write!(o, "{total} events");
        if let Some((a, b)) = self.span {
            o += ", from";
            let _ = write_timestamp(&mut o, a, m.in_ns);
            o += " to";
            let _ = write_timestamp(&mut o, b, m.in_ns);
            if m.in_ns {
                let _ = write!(o, " ({:.6} s)", (b - a) as f64 / 1e9);
            }
        }
        o += "\n\n  cpu       events         lost\n";
        for (cpu, (n, lost, unknown)) in &self.cpus {
            let l = if *unknown > 0 { format!("{lost}+?") } else { lost.to_string() };
            let _ = writeln!(o, "{cpu:>5} {n:>12} {l:>12}");
        }
        o += "\n      events  event\n";
        let mut ev: Vec<(u64, String)> = self
            .by_event
            .iter()
            .map(|(id, n)| (*n, m.events.get(*id).map_or(format!("id {id}"), |e| format!("{}:{}", e.system, e.name))))
            .collect();
        ev.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for (n, name) in ev {
            let _ = writeln!(o, "{n:>12}  {}", clip(&name, 66));
        }
        o += "\n      events  task\n";
        let mut tasks: Vec<(u64, i32)> = self.by_pid.iter().map(|(p, n)| (*n, *p)).collect();
        tasks.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (n, pid) in tasks {
            let _ = writeln!(o, "{n:>12}  {}", clip(&format!("{}-{pid}", m.cmdlines.comm(pid)), 66));
        }
        o
    }
}

/// At most `n` characters (names stay within 80 columns).
fn clip(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
