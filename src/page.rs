//! Ring-buffer sub-buffer ("page") decoding, zero-copy.
//!
//! A sub-buffer as read from `per_cpu/cpuN/trace_pipe_raw` (or stored in a
//! trace.dat) is a header — a u64 timestamp and a `local_t` commit word — and
//! `commit & 0x7ffffff` bytes of events. Each event starts with a u32 header
//! (`type_len`: 5 bits, `time_delta`: 27 bits, in the kernel's byte order):
//!
//! | type_len | meaning                                                    |
//! |----------|------------------------------------------------------------|
//! | 1..=28   | data, payload `type_len * 4` bytes after the header        |
//! | 0        | data, `array[0]` = payload + 4, payload after `array[0]`   |
//! | 29       | padding: `delta == 0` ends the page, else skip `array[0]+4`|
//! | 30       | time extend: `delta += array[0] << 27`                     |
//! | 31       | absolute time stamp (top 5 bits from the running time)     |
//!
//! Commit-word flags (bits 31 and 30 of the word's low 32 bits, whatever its
//! size: the kernel adds the `int` constants `1 << 31` / `1 << 30` to the
//! `local_t`, so on 64-bit kernels the high half may read as all ones):
//! RB_MISSED_EVENTS says events were lost before this page, RB_MISSED_STORED
//! that their count is stored as one `long` right after the data.
//!
//! [`Page::parse`] checks the header; [`Page::items`] / [`Page::records`]
//! walk the events without allocating. A malformed page yields records up to
//! the damage and then one [`PageError`]; the caller moves on to the next page.

use crate::abi::Endian;
use crate::format::HeaderPage;

/// Valid data length bits of the commit word.
pub(crate) const COMMIT_MASK: u32 = (1 << 27) - 1;
/// Commit-word flag: events were lost between the previous page and this one.
pub const RB_MISSED_EVENTS: u32 = 1 << 31;
/// Commit-word flag: the lost-event count is stored after the data.
pub(crate) const RB_MISSED_STORED: u32 = 1 << 30;

const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
#[cfg(test)]
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
/// Absolute time stamps lack these bits (5.19+): take them from the running time.
const TS_MSB: u64 = 0xf8 << 56;

/// Where a sub-buffer's header fields are, from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    pub(crate) ts_offset: usize,
    pub(crate) commit_offset: usize,
    /// 4 or 8: the kernel's `long` size (also the stored lost-count size).
    pub(crate) commit_size: usize,
    pub(crate) data_offset: usize,
    /// Maximum data bytes (sub-buffer size − data offset).
    pub(crate) data_size: usize,
}

impl PageLayout {
    /// The layout for `long_size`-byte longs (4 or 8) and `subbuf_size`-byte
    /// sub-buffers.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn new(long_size: u32, subbuf_size: u32) -> PageLayout {
        PageLayout::from(&HeaderPage::new(long_size, subbuf_size))
    }

    /// Sub-buffer size: what one read() of trace_pipe_raw should ask for.
    pub fn subbuf_size(&self) -> usize {
        self.data_offset.saturating_add(self.data_size)
    }
}

impl From<&HeaderPage> for PageLayout {
    fn from(h: &HeaderPage) -> PageLayout {
        PageLayout {
            ts_offset: h.timestamp_offset as usize,
            commit_offset: h.commit_offset as usize,
            commit_size: h.commit_size as usize,
            data_offset: h.data_offset as usize,
            data_size: h.data_size as usize,
        }
    }
}

impl From<HeaderPage> for PageLayout {
    fn from(h: HeaderPage) -> PageLayout {
        PageLayout::from(&h)
    }
}

/// Lost events reported by a page's commit flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// Nothing lost before this page.
    None,
    /// Events were lost, the kernel did not store how many.
    Unknown,
    /// This many events were lost.
    Count(u64),
}

/// Why a page (or the rest of it) could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageError {
    /// Byte offset in the page (from its first byte) where it went wrong.
    pub(crate) offset: u32,
    /// What was wrong there.
    pub(crate) kind: PageErrorKind,
}

/// What [`PageError`] found wrong at its offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageErrorKind {
    /// The bytes do not even hold the page header.
    ShortPage,
    /// The layout is unusable (commit size not 4/8, fields out of order).
    BadLayout,
    /// The commit length is larger than the sub-buffer's data area.
    CommitTooLarge,
    /// The bytes end before the committed length (a cut-off page).
    Truncated,
    /// An event runs past the committed data.
    EventOverrun,
    /// A `type_len == 0` event whose length word is below 4.
    BadEventLength,
    /// A record's time outside its page's range: before the page's time
    /// stamp, or after the next page's of the same CPU. The ring buffer
    /// never writes that (ring_buffer.c: the first event of a sub-buffer
    /// has the sub-buffer's stamp, deltas only add, and the next
    /// sub-buffer's stamp is read when the writer moves on to it, after
    /// every event before it), so a delta, time extend or absolute stamp
    /// of the page is damaged, and so is every time after it on the page.
    TimeOutOfRange,
}

