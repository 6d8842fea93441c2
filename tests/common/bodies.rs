//! Print-fmt bodies against the kernel's `trace` text: one comparison for
//! the board fixtures and the live kernel. Lines are grouped by (CPU, event)
//! and matched as multisets, as the kernel's text and the raw pages need not
//! interleave CPUs the same way.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::strverify::{self, FirstString};
use trbox::format::{EventFormat, EventTable};
use trbox::printfmt::{Ctx, Program};

/// One event type's lines: how many, how many differ, the first that did
/// (kernel, ours).
#[derive(Default)]
pub struct Tally {
    pub total: usize,
    pub bad: usize,
    pub example: Option<(String, String)>,
    /// The program has parts it cannot compute (kernel variables, enum
    /// names the format file leaves unexpanded).
    pub partial: bool,
    /// Lines equal to ours with the first `%s` left out, as the kernel's
    /// string verifier prints them ([`super::strverify`]).
    pub verifier: usize,
}

/// Lines keyed by (CPU, `system:name`).
pub type Lines = HashMap<(u32, String), Vec<String>>;

/// Our body of one record as the kernel prints it after the timestamp
/// (`name: body`), or `None` for the records the line renderer prints
/// itself (function, graph, stacks).
pub fn body(ev: &EventFormat, prog: &Program, rec: &[u8], ctx: &Ctx) -> Option<String> {
    if ev.system == "ftrace" && !matches!(ev.name.as_str(), "print" | "bprint" | "bputs") {
        return None;
    }
    let mut s = String::new();
    if ev.system != "ftrace" && prog.name_prefix() {
        s.push_str(&ev.name);
        s.push_str(": ");
    }
    prog.render(&mut s, rec, ctx).unwrap();
    Some(s.strip_suffix('\n').unwrap_or(&s).to_string())
}

/// The kernel's lines of `text` grouped like ours. A line whose name is no
/// event's is a syscall tracer line, or else goes under `other` (`None`:
/// left out).
pub fn kernel_lines<'a>(text: &str, formats: impl Iterator<Item = &'a EventFormat>, other: Option<&str>) -> Lines {
    let names: HashMap<&str, String> = formats
        .filter(|f| f.system != "ftrace")
        .map(|f| (f.name.as_str(), format!("{}:{}", f.system, f.name)))
        .collect();
    let mut kernel = Lines::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((cpu, rest)) = super::trace_text::split_line(line) else { continue };
        let name = rest.split(": ").next().unwrap_or("");
        let key = match names.get(name) {
            Some(k) => k.clone(),
            None => match rest.strip_prefix("sys_").and_then(|r| r.find(['(', ' ']).map(|n| (r, n))) {
                Some((r, n)) if r[n..].starts_with('(') => format!("syscalls:sys_enter_{}", &r[..n]),
                Some((r, n)) if r[n..].starts_with(" -> ") => format!("syscalls:sys_exit_{}", &r[..n]),
                _ => match other {
                    Some(o) => o.to_string(),
                    None => continue,
                },
            },
        };
        kernel.entry((cpu, key)).or_default().push(rest.to_string());
    }
    kernel
}

/// Every kernel line against ours, into `per_event`; events in `partial`
/// are marked so. A line of an event in `first` (the kernel's string
/// verifier empties its first `%s`: [`super::strverify`]; empty where the
/// kernel prints it) also matches ours with that string left out, and
/// is counted in [`Tally::verifier`].
pub fn tally(
    kernel: &Lines,
    ours: &Lines,
    partial: &HashSet<String>,
    first: &HashMap<String, FirstString>,
    per_event: &mut BTreeMap<String, Tally>,
) {
    for ((cpu, ev), klines) in kernel {
        let t = per_event.entry(ev.clone()).or_default();
        t.partial |= partial.contains(ev);
        let empty = Vec::new();
        let o = ours.get(&(*cpu, ev.clone())).unwrap_or(&empty);
        let mut pool: HashMap<&str, usize> = HashMap::new();
        for s in o {
            *pool.entry(s.as_str()).or_default() += 1;
        }
        let mut missed = Vec::new();
        for (i, k) in klines.iter().enumerate() {
            t.total += 1;
            match pool.get_mut(k.as_str()) {
                Some(n) if *n > 0 => *n -= 1,
                _ => missed.push(i),
            }
        }
        // Then the lines the verifier cut, against what no line matched.
        for i in missed {
            let k = &klines[i];
            let cuts = first.get(ev).map(|f| strverify::cuts(k, f)).unwrap_or_default();
            let cut = (!cuts.is_empty())
                .then(|| {
                    pool.iter_mut()
                        .find(|(o, n)| **n > 0 && cuts.iter().any(|&c| strverify::fits(k, o, c)))
                        .map(|(_, n)| n)
                })
                .flatten();
            match cut {
                Some(n) => {
                    *n -= 1;
                    t.verifier += 1;
                }
                None => {
                    t.bad += 1;
                    if t.example.is_none() {
                        t.example = Some((k.clone(), o.get(i).cloned().unwrap_or_else(|| "<no record>".into())));
                    }
                }
            }
        }
    }
}

/// The events of `table` whose compiled programs are partial or fallbacks.
pub fn partial_events(programs: &HashMap<u32, Program>, table: &EventTable) -> HashSet<String> {
    programs
        .iter()
        .filter(|(_, p)| !p.unknown_parts().is_empty() || p.is_fallback())
        .filter_map(|(id, _)| table.get(*id))
        .map(|f| format!("{}:{}", f.system, f.name))
        .collect()
}
