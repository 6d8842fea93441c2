//! One CPU's stream of decoded items, fed page by page from its
//! `trace_pipe_raw` (live or a copy), and the timestamp merge across CPUs.
//! Memory stays at one sub-buffer per CPU.

use super::error::Error;
use super::raw::RawPages;
use crate::abi::Endian;
use crate::merge::Peek;
use crate::page::{time_range_end, Cursor, Missed, Page, PageError, PageErrorKind, PageLayout, Record, Walk};
use std::sync::Arc;

/// What a stream yields.
#[derive(Debug)]
pub(crate) enum CpuItem<'a> {
    /// Events were lost before the page that follows (`ts`: its time).
    Lost {
        /// The time of the page that follows.
        ts: u64,
        /// How many, when the page header said.
        count: Option<u64>,
    },
    /// A record (its time and payload).
    Record(Record<'a>),
    /// A page could not be decoded (the rest of it is skipped), or its
    /// times left the page's range ([`PageErrorKind::TimeOutOfRange`]).
    Damaged(PageError),
}

/// Counters for the summary and for tests.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    /// Pages read.
    pub(crate) pages: u64,
    /// Records handed out.
    pub(crate) records: u64,
    /// Pages that could not be decoded (or the rest of them).
    pub(crate) damaged: u64,
    /// Pages (or the rest of them) whose times left the page's range
    /// ([`PageErrorKind::TimeOutOfRange`]): skipped, not counted in
    /// `damaged`.
    pub(crate) bad_time: u64,
    /// Pages cut off by the end of their input (read up to there; the
    /// reader of the input counts the cut): not counted in `damaged`.
    pub(crate) truncated: u64,
    /// Lost events the page headers reported (known counts only).
    pub(crate) lost: u64,
    /// Pages that reported a loss without a count.
    pub(crate) lost_unknown: u64,
}

/// What is waiting to be taken.
#[derive(Clone, Copy)]
enum Peeked {
    Lost {
        ts: u64,
        count: Option<u64>,
    },
    /// The record's payload is `page[start..end]`.
    Record {
        ts: u64,
        start: usize,
        end: usize,
    },
    Damaged(PageError),
}

/// Where a CPU's pages come from: `trace_pipe_raw` (live or a copy), or a
/// trace.dat file.
pub(crate) trait PageSource {
    /// The next sub-buffer; `None` when there is nothing (more) for now.
    fn next_page(&mut self) -> Result<Option<&[u8]>, Error>;
    /// A live buffer: "nothing now" is not the end.
    fn is_live(&self) -> bool;
    /// An fd to poll() for data (live buffers).
    fn poll_fd(&self) -> Option<i32>;
    /// Where the pages lie in a file, when each can be read on its own
    /// (time-sliced reading, read/slices.rs): a copy's `trace_pipe_raw`,
    /// an uncompressed trace.dat. Not a live buffer, not compressed data.
    fn file_range(&self) -> Option<FileRange> {
        None
    }
    /// The buffer it reads into, for another source (empty if none).
    fn into_buffer(self: Box<Self>) -> Vec<u8> {
        Vec::new()
    }
}

/// A CPU's pages in a file: `page_size` bytes each from `start` to `end`,
/// the last one maybe short.
pub(crate) struct FileRange {
    /// The file (its own descriptor: reads give their offset).
    pub(crate) file: std::sync::Arc<std::fs::File>,
    /// Its name, for messages.
    pub(crate) path: std::path::PathBuf,
    /// Where the first page is.
    pub(crate) start: u64,
    /// Where the pages end.
    pub(crate) end: u64,
    /// The size of a page (sub-buffer).
    pub(crate) page_size: usize,
}

impl FileRange {
    /// A source of pages `from..to` (numbered from 0; `to`: `None`, to
    /// the end), reading into `buf` ([`PageSource::into_buffer`]).
    pub(crate) fn pages(&self, from: u64, to: Option<u64>, endian: Endian, buf: Vec<u8>) -> FilePages {
        let at = |n: u64| n.saturating_mul(self.page_size as u64).saturating_add(self.start).min(self.end);
        FilePages {
            file: Arc::clone(&self.file),
            pages: crate::tracedat::DatPages::plain(at(from), to.map_or(self.end, at), self.page_size, endian, buf),
            path: self.path.clone(),
        }
    }
}

impl PageSource for RawPages {
    fn next_page(&mut self) -> Result<Option<&[u8]>, Error> {
        RawPages::next_page(self)
    }
    fn is_live(&self) -> bool {
        !self.is_regular()
    }
    fn poll_fd(&self) -> Option<i32> {
        self.is_live().then(|| self.fd())
    }
    fn file_range(&self) -> Option<FileRange> {
        let (file, path, page_size) = self.copy_file()?;
        let end = file.metadata().ok()?.len();
        Some(FileRange { file: file.into(), path: path.into(), start: 0, end, page_size })
    }
}

