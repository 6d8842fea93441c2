//! tr-cat: print the trace buffer, or decode the raw per-CPU pages.

use crate::cli::{self, Common, Error};
use crate::out::Out;
use argh::FromArgs;
use std::io::Write as _;
use trbox::format::Endian;
use trbox::page::PageLayout;
use trbox::printk::PrintkFormats;
use trbox::render::{clock_in_ns, write_lost, Cmdlines, Renderer};
use trbox::sys::events::{guess_endian, header_page, load_events, LazyKallsyms};
use trbox::sys::raw::RawPages;
use trbox::sys::stream::{earliest, CpuStream, Next};
use trbox::sys::{signals, Tracefs};

#[derive(FromArgs)]
/// Print the trace buffer without consuming it (the kernel's `trace` file),
/// or with --raw decode the per-CPU raw pages with trbox's own decoder,
/// merged by timestamp, until the buffers are empty.
struct Args {
    /// decode per_cpu/cpuN/trace_pipe_raw (consumes the buffer)
    #[argh(switch)]
    raw: bool,
    /// only these CPUs (comma-separated)
    #[argh(option)]
    cpu: Option<String>,
    /// only events of this pid
    #[argh(option)]
    pid: Option<i32>,
}

pub fn main(common: &Common, args: &[String]) -> Result<(), Error> {
    let a: Args = cli::parse("tr-cat", args)?;
    let mut t = Tracefs::open(common.tracefs.as_deref())?;
    if let Some(i) = &common.instance {
        t.enter_instance(i)?;
    }
    let cpus = parse_cpus(a.cpu.as_deref())?;
    if a.raw {
        raw(&t, cpus.as_deref(), a.pid)
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

fn raw(t: &Tracefs, only: Option<&[u32]>, pid: Option<i32>) -> Result<(), Error> {
    signals::install().map_err(|e| Error::runtime(format!("cannot install signal handlers: {e}")))?;
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
        if only.is_some_and(|o| !o.contains(&cpu)) {
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
        streams.push(CpuStream::new(cpu, src, layout, endian));
    }
    let mut out = Out::stdout();
    let mut line = String::with_capacity(256);
    while let Some(i) = earliest(&mut streams)? {
        if signals::stop_requested().is_some() || out.broken() {
            break;
        }
        let s = &mut streams[i];
        let cpu = s.cpu;
        line.clear();
        match s.take() {
            Some(Next::Record(rec)) => {
                if let Some(p) = pid {
                    let rec_pid = events.event_of(rec.payload, endian).and_then(|ev| ev.field("common_pid")).and_then(|f| f.int(rec.payload, endian));
                    if rec_pid != Some(i64::from(p)) {
                        continue;
                    }
                }
                let _ = r.record(&mut line, cpu, rec.ts, rec.payload);
            }
            Some(Next::Lost { count }) => {
                let _ = write_lost(&mut line, cpu, count);
            }
            Some(Next::Damaged(e)) => {
                log::warn!("cpu{cpu}: skipped a damaged page: {e}");
                continue;
            }
            None => continue,
        }
        let _ = out.write_all(line.as_bytes());
    }
    out.finish()
}