impl core::fmt::Display for PageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let what = match self.kind {
            PageErrorKind::ShortPage => "page shorter than its header",
            PageErrorKind::BadLayout => "unusable header_page layout",
            PageErrorKind::CommitTooLarge => "commit length beyond the sub-buffer",
            PageErrorKind::Truncated => "page cut off before its committed length",
            PageErrorKind::EventOverrun => "event runs past the committed data",
            PageErrorKind::BadEventLength => "event with an impossible length",
            PageErrorKind::TimeOutOfRange => "time stamp outside the page's range",
        };
        write!(f, "{what} (at byte {})", self.offset)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for PageError {}

/// One event: its absolute timestamp (in `trace_clock` units) and its
/// payload, which starts with `common_type`. The payload may be longer than
/// the event's fields (rounded up to 4 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Absolute time stamp: the page's time plus every delta, extend and
    /// absolute stamp before the record (kernel/trace/ring_buffer.c).
    pub ts: u64,
    /// The event's bytes, from `common_type` on.
    pub payload: &'a [u8],
}

/// What walking a page yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageItem<'a> {
    /// Events were lost before this page (first item of the page; `ts` is
    /// the page timestamp). `count` is `None` when the kernel did not store it.
    Lost {
        /// The page's time stamp.
        ts: u64,
        /// How many, when the commit word carried the count
        /// (`RB_MISSED_STORED`).
        count: Option<u64>,
    },
    /// A data event.
    Record(Record<'a>),
}

/// Where a walk stopped, to resume it later on the same page bytes without
/// keeping a borrow (see [`Page::records_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Cursor {
    /// Offset in the data area.
    pub(crate) pos: u32,
    /// Running timestamp.
    pub(crate) ts: u64,
    /// The Lost item (if any) was already yielded.
    pub(crate) lost_done: bool,
}

/// A parsed sub-buffer header with a borrow of its data.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// The page timestamp (time of the first event's delta base).
    pub(crate) timestamp: u64,
    /// The committed data length in bytes.
    pub(crate) len: u32,
    /// Events lost before this page, from the commit word's flags.
    pub missed: Missed,
    /// The committed data as far as the bytes go.
    data: &'a [u8],
    /// The bytes end before `len`.
    truncated: bool,
    data_offset: u32,
    endian: Endian,
}

impl<'a> Page<'a> {
    /// Check a sub-buffer's header. `bytes` is normally one whole sub-buffer
    /// (extra bytes are ignored; fewer bytes are decoded as far as they go
    /// and then reported as `PageErrorKind::Truncated`).
    pub fn parse(bytes: &'a [u8], layout: &PageLayout, endian: Endian) -> Result<Page<'a>, PageError> {
        let e = |kind, offset: usize| PageError { offset: u32::try_from(offset).unwrap_or(u32::MAX), kind };
        let l = layout;
        if !matches!(l.commit_size, 4 | 8)
            || l.data_offset < l.commit_offset.saturating_add(l.commit_size)
            || l.data_offset < l.ts_offset.saturating_add(8)
            || l.data_offset > u32::MAX as usize
        {
            return Err(e(PageErrorKind::BadLayout, 0));
        }
        if bytes.len() < l.data_offset {
            return Err(e(PageErrorKind::ShortPage, bytes.len()));
        }
        let timestamp = endian.u64(bytes, l.ts_offset).ok_or(e(PageErrorKind::ShortPage, l.ts_offset))?;
        let word =
            endian.uint(bytes, l.commit_offset, l.commit_size).ok_or(e(PageErrorKind::ShortPage, l.commit_offset))?;
        // Flags are bits 31/30 of the low 32 bits for both word sizes.
        let word = word as u32;
        let len = word & COMMIT_MASK;
        let ulen = len as usize;
        if ulen > l.data_size {
            return Err(e(PageErrorKind::CommitTooLarge, l.commit_offset));
        }
        let end = l.data_offset + ulen;
        let avail = bytes.len().min(end);
        let data = bytes.get(l.data_offset..avail).unwrap_or(&[]);
        let missed = if word & RB_MISSED_EVENTS == 0 {
            Missed::None
        } else if word & RB_MISSED_STORED != 0 {
            match endian.uint(bytes, end, l.commit_size) {
                Some(n) => Missed::Count(n),
                None => Missed::Unknown,
            }
        } else {
            Missed::Unknown
        };
        Ok(Page { timestamp, len, missed, data, truncated: avail < end, data_offset: l.data_offset as u32, endian })
    }

    /// The committed event bytes (shorter than `len` if truncated).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Walk the page: a [`PageItem::Lost`] first if the page says events were
    /// lost, then every record.
    pub fn items(&self) -> Items<'a> {
        Items { rec: self.records(), lost: self.lost_item() }
    }