/// A CPU's pages in a trace.dat (each CPU reads through its own handle).
pub(crate) struct FilePages {
    /// The trace.dat, opened for this CPU (reads give their offset, so
    /// readers of several parts of it may share it).
    pub(crate) file: Arc<std::fs::File>,
    /// Where the CPU's pages are in it.
    pub(crate) pages: crate::tracedat::DatPages,
    /// The file's name, for messages.
    pub(crate) path: std::path::PathBuf,
}

impl PageSource for FilePages {
    fn next_page(&mut self) -> Result<Option<&[u8]>, Error> {
        let path = &self.path;
        self.pages.next_page(&mut &*self.file).map_err(|e| Error::Format {
            path: path.clone(),
            line: 0,
            what: format!("{e}"),
        })
    }
    fn is_live(&self) -> bool {
        false
    }
    fn poll_fd(&self) -> Option<i32> {
        None
    }
    fn into_buffer(self: Box<Self>) -> Vec<u8> {
        self.pages.into_buffer()
    }
    fn file_range(&self) -> Option<FileRange> {
        let (start, end) = self.pages.plain_range()?;
        let (file, path, page_size) = (Arc::clone(&self.file), self.path.clone(), self.pages.page_size());
        Some(FileRange { file, path, start, end, page_size })
    }
}

/// One CPU's records, in time order, from its pages (a [`PageSource`]):
/// what the merge across CPUs takes from.
pub(crate) struct CpuPages {
    /// The CPU.
    pub(crate) cpu: u32,
    /// Which of the input's buffers the pages come from (a trace.dat may
    /// hold several; 0 otherwise).
    pub(crate) buffer: u32,
    src: Box<dyn PageSource>,
    layout: PageLayout,
    endian: Endian,
    page: Vec<u8>,
    have_page: bool,
    /// The walk over `page` (its header checked once), and where its
    /// committed data is.
    walk: Walk,
    data: (usize, usize),
    peeked: Option<Peeked>,
    /// The record [`take`](Self::take) handed out last, for
    /// [`untake`](Self::untake): its timestamp, place, and the page count
    /// then (a later page makes the place meaningless).
    taken: Option<(u64, usize, usize, u64)>,
    /// What was read so far.
    pub(crate) counts: Counts,
    /// Live buffer: "empty for now" is Pending (follow) rather than the end.
    pub(crate) follow: bool,
    /// The first read error; the stream then ends.
    pub(crate) error: Option<Error>,
    ended: bool,
    /// A file's next page, read ahead: its stamp ends this page's range
    /// of times ([`time_range_end`]); or the error reading it, told once
    /// this page is read.
    ahead: Vec<u8>,
    have_ahead: bool,
    ahead_err: Option<Error>,
    /// The time of the last record read (a file's times only go forward).
    last_ts: u64,
    /// The first page skipped of each kind (damaged, bad times): its
    /// number (from 1) and what was wrong, for the problem counts.
    pub(crate) first_damage: Option<(u64, PageError)>,
    /// See `first_damage`.
    pub(crate) first_bad_time: Option<(u64, PageError)>,
    /// Items from this time on are not its (the end of a time slice).
    end: Option<u64>,
}

impl CpuPages {
    /// The records of CPU `cpu`'s pages from `src`, decoded with `layout`
    /// in byte order `endian`.
    pub(crate) fn new(cpu: u32, src: Box<dyn PageSource>, layout: PageLayout, endian: Endian) -> Self {
        CpuPages {
            cpu,
            buffer: 0,
            src,
            layout,
            endian,
            page: Vec::new(),
            have_page: false,
            walk: Walk::default(),
            data: (0, 0),
            peeked: None,
            taken: None,
            counts: Counts::default(),
            follow: false,
            error: None,
            ended: false,
            ahead: Vec::new(),
            have_ahead: false,
            ahead_err: None,
            last_ts: 0,
            first_damage: None,
            first_bad_time: None,
            end: None,
        }
    }

    /// Where its pages lie in a file, when each can be read on its own
    /// ([`PageSource::file_range`]).
    #[cfg(feature = "slices")]
    pub(crate) fn file_range(&self) -> Option<FileRange> {
        self.src.file_range()
    }

    /// Its items end before time `end` (`None`: at the end of its pages),
    /// as the merge sees them: those at `end` or later are a later time
    /// slice's.
    #[cfg(feature = "slices")]
    pub(crate) fn end_at(&mut self, end: Option<u64>) {
        self.end = end;
    }

