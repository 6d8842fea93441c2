//! Recording the live per-CPU raw pages into a version 6 trace.dat, in one
//! process without threads: poll() on every CPU's `trace_pipe_raw` (the
//! kernel wakes a reader once `buffer_percent` of the buffer is full), move
//! the pages into the file, and after the stop drain the rest (partial pages
//! too) and finish the header.
//!
//! Pages move with splice(2) — trace_pipe_raw → a pipe → the file, no copy
//! through user space — where the kernel allows it, else with read(2) and
//! pwrite(2). splice only hands out full pages, so the final drain always
//! reads. Where the filesystem can insert and collapse a range cheaply
//! (ext4, xfs) each CPU writes into a region of its own, already in the
//! order version 6 wants, and the file stays a readable trace.dat of about
//! the data's size even if the recorder is killed (`regions`); elsewhere
//! the pages go to slots in arrival order, put in order at the end
//! (`pool`), also by the run's guard if the recorder is killed.
//! Memory stays at two pages plus a few bytes per page recorded.

mod meta;
mod pool;
mod regions;

use super::error::Error;
use super::guard::Notes;
use super::tracefs::Tracefs;
use crate::ctl::CpuStats;
use crate::page::{Missed, Page, PageLayout};
pub(crate) use pool::CpuData;
use pool::Pool;
use regions::Regions;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How the pages are moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mover {
    /// splice(2) from trace_pipe_raw through a pipe to the file.
    Splice,
    /// read(2)/pwrite(2), and why splice is not used.
    Read(String),
}

/// What [`Recorder`] writes, and where.
pub(crate) struct Options {
    /// Keep at most this many KiB of page data (the newest).
    pub(crate) max_kb: Option<u64>,
    /// Use read(2) even where splice works.
    pub(crate) no_splice: bool,
    /// Event systems to store formats for, besides those with an enabled
    /// event now (the events the run will enable).
    pub(crate) systems: Vec<String>,
    /// Write trbox's stream form to standard output (`-o -`) instead of a
    /// trace.dat at the path.
    pub(crate) stream: bool,
    /// The stream as console lines (deflate, base64, checksums).
    pub(crate) console: bool,
    /// Send to `trace-cmd listen` at this HOST:PORT instead (`-N`).
    pub(crate) net: Option<String>,
}

/// Where a stream goes: standard output, as it is or as console lines.
struct StreamSink {
    file: File,
    console: Option<crate::tracedat::console::Encoder>,
    /// Bytes of the stream, and bytes written (the wire).
    stream: u64,
    wire: u64,
    /// Bytes written for the header (formats, kallsyms…).
    header_wire: u64,
    /// The console form: bytes written for the symbols at the end.
    symbols_wire: u64,
    /// `-N`: the listener's connections (`file` then only held the header).
    net: Option<super::net::Session>,
    /// The console form: the symbols the pages name, sent at the end
    /// instead of all of kallsyms first; and the kernel's word.
    used: Option<(crate::kallsyms::UsedSymbols, crate::abi::Abi)>,
}

impl StreamSink {
    /// Whole frames.
    fn send(&mut self, frames: &[u8]) -> io::Result<()> {
        self.stream += frames.len() as u64;
        if let Some(e) = &mut self.console {
            let lines = e.push(frames);
            return self.put(lines.as_bytes());
        }
        self.put(frames)
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.wire += b.len() as u64;
        self.file.write_all(b)
    }

    /// Console: write out what is gathered.
    fn flush(&mut self) -> io::Result<()> {
        if let Some(e) = &mut self.console {
            let lines = e.flush();
            return self.put(lines.as_bytes());
        }
        Ok(())
    }

    fn end(&mut self) -> io::Result<()> {
        if let Some(e) = &mut self.console {
            let lines = e.end();
            return self.put(lines.as_bytes());
        }
        Ok(())
    }
}

struct Cpu {
    cpu: u32,
    file: File,
    /// Read errors end this CPU's stream (reported in the summary).
    error: Option<io::Error>,
}