    /// Resume a walk where [`Items::cursor`] / [`Records::cursor`] left it.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn items_at(&self, c: Cursor) -> Items<'a> {
        Items { rec: self.records_at(c), lost: if c.lost_done { None } else { self.lost_item() } }
    }

    fn lost_item(&self) -> Option<PageItem<'a>> {
        match self.missed {
            Missed::None => None,
            Missed::Unknown => Some(PageItem::Lost { ts: self.timestamp, count: None }),
            Missed::Count(n) => Some(PageItem::Lost { ts: self.timestamp, count: Some(n) }),
        }
    }

    /// Walk the records only (lost-event info is in [`Page::missed`]).
    pub fn records(&self) -> Records<'a> {
        self.records_at(Cursor { pos: 0, ts: self.timestamp, lost_done: false })
    }

    /// The walk from a cursor without the borrow of the page bytes (see
    /// [`Walk`]), and where the committed data is in those bytes.
    pub(crate) fn walk_at(&self, c: Cursor) -> (Walk, core::ops::Range<usize>) {
        let start = self.data_offset as usize;
        let w = Walk {
            pos: c.pos as usize,
            ts: c.ts,
            truncated: self.truncated,
            done: false,
            data_offset: self.data_offset,
            endian: self.endian,
            discarded: 0,
            first: self.timestamp,
            last: u64::MAX,
        };
        (w, start..start + self.data.len())
    }

    /// Resume a record walk at a cursor.
    pub(crate) fn records_at(&self, c: Cursor) -> Records<'a> {
        Records { data: self.data, w: self.walk_at(c).0 }
    }
}

/// Iterator over a page's records: `Ok(Record)` until the data ends, or one
/// `Err` at the first damage (then `None`).
#[derive(Debug, Clone)]
pub struct Records<'a> {
    data: &'a [u8],
    w: Walk,
}

/// A walk over a page's records without the borrow of its bytes: kept next
/// to a page buffer, it goes on from record to record ([`Walk::next`]
/// with the committed data each time) without the header being parsed
/// again.
///
/// A record's time must lie in the page's range ([`PageErrorKind::TimeOutOfRange`]):
/// from the page's time stamp to, when the reader knows it
/// ([`Walk::until`]), the next page's of the same CPU.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Walk {
    pos: usize,
    ts: u64,
    truncated: bool,
    done: bool,
    data_offset: u32,
    endian: Endian,
    discarded: u32,
    /// The page's range of times.
    first: u64,
    last: u64,
}

impl Default for Walk {
    /// A walk over nothing.
    fn default() -> Self {
        Walk {
            pos: 0,
            ts: 0,
            truncated: false,
            done: true,
            data_offset: 0,
            endian: Endian::default(),
            discarded: 0,
            first: 0,
            last: u64::MAX,
        }
    }
}

impl<'a> Records<'a> {
    /// Where the walk is (for [`Page::records_at`]).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn cursor(&self) -> Cursor {
        Cursor { pos: u32::try_from(self.w.pos).unwrap_or(u32::MAX), ts: self.w.ts, lost_done: true }
    }

    /// Discarded events (padding with a non-zero delta) skipped so far.
    #[cfg(test)]
    pub(crate) fn discarded(&self) -> u32 {
        self.w.discarded
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, PageError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.w.next(self.data)
    }
}

impl Walk {
    /// The same walk, its records no later than `next_page`, the time
    /// stamp of the next page of the same CPU (a page without data does
    /// not count: its stamp is not of a write).
    pub(crate) fn until(self, next_page: u64) -> Walk {
        Walk { last: next_page, ..self }
    }

    #[inline(always)]
    fn word(&self, data: &[u8], at: usize) -> Option<u32> {
        let b: [u8; 4] = data.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(self.endian.u32_of(b))
    }

    #[cold]
    fn fail<'a>(&mut self, at: usize, kind: PageErrorKind) -> Option<Result<Record<'a>, PageError>> {
        self.done = true;
        // Running out of bytes on a cut-off page is truncation, not damage.
        let kind = if self.truncated && kind == PageErrorKind::EventOverrun { PageErrorKind::Truncated } else { kind };
        let offset = (self.data_offset as usize).saturating_add(at);
        Some(Err(PageError { offset: u32::try_from(offset).unwrap_or(u32::MAX), kind }))
    }

