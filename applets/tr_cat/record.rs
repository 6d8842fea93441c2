//! `tr-cat -o FILE`: record the raw pages into a trace.dat until Ctrl-C,
//! SIGTERM, -t or the command ends; then drain, finish the file and print a
//! summary on stderr. Events given with -e are enabled for the run and put
//! back afterwards.

use crate::applets::cli::{Common, Error};
use crate::applets::command::{self, resolve_all, Command, Follow};
use crate::applets::progress::Progress;
use crate::applets::session::Live;
use std::path::Path;
use std::time::{Duration, Instant};
use trbox::sys::guard::Event;
use trbox::sys::record::{Options, Recorder, Summary};
use trbox::sys::state::State;
use trbox::sys::{describe, signals, Tracefs};

pub(crate) struct Request<'a> {
    pub(crate) path: &'a str,
    pub(crate) events: &'a [String],
    pub(crate) time: Option<crate::applets::cli::Seconds>,
    pub(crate) max_kb: Option<u64>,
    pub(crate) cmd: &'a [String],
    /// With `-o -`: the console form.
    pub(crate) console: bool,
    /// `-N`: `path` is the HOST:PORT of a trace-cmd listener.
    pub(crate) net: bool,
}

pub(crate) fn run(common: &Common, r: Request<'_>) -> Result<(), Error> {
    let stream = r.path == "-" && !r.net;
    if r.net && (r.max_kb.is_some() || r.console) {
        return Err(Error::usage("-N sends as the pages come: it does not combine with -m or --console"));
    }
    if stream && r.max_kb.is_some() {
        return Err(Error::usage("-m bounds a file; a stream (-o -) cannot take back what it sent")
            .hint("bound the run with -t or -- CMD"));
    }
    if r.console && !stream {
        return Err(Error::usage("--console goes with -o -").hint("tr-cat -o - --console [-e EV] [-t S] [-- CMD]"));
    }
    // SAFETY: isatty on fd 1.
    if stream && !r.console && unsafe { libc::isatty(1) } == 1 {
        return Err(Error::usage("-o - writes a binary stream, and standard output is a terminal")
            .hint("redirect it (tr-cat -o - > rec.trbox; ssh root@board tr-cat -o - > rec.trbox), or add --console for text lines"));
    }
    let t = Tracefs::open(common.tracefs.as_deref())?;
    if !t.is_live() {
        return Err(Error::usage("-o records the live tracefs, not a copy")
            .hint("drop -T, or decode the copy with tr-cat --raw"));
    }
    let events = if r.events.is_empty() { Vec::new() } else { resolve_all(&t.list_events()?, r.events)? };
    let live = Live::enter(t, common, false)?;
    // A persistent instance (last_boot_info, 6.12+) and nothing to run:
    // extract what it holds, a previous boot's events as they are (trace-cmd
    // extract): no clearing, no waiting (tracing_on is switched on and off
    // as for a recording; nothing is enabled after a reboot, and it only
    // gates writes). Starting a tracer or enabling events there would clear
    // them (update_last_data(), kernel/trace/trace.c).
    let extract = r.cmd.is_empty() && r.time.is_none() && events.is_empty() && live.t.exists("last_boot_info");
    // Recording there would clear the previous boot's records.
    if extract && !cfg!(feature = "boot") {
        return Err(crate::applets::cli::left_out("reading a previous boot's buffer (last_boot_info)", "boot"));
    }
    let (t, wake) = (&live.t, live.wake);
    let path = Path::new(if stream { "standard output" } else { r.path });
    let net = r.net.then(|| r.path.to_string());
    let (summary, status, write_error) = {
        let no_splice = std::env::var_os("TRBOX_NO_SPLICE").is_some();
        let systems = events.iter().filter_map(|e| e.split(':').next()).map(String::from).collect();
        let mut rec = Recorder::create(
            t,
            path,
            &Options { max_kb: r.max_kb, no_splice, systems, stream, console: r.console, net },
        )?;
        let mut st = State::new(t);
        let on = t.tracing_on_file();
        // Tracing idle while the run sets up; and its first change, so the
        // last put back (newest first): switched on before the run's events
        // are off again and its pid filter is gone, it would record what
        // they let through. The window closes with plain writes.
        st.set(on, "0")?;
        for e in &events {
            st.set(&format!("{}/enable", trbox::sys::event_dir(e)), "1")?;
        }
        let tracer = t.read_opt("current_tracer")?.unwrap_or_default();
        let functions = tracer.trim() != "nop" && t.exists("set_ftrace_pid");
        let child = Command::start(r.cmd, &mut st, Follow { events: true, functions })?;
        // Start from an empty buffer (as trace-cmd record does): old pages
        // do not belong to this run, and the stats count from zero.
        if !extract {
            t.write("trace", "")?;
        }
        rec.start(t);
        st.set(on, "1")?;
        child.release()?;
        // From here a SIGKILL would leave tracing on and the pool's file
        // without its table: the guard turns tracing off, finishes the
        // file, then puts tracefs back.
        let notes = st.guard(&mut |e, _| match e {
            Event::Note(n) => rec.absorb(n),
            Event::Orphaned => {
                let _ = t.write(on, "0");
                match rec.orphaned(t) {
                    Some(Ok(s)) => {
                        eprintln!("tr-cat: the recording was killed: its guard finished the file");
                        print_summary(path, &s);
                    }
                    Some(Err(e)) => crate::applets::cli::note(&e.into()),
                    None => {}
                }
            }
            Event::PutBack => {}
        });
        rec.guarded(notes);
        let start = Instant::now();
        // Extract: no wait, only the drain below.
        let limit = if extract { Some(Duration::ZERO) } else { r.time.map(|s| s.0) };
        // On a terminal (no command writing to it, no console lines on it).
        let progress = Progress::new(limit, r.cmd.is_empty(), !r.console);
        // The tick bounds how late a command's exit or -t is noticed, and
        // how often the progress line is drawn.
        let tick = Duration::from_millis(if !r.cmd.is_empty() {
            100
        } else if progress.on() {
            250
        } else {
            1000
        });
        while signals::stop_requested().is_none() && rec.write_error.is_none() && !child.exited() {
            let left = limit.map_or(tick, |l| l.saturating_sub(start.elapsed()));
            if limit.is_some() && left.is_zero() {
                break;
            }
            rec.wait(wake, left.min(tick));
            if progress.due() {
                let (events, lost, bytes) = rec.so_far(t);
                progress.show(format_args!("{events} events, {} KiB written, {lost} lost", bytes >> 10));
            }
        }
        drop(progress);
        t.write(on, "0")?;
        if rec.write_error.is_none() {
            rec.drain();
        }
        let write_error = rec.write_error.take();
        let summary = rec.finish(t)?;
        (summary, child.finish(), write_error)
    };
    // The reader of a stream on standard output closed it (`| head`): the
    // end it asked for, as for every other output.
    let reader_left =
        stream && !r.net && write_error.as_ref().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe);
    let write_error = write_error.filter(|_| !reader_left);
    print_summary(path, &summary);
    if let Some(e) = write_error {
        if stream || r.net {
            // The reader went away (EPIPE: ssh dropped, the pipe closed, the
            // listener quit or the link reset).
            let who = if r.net { "the listener" } else { "the reader" };
            return Err(Error::runtime(format!(
                "{}: sending stopped: {}; {who} has at most the {} pages sent before (readable)",
                path.display(),
                describe(&e),
                summary.pages()
            ))
            .hint("check the link and the receiving side (trace-cmd listen keeps only a header when its sender stops early); tracing was stopped and put back"));
        }
        return Err(Error::runtime(format!(
            "{}: writing stopped: {}; the file holds the {} pages written before (readable)",
            path.display(),
            describe(&e),
            summary.pages()
        ))
        .hint(if e.raw_os_error() == Some(libc::ENOSPC) {
            "free some space, record to another filesystem, or bound the file with -m MAX_KB"
        } else {
            "check the device the file is on"
        }));
    }
    command::exit_with(status)
}