/// One recording: the output's header is written when it is opened, the
/// pages as they fill, and the rest at the stop.
pub(crate) struct Recorder {
    path: PathBuf,
    file: File,
    layout: PageLayout,
    /// The trace.dat's end-of-run slots; None for a stream.
    slots: Option<meta::Slots>,
    /// A stream: what each CPU index sent, and the bytes written.
    sent: Vec<CpuData>,
    sink: Option<StreamSink>,
    pool: Pool,
    /// Per-CPU regions instead of the pool (a trace.dat on a filesystem
    /// with sparse files, no `-m`).
    regions: Option<Regions>,
    cpus: Vec<Cpu>,
    /// The splice pipe (read end, write end) and its capacity.
    pipe: Option<(i32, i32, usize)>,
    pub(crate) mover: Mover,
    buf: Vec<u8>,
    /// The first failed write to the output: recording stops there.
    pub(crate) write_error: Option<io::Error>,
    /// Pages taken from the kernel that could not be written.
    pub(crate) unsaved: u64,
    stats0: Vec<CpuStats>,
    started: Instant,
    /// The run's guard ([`Recorder::guarded`]), and the pool's commits
    /// since the last wake-up, sent to it at the next.
    notes: Option<Notes>,
    commits: Vec<u8>,
    /// In the guard's copy: the run began finishing the file itself.
    finishing: bool,
}

/// The byte order of the pages a run takes: the kernel's, this machine's;
/// the header and the stream's start frame say so.
const PAGES: crate::abi::Endian = crate::abi::Endian::NATIVE;

/// A guard's note: pages committed to pool slots, `(CPU index, slot)` as
/// two u32 each.
const NOTE_COMMITS: u8 = b'P';
/// A guard's note: the run finishes the file itself from here on.
const NOTE_FINISHING: u8 = b'F';

/// One CPU's line of the summary.
#[derive(Debug, Clone)]
pub(crate) struct CpuSummary {
    /// The CPU number.
    pub(crate) cpu: u32,
    /// Its pages and records as written.
    pub(crate) data: CpuData,
    /// Pages dropped to stay within `-m`.
    pub(crate) evicted: u64,
    /// Events the kernel counted as lost while recording (overrun, commit
    /// overrun, dropped; difference of `per_cpu/cpuN/stats`).
    pub(crate) lost_stats: Option<u64>,
    /// The error that ended this CPU's reading early, as text.
    pub(crate) read_error: Option<String>,
}

/// What a recording did, for the summary printed at its end.
#[derive(Debug, Clone)]
pub(crate) struct Summary {
    /// One entry per CPU recorded.
    pub(crate) cpus: Vec<CpuSummary>,
    /// The ring buffer's page (sub-buffer) size in bytes.
    pub(crate) page_size: usize,
    /// Bytes written: the trace.dat's size, or the stream's on the wire.
    pub(crate) file_size: u64,
    /// A stream: its bytes before the console encoding (file_size: the
    /// bytes written).
    pub(crate) stream_bytes: u64,
    /// A stream: the bytes written before the first page.
    pub(crate) header_wire: u64,
    /// The console form: the bytes written for the symbols (at the end).
    pub(crate) symbols_wire: Option<u64>,
    /// From opening the output to the end of the drain.
    pub(crate) elapsed: Duration,
    /// How the pages were moved.
    pub(crate) mover: Mover,
    /// Pages taken from the kernel that could not be written.
    pub(crate) unsaved: u64,
}

impl Summary {
    /// Events recorded, over all CPUs.
    pub(crate) fn events(&self) -> u64 {
        self.cpus.iter().map(|c| c.data.records).sum()
    }

    /// Pages recorded, over all CPUs.
    pub(crate) fn pages(&self) -> u64 {
        self.cpus.iter().map(|c| c.data.pages).sum()
    }
}

/// Create the output file `path` if nothing is there (O_CREAT|O_EXCL,
/// which never follows a symlink, dangling or not); None when something
/// is (`tr-cat --listen` then takes another name).
pub(crate) fn create_new_output(path: &Path) -> Result<Option<File>, Error> {
    match std::fs::OpenOptions::new().read(true).write(true).create_new(true).mode(0o644).open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Open the output file for writing from its start, as root too, without
/// writing through a symlink or truncating a file that is not ours (issue
/// 12): the path is created (O_CREAT|O_EXCL, which never follows a symlink,
/// dangling or not); a file already there is written over only when it is
/// a regular file of our own uid with one link — an earlier recording —
/// as fstat shows it on the descriptor opened without following a symlink.
/// Anything else is refused with what it is.
pub(crate) fn create_output(path: &Path) -> Result<File, Error> {
    if let Some(f) = create_new_output(path)? {
        return Ok(f);
    }
    let open = |o: &mut std::fs::OpenOptions| o.read(true).write(true).open(path);
    let refused = |why: String| Error::NotOverwritten { path: path.into(), why };
    // O_NONBLOCK: a fifo planted there must not block the open.
    let file = match open(std::fs::OpenOptions::new().custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(refused("is a symlink".into())),
        Err(e) => return Err(Error::io(path, e)),
    };
    let m = file.metadata().map_err(|e| Error::io(path, e))?;
    // SAFETY: no arguments.
    let uid = unsafe { libc::geteuid() };
    if !m.file_type().is_file() {
        return Err(refused("is not a regular file".into()));
    }
    if m.uid() != uid {
        return Err(refused(format!("belongs to uid {}", m.uid())));
    }
    if m.nlink() != 1 {
        return Err(refused(format!("has {} links", m.nlink())));
    }
    // SAFETY: a valid fd; F_SETFL with plain flags.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, 0) } != 0 {
        return Err(Error::io(path, io::Error::last_os_error()));
    }
    file.set_len(0).map_err(|e| Error::io(path, e))?;
    Ok(file)
}

