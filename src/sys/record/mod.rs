//! Recording the live per-CPU raw pages into a version 6 trace.dat, in one
//! process without threads: poll() on every CPU's `trace_pipe_raw` (the
//! kernel wakes a reader once `buffer_percent` of the buffer is full), move
//! the pages into the file, and after the stop drain the rest (partial pages
//! too) and finish the header.
//!
//! Pages move with splice(2) — trace_pipe_raw → a pipe → the file, no copy
//! through user space — where the kernel allows it, else with read(2) and
//! pwrite(2). splice only hands out full pages, so the final drain always
//! reads. Memory stays at two pages plus a few bytes per page recorded.

mod meta;
pub mod pool;

use super::error::Error;
use super::tracefs::Tracefs;
use crate::ctl::CpuStats;
use crate::page::{Missed, Page, PageLayout};
use pool::{CpuData, Pool};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How the pages are moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mover {
    Splice,
    /// read(2)/pwrite(2), and why splice is not used.
    Read(String),
}

pub struct Options {
    /// Keep at most this many KiB of page data (the newest).
    pub max_kb: Option<u64>,
    /// Use read(2) even where splice works.
    pub no_splice: bool,
    /// Event systems to store formats for, besides those with an enabled
    /// event now (the events the run will enable).
    pub systems: Vec<String>,
}

struct Cpu {
    cpu: u32,
    file: File,
    /// Read errors end this CPU's stream (reported in the summary).
    error: Option<io::Error>,
}

pub struct Recorder {
    path: PathBuf,
    file: File,
    layout: PageLayout,
    slots: meta::Slots,
    pool: Pool,
    cpus: Vec<Cpu>,
    /// The splice pipe (read end, write end) and its capacity.
    pipe: Option<(i32, i32, usize)>,
    pub mover: Mover,
    buf: Vec<u8>,
    /// The first failed write to the output: recording stops there.
    pub write_error: Option<io::Error>,
    /// Pages taken from the kernel that could not be written.
    pub unsaved: u64,
    stats0: Vec<CpuStats>,
    started: Instant,
}

/// One CPU's line of the summary.
#[derive(Debug, Clone)]
pub struct CpuSummary {
    pub cpu: u32,
    pub data: CpuData,
    /// Pages dropped to stay within `-m`.
    pub evicted: u64,
    /// Events the kernel counted as lost while recording (overrun, commit
    /// overrun, dropped; difference of `per_cpu/cpuN/stats`).
    pub lost_stats: Option<u64>,
    pub read_error: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Summary {
    pub cpus: Vec<CpuSummary>,
    pub page_size: usize,
    pub file_size: u64,
    pub elapsed: Duration,
    pub mover: Mover,
    pub unsaved: u64,
}

impl Summary {
    pub fn events(&self) -> u64 {
        self.cpus.iter().map(|c| c.data.records).sum()
    }
    pub fn pages(&self) -> u64 {
        self.cpus.iter().map(|c| c.data.pages).sum()
    }
}

/// Open the output file for writing from its start, as root too, without
/// writing through a symlink or truncating a file that is not ours (issue
/// 12): the path is created (O_CREAT|O_EXCL, which never follows a symlink,
/// dangling or not); a file already there is written over only when it is
/// a regular file of our own uid with one link — an earlier recording —
/// as fstat shows it on the descriptor opened without following a symlink.
/// Anything else is refused with what it is.
pub fn create_output(path: &Path) -> Result<File, Error> {
    let open = |o: &mut std::fs::OpenOptions| o.read(true).write(true).open(path);
    match open(std::fs::OpenOptions::new().create_new(true).mode(0o644)) {
        Ok(f) => return Ok(f),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io(path, e)),
    }
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

fn lost(s: &CpuStats) -> Option<u64> {
    Some(s.overrun? + s.commit_overrun.unwrap_or(0) + s.dropped.unwrap_or(0))
}

impl Recorder {
    /// Create `path` and write the header (before the run enables its
    /// events: writing kallsyms takes a while, and nobody would read the
    /// buffer meanwhile). Then call [`Recorder::start`] on an empty buffer,
    /// [`Recorder::wait`] in a loop once tracing is on,
    /// [`Recorder::drain`] after turning it off, and [`Recorder::finish`].
    pub fn create(t: &Tracefs, path: &Path, o: &Options) -> Result<Recorder, Error> {
        let hp = super::events::header_page(t)?;
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
        let mut file = create_output(path)?;
        let slots = match meta::write_header(
            t,
            &mut file,
            path,
            ps as u32,
            crate::format::Abi::new(crate::format::Endian::NATIVE, hp.long_size()),
            cpus.len() as u32,
            &o.systems,
        ) {
            Ok(s) => s,
            Err(e) => {
                // Not even the header fits: no half file left behind.
                let _ = std::fs::remove_file(path);
                return Err(e);
            }
        };
        let max_slots = o.max_kb.map(|kb| (kb.saturating_mul(1024) / ps as u64).clamp(1, u64::from(u32::MAX)) as u32);
        let pool = Pool::new(slots.fly.data_start, ps, cpus.len(), max_slots);
        let (pipe, mover) = if o.no_splice {
            (None, Mover::Read("splice turned off".into()))
        } else {
            match make_pipe(ps) {
                Ok(p) => (Some(p), Mover::Splice),
                Err(e) => (None, Mover::Read(format!("no pipe: {e}"))),
            }
        };
        Ok(Recorder {
            path: path.into(),
            file,
            layout,
            slots,
            pool,
            cpus,
            pipe,
            mover,
            buf: vec![0; ps],
            write_error: None,
            unsaved: 0,
            stats0,
            started: Instant::now(),
        })
    }