fn print_summary(path: &Path, s: &Summary) {
    let mut o = String::new();
    let mover = match &s.mover {
        trbox::sys::record::Mover::Splice => "splice".to_string(),
        trbox::sys::record::Mover::Read(why) => format!("read ({why})"),
    };
    o += &format!(
        "tr-cat: {}: {} events, {} pages, {} bytes in {}.{:02} s ({mover})\n",
        path.display(),
        s.events(),
        s.pages(),
        s.file_size,
        s.elapsed.as_secs(),
        s.elapsed.subsec_millis() / 10
    );
    if s.stream_bytes > 0 {
        // What the link carries: the console's rate is what matters there.
        // 115200 baud, 8N1: 11520 bytes a second.
        // Tenths in integers: float formatting alone would cost ~20 KiB.
        let data = s.file_size.saturating_sub(s.header_wire + s.symbols_wire.unwrap_or(0));
        let tenths = data * 10 / s.events().max(1);
        // The console form sends the symbols the pages name, at the end.
        let (kallsyms, symbols) = match s.symbols_wire {
            None => ("formats, kallsyms", String::new()),
            Some(n) => ("formats", format!(" + symbols {n}")),
        };
        o += &format!(
            "tr-cat: on the wire: {} bytes = header {} ({kallsyms}) + events {} ({}.{} per event; raw pages {}){symbols}; {} s at 115200 baud\n",
            s.file_size,
            s.header_wire,
            data,
            tenths / 10,
            tenths % 10,
            s.pages() * s.page_size as u64,
            s.file_size / 11520
        );
    }
    let evicted = s.cpus.iter().any(|c| c.evicted > 0);
    // The columns of the lines below.
    o += "  cpu     events    pages        bytes  lost:pages  lost:stats";
    o += if evicted { "  dropped:-m\n" } else { "\n" };
    for c in &s.cpus {
        let d = &c.data;
        let lost = if d.lost_unknown > 0 { format!("{}+?", d.lost) } else { d.lost.to_string() };
        let stats = c.lost_stats.map_or("-".into(), |n| n.to_string());
        o += &format!(
            "{:>5} {:>10} {:>8} {:>12} {:>11} {:>11}",
            c.cpu,
            d.records,
            d.pages,
            d.pages * s.page_size as u64,
            lost,
            stats
        );
        if evicted {
            o += &format!("  {:>10}", c.evicted);
        }
        o.push('\n');
        if let Some(e) = &c.read_error {
            o += &format!("      cpu{} stopped early: {e}\n", c.cpu);
        }
        if d.damaged > 0 {
            o += &format!("      cpu{}: {} pages did not decode\n", c.cpu, d.damaged);
        }
    }
    if s.unsaved > 0 {
        o += &format!("not saved: {} pages taken from the kernel (the write failed)\n", s.unsaved);
    }
    eprint!("{o}");
}
