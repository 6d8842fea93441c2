//! Decoding a tracefs tree's raw pages into lines: the loop shared by
//! `tr-cat --raw` and `tr-event` (drain, or follow until a stop).

use crate::cli::Error;
use crate::out::Out;
use std::io::Write as _;
use std::time::{Duration, Instant};
use trbox::ctl::glob_match;
use trbox::format::{Endian, EventFormat};
use trbox::merge::{self, Merger};
use trbox::page::PageLayout;
use trbox::printk::PrintkFormats;
use trbox::render::{clock_in_ns, write_json, write_lost, Cmdlines, Renderer};
use trbox::sys::events::{guess_endian, header_page, load_events, LazyKallsyms};
use trbox::sys::raw::RawPages;
use trbox::sys::stream::{wait_for_data, CpuPages, Next};
use trbox::sys::{signals, Tracefs};

/// What to keep.
pub struct Filter {
    pub pid: Option<i32>,
    pub comm: Option<String>,
    pub events: Vec<String>,
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

pub struct RawOpts {
    pub only: Option<Vec<u32>>,
    pub filter: Filter,
    pub follow: bool,
    pub json: bool,
    pub limit: Option<Duration>,
    /// Skip records older than this trace-clock time (what was in the
    /// buffer before this run started).
    pub since: Option<u64>,
}

/// Decode and print until the buffers are empty (drain) or, when
/// following, until Ctrl-C, the time limit or `done()` says so.
pub fn run(t: &Tracefs, o: &RawOpts, done: &dyn Fn() -> bool) -> Result<(), Error> {
    let wake = signals::install().map_err(|e| Error::runtime(format!("cannot install signal handlers: {e}")))?;
    let start = Instant::now();
    let hp = header_page(t)?;
    let layout = PageLayout::from(&hp);
    let events = load_events(t, hp.long_size())?;
    let cmdlines = Cmdlines::parse(&t.read_top_opt("saved_cmdlines")?.unwrap_or_default());
    let clock = t.read_opt("trace_clock")?.unwrap_or_default();
    let in_ns = clock_in_ns(trbox::ctl::selected(&clock).unwrap_or("local"));
    let syms = LazyKallsyms::for_tree(t);
    let printk = PrintkFormats::parse(&t.read_top_opt("printk_formats")?.unwrap_or_default());
    let endian = detect_endian(t, &layout)?;
    let r = Renderer::new(&events, cmdlines, endian, hp.long_size(), in_ns).with_strings(&printk).with_symbols(&syms);
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
    let mut em = Emitter { r, line: String::with_capacity(256), events: &events, endian, o };
    let mut merger = Merger::new(streams.len());
    loop {
        let stop = signals::stop_requested().is_some() || o.limit.is_some_and(|l| start.elapsed() >= l) || done();
        if out.broken() {
            break;
        }
        if stop && streams.iter().any(|s| s.follow) {
            // Ctrl-C / time limit: print what is buffered, then end.
            streams.iter_mut().for_each(|s| s.follow = false);
        }
        match merger.next(&mut streams) {
            merge::Next::Cpu(i) => em.emit(&mut streams[i], &mut out),
            merge::Next::End => break,
            merge::Next::Pending(_) => {
                let _ = out.flush();
                let left = o.limit.map_or(Duration::from_secs(3600), |l| l.saturating_sub(start.elapsed()));
                wait_for_data(&streams, Some(wake), left);
                // New tasks appeared meanwhile: their comms too.
                if let Ok(Some(c)) = t.read_top_opt("saved_cmdlines") {
                    em.r.set_cmdlines(Cmdlines::parse(&c));
                }
                // An idle CPU must not hold the others back for ever.
                while let merge::Next::Cpu(i) = merger.next_ready(&mut streams) {
                    em.emit(&mut streams[i], &mut out);
                }
            }
        }
    }
    if let Some(e) = streams.iter_mut().find_map(|s| s.error.take()) {
        return Err(e.into());
    }
    out.finish()
}

/// Turns one stream item into output.
struct Emitter<'a> {
    r: Renderer<'a>,
    line: String,
    events: &'a trbox::format::EventTable,
    endian: Endian,
    o: &'a RawOpts,
}

impl Emitter<'_> {
    fn emit(&mut self, s: &mut CpuPages, out: &mut Out) {
        let (cpu, endian, o) = (s.cpu, self.endian, self.o);
        let line = &mut self.line;
        line.clear();
        match s.take() {
            Some(Next::Record(rec)) => {
                let Some(ev) = self.events.event_of(rec.payload, endian) else {
                    let _ = self.r.record(line, cpu, rec.ts, rec.payload);
                    let _ = out.write_all(line.as_bytes());
                    return;
                };
                let pid = ev.field("common_pid").and_then(|f| f.int(rec.payload, endian)).unwrap_or(0) as i32;
                if o.since.is_some_and(|t0| rec.ts < t0) || !o.filter.keep(ev, pid, self.r.cmdlines()) {
                    return;
                }
                let _ = if o.json {
                    write_json(line, ev, self.r.cmdlines(), endian, cpu, rec.ts, rec.payload)
                } else {
                    self.r.record(line, cpu, rec.ts, rec.payload)
                };
            }
            Some(Next::Lost { ts, count }) => {
                if o.since.is_some_and(|t0| ts < t0) {
                    return;
                }
                let _ = write_lost(line, cpu, count);
            }
            Some(Next::Damaged(e)) => {
                log::warn!("cpu{cpu}: skipped a damaged page: {e}");
                return;
            }
            None => return,
        }
        let _ = out.write_all(line.as_bytes());
    }
}
