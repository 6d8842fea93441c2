//! tr-on: show the tracing state (no arguments) or switch it.

use crate::cli::{self, Common, Error};
use argh::FromArgs;
use std::fmt::Write;
use trbox::sys::status::{Item, Status, Unavailable};
use trbox::sys::{Found, Tracefs};

#[derive(FromArgs)]
/// Show the ftrace state: tracer, clock, buffers, events with filters and
/// triggers, function and pid filters, dynamic events, instances and per-CPU
/// statistics (lost events show up here).
struct Args {}

pub fn main(common: &Common, args: &[String]) -> Result<(), Error> {
    let _a: Args = cli::parse("tr-on", args)?;
    let mut t = Tracefs::open(common.tracefs.as_deref())?;
    if let Some(i) = &common.instance {
        t.enter_instance(i)?;
    }
    let st = Status::read(&t);
    print!("{}", report(&t, &st));
    Ok(())
}

fn why(u: &Unavailable) -> String {
    match u {
        Unavailable::Absent => "not available on this kernel".into(),
        Unavailable::NotPermitted(e) => format!("not permitted ({e})"),
        Unavailable::Failed(s) => format!("unreadable: {s}"),
    }
}

/// `label  value`, or the reason the value is missing.
fn line(out: &mut String, label: &str, v: Item<String>) {
    let v = v.unwrap_or_else(|u| why(&u));
    // Long values (tracer lists, filters) wrap under the value column.
    let v = cli::wrap(&v, 80 - 12).replace('\n', "\n            ");
    let _ = writeln!(out, "{label:<12}{v}");
}

fn list(v: &Item<Vec<String>>, empty: &str) -> Item<String> {
    match v {
        Ok(l) if l.is_empty() => Ok(empty.into()),
        Ok(l) => Ok(l.join(", ")),
        Err(u) => Err(u.clone()),
    }
}

/// The report text (80 columns; long lists wrap naturally on the console).
fn report(t: &Tracefs, st: &Status) -> String {
    let mut o = String::new();
    let how = match &t.found {
        Found::Given => "given",
        Found::Tracefs => "tracefs",
        Found::Debugfs => "debugfs",
        Found::MountedByUs(_) => "mounted by trbox for this run",
    };
    let _ = writeln!(o, "{:<12}{} ({how})", "tracefs", t.dir().display());
    let tracer = st.tracer.clone().map(|cur| match &st.available_tracers {
        Ok(av) => format!("{cur}  (available: {})", av.join(" ")),
        Err(_) => cur,
    });
    line(&mut o, "tracer", tracer);
    let on = st.tracing_on.clone().map(|(v, old)| {
        let s = if v == "1" { "on" } else if v == "0" { "off" } else { v.as_str() };
        if old { format!("{s} (tracing_enabled)") } else { s.to_string() }
    });
    line(&mut o, "tracing", on);
    line(&mut o, "clock", st.clock.clone());
    line(&mut o, "buffer", buffer(st));
    if let Ok(th) = &st.tracing_thresh {
        if th != "0" {
            line(&mut o, "thresh", Ok(format!("{th} us")));
        }
    }
    events(&mut o, &st.events);
    line(&mut o, "functions", list(&st.ftrace_filter, "all"));
    line(&mut o, "notrace", list(&st.ftrace_notrace, "none"));
    if st.graph_function.is_ok() {
        line(&mut o, "graph funcs", list(&st.graph_function, "all"));
    }
    line(&mut o, "ftrace pid", list(&st.ftrace_pid, "all"));
    line(&mut o, "event pid", list(&st.event_pid, "all"));
    match &st.dynamic_events {
        Ok(d) if !d.is_empty() => {
            let _ = writeln!(o, "dynamic");
            for e in d {
                let _ = writeln!(o, "  {e}");
            }
        }
        d => line(&mut o, "dynamic", list(d, "none")),
    }
    if t.instance.is_none() {
        line(&mut o, "instances", list(&st.instances, "none"));
    }
    cpus(&mut o, st);
    o
}

fn buffer(st: &Status) -> Item<String> {
    let per_cpu = st.buffer_kb.clone()?;
    // "7 (expanded: 1408)": the buffer is allocated small until first use.
    let mut s = match per_cpu.split_once(" (expanded: ") {
        Some((now, exp)) => format!("{now} KiB per CPU ({} once in use)", exp.trim_end_matches(')')),
        None if per_cpu == "X" => "per-CPU sizes differ (see below)".to_string(),
        None => format!("{per_cpu} KiB per CPU"),
    };
    if let Ok(total) = &st.buffer_total_kb {
        let _ = write!(s, ", {} KiB total", total.split_whitespace().next().unwrap_or(total));
    }
    if let Ok(sub) = &st.subbuf_kb {
        let _ = write!(s, ", {sub} KiB sub-buffers");
    }
    Ok(s)
}

fn events(o: &mut String, ev: &Item<Vec<EventState>>) {
    match ev {
        Err(u) => line(o, "events", Err(u.clone())),
        Ok(v) if v.is_empty() => line(o, "events", Ok("none".into())),
        Ok(v) => {
            let on = v.iter().filter(|e| e.enable.starts_with('1')).count();
            let _ = writeln!(o, "events      {on} enabled");
            for e in v {
                let state = match e.enable.as_str() {
                    "1" => "",
                    "0" => " (disabled)",
                    s if s.ends_with('*') => " (soft mode)",
                    _ => " (partly)",
                };
                let _ = writeln!(o, "  {}{state}", e.name);
                if let Some(f) = &e.filter {
                    let _ = writeln!(o, "    filter: {f}");
                }
                for tr in &e.triggers {
                    let _ = writeln!(o, "    trigger: {tr}");
                }
            }
        }
    }
}

use trbox::sys::status::EventState;

fn num(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |n| n.to_string())
}

fn cpus(o: &mut String, st: &Status) {
    let cpus = match &st.cpus {
        Err(u) => return line(o, "per-CPU", Err(u.clone())),
        Ok(c) if c.is_empty() => return line(o, "per-CPU", Ok("no per_cpu directories".into())),
        Ok(c) => c,
    };
    let _ = writeln!(o, "\n{:>4} {:>10} {:>10} {:>10} {:>10}  buffer", "CPU", "entries", "overrun", "commit-ovr", "dropped");
    let (mut ent, mut ovr, mut cov, mut drp) = (0u64, 0u64, 0u64, 0u64);
    for c in cpus {
        match &c.stats {
            Ok(s) => {
                ent += s.entries.unwrap_or(0);
                ovr += s.overrun.unwrap_or(0);
                cov += s.commit_overrun.unwrap_or(0);
                drp += s.dropped.unwrap_or(0);
                let kb = c.buffer_kb.clone().map_or_else(|u| why(&u), |k| format!("{} KiB", k.split(' ').next().unwrap_or(&k)));
                let _ = writeln!(
                    o,
                    "{:>4} {:>10} {:>10} {:>10} {:>10}  {kb}",
                    c.cpu,
                    num(s.entries),
                    num(s.overrun),
                    num(s.commit_overrun),
                    num(s.dropped)
                );
            }
            Err(u) => {
                let _ = writeln!(o, "{:>4} {}", c.cpu, why(u));
            }
        }
    }
    if cpus.len() > 1 {
        let _ = writeln!(o, "{:>4} {ent:>10} {ovr:>10} {cov:>10} {drp:>10}", "all");
    }
    if ovr + cov + drp > 0 {
        let _ = writeln!(o, "LOST EVENTS: {} (overrun {ovr}, commit overrun {cov}, dropped {drp})", ovr + cov + drp);
    }
}