    /// The recording starts now: the stats the losses are counted from.
    pub fn start(&mut self, t: &Tracefs) {
        self.stats0 = self
            .cpus
            .iter()
            .map(|c| CpuStats::parse(&t.read(&format!("per_cpu/cpu{}/stats", c.cpu)).unwrap_or_default()))
            .collect();
        self.started = Instant::now();
    }

    /// Sleep until a CPU buffer passes its watermark, `wake_fd` is readable
    /// (a stop) or `max` passed; then move what is ready. Returns the pages
    /// moved.
    pub fn wait(&mut self, wake_fd: i32, max: Duration) -> u64 {
        let mut fds: Vec<libc::pollfd> = self
            .cpus
            .iter()
            .filter(|c| c.error.is_none())
            .map(|c| libc::pollfd { fd: c.file.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        fds.push(libc::pollfd { fd: wake_fd, events: libc::POLLIN, revents: 0 });
        let ms = max.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: fds is a valid array of pollfd for the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n <= 0 {
            return 0;
        }
        let ready: Vec<i32> = fds.iter().filter(|p| p.revents & libc::POLLIN != 0).map(|p| p.fd).collect();
        let mut moved = 0;
        for i in 0..self.cpus.len() {
            if ready.contains(&self.cpus[i].file.as_raw_fd()) {
                moved += self.pump(i, false);
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
    pub fn drain(&mut self) {
        for i in 0..self.cpus.len() {
            self.pump(i, true);
        }
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
        for _ in 0..pages {
            let slot = self.pool.take(&self.file);
            let mut off = self.pool.offset(slot) as libc::loff_t;
            let mut left = ps;
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
            if left > 0 {
                self.pool.release(slot);
                // The pages still in the pipe cannot be saved either.
                self.unsaved += (pages - done) as u64;
                self.close_pipe();
                if let Ok(p) = make_pipe(ps) {
                    self.pipe = Some(p);
                }
                return done as u64;
            }
            self.pool.commit(i, slot);
            done += 1;
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
        let full = Page::parse(&self.buf, &self.layout, self.slots.endian).is_ok_and(|p| p.len as usize * 2 > ps);
        let slot = self.pool.take(&self.file);
        match self.file.write_all_at(&self.buf, self.pool.offset(slot)) {
            Ok(()) => {
                self.pool.commit(i, slot);
                Some(full)
            }
            Err(e) => {
                self.pool.release(slot);
                self.unsaved += 1;
                self.write_failed(e);
                None
            }
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
    pub fn pages(&self) -> u64 {
        self.pool.pages()
    }

    /// Put the file in order and complete its header; count what is in it.
    pub fn finish(mut self, t: &Tracefs) -> Result<Summary, Error> {
        self.close_pipe();
        let elapsed = self.started.elapsed();
        let (layout, endian) = (self.layout, self.slots.endian);
        let evicted = self.pool.evicted.clone();
        let ps = self.layout.subbuf_size();
        let pool = std::mem::replace(&mut self.pool, Pool::new(0, ps, 0, None));
        let (data, end) = pool
            .finish(&self.file, |_, bytes, d| match Page::parse(bytes, &layout, endian) {
                Ok(p) => {
                    match p.missed {
                        Missed::None => {}
                        Missed::Unknown => d.lost_unknown += 1,
                        Missed::Count(n) => d.lost += n,
                    }
                    d.records += p.records().filter(|r| r.is_ok()).count() as u64;
                }
                Err(_) => d.damaged += 1,
            })
            .map_err(|e| Error::io(&self.path, e))?;
        let stats: Vec<(u32, String)> = self
            .cpus
            .iter()
            .map(|c| (c.cpu, t.read(&format!("per_cpu/cpu{}/stats", c.cpu)).unwrap_or_default()))
            .collect();
        let table: Vec<(u64, u64)> = data.iter().map(|d| (d.offset, d.pages * ps as u64)).collect();
        meta::finish_header(&self.file, &self.path, &self.slots, t, &stats, &table)?;
        // A failed write may have left part of a page past the end.
        self.file.set_len(end).map_err(|e| Error::io(&self.path, e))?;
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
        Ok(Summary { cpus, page_size: ps, file_size: end, elapsed, mover: self.mover.clone(), unsaved: self.unsaved })
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.close_pipe();
    }
}

/// A pipe for splicing, big enough for 16 pages when the kernel allows;
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
        libc::fcntl(fds[1], libc::F_SETPIPE_SZ, (16 * ps) as libc::c_int);
        libc::fcntl(fds[1], libc::F_GETPIPE_SZ)
    };
    let cap = (cap.max(0) as usize / ps).max(1) * ps;
    Ok((fds[0], fds[1], cap))
}