/// `per_cpu/cpuN/stats`, parsed (empty when it cannot be read).
fn cpu_stats(t: &Tracefs, cpu: u32) -> CpuStats {
    CpuStats::parse(&t.read(&format!("per_cpu/cpu{cpu}/stats")).unwrap_or_default())
}

fn lost(s: &CpuStats) -> Option<u64> {
    Some(s.overrun? + s.commit_overrun.unwrap_or(0) + s.dropped.unwrap_or(0))
}

impl Recorder {
    /// Create `path` and write the header (before the run enables its
    /// events: writing kallsyms takes a while, and nobody would read the
    /// buffer meanwhile). Then call [`Recorder::start`] on an empty buffer,
    /// [`Recorder::wait`] in a loop once tracing is on,
    /// [`Recorder::drain`] after turning it off, and [`Recorder::finish`].
    pub(crate) fn create(t: &Tracefs, path: &Path, o: &Options) -> Result<Recorder, Error> {
        let hp = super::trace::header_page(t)?;
        let layout = PageLayout::from(&hp);
        let ps = layout.subbuf_size();
        let mut cpus = Vec::new();
        for cpu in t.cpus()? {
            let p = t.path(&format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&p)
                .map_err(|e| Error::io(&p, e))?;
            cpus.push(Cpu { cpu, file, error: None });
        }
        let stats0 = Vec::new();
        // A stream (a file of its own for its header) or a trace.dat: what
        // the recorder writes to and with.
        let (file, slots, sent, sink, pool, regions, pipe, mover) = if o.stream || o.net.is_some() {
            let numbers: Vec<u32> = cpus.iter().map(|c| c.cpu).collect();
            // One header for both: built in an anonymous file, then sent.
            let mut f = super::anonymous_file(&[]).map_err(|e| Error::io(path, e))?;
            let n = numbers.len() as u32;
            let abi = crate::abi::Abi::new(PAGES, hp.long_size());
            let (h, slot) = meta::net_header(t, &mut f, path, ps as u32, abi, n, &o.systems, o.net.is_some())?;
            let net = match &o.net {
                Some(addr) => Some(super::net::connect(addr, n, ps as u32, &h, slot, t.top().join("saved_cmdlines"))?),
                None => None,
            };
            let file = if net.is_some() { f } else { stdout_stream()? };
            let mut sink = StreamSink {
                file: file.try_clone().map_err(|e| Error::io(path, e))?,
                console: o.console.then(crate::tracedat::console::Encoder::new),
                stream: 0,
                wire: h.len() as u64,
                header_wire: h.len() as u64,
                symbols_wire: 0,
                net,
                used: None,
            };
            if sink.net.is_none() {
                use crate::tracedat::stream::{frame, kind, preamble, start_frame};
                let mut head = preamble().to_vec();
                head.extend(start_frame(PAGES, abi.long_size as u8, ps as u32, &numbers));
                sink.wire = 0;
                let console = sink.console.as_ref().map(|e| e.begin());
                let sent = match console {
                    Some(b) => sink.put(b.as_bytes()).and_then(|_| sink.send(&head)),
                    None => sink.send(&head),
                };
                sent.map_err(|e| Error::io(path, e))?;
                if o.console {
                    // A console's minutes go to symbols the pages name only,
                    // sent at the end ([`Recorder::end_stream`]).
                    let mut u = crate::kallsyms::UsedSymbols::new();
                    meta::kallsyms_pieces(t, &mut |p| {
                        u.table_piece(p);
                        Ok(())
                    })?;
                    u.table_done();
                    sink.used = Some((u, abi));
                } else {
                    // kallsyms first: the H frame ends the header.
                    meta::kallsyms_pieces(t, &mut |p| {
                        sink.send(&frame(kind::KALLSYMS, p)).map_err(|e| Error::io(path, e))
                    })?;
                }
                sink.send(&frame(kind::HEADER, &h)).and_then(|_| sink.flush()).map_err(|e| Error::io(path, e))?;
                sink.header_wire = sink.wire;
            }
            let sent = vec![CpuData::default(); cpus.len()];
            let pool = Pool::new(0, ps, cpus.len(), None);
            (file, None, sent, Some(sink), pool, None, None, Mover::Read("a stream".into()))
        } else {
            let mut file = create_output(path)?;
            let slots = match meta::write_header(
                t,
                &mut file,
                path,
                ps as u32,
                crate::abi::Abi::new(PAGES, hp.long_size()),
                cpus.len() as u32,
                &o.systems,
                true,
                0,
            ) {
                Ok(s) => s,
                Err(e) => {
                    // Not even the header fits: no half file left behind.
                    let _ = std::fs::remove_file(path);
                    return Err(e);
                }
            };
            let max_slots =
                o.max_kb.map(|kb| (kb.saturating_mul(1024) / ps as u64).clamp(1, u64::from(u32::MAX)) as u32);
            let pool = Pool::new(slots.fly.data_start, ps, cpus.len(), max_slots);
            let regions = match max_slots {
                None => Regions::new(&file, slots.fly.data_start, ps, cpus.len(), (slots.fly.table_pos, slots.endian)),
                Some(_) => None,
            };
            if regions.is_none() {
                // The pool's file has no table until its end: a reader waits
                // for that (the lock goes with the last holder, the run's
                // guard too: `super::trace::dat_file`).
                // SAFETY: a valid fd.
                unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            }
            let (pipe, mover) = if o.no_splice {
                (None, Mover::Read("splice turned off".into()))
            } else {
                match make_pipe(ps) {
                    Ok(p) => (Some(p), Mover::Splice),
                    Err(e) => (None, Mover::Read(format!("no pipe: {e}"))),
                }
            };
            (file, Some(slots), Vec::new(), None, pool, regions, pipe, mover)
        };
        Ok(Recorder {
            path: path.into(),
            file,
            layout,
            slots,
            sent,
            sink,
            pool,
            regions,
            cpus,
            pipe,
            mover,
            buf: vec![0; ps],
            write_error: None,
            unsaved: 0,
            stats0,
            started: Instant::now(),
            notes: None,
            commits: Vec::new(),
            finishing: false,
        })
    }

