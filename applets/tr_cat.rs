//! tr-cat: print the trace buffer, or decode the raw per-CPU pages.

use crate::cli::{self, Common, Error};
use crate::out::Out;
use argh::FromArgs;
use std::io::Write as _;
use trbox::format::Endian;
use trbox::page::PageLayout;
use trbox::printk::PrintkFormats;
use trbox::render::{clock_in_ns, write_json, write_lost, Cmdlines, Renderer};
use trbox::sys::events::{guess_endian, header_page, load_events, LazyKallsyms};
use trbox::sys::raw::RawPages;
use trbox::merge::{self, Merger};
use trbox::sys::stream::{wait_for_data, CpuPages, Next};
use std::time::{Duration, Instant};
use trbox::ctl::glob_match;
use trbox::format::EventFormat;
use trbox::sys::{signals, Tracefs};

#[derive(FromArgs)]
/// Print the trace buffer without consuming it (the kernel's `trace` file),
/// or with --raw decode the per-CPU raw pages with trbox's own decoder,
/// merged by timestamp, until the buffers are empty.
struct Args {
    /// decode per_cpu/cpuN/trace_pipe_raw (consumes the buffer)
    #[argh(switch)]
    raw: bool,
    /// with --raw: keep streaming as the buffers fill (Ctrl-C ends)
    #[argh(switch, short = 'f')]
    follow: bool,
    /// stop after SECONDS (with --follow)
    #[argh(option, short = 't')]
    time: Option<f64>,
    /// only these CPUs (comma-separated)
    #[argh(option)]
    cpu: Option<String>,
    /// only events of this pid
    #[argh(option)]
    pid: Option<i32>,
    /// only events of tasks with this comm
    #[argh(option)]
    comm: Option<String>,
    /// only this event (SYS:EVENT, globs allowed; repeatable)
    #[argh(option, short = 'e')]
    event: Vec<String>,
    /// one JSON object per event instead of text
    #[argh(switch)]
    json: bool,
}

/// What to keep.
struct Filter {
    pid: Option<i32>,
    comm: Option<String>,
    events: Vec<String>,
}

impl Filter {
    fn keep(&self, ev: &EventFormat, pid: i32, cmdlines: &Cmdlines) -> bool {
        self.pid.map_or(true, |p| p == pid)
            && self.comm.as_deref().map_or(true, |c| cmdlines.comm(pid) == c)
            && (self.events.is_empty() || {
                let full = format!("{}:{}", ev.system, ev.name);
                self.events.iter().any(|g| glob_match(g, &full) || glob_match(g, &ev.name))
            })
    }
}

pub fn main(common: &Common, args: &[String]) -> Result<(), Error> {
    let a: Args = cli::parse("tr-cat", args)?;
    let mut t = Tracefs::open(common.tracefs.as_deref())?;
    if let Some(i) = &common.instance {
        t.enter_instance(i)?;
    }
    let cpus = parse_cpus(a.cpu.as_deref())?;
    if a.follow && !a.raw {
        return Err(Error::usage("--follow works with --raw").hint("try 'tr-cat --raw -f'"));
    }
    if a.raw {
        let filter = Filter { pid: a.pid, comm: a.comm.clone(), events: a.event.clone() };
        let opts = RawOpts { only: cpus, filter, follow: a.follow, json: a.json, limit: a.time.map(Duration::from_secs_f64) };
        raw(&t, &opts)
    } else {
        let text = t.read("trace")?;
        let mut out = Out::stdout();
        let _ = out.write_all(text.as_bytes());
        out.finish()
    }
}