    /// The next record in `data`, the page's committed data (the range
    /// [`Page::walk_at`] gave, of the same bytes).
    pub(crate) fn next<'a>(&mut self, data: &'a [u8]) -> Option<Result<Record<'a>, PageError>> {
        if self.done {
            return None;
        }
        loop {
            let at = self.pos;
            if at >= data.len() {
                self.done = true;
                return if self.truncated { self.fail(at, PageErrorKind::Truncated) } else { None };
            }
            let Some(h) = self.word(data, at) else { return self.fail(at, PageErrorKind::EventOverrun) };
            let (type_len, delta) =
                if self.endian == Endian::Big { (h >> 27, h & ((1 << 27) - 1)) } else { (h & 0x1f, h >> 5) };
            match type_len {
                1..=28 => {
                    let start = at + 4;
                    let end = start + type_len as usize * 4;
                    let Some(payload) = data.get(start..end) else {
                        return self.fail(at, PageErrorKind::EventOverrun);
                    };
                    self.ts = self.ts.wrapping_add(u64::from(delta));
                    if self.ts < self.first || self.ts > self.last {
                        return self.fail(at, PageErrorKind::TimeOutOfRange);
                    }
                    self.pos = end;
                    return Some(Ok(Record { ts: self.ts, payload }));
                }
                0 => {
                    let Some(len) = self.word(data, at + 4) else { return self.fail(at, PageErrorKind::EventOverrun) };
                    if len < 4 {
                        return self.fail(at, PageErrorKind::BadEventLength);
                    }
                    let start = at + 8;
                    let Some(end) = (at + 4).checked_add(len as usize) else {
                        return self.fail(at, PageErrorKind::EventOverrun);
                    };
                    let Some(payload) = data.get(start..end) else {
                        return self.fail(at, PageErrorKind::EventOverrun);
                    };
                    self.ts = self.ts.wrapping_add(u64::from(delta));
                    if self.ts < self.first || self.ts > self.last {
                        return self.fail(at, PageErrorKind::TimeOutOfRange);
                    }
                    self.pos = end;
                    return Some(Ok(Record { ts: self.ts, payload }));
                }
                TYPE_PADDING => {
                    if delta == 0 {
                        // Null padding: the rest of the page is unused.
                        self.pos = data.len();
                        self.done = true;
                        return None;
                    }
                    // A discarded event: skip it, its delta does not count.
                    let Some(len) = self.word(data, at + 4) else { return self.fail(at, PageErrorKind::EventOverrun) };
                    match (at + 4).checked_add(len as usize) {
                        Some(end) if end <= data.len() => {
                            self.discarded += 1;
                            self.pos = end.max(at + 8);
                        }
                        _ if self.truncated => return self.fail(at, PageErrorKind::Truncated),
                        // Padding running off the committed data is the
                        // end-of-page filler: nothing more to read.
                        _ => {
                            self.pos = data.len();
                            self.done = true;
                            return None;
                        }
                    }
                }
                TYPE_TIME_EXTEND => {
                    let Some(hi) = self.word(data, at + 4) else { return self.fail(at, PageErrorKind::EventOverrun) };
                    self.ts = self.ts.wrapping_add((u64::from(hi) << TS_SHIFT) + u64::from(delta));
                    self.pos = at + 8;
                }
                _ => {
                    // TYPE_TIME_STAMP
                    let Some(hi) = self.word(data, at + 4) else { return self.fail(at, PageErrorKind::EventOverrun) };
                    let mut abs = (u64::from(hi) << TS_SHIFT) + u64::from(delta);
                    let top = self.ts & TS_MSB;
                    if top != 0 {
                        abs |= top;
                        if abs < self.ts {
                            abs = abs.wrapping_add(1 << 59);
                        }
                    }
                    self.ts = abs;
                    self.pos = at + 8;
                }
            }
        }
    }
}

impl core::iter::FusedIterator for Records<'_> {}

/// Iterator over a page's [`PageItem`]s: the lost-events item, then records.
#[derive(Debug, Clone)]
pub struct Items<'a> {
    rec: Records<'a>,
    lost: Option<PageItem<'a>>,
}

impl<'a> Items<'a> {
    /// Where the walk is, the lost-events marker included (for
    /// [`Page::items_at`], to resume a page after a pause).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn cursor(&self) -> Cursor {
        Cursor { lost_done: self.lost.is_none(), ..self.rec.cursor() }
    }
}

impl<'a> Iterator for Items<'a> {
    type Item = Result<PageItem<'a>, PageError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(l) = self.lost.take() {
            return Some(Ok(l));
        }
        Some(self.rec.next()?.map(PageItem::Record))
    }
}

impl core::iter::FusedIterator for Items<'_> {}

/// Parse and walk one page in one call.
#[cfg(test)]
pub(crate) fn decode<'a>(bytes: &'a [u8], layout: &PageLayout, endian: Endian) -> Result<Items<'a>, PageError> {
    Ok(Page::parse(bytes, layout, endian)?.items())
}

/// The end of a page's range of times ([`Walk::until`]), from the ring
/// buffer's rules: each sub-buffer's stamp is read when the writer moves
/// on to it, so on one CPU the stamps of its pages and the times of their
/// records only go forward. `stamp` is the page's, `before` the time of
/// the last record read on this CPU before it (0: none), `next` the stamp
/// of the CPU's next page with data, when known.
///
/// `None`: the page's stamp is out of order, damaged (skip the page).
/// When `stamp` and `next` disagree, the one out of order with the
/// records before is taken for the damaged one: the next page then fails
/// this check in its turn, and this one is read without an end.
pub(crate) fn time_range_end(before: u64, stamp: u64, next: Option<u64>) -> Option<u64> {
    if stamp < before {
        return None;
    }
    match next {
        Some(n) if n >= stamp => Some(n),
        Some(n) if n >= before => None,
        _ => Some(u64::MAX),
    }
}