    /// The recording starts now: the stats the losses are counted from.
    pub(crate) fn start(&mut self, t: &Tracefs) {
        self.stats0 = self.cpus.iter().map(|c| cpu_stats(t, c.cpu)).collect();
        self.started = Instant::now();
    }

    /// The run so far: events recorded (taken from the kernel — its `read
    /// events`, which ring_buffer.c's ring_buffer_read_page counts for the
    /// pages handed to splice and read alike — and still in its buffer,
    /// `entries`), events it lost (overrun, commit overrun, dropped), and
    /// bytes kept (a stream: sent). The counts start from zero: clearing
    /// `trace` before [`Recorder::start`] reset them (rb_reset_cpu).
    pub(crate) fn so_far(&self, t: &Tracefs) -> (u64, u64, u64) {
        let (mut events, mut lost_now) = (0, 0);
        for c in &self.cpus {
            let s = cpu_stats(t, c.cpu);
            events += s.read.unwrap_or(0) + s.entries.unwrap_or(0);
            lost_now += lost(&s).unwrap_or(0);
        }
        let bytes = self.sink.as_ref().map_or(self.pages() * self.layout.subbuf_size() as u64, |s| s.wire);
        (events, lost_now, bytes)
    }

    /// Sleep until a CPU buffer passes its watermark, `wake_fd` is readable
    /// (a stop) or `max` passed; then move what is ready. Returns the pages
    /// moved.
    pub(crate) fn wait(&mut self, wake_fd: i32, max: Duration) -> u64 {
        let mut fds: Vec<libc::pollfd> = self
            .cpus
            .iter()
            .filter(|c| c.error.is_none())
            .map(|c| libc::pollfd { fd: c.file.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        fds.push(libc::pollfd { fd: wake_fd, events: libc::POLLIN, revents: 0 });
        // A stream: the reader going away (a pipe's read end closed, the
        // peer of a socket gone) shows as POLLERR/POLLHUP on our end,
        // long before the next page would be written.
        // With -N, the listener closing its control connection (it quit,
        // or the link reset) is POLLRDHUP there.
        let out_fd = self.sink.as_ref().map(|s| s.net.as_ref().map_or(s.file.as_raw_fd(), |n| n.control.as_raw_fd()));
        if let Some(fd) = out_fd {
            fds.push(libc::pollfd { fd, events: libc::POLLRDHUP, revents: 0 });
        }
        if let Some(Err(e)) = self.sink.as_mut().and_then(|s| s.net.as_mut()).map(super::net::Session::keep_alive) {
            self.write_failed(e);
            return 0;
        }
        let ms = max.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: fds is a valid array of pollfd for the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n <= 0 {
            return 0;
        }
        if let Some(fd) = out_fd {
            if fds.iter().any(|p| p.fd == fd && p.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLRDHUP) != 0) {
                self.write_failed(io::Error::from_raw_os_error(libc::EPIPE));
                return 0;
            }
        }
        let ready: Vec<i32> = fds.iter().filter(|p| p.revents & libc::POLLIN != 0).map(|p| p.fd).collect();
        let mut moved = 0;
        for i in 0..self.cpus.len() {
            if ready.contains(&self.cpus[i].file.as_raw_fd()) {
                moved += self.pump(i, false);
            }
        }
        if moved > 0 {
            self.publish();
        }
        if moved > 0 && self.write_error.is_none() {
            // Console lines go out as the pages come, not at the end.
            if let Some(Err(e)) = self.sink.as_mut().map(StreamSink::flush) {
                self.write_failed(e);
            }
        }
        if moved == 0 && ready.iter().any(|&fd| fd != wake_fd) {
            // Readable but nothing whole to take (buffer_percent 0 and a
            // partial page): do not spin on it.
            std::thread::sleep(Duration::from_millis(50));
        }
        moved
    }

    /// Take everything left (tracing is off): partial pages included.
    pub(crate) fn drain(&mut self) {
        for i in 0..self.cpus.len() {
            self.pump(i, true);
        }
        self.publish();
    }

    /// Per-CPU regions: name the pages written so far in the file's
    /// flyrecord table, so that a recording killed from now on (SIGKILL,
    /// no end of run) reads back with them.
    fn publish(&mut self) {
        if let Some(Err(e)) = self.regions.as_ref().map(|r| r.publish(&self.file, None)) {
            self.write_failed(e);
        }
        if let Some(n) = self.notes.as_ref().filter(|_| self.commits.len() > 1) {
            n.send(&[&self.commits]);
            self.commits.truncate(1);
        }
    }

    /// From now on the run's guard ([`super::guard`]) is told where each
    /// pool page went, so that, the run killed, it can put the file in
    /// order ([`Recorder::orphaned`]). Regions need no notes (the file
    /// names its pages all along); nor does a stream.
    pub(crate) fn guarded(&mut self, notes: Option<Notes>) {
        if self.pooled() {
            self.notes = notes;
            self.commits = vec![NOTE_COMMITS];
        }
    }

    /// In the guard's copy: a note the run sent.
    pub(crate) fn absorb(&mut self, note: &[u8]) {
        match note.split_first() {
            Some((&NOTE_COMMITS, pairs)) => {
                for p in pairs.chunks_exact(8) {
                    let (c, s) = p.split_at(4);
                    let word = |b: &[u8]| u32::from_ne_bytes(b.try_into().unwrap_or_default());
                    self.pool.adopt(word(c) as usize, word(s));
                }
            }
            Some((&NOTE_FINISHING, _)) => self.finishing = true,
            _ => {}
        }
    }

    /// In the guard's copy, the run dead: take what is left in the buffer
    /// and finish the file as the run would have (tracing is off). None
    /// when the file is not the guard's to finish: regions (readable as
    /// they are), a stream, or the run had begun finishing it.
    pub(crate) fn orphaned(&mut self, t: &Tracefs) -> Option<Result<Summary, Error>> {
        let r = (self.pooled() && !self.finishing).then(|| {
            self.drain();
            self.end(t)
        });
        // An instance the run made can go once nothing has it open.
        self.cpus.clear();
        r
    }

    /// A trace.dat written through the pool.
    fn pooled(&self) -> bool {
        self.slots.is_some() && self.regions.is_none()
    }

    /// Move up to a buffer's worth of pages of CPU index `i`; `all`: until
    /// it is empty, with read(2) (which also takes partial pages).
    fn pump(&mut self, i: usize, all: bool) -> u64 {
        let mut moved = 0u64;
        // A busy CPU must not keep the others waiting.
        let limit = if all { u64::MAX } else { 1024 };
        while moved < limit && self.write_error.is_none() && self.cpus[i].error.is_none() {
            if self.pipe.is_some() && !all {
                match self.splice_some(i) {
                    0 => break,
                    n => moved += n,
                }
                continue;
            }
            match self.read_one(i) {
                None => break,
                Some(full) => {
                    moved += 1;
                    // read(2) also hands out the page being written: take
                    // it, then wait for the next wake-up instead of
                    // collecting it again in slivers (while recording).
                    if !full && !all {
                        break;
                    }
                }
            }
        }
        moved
    }

    /// splice full pages into the pipe, then each page into its slot.
    fn splice_some(&mut self, i: usize) -> u64 {
        let Some((rd, wr, cap)) = self.pipe else { return 0 };
        let ps = self.layout.subbuf_size();
        let src = self.cpus[i].file.as_raw_fd();
        // SAFETY: plain fds; no user memory involved.
        let n = unsafe {
            libc::splice(
                src,
                std::ptr::null_mut(),
                wr,
                std::ptr::null_mut(),
                cap,
                libc::SPLICE_F_NONBLOCK | libc::SPLICE_F_MOVE,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => {}
                // This kernel (or this file) cannot splice: read instead.
                _ => {
                    self.mover = Mover::Read(format!("splice: {}", super::describe(&e)));
                    self.close_pipe();
                    return u64::from(self.read_one(i).is_some());
                }
            }
            return 0;
        }
        if n as usize % ps != 0 {
            // Not whole pages: the slots would be misaligned. Never seen
            // from trace_pipe_raw; give up splicing (the piece is lost).
            self.unsaved += 1;
            self.mover = Mover::Read(format!("splice returned {n} bytes, not whole pages"));
            self.close_pipe();
            return 0;
        }
        let pages = n as usize / ps;
        let mut done = 0;
        while done < pages {
            let (at, run, slot) = self.place(i, pages - done);
            let mut off = at as libc::loff_t;
            let mut left = run * ps;
            if run == 0 {
                self.write_failed(region_full());
            }
            while left > 0 {
                // SAFETY: off is a valid loff_t the call updates.
                let m = unsafe {
                    libc::splice(rd, std::ptr::null_mut(), self.file.as_raw_fd(), &mut off, left, libc::SPLICE_F_MOVE)
                };
                if m > 0 {
                    left -= m as usize;
                    continue;
                }
                let e = if m == 0 { io::Error::from_raw_os_error(libc::EIO) } else { io::Error::last_os_error() };
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                self.write_failed(e);
                break;
            }
            // The whole pages written (the part of a page written last is
            // cut at the end).
            let whole = run - left.div_ceil(ps);
            self.placed(i, slot, whole);
            done += whole;
            if left > 0 || run == 0 {
                // The pages still in the pipe cannot be saved either.
                self.unsaved += (pages - done) as u64;
                self.close_pipe();
                if let Ok(p) = make_pipe(ps) {
                    self.pipe = Some(p);
                }
                return done as u64;
            }
        }
        done as u64
    }

    /// One page by read(2) into its slot: None when there was none (or it
    /// could not be saved), else whether it was (about) full.
    fn read_one(&mut self, i: usize) -> Option<bool> {
        let ps = self.layout.subbuf_size();
        let n = loop {
            match (&self.cpus[i].file).read(&mut self.buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) => {
                    log::warn!("cpu{}: cannot read its buffer: {}", self.cpus[i].cpu, super::describe(&e));
                    self.cpus[i].error = Some(e);
                    return None;
                }
            }
        };
        if n == 0 {
            return None;
        }
        self.buf[n.min(ps)..].fill(0);
        // More than half full: the writer had left it (or nearly).
        let parsed = Page::parse(&self.buf, &self.layout, PAGES);
        let full = parsed.as_ref().is_ok_and(|p| p.len as usize * 2 > ps);
        if let Some(sink) = &mut self.sink {
            count_page(&mut self.sent[i], parsed);
            let sent = match sink.net.as_mut().and_then(|s| s.cpus.get_mut(i)) {
                // trace-cmd's listener takes whole sub-buffers, back to back.
                Some(c) => {
                    sink.wire += ps as u64;
                    c.write_all(&self.buf)
                }
                None => {
                    if let Some((u, abi)) = &mut sink.used {
                        u.scan(&self.buf[..n.min(ps)], *abi);
                    }
                    // Only the bytes read: the reader pads a short page.
                    let mut f = crate::tracedat::stream::data_header(self.cpus[i].cpu, n.min(ps)).to_vec();
                    f.extend_from_slice(&self.buf[..n.min(ps)]);
                    sink.send(&f)
                }
            };
            return match sent {
                Ok(()) => {
                    self.sent[i].pages += 1;
                    Some(full)
                }
                Err(e) => {
                    self.unsaved += 1;
                    self.write_failed(e);
                    None
                }
            };
        }
        let (at, run, slot) = self.place(i, 1);
        let written = if run == 0 { Err(region_full()) } else { self.file.write_all_at(&self.buf, at) };
        self.placed(i, slot, usize::from(written.is_ok()));
        match written {
            Ok(()) => Some(full),
            Err(e) => {
                self.unsaved += 1;
                self.write_failed(e);
                None
            }
        }
    }