    /// Its buffers, for a reader after it ([`CpuPages::with_buffers`]).
    #[cfg(feature = "slices")]
    pub(crate) fn into_buffers(self) -> [Vec<u8>; 3] {
        [self.page, self.ahead, self.src.into_buffer()]
    }

    /// Read pages into these buffers (taken from a reader before it).
    #[cfg(feature = "slices")]
    pub(crate) fn with_buffers(mut self, page: Vec<u8>, ahead: Vec<u8>) -> Self {
        (self.page, self.ahead) = (page, ahead);
        self
    }

    /// Its pages were read by other means (time-sliced reading): it ends,
    /// with `counts` of what they held.
    #[cfg(feature = "slices")]
    pub(crate) fn read_elsewhere(&mut self, counts: Counts) {
        self.counts = counts;
        self.ended = true;
    }

    /// Start as if the record before the first page read had been at
    /// `ts`: a reader from a page in the middle checks that page's times
    /// as one from the start would ([`time_range_end`]).
    #[cfg(feature = "slices")]
    pub(crate) fn resume_after(&mut self, ts: u64) {
        self.last_ts = ts;
    }

    /// Read the next page into `page`; `false` when there is none (for
    /// now). A file's (a trace.dat, a copied tree: not the live buffer,
    /// whose next page may not be written yet) is read one page ahead.
    fn load_page(&mut self) -> Result<bool, Error> {
        if self.have_ahead {
            std::mem::swap(&mut self.page, &mut self.ahead);
            self.have_ahead = false;
        } else if let Some(e) = self.ahead_err.take() {
            return Err(e);
        } else {
            let Some(bytes) = self.src.next_page()? else { return Ok(false) };
            self.page.clear();
            self.page.extend_from_slice(bytes);
        }
        if !self.src.is_live() {
            match self.src.next_page() {
                Ok(Some(bytes)) => {
                    self.ahead.clear();
                    self.ahead.extend_from_slice(bytes);
                    self.have_ahead = true;
                }
                Ok(None) => {}
                Err(e) => self.ahead_err = Some(e),
            }
        }
        Ok(true)
    }

    /// The end of the loaded page's range of times (`p`: its header),
    /// for a file; `None` when its stamp is out of order.
    fn range_end(&self, p: &Page<'_>) -> Option<u64> {
        if self.src.is_live() {
            return Some(u64::MAX);
        }
        let next = self.have_ahead.then_some(&self.ahead[..]);
        file_page_end(self.last_ts, p, next, &self.layout, self.endian)
    }

    /// The timestamp of the next item (loading pages as needed); `None` when
    /// this CPU has nothing more for now. Damaged pages sort first so they are
    /// reported where they happen.
    pub(crate) fn peek_ts(&mut self) -> Result<Option<u64>, Error> {
        loop {
            if let Some(p) = self.peeked {
                return Ok(Some(match p {
                    Peeked::Lost { ts, .. } | Peeked::Record { ts, .. } => ts,
                    Peeked::Damaged(_) => 0,
                }));
            }
            if !self.have_page {
                if !self.load_page()? {
                    return Ok(None);
                }
                self.have_page = true;
                self.counts.pages += 1;
                let parsed = Page::parse(&self.page, &self.layout, self.endian).and_then(|p| {
                    // A page without data has no time of its own to check.
                    let end = if p.len == 0 { Some(u64::MAX) } else { self.range_end(&p) };
                    let end = end.ok_or(PageError {
                        offset: self.layout.ts_offset as u32,
                        kind: PageErrorKind::TimeOutOfRange,
                    })?;
                    Ok((p, end))
                });
                match parsed {
                    Ok((p, end)) => {
                        let (w, data) = p.walk_at(Cursor { pos: 0, ts: p.timestamp, lost_done: true });
                        (self.walk, self.data) = (w.until(end), (data.start, data.end));
                        let count = match p.missed {
                            Missed::None => None,
                            Missed::Unknown => Some(None),
                            Missed::Count(n) => Some(Some(n)),
                        };
                        if let Some(count) = count {
                            self.peeked = Some(Peeked::Lost { ts: p.timestamp, count });
                            continue;
                        }
                    }
                    Err(e) => {
                        self.have_page = false;
                        self.peeked = Some(Peeked::Damaged(e));
                        continue;
                    }
                }
            }
            match self.walk.next(self.page.get(self.data.0..self.data.1).unwrap_or(&[])) {
                Some(Ok(r)) => {
                    self.last_ts = r.ts;
                    let start = (r.payload.as_ptr() as usize).saturating_sub(self.page.as_ptr() as usize);
                    let end = start + r.payload.len();
                    self.peeked = Some(Peeked::Record { ts: r.ts, start, end });
                }
                Some(Err(e)) => {
                    self.have_page = false;
                    self.peeked = Some(Peeked::Damaged(e));
                }
                None => self.have_page = false,
            }
        }
    }