fn parse_cpus(s: Option<&str>) -> Result<Option<Vec<u32>>, Error> {
    let Some(s) = s else { return Ok(None) };
    s.split(',')
        .map(|c| c.trim().parse::<u32>().map_err(|_| Error::usage(format!("--cpu: '{c}' is not a CPU number"))))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The byte order of the pages: native when live; for a copy (which may
/// come from a big-endian board), the first page that tells.
fn detect_endian(t: &Tracefs, layout: &PageLayout) -> Result<Endian, Error> {
    if t.is_live() {
        return Ok(Endian::NATIVE);
    }
    for cpu in t.cpus()? {
        let p = t.path(&format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let Ok(mut src) = RawPages::open(&p, layout.subbuf_size()) else { continue };
        while let Some(page) = src.next_page()? {
            if let Some(e) = guess_endian(layout, page) {
                return Ok(e);
            }
        }
    }
    Ok(Endian::NATIVE)
}

struct RawOpts {
    only: Option<Vec<u32>>,
    filter: Filter,
    follow: bool,
    json: bool,
    limit: Option<Duration>,
}

fn raw(t: &Tracefs, o: &RawOpts) -> Result<(), Error> {
    let wake = signals::install().map_err(|e| Error::runtime(format!("cannot install signal handlers: {e}")))?;
    let start = Instant::now();
    let hp = header_page(t)?;
    let layout = PageLayout::from(&hp);
    let events = load_events(t, hp.long_size())?;
    let cmdlines = Cmdlines::parse(&t.read_opt("saved_cmdlines")?.unwrap_or_default());
    let clock = t.read_opt("trace_clock")?.unwrap_or_default();
    let in_ns = clock_in_ns(trbox::ctl::selected(&clock).unwrap_or("local"));
    let syms = LazyKallsyms::for_tree(t);
    let printk = PrintkFormats::parse(&t.read_opt("printk_formats")?.unwrap_or_default());
    let endian = detect_endian(t, &layout)?;
    let mut r = Renderer::new(&events, &cmdlines, endian, hp.long_size(), in_ns).with_strings(&printk).with_symbols(&syms);
    let mut streams = Vec::new();
    for cpu in t.cpus()? {
        if o.only.as_ref().is_some_and(|only| !only.contains(&cpu)) {
            continue;
        }
        let rel = format!("per_cpu/cpu{cpu}/trace_pipe_raw");
        let src = match RawPages::open(&t.path(&rel), layout.subbuf_size()) {
            Ok(s) => s,
            // A copy may hold only some CPUs.
            Err(e) if e.errno() == Some(libc::ENOENT) => {
                log::info!("{rel}: absent, skipped");
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let mut s = CpuPages::new(cpu, src, layout, endian);
        s.follow = o.follow;
        streams.push(s);
    }
    let mut out = Out::stdout();
    let mut line = String::with_capacity(256);
    let mut emit = |s: &mut CpuPages, out: &mut Out| {
        let cpu = s.cpu;
        line.clear();
        match s.take() {
            Some(Next::Record(rec)) => {
                let Some(ev) = events.event_of(rec.payload, endian) else {
                    let _ = r.record(&mut line, cpu, rec.ts, rec.payload);
                    return;
                };
                let pid = ev.field("common_pid").and_then(|f| f.int(rec.payload, endian)).unwrap_or(0) as i32;
                if !o.filter.keep(ev, pid, &cmdlines) {
                    return;
                }
                let _ = if o.json {
                    write_json(&mut line, ev, &cmdlines, endian, cpu, rec.ts, rec.payload)
                } else {
                    r.record(&mut line, cpu, rec.ts, rec.payload)
                };
            }
            Some(Next::Lost { count }) => {
                let _ = write_lost(&mut line, cpu, count);
            }
            Some(Next::Damaged(e)) => {
                log::warn!("cpu{cpu}: skipped a damaged page: {e}");
                return;
            }
            None => return,
        }
        let _ = out.write_all(line.as_bytes());
    };
    let mut merger = Merger::new(streams.len());
    loop {
        let stop = signals::stop_requested().is_some() || o.limit.is_some_and(|l| start.elapsed() >= l);
        if out.broken() {
            break;
        }
        if stop && streams.iter().any(|s| s.follow) {
            // Ctrl-C / time limit: print what is buffered, then end.
            streams.iter_mut().for_each(|s| s.follow = false);
        }
        match merger.next(&mut streams) {
            merge::Next::Cpu(i) => emit(&mut streams[i], &mut out),
            merge::Next::End => break,
            merge::Next::Pending(_) => {
                let _ = out.flush();
                let left = o.limit.map_or(Duration::from_secs(3600), |l| l.saturating_sub(start.elapsed()));
                wait_for_data(&streams, Some(wake), left);
                // An idle CPU must not hold the others back for ever.
                while let merge::Next::Cpu(i) = merger.next_ready(&mut streams) {
                    emit(&mut streams[i], &mut out);
                }
            }
        }
    }
    if let Some(e) = streams.iter_mut().find_map(|s| s.error.take()) {
        return Err(e.into());
    }
    out.finish()
}