    /// Where the next pages (up to `want`) of CPU index `i` go: the file
    /// offset, how many fit there in a row (its region takes them all, the
    /// pool one a slot) and the pool's slot; then call [`Recorder::placed`].
    fn place(&mut self, i: usize, want: usize) -> (u64, usize, Option<u32>) {
        let layout = self.layout;
        match &mut self.regions {
            Some(r) => match r.next(&self.file, i, &mut |b, d| count_page(d, Page::parse(b, &layout, PAGES))) {
                Ok((at, room)) => (at, want.min(room.try_into().unwrap_or(usize::MAX)), None),
                Err(e) => {
                    self.write_failed(e);
                    (0, 0, None)
                }
            },
            None => {
                let s = self.pool.take(&self.file);
                (self.pool.offset(s), 1, Some(s))
            }
        }
    }

    /// `n` whole pages were written where [`Recorder::place`] said.
    fn placed(&mut self, i: usize, slot: Option<u32>, n: usize) {
        match (slot, &mut self.regions) {
            (Some(s), _) if n == 0 => self.pool.release(s),
            (Some(s), _) => {
                self.pool.commit(i, s);
                if self.notes.is_some() {
                    self.commits.extend_from_slice(&(i as u32).to_ne_bytes());
                    self.commits.extend_from_slice(&s.to_ne_bytes());
                }
            }
            (None, Some(r)) => r.wrote(i, n as u64),
            (None, None) => {}
        }
    }