/// The byte order of a copied tree's raw pages: the one under which a page
/// header makes sense (live data is always native).
pub(crate) fn guess_endian(layout: &PageLayout, page: &[u8]) -> Option<Endian> {
    let ok = |e| Page::parse(page, layout, e).map(|p| p.len > 0).unwrap_or(false);
    match (ok(Endian::Little), ok(Endian::Big)) {
        (true, false) => Some(Endian::Little),
        (false, true) => Some(Endian::Big),
        _ => None,
    }
}

/// Page-building helpers for tests and fuzzing: encode events the way the
/// kernel does.
#[cfg(test)]
pub(crate) mod build {
    use super::*;
    use alloc::vec::Vec;

    /// One event to encode.
    #[derive(Debug, Clone)]
    pub(crate) enum Ev<'p> {
        /// A data event with this delta and payload (length rounded up to 4;
        /// `type_len` form for ≤ 112 bytes unless `force_long`).
        Data {
            /// Time since the previous event, in trace-clock units (27 bits
            /// kept).
            delta: u32,
            /// The event's bytes.
            payload: &'p [u8],
            /// Use the long form (`type_len` 0, length word) even where
            /// the short one fits.
            force_long: bool,
        },
        /// Time extend adding `delta`  (`> 27 bits` allowed).
        Extend(u64),
        /// Absolute time stamp (bits 0..59 stored).
        Stamp(u64),
        /// Discarded event of `len` total bytes (≥ 8) with a non-zero delta.
        Discard(u32),
        /// Null padding (ends the page).
        Null,
        /// A raw header word and array word.
        Raw(u32, Option<u32>),
    }

    /// A sub-buffer under construction.
    #[derive(Debug, Clone)]
    pub(crate) struct PageBuilder {
        pub(crate) layout: PageLayout,
        pub(crate) endian: Endian,
        pub(crate) timestamp: u64,
        data: Vec<u8>,
    }

    impl PageBuilder {
        /// An empty page with this header `layout`, byte order and page
        /// time stamp.
        pub(crate) fn new(layout: PageLayout, endian: Endian, timestamp: u64) -> Self {
            PageBuilder { layout, endian, timestamp, data: Vec::new() }
        }

        fn w32(&mut self, v: u32) {
            let b = match self.endian {
                Endian::Little => v.to_le_bytes(),
                Endian::Big => v.to_be_bytes(),
            };
            self.data.extend_from_slice(&b);
        }

        fn header(&mut self, type_len: u32, delta: u32) {
            let delta = delta & ((1 << 27) - 1);
            let h = match self.endian {
                Endian::Little => (delta << 5) | type_len,
                Endian::Big => (type_len << 27) | delta,
            };
            self.w32(h);
        }

        /// Appends `ev`'s header and body as ring_buffer.c writes them.
        pub(crate) fn push(&mut self, ev: Ev<'_>) -> &mut Self {
            match ev {
                Ev::Data { delta, payload, force_long } => {
                    let padded = payload.len().div_ceil(4) * 4;
                    if padded <= 112 && padded > 0 && !force_long {
                        self.header((padded / 4) as u32, delta);
                    } else {
                        self.header(0, delta);
                        self.w32(padded as u32 + 4);
                    }
                    self.data.extend_from_slice(payload);
                    self.data.resize(self.data.len() + padded - payload.len(), 0);
                }
                Ev::Extend(d) => {
                    self.header(TYPE_TIME_EXTEND, (d & ((1 << 27) - 1)) as u32);
                    self.w32((d >> 27) as u32);
                }
                Ev::Stamp(t) => {
                    self.header(TYPE_TIME_STAMP, (t & ((1 << 27) - 1)) as u32);
                    self.w32(((t >> 27) & 0xffff_ffff) as u32);
                }
                Ev::Discard(len) => {
                    let len = len.max(8) / 4 * 4;
                    self.header(TYPE_PADDING, 1);
                    self.w32(len - 4);
                    self.data.resize(self.data.len() + len as usize - 8, 0xaa);
                }
                Ev::Null => self.header(TYPE_PADDING, 0),
                Ev::Raw(h, a) => {
                    self.w32(h);
                    if let Some(a) = a {
                        self.w32(a);
                    }
                }
            }
            self
        }

        /// Bytes of events so far.
        pub(crate) fn data_len(&self) -> usize {
            self.data.len()
        }

        /// The whole sub-buffer. `commit_flags` are OR-ed into the low 32
        /// bits of the commit word (sign-extended for 8-byte words, as the
        /// kernel's `local_add` of an `int` does); `stored` is written after
        /// the data when given. `len` overrides the commit length.
        pub(crate) fn finish(&self, missed: Missed, len: Option<u32>) -> Vec<u8> {
            let l = self.layout;
            let mut page = alloc::vec![0u8; l.subbuf_size()];
            let dlen = self.data.len().min(l.data_size);
            if let Some(d) = page.get_mut(l.data_offset..l.data_offset + dlen) {
                d.copy_from_slice(&self.data[..dlen]);
            }
            let len = len.unwrap_or(dlen as u32);
            let mut word = len & COMMIT_MASK;
            match missed {
                Missed::None => {}
                Missed::Unknown => word |= RB_MISSED_EVENTS,
                Missed::Count(n) => {
                    word |= RB_MISSED_EVENTS | RB_MISSED_STORED;
                    let at = l.data_offset + len as usize;
                    let b8 = match self.endian {
                        Endian::Little => n.to_le_bytes(),
                        Endian::Big => n.to_be_bytes(),
                    };
                    let b: &[u8] = match (l.commit_size, self.endian) {
                        (8, _) => &b8,
                        (_, Endian::Little) => &b8[..4],
                        (_, Endian::Big) => &b8[4..],
                    };
                    if let Some(d) = page.get_mut(at..at + b.len()) {
                        d.copy_from_slice(b);
                    }
                }
            }
            let word64 =
                if word & RB_MISSED_EVENTS != 0 { u64::from(word) | 0xffff_ffff_0000_0000 } else { u64::from(word) };
            let put = |page: &mut Vec<u8>, off: usize, v: u64, size: usize| {
                let b8 = match self.endian {
                    Endian::Little => v.to_le_bytes(),
                    Endian::Big => v.to_be_bytes(),
                };
                let b: &[u8] = match (size, self.endian) {
                    (8, _) => &b8,
                    (_, Endian::Little) => &b8[..size],
                    (_, Endian::Big) => &b8[8 - size..],
                };
                if let Some(d) = page.get_mut(off..off + size) {
                    d.copy_from_slice(b);
                }
            };
            put(&mut page, l.ts_offset, self.timestamp, 8);
            put(&mut page, l.commit_offset, word64, l.commit_size);
            page
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::{Ev, PageBuilder};
    use super::*;
    use alloc::vec::Vec;

    fn all(page: &[u8], l: &PageLayout, e: Endian) -> (Vec<(u64, Vec<u8>)>, Option<PageError>) {
        let p = Page::parse(page, l, e).unwrap();
        let mut out = Vec::new();
        for r in p.records() {
            match r {
                Ok(r) => out.push((r.ts, r.payload.to_vec())),
                Err(err) => return (out, Some(err)),
            }
        }
        (out, None)
    }

    fn data(delta: u32, payload: &[u8]) -> Ev<'_> {
        Ev::Data { delta, payload, force_long: false }
    }

    /// A page's header makes sense in its own byte order only; an empty
    /// page says nothing.
    #[test]
    fn guess_endian_finds_the_pages_byte_order() {
        let l = PageLayout::new(8, 4096);
        for e in [Endian::Little, Endian::Big] {
            let mut b = PageBuilder::new(l, e, 1000);
            b.push(data(5, b"abcd"));
            assert_eq!(guess_endian(&l, &b.finish(Missed::None, None)), Some(e));
        }
        assert_eq!(guess_endian(&l, &[0u8; 4096]), None);
    }

    #[test]
    fn every_record_type_both_endians_both_longs() {
        for e in [Endian::Little, Endian::Big] {
            for long in [4, 8] {
                let l = PageLayout::new(long, 4096);
                let big = [7u8; 200];
                let mut b = PageBuilder::new(l, e, 1000);
                b.push(data(5, b"abcd"))
                    .push(Ev::Extend(1 << 30))
                    .push(data(3, b"efgh1234"))
                    .push(Ev::Discard(24))
                    .push(Ev::Data { delta: 2, payload: &big, force_long: false })
                    .push(Ev::Data { delta: 0, payload: b"xy", force_long: true })
                    .push(Ev::Stamp(5_000_000_000_000))
                    .push(data(10, b"last"))
                    .push(Ev::Null)
                    .push(data(1, b"never"));
                let page = b.finish(Missed::None, None);
                let (recs, err) = all(&page, &l, e);
                assert_eq!(err, None);
                let ts: Vec<u64> = recs.iter().map(|r| r.0).collect();
                let t1 = 1005 + (1 << 30) + 3;
                assert_eq!(ts, [1005, t1, t1 + 2, t1 + 2, 5_000_000_000_010]);
                assert_eq!(recs[0].1, b"abcd");
                assert_eq!(recs[1].1, b"efgh1234");
                assert_eq!(recs[2].1.len(), 200);
                assert_eq!(recs[3].1, b"xy\0\0");
                let p = Page::parse(&page, &l, e).unwrap();
                let mut it = p.records();
                it.by_ref().for_each(drop);
                assert_eq!(it.discarded(), 1);
            }
        }
    }

    #[test]
    fn abs_stamp_top_bits() {
        // The running time has top bits set: they are carried into the stamp.
        let l = PageLayout::new(8, 4096);
        let base = 0x0800_0000_0000_0000u64 | 1_000;
        let mut b = PageBuilder::new(l, Endian::Little, base);
        b.push(Ev::Stamp(2_000)).push(data(0, b"abcd"));
        let (recs, _) = all(&b.finish(Missed::None, None), &l, Endian::Little);
        assert_eq!(recs[0].0, 0x0800_0000_0000_0000 | 2_000);
        // Went backwards: the stamp wrapped into the next 2^59 period.
        let mut b = PageBuilder::new(l, Endian::Little, base);
        b.push(Ev::Stamp(500)).push(data(0, b"abcd"));
        let (recs, _) = all(&b.finish(Missed::None, None), &l, Endian::Little);
        assert_eq!(recs[0].0, (0x0800_0000_0000_0000 | 500) + (1 << 59));
        // No top bits: the stamp is taken as is.
        let mut b = PageBuilder::new(l, Endian::Little, 9_000);
        b.push(Ev::Stamp(9_500)).push(data(0, b"abcd"));
        let (recs, _) = all(&b.finish(Missed::None, None), &l, Endian::Little);
        assert_eq!(recs[0].0, 9_500);
    }

    #[test]
    fn times_stay_in_the_pages_range() {
        let l = PageLayout::new(8, 4096);
        let page = |evs: &[Ev<'_>]| {
            let mut b = PageBuilder::new(l, Endian::Little, 1_000);
            for e in evs {
                b.push(e.clone());
            }
            b.finish(Missed::None, None)
        };
        let walk = |p: &[u8], until: Option<u64>| {
            let pg = Page::parse(p, &l, Endian::Little).unwrap();
            let (w, r) = pg.walk_at(Cursor { pos: 0, ts: pg.timestamp, lost_done: true });
            let mut w = until.map_or(w, |u| w.until(u));
            let mut out = Vec::new();
            while let Some(x) = w.next(&p[r.clone()]) {
                out.push(x.map(|r| r.ts).map_err(|e| e.kind));
            }
            out
        };
        let good = page(&[data(0, b"abcd"), data(10, b"abcd"), Ev::Extend(1 << 30), data(5, b"abcd")]);
        let all_good = [Ok(1_000), Ok(1_010), Ok(1_000 + 10 + (1 << 30) + 5)];
        assert_eq!(walk(&good, None), all_good);
        // The next page's stamp ends the range: a record after it is
        // damage, and so is the rest of the page.
        assert_eq!(walk(&good, Some(1_000 + (1 << 30) + 15)), all_good);
        assert_eq!(walk(&good, Some(1_000 + (1 << 30))), [Ok(1_000), Ok(1_010), Err(PageErrorKind::TimeOutOfRange)]);
        // An absolute stamp before the page's own.
        let back = page(&[data(0, b"abcd"), Ev::Stamp(999), data(0, b"abcd"), data(1, b"abcd")]);
        assert_eq!(walk(&back, None), [Ok(1_000), Err(PageErrorKind::TimeOutOfRange)]);
    }

    #[test]
    fn a_pages_range_ends_at_the_next_pages_stamp_unless_one_is_out_of_order() {
        // In order: the next stamp ends the range.
        assert_eq!(time_range_end(100, 200, Some(300)), Some(300));
        assert_eq!(time_range_end(100, 200, None), Some(u64::MAX));
        // The stamp goes back before the records read: this page is damaged.
        assert_eq!(time_range_end(250, 200, Some(300)), None);
        // This stamp is after the next one, which follows the records
        // before: this one is damaged (a 405 s span from a 2 s file).
        assert_eq!(time_range_end(100, 9_000_000, Some(300)), None);
        // The next stamp goes back before the records read: it is the
        // damaged one, and this page has no end.
        assert_eq!(time_range_end(100, 200, Some(50)), Some(u64::MAX));
    }

    #[test]
    fn lost_events() {
        for e in [Endian::Little, Endian::Big] {
            for long in [4, 8] {
                let l = PageLayout::new(long, 4096);
                let mut b = PageBuilder::new(l, e, 77);
                b.push(data(1, b"abcd"));
                for (m, want) in
                    [(Missed::None, None), (Missed::Unknown, Some(None)), (Missed::Count(12345), Some(Some(12345)))]
                {
                    let page = b.finish(m, None);
                    let p = Page::parse(&page, &l, e).unwrap();
                    assert_eq!(p.missed, m);
                    assert_eq!(p.len, 8);
                    let items: Vec<_> = p.items().map(Result::unwrap).collect();
                    match want {
                        None => assert_eq!(items.len(), 1),
                        Some(c) => {
                            assert_eq!(items[0], PageItem::Lost { ts: 77, count: c });
                            assert_eq!(items.len(), 2);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn subbuf_sizes() {
        for size in [4096u32, 16384, 65536] {
            let l = PageLayout::new(8, size);
            let mut b = PageBuilder::new(l, Endian::Little, 0);
            let mut n = 0;
            while b.data_len() + 20 <= l.data_size {
                b.push(data(1, b"0123456789abcdef"));
                n += 1;
            }
            let page = b.finish(Missed::None, None);
            assert_eq!(page.len(), size as usize);
            let (recs, err) = all(&page, &l, Endian::Little);
            assert_eq!((recs.len(), err), (n, None));
            assert_eq!(recs.last().unwrap().0, n as u64);
        }
    }

    #[test]
    fn errors() {
        let l = PageLayout::new(8, 4096);
        let e = Endian::Little;
        assert_eq!(Page::parse(&[0; 10], &l, e).unwrap_err().kind, PageErrorKind::ShortPage);
        let mut b = PageBuilder::new(l, e, 0);
        b.push(data(1, b"abcd")).push(data(1, b"efgh"));
        // Commit beyond the data area.
        let page = b.finish(Missed::None, Some(5000));
        assert_eq!(Page::parse(&page, &l, e).unwrap_err().kind, PageErrorKind::CommitTooLarge);
        // Truncated: the records that fit, then Truncated.
        let page = b.finish(Missed::None, None);
        let (recs, err) = all(&page[..16 + 10], &l, e);
        assert_eq!((recs.len(), err.unwrap().kind), (1, PageErrorKind::Truncated));
        let (recs, err) = all(&page[..16 + 16], &l, e);
        assert_eq!((recs.len(), err), (2, None));
        // An event longer than the commit.
        let page = b.finish(Missed::None, Some(12));
        let (recs, err) = all(&page, &l, e);
        assert_eq!(recs.len(), 1);
        assert_eq!(err.unwrap(), PageError { offset: 16 + 8, kind: PageErrorKind::EventOverrun });
        // type_len 0 with a length word below 4.
        let mut b = PageBuilder::new(l, e, 0);
        b.push(Ev::Raw(0, Some(2)));
        let (_, err) = all(&b.finish(Missed::None, None), &l, e);
        assert_eq!(err.unwrap().kind, PageErrorKind::BadEventLength);
        // type_len 0 with a huge length.
        let mut b = PageBuilder::new(l, e, 0);
        b.push(Ev::Raw(0, Some(u32::MAX)));
        let (_, err) = all(&b.finish(Missed::None, None), &l, e);
        assert_eq!(err.unwrap().kind, PageErrorKind::EventOverrun);
        // Time extend cut in half.
        let mut b = PageBuilder::new(l, e, 0);
        b.push(Ev::Raw(30 | (1 << 5), None));
        let (_, err) = all(&b.finish(Missed::None, None), &l, e);
        assert_eq!(err.unwrap().kind, PageErrorKind::EventOverrun);
        // Bad layouts.
        let mut bad = l;
        bad.commit_size = 2;
        assert_eq!(Page::parse(&page, &bad, e).unwrap_err().kind, PageErrorKind::BadLayout);
        let mut bad = l;
        bad.data_offset = 4;
        assert_eq!(Page::parse(&page, &bad, e).unwrap_err().kind, PageErrorKind::BadLayout);
        // Display.
        assert!(!alloc::format!("{}", err.unwrap()).is_empty());
    }

    #[test]
    fn padding_past_commit_ends_page() {
        let l = PageLayout::new(8, 4096);
        let mut b = PageBuilder::new(l, Endian::Little, 0);
        b.push(data(1, b"abcd")).push(Ev::Raw(29 | (1 << 5), Some(4000)));
        let (recs, err) = all(&b.finish(Missed::None, None), &l, Endian::Little);
        assert_eq!((recs.len(), err), (1, None));
    }

    #[test]
    fn resume_at_cursor() {
        let l = PageLayout::new(8, 4096);
        let mut b = PageBuilder::new(l, Endian::Little, 100);
        b.push(data(1, b"aaaa")).push(data(2, b"bbbb")).push(data(3, b"cccc"));
        let page = b.finish(Missed::Unknown, None);
        let p = Page::parse(&page, &l, Endian::Little).unwrap();
        let mut it = p.items();
        assert!(matches!(it.next(), Some(Ok(PageItem::Lost { .. }))));
        assert!(matches!(it.next(), Some(Ok(PageItem::Record(r))) if r.ts == 101));
        let c = it.cursor();
        let rest: Vec<_> = p.items_at(c).map(|i| i.unwrap()).collect();
        assert_eq!(rest.len(), 2);
        assert!(matches!(rest[1], PageItem::Record(r) if r.ts == 106 && r.payload == b"cccc"));
    }

    #[test]
    fn empty_page() {
        let l = PageLayout::new(4, 4096);
        let page = PageBuilder::new(l, Endian::Big, 5).finish(Missed::None, None);
        let p = Page::parse(&page, &l, Endian::Big).unwrap();
        assert_eq!((p.timestamp, p.len, p.items().count()), (5, 0, 0));
    }
}