    /// The next record without taking it (`None` when the next item is a
    /// loss marker, a damaged page, or nothing).
    pub(crate) fn peek_record(&mut self) -> Result<Option<(u64, &[u8])>, Error> {
        self.peek_ts()?;
        Ok(match self.peeked {
            Some(Peeked::Record { ts, start, end, .. }) => self.page.get(start..end).map(|p| (ts, p)),
            _ => None,
        })
    }

    /// Take the item [`peek_ts`](Self::peek_ts) announced.
    pub(crate) fn take(&mut self) -> Option<CpuItem<'_>> {
        match self.peeked.take()? {
            Peeked::Lost { ts, count } => {
                self.taken = None;
                match count {
                    Some(n) => self.counts.lost += n,
                    None => self.counts.lost_unknown += 1,
                }
                Some(CpuItem::Lost { ts, count })
            }
            Peeked::Damaged(e) => {
                self.taken = None;
                let (cpu, page) = (self.cpu, self.counts.pages);
                match e.kind {
                    // The end of a cut input, not damage: what reads the
                    // input counts the cut.
                    PageErrorKind::Truncated => {
                        self.counts.truncated += 1;
                        log::warn!("cpu{cpu}: its page {page} is cut off: read up to there");
                    }
                    PageErrorKind::TimeOutOfRange => {
                        self.counts.bad_time += 1;
                        self.first_bad_time.get_or_insert((page, e));
                        log::warn!("cpu{cpu}: skipped a page whose times are out of order (its page {page}): {e}");
                    }
                    _ => {
                        self.counts.damaged += 1;
                        self.first_damage.get_or_insert((page, e));
                        log::warn!("cpu{cpu}: skipped a damaged page (its page {page}): {e}");
                    }
                }
                Some(CpuItem::Damaged(e))
            }
            Peeked::Record { ts, start, end } => {
                self.counts.records += 1;
                self.taken = Some((ts, start, end, self.counts.pages));
                Some(CpuItem::Record(Record { ts, payload: self.page.get(start..end)? }))
            }
        }
    }

    /// Give back the record [`take`](Self::take) just handed out: it is
    /// this CPU's next item again. Nothing once another item was peeked or
    /// taken, or another page read, since.
    pub(crate) fn untake(&mut self) {
        let Some((ts, start, end, pages)) = self.taken.take() else { return };
        if self.peeked.is_none() && pages == self.counts.pages {
            self.peeked = Some(Peeked::Record { ts, start, end });
            self.counts.records -= 1;
        }
    }
}

impl crate::merge::CpuStream for CpuPages {
    fn peek(&mut self) -> Peek {
        if self.ended {
            return Peek::End;
        }
        match self.peek_ts() {
            Ok(Some(ts)) if self.end.is_some_and(|end| ts >= end) => Peek::End,
            Ok(Some(ts)) => Peek::Ready(ts),
            // A copy on disk is read to its end; a live buffer is "empty for
            // now" — the end when draining, pending when following.
            Ok(None) if self.follow && self.src.is_live() => Peek::Pending,
            Ok(None) => {
                self.ended = true;
                Peek::End
            }
            Err(e) => {
                self.error.get_or_insert(e);
                self.ended = true;
                Peek::End
            }
        }
    }
}

/// The end of the range of times of page `p` of a file, whose record
/// before was at `before` and whose next page is `next` (its stamp ends
/// the range: [`time_range_end`]); `None` when its stamp is out of order.
pub(crate) fn file_page_end(
    before: u64,
    p: &Page<'_>,
    next: Option<&[u8]>,
    layout: &PageLayout,
    e: Endian,
) -> Option<u64> {
    let next = next.and_then(|n| Page::parse(n, layout, e).ok()).filter(|n| n.len > 0).map(|n| n.timestamp);
    time_range_end(before, p.timestamp, next)
}

/// Sleep until a CPU buffer may have data, a stop was requested (`wake_fd`:
/// [`Stop::wake`](super::stop::Stop::wake)), or `max` passed.
/// poll() readiness on trace_pipe_raw follows `buffer_percent`: the caller
/// bounds the wait (`max`) so that data below the watermark still shows up.
pub(crate) fn wait_for_data(streams: &[CpuPages], wake_fd: Option<i32>, max: std::time::Duration) {
    let ms = max.as_millis().min(i32::MAX as u128) as libc::c_int;
    let mut fds: Vec<libc::pollfd> = streams
        .iter()
        .filter_map(|s| s.src.poll_fd())
        .map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 })
        .collect();
    if let Some(fd) = wake_fd {
        fds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
    }
    // SAFETY: fds is a valid array of pollfd for the call.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}