    fn write_failed(&mut self, e: io::Error) {
        self.write_error.get_or_insert(e);
    }

    fn close_pipe(&mut self) {
        if let Some((r, w, _)) = self.pipe.take() {
            // SAFETY: our own fds.
            unsafe {
                libc::close(r);
                libc::close(w);
            }
        }
    }

    /// Pages kept so far.
    pub(crate) fn pages(&self) -> u64 {
        self.regions.as_ref().map_or_else(|| self.pool.pages(), Regions::pages)
    }

    /// Put the file in order and complete its header (a stream: send its
    /// end); count what is in it.
    pub(crate) fn finish(mut self, t: &Tracefs) -> Result<Summary, Error> {
        if let Some(n) = self.notes.take() {
            n.send(&[&[NOTE_FINISHING]]);
        }
        self.end(t)
    }

    fn end(&mut self, t: &Tracefs) -> Result<Summary, Error> {
        self.close_pipe();
        let elapsed = self.started.elapsed();
        let ps = self.layout.subbuf_size();
        let stats: Vec<(u32, String)> = self
            .cpus
            .iter()
            .map(|c| (c.cpu, t.read(&format!("per_cpu/cpu{}/stats", c.cpu)).unwrap_or_default()))
            .collect();
        let (data, evicted, file_size) = match self.slots.take() {
            Some(slots) => {
                let layout = self.layout;
                let evicted = self.pool.evicted.clone();
                let pool = std::mem::replace(&mut self.pool, Pool::new(0, ps, 0, None));
                let count = |bytes: &[u8], d: &mut CpuData| count_page(d, Page::parse(bytes, &layout, PAGES));
                let (data, end) = match self.regions.take() {
                    Some(r) => r.finish(&self.file, count),
                    None => pool.finish(&self.file, |_, bytes, d| count(bytes, d)),
                }
                .map_err(|e| Error::io(&self.path, e))?;
                let table: Vec<(u64, u64)> = data.iter().map(|d| (d.offset, d.pages * ps as u64)).collect();
                meta::finish_header(&self.file, &self.path, &slots, t, &stats, &table)?;
                // A failed write may have left part of a page past the end.
                self.file.set_len(end).map_err(|e| Error::io(&self.path, e))?;
                (data, evicted, end)
            }
            None => {
                self.end_stream(t, &stats)?;
                (std::mem::take(&mut self.sent), Vec::new(), self.sink.as_ref().map_or(0, |s| s.wire))
            }
        };
        let cpus = self
            .cpus
            .iter()
            .zip(data)
            .zip(&stats)
            .enumerate()
            .map(|(i, ((c, d), (_, st)))| CpuSummary {
                cpu: c.cpu,
                data: d,
                evicted: evicted.get(i).copied().unwrap_or(0),
                lost_stats: lost(&CpuStats::parse(st))
                    .zip(self.stats0.get(i).and_then(lost))
                    .map(|(a, b)| a.saturating_sub(b)),
                read_error: c.error.as_ref().map(super::describe),
            })
            .collect();
        let (stream_bytes, header_wire, symbols_wire) = self
            .sink
            .as_ref()
            .map_or((0, 0, None), |s| (s.stream, s.header_wire, s.console.as_ref().map(|_| s.symbols_wire)));
        Ok(Summary {
            cpus,
            page_size: ps,
            file_size,
            stream_bytes,
            header_wire,
            symbols_wire,
            elapsed,
            mover: self.mover.clone(),
            unsaved: self.unsaved,
        })
    }

    /// The end of a stream: saved_cmdlines, each CPU's stats, the end
    /// frame; of -N: CLOSE.
    fn end_stream(&mut self, t: &Tracefs, stats: &[(u32, String)]) -> Result<(), Error> {
        use crate::tracedat::stream::{frame, kind, named_frame, stats_frame};
        let Some(sink) = self.sink.as_mut().filter(|_| self.write_error.is_none()) else { return Ok(()) };
        let sent = match sink.net.take() {
            Some(s) => s.close(),
            None => {
                if let Some((mut u, _)) = sink.used.take() {
                    // The console form's symbols: those the pages named,
                    // counted apart on the wire.
                    let mut k = Vec::new();
                    meta::kallsyms_pieces(t, &mut |p| {
                        u.filter_piece(p, &mut k);
                        Ok(())
                    })?;
                    u.filter_done(&mut k);
                    let mut frames = Vec::new();
                    for piece in k.chunks(64 * 1024) {
                        frames.extend(frame(kind::KALLSYMS, piece));
                    }
                    let before = sink.flush().map(|_| sink.wire);
                    match before.and_then(|w| sink.send(&frames).and_then(|_| sink.flush()).map(|_| w)) {
                        Ok(w) => sink.symbols_wire = sink.wire - w,
                        Err(e) => {
                            self.write_error.get_or_insert(e);
                            return Ok(());
                        }
                    }
                }
                let mut tail = Vec::new();
                let cl = t.read_top_opt("saved_cmdlines")?.unwrap_or_default();
                tail.extend(named_frame(kind::META, "saved_cmdlines", cl.as_bytes()));
                for (c, st) in stats {
                    tail.extend(stats_frame(*c, st));
                }
                tail.extend(frame(kind::END, b""));
                sink.send(&tail).and_then(|_| sink.end())
            }
        };
        if let Err(e) = sent {
            self.write_failed(e);
        }
        Ok(())
    }
}

/// Count a page's events and losses into `d`.
fn count_page(d: &mut CpuData, p: Result<Page<'_>, crate::page::PageError>) {
    match p {
        Ok(p) => {
            match p.missed {
                Missed::None => {}
                Missed::Unknown => d.lost_unknown += 1,
                Missed::Count(n) => d.lost += n,
            }
            d.records += p.records().filter(|r| r.is_ok()).count() as u64;
        }
        Err(_) => d.damaged += 1,
    }
}

/// No room for a page: a CPU's region could not grow (that error, taken
/// first, is the one reported).
fn region_full() -> io::Error {
    io::Error::from_raw_os_error(libc::EFBIG)
}

/// Standard output as the stream's file: its own descriptor (dup), and fd 1
/// pointed at stderr from now on, so that nothing else (the traced
/// command's output, a stray print) lands in the stream.
fn stdout_stream() -> Result<File, Error> {
    use std::os::unix::io::FromRawFd;
    // SAFETY: isatty/dup/dup2 on the standard descriptors.
    unsafe {
        let fd = libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3);
        if fd < 0 {
            return Err(Error::io("standard output", io::Error::last_os_error()));
        }
        libc::dup2(2, 1);
        Ok(File::from_raw_fd(fd))
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.close_pipe();
    }
}

/// A pipe for splicing, big enough for 64 pages when the kernel allows
/// (read end, write end, capacity in whole pages' bytes).
fn make_pipe(ps: usize) -> io::Result<(i32, i32, usize)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: our pipe fd. Failure keeps the default size (splice then
    // moves fewer pages per call).
    let cap = unsafe {
        libc::fcntl(fds[1], libc::F_SETPIPE_SZ, (64 * ps) as libc::c_int);
        libc::fcntl(fds[1], libc::F_GETPIPE_SZ)
    };
    let cap = (cap.max(0) as usize / ps).max(1) * ps;
    Ok((fds[0], fds[1], cap))
}
