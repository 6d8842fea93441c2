//! The Parquet sink (`tr-cat FILE… -o OUT.parquet`, host builds): a
//! recording as the directory LISA's `trace-dump parquet` writes, one
//! `EVENT.parquet` per event that has records (a row per record, in time
//! order: `common_ts`, `common_cpu`, then the format file's fields, its
//! `common_*` ones first, typed as the format file says) and a
//! `meta.json`. Several recordings are a fleet: one `source=NAME/`
//! directory each, which query engines read through hive partitioning.
//! Rows are held per event until a row group fills, and the largest
//! event's rows are written out when all of them together pass a budget,
//! so memory stays bounded whatever the recording's size.

use super::reader::{Entry, Event, ReadOptions, Reader, Session, Text};
use crate::format::{Field, FieldKind, FieldLoc, Ints, Value};
use crate::sys::error::Error;
use parquet::basic::{Compression, Encoding, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::format::SortingColumn;
use parquet::schema::types::{ColumnPath, Type, TypePtr};
use std::collections::{HashMap, VecDeque};
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// Rows of one event held before they are written as a row group.
const GROUP_ROWS: usize = 64 * 1024;
/// Bytes of rows held, all events together, before the largest event's
/// are written out (what bounds the memory with many events).
const HELD_BYTES: usize = 8 << 20;

/// The events whose text is their point: `trace_printk()` and
/// `trace_marker` writes, whose format fields hold a format and its
/// arguments (bprint) or the bytes written, not the message.
const PRINTS: [&str; 3] = ["bprint", "print", "bputs"];
/// The column that holds such an event's text, as the `trace` file prints
/// it.
pub(crate) const TEXT_COLUMN: &str = "text";

/// What a conversion wrote.
#[derive(Debug, Default)]
pub(crate) struct Written {
    /// Records written, over every input.
    pub(crate) rows: u64,
    /// `EVENT.parquet` files written.
    pub(crate) files: usize,
}

/// One recording to convert: the file, and its `source=` name when the
/// conversion has several.
pub(crate) struct Source<'a> {
    /// The recording (a trace.dat or a stream).
    pub(crate) path: &'a Path,
    /// `Some(NAME)`: written under `source=NAME/`.
    pub(crate) name: Option<String>,
}

/// How the column chunks are compressed (`tr-cat --compression`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Codec {
    /// Snappy: fast, what LISA's `trace-dump parquet` writes.
    #[default]
    Snappy,
    /// Zstandard (level 3, the crate's default): smaller files, for a
    /// fleet's storage.
    Zstd,
    /// None.
    Uncompressed,
}

impl Codec {
    /// The names `--compression` takes.
    pub(crate) const NAMES: &'static str = "snappy, zstd or none";
}

impl core::str::FromStr for Codec {
    type Err = String;
    fn from_str(s: &str) -> Result<Codec, String> {
        match s {
            "snappy" => Ok(Codec::Snappy),
            "zstd" => Ok(Codec::Zstd),
            "none" => Ok(Codec::Uncompressed),
            _ => Err(format!("'{s}': the compressions are {}", Codec::NAMES)),
        }
    }
}

impl From<Codec> for Compression {
    fn from(c: Codec) -> Compression {
        match c {
            Codec::Snappy => Compression::SNAPPY,
            Codec::Zstd => Compression::ZSTD(Default::default()),
            Codec::Uncompressed => Compression::UNCOMPRESSED,
        }
    }
}

/// How [`parquet()`] reads and writes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    /// How the column chunks are compressed.
    pub(crate) codec: Codec,
    /// How each recording is read: `kernel` sets the text rules of the
    /// print events' `text` column, as for any read.
    pub(crate) read: ReadOptions,
    /// Threads that write the row groups (`-j`; `None`: one per CPU).
    pub(crate) threads: Option<usize>,
}

/// Converts each of `sources` into the directory `out`, which must not
/// exist yet (nothing is written over). An input with no record writes no
/// event file; its meta.json says so.
pub(crate) fn parquet(sources: &[Source<'_>], out: &Path, o: &Options) -> Result<Written, Error> {
    std::fs::create_dir(out).map_err(|e| Error::io(out, e))?;
    into_dir(sources, out, o)
}

/// [`parquet()`] into `out`, a directory the caller made (empty).
pub(crate) fn into_dir(sources: &[Source<'_>], out: &Path, o: &Options) -> Result<Written, Error> {
    let mut w = Written::default();
    for s in sources {
        let dir = match &s.name {
            Some(n) => {
                let d = out.join(format!("source={n}"));
                std::fs::create_dir(&d).map_err(|e| Error::io(&d, e))?;
                d
            }
            None => out.to_path_buf(),
        };
        let one = convert(s.path, &dir, o)?;
        w.rows += one.rows;
        w.files += one.files;
    }
    Ok(w)
}

/// One recording into `dir`. This thread reads the records and holds
/// them per event; the row groups, where the time goes (each column read
/// out of the records, encoded, compressed), are written on every CPU,
/// each event's in the order they were cut: the files are the same
/// whatever the threads.
fn convert(path: &Path, dir: &Path, o: &Options) -> Result<Written, Error> {
    let mut r = Reader::trace_dat(path, &o.read)?;
    let threads = super::threads(o.threads);
    let groups = Groups { q: Mutex::default(), cv: Condvar::new() };
    let workers: Vec<crate::sys::thread::Job<'_>> = if threads > 1 {
        (0..threads).map(|_| Box::new(|| groups.work()) as crate::sys::thread::Job<'_>).collect()
    } else {
        Vec::new()
    };
    let read = crate::sys::thread::scope(workers, |started| {
        let read = read_into(&mut r, dir, o, &groups, started > 0);
        groups.close();
        read
    });
    let (tables, range, lost) = read?;
    groups.failed()?;
    let mut w = Written::default();
    let mut done = Vec::with_capacity(tables.len());
    for t in tables {
        w.rows += t.total;
        w.files += 1;
        done.push((t.id, t.file.clone(), t.total));
        t.close()?;
    }
    let meta = meta_json(r.session(), &done, range, &lost, &r.problems());
    let p = dir.join("meta.json");
    let mut f = crate::sys::record::create_output(&p)?;
    f.write_all(meta.as_bytes()).map_err(|e| Error::io(&p, e))?;
    Ok(w)
}

/// What [`read_into`] read: the tables, the range of times, the events
/// lost per CPU.
type Read = (Vec<Table>, Option<(u64, u64)>, Vec<u64>);

/// Read every record of `r` into its event's table, handing each row
/// group to `groups` as it fills (`pool`: to its threads; else written
/// here).
fn read_into(r: &mut Reader, dir: &Path, o: &Options, groups: &Groups, pool: bool) -> Result<Read, Error> {
    let (session, mut entries) = r.split();
    let mut text = session.text();
    let mut tables: Vec<Table> = Vec::new();
    // Format id -> index into `tables`.
    let mut by_id: HashMap<u32, usize> = HashMap::new();
    let mut held = 0usize;
    let mut lost = vec![0u64; session.cpus() as usize];
    let mut range: Option<(u64, u64)> = None;
    let hand = |g: Option<Group>| match g {
        Some(g) if pool => groups.add(g),
        Some(g) => g.write(),
        None => Ok(()),
    };
    while let Some(e) = entries.next_entry() {
        match e {
            Entry::Event(ev) => {
                let id = ev.format().id;
                let i = match by_id.get(&id) {
                    Some(&i) => i,
                    None => {
                        let t = Table::new(&ev, session.trace().endian, dir, &tables, o.codec)?;
                        tables.push(t);
                        by_id.insert(id, tables.len() - 1);
                        tables.len() - 1
                    }
                };
                let Some(t) = tables.get_mut(i) else { continue };
                let before = t.held;
                t.push(&ev, &mut text);
                held += t.held - before;
                if t.rows.len() == GROUP_ROWS {
                    held -= t.held;
                    hand(t.cut())?;
                }
                if held > HELD_BYTES {
                    if let Some(t) = tables.iter_mut().max_by_key(|t| t.held) {
                        held -= t.held;
                        hand(t.cut())?;
                    }
                }
                range = Some(range.map_or((ev.ts(), ev.ts()), |(a, _)| (a, ev.ts())));
            }
            Entry::Lost { cpu, count, .. } => {
                if let Some(n) = lost.get_mut(cpu as usize) {
                    *n += count.unwrap_or(0);
                }
            }
            Entry::Damaged { .. } | Entry::Unknown { .. } => {}
        }
    }
    for t in &mut tables {
        hand(t.cut())?;
    }
    Ok((tables, range, lost))
}

/// Row groups cut and not written yet, for the threads that write them.
struct Groups {
    q: Mutex<Queue>,
    cv: Condvar,
}

#[derive(Default)]
struct Queue {
    groups: VecDeque<Group>,
    /// No group comes any more.
    closed: bool,
    /// The first write that failed.
    failed: Option<Error>,
    /// Bytes of the groups queued.
    bytes: usize,
}

/// Bytes of row groups queued at most (and one group, however large):
/// what bounds the memory the reading thread can get ahead by, besides
/// the rows it holds ([`HELD_BYTES`]) and the groups being written.
const QUEUED_BYTES: usize = 2 << 20;

impl Groups {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'g>(&self, g: MutexGuard<'g, Queue>) -> MutexGuard<'g, Queue> {
        self.cv.wait(g).unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue `g` for a writing thread (waiting while many are queued);
    /// the error of a write that failed, if one did.
    fn add(&self, g: Group) -> Result<(), Error> {
        let mut q = self.lock();
        while !q.groups.is_empty() && q.bytes + g.bytes() > QUEUED_BYTES && q.failed.is_none() {
            q = self.wait(q);
        }
        if let Some(e) = q.failed.take() {
            return Err(e);
        }
        q.bytes += g.bytes();
        q.groups.push_back(g);
        self.cv.notify_all();
        Ok(())
    }

    /// Everything is queued: the threads end once it is written.
    fn close(&self) {
        self.lock().closed = true;
        self.cv.notify_all();
    }

    /// A writing thread: groups in the order they were queued (so that an
    /// event's are taken in order, and the one a group waits for is being
    /// written), until the queue is closed and empty.
    fn work(&self) {
        loop {
            let mut q = self.lock();
            while q.groups.is_empty() && !q.closed {
                q = self.wait(q);
            }
            let Some(g) = q.groups.pop_front() else { return };
            q.bytes -= g.bytes();
            self.cv.notify_all();
            drop(q);
            if let Err(e) = g.write() {
                let mut q = self.lock();
                q.failed.get_or_insert(e);
                self.cv.notify_all();
            }
        }
    }

    /// The first write that failed.
    fn failed(&self) -> Result<(), Error> {
        self.lock().failed.take().map_or(Ok(()), Err)
    }
}

/// How a column's values are stored: the Parquet type a field of the
/// format file maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An integer of 8, 16 or 32 bits, stored as INT32.
    Int32 {
        /// Its width.
        bits: u8,
        /// `signed:1`.
        signed: bool,
    },
    /// A 64-bit integer, stored as INT64.
    Int64 {
        /// `signed:1`.
        signed: bool,
    },
    /// `bool`.
    Bool,
    /// `char[]`, `__data_loc char[]`: UTF-8 text (bytes that are not
    /// UTF-8 as U+FFFD).
    Str,
    /// Any other array of 1, 2, 4 or 8-byte integers: a list of them.
    List {
        /// Bytes per element.
        elem: u8,
        /// `signed:1`.
        signed: bool,
    },
    /// Anything else: the field's bytes.
    Bytes,
}

impl Kind {
    /// The column kind of a format file's field, by the rule
    /// [`Field::typed`] reads its values with.
    pub(crate) fn of(f: &Field) -> Kind {
        let int = |size: u32, signed| match size {
            1 | 2 | 4 => Some(Kind::Int32 { bits: (size * 8) as u8, signed }),
            8 => Some(Kind::Int64 { signed }),
            _ => None,
        };
        match f.kind {
            FieldKind::Scalar if f.type_name == "bool" && f.size == 1 => Kind::Bool,
            FieldKind::Scalar => int(f.size, f.signed).unwrap_or(Kind::Bytes),
            FieldKind::Array { .. } | FieldKind::DataLoc { .. } | FieldKind::RelLoc { .. }
                if f.type_name.contains("char") =>
            {
                Kind::Str
            }
            FieldKind::Array { elem_size, .. } | FieldKind::DataLoc { elem_size } | FieldKind::RelLoc { elem_size } => {
                match elem_size {
                    1 | 2 | 4 | 8 => Kind::List { elem: elem_size as u8, signed: f.signed },
                    _ => Kind::Bytes,
                }
            }
        }
    }

    /// The Parquet schema node of a column of this kind named `name`.
    fn node(self, name: &str, rep: Repetition) -> parquet::errors::Result<Type> {
        let int = |n: &str, bits: u8, signed: bool, rep| {
            let phys = if bits == 64 { Physical::INT64 } else { Physical::INT32 };
            Type::primitive_type_builder(n, phys)
                .with_repetition(rep)
                .with_logical_type(Some(LogicalType::Integer { bit_width: bits as i8, is_signed: signed }))
                .build()
        };
        match self {
            Kind::Int32 { bits, signed } => int(name, bits, signed, rep),
            Kind::Int64 { signed } => int(name, 64, signed, rep),
            Kind::Bool => Type::primitive_type_builder(name, Physical::BOOLEAN).with_repetition(rep).build(),
            Kind::Str => Type::primitive_type_builder(name, Physical::BYTE_ARRAY)
                .with_repetition(rep)
                .with_logical_type(Some(LogicalType::String))
                .build(),
            Kind::Bytes => Type::primitive_type_builder(name, Physical::BYTE_ARRAY).with_repetition(rep).build(),
            // The LIST layout of the Parquet spec (three levels).
            Kind::List { elem, signed } => {
                let e = int("element", elem * 8, signed, Repetition::REQUIRED)?;
                let list = Type::group_type_builder("list")
                    .with_repetition(Repetition::REPEATED)
                    .with_fields(vec![Arc::new(e)]);
                Type::group_type_builder(name)
                    .with_repetition(rep)
                    .with_logical_type(Some(LogicalType::List))
                    .with_fields(vec![Arc::new(list.build()?)])
                    .build()
            }
        }
    }
}

/// Where a column's value comes from.
#[derive(Debug, Clone, Copy)]
enum Src {
    Ts,
    Cpu,
    /// A scalar field of 1, 2, 4 or 8 bytes (most columns): read in place.
    Int(FieldLoc),
    /// A string field (`char[N]`, `__data_loc char[]`): up to its first
    /// NUL.
    Str(FieldLoc),
    /// An array of integers (`unsigned long args[6]`, `__data_loc u32[]`):
    /// its bytes, read as the column's elements.
    List(FieldLoc),
    /// Any other field of the format: an index into its `common` then
    /// `fields`.
    Field(usize),
    /// The print fmt's text (bprint, print, bputs).
    Text,
}

/// A column's rows held until the next row group.
struct Column {
    from: Src,
    kind: Kind,
    /// Definition levels (`None`: a required column, which has none).
    def: Option<Vec<i16>>,
    /// Repetition levels of a list.
    rep: Vec<i16>,
    i32s: Vec<i32>,
    i64s: Vec<i64>,
    bools: Vec<bool>,
    /// Strings and byte values: one buffer, and where each value ends in
    /// it (no allocation per value; sliced into values at the write).
    arena: Vec<u8>,
    ends: Vec<usize>,
}

impl Column {
    fn new(from: Src, kind: Kind, required: bool) -> Column {
        let def = (!required).then(Vec::new);
        Column {
            from,
            kind,
            def,
            rep: Vec::new(),
            i32s: Vec::new(),
            i64s: Vec::new(),
            bools: Vec::new(),
            arena: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// Adds one row's integer (`None`: null, the record too short for
    /// the field); returns the bytes it holds.
    fn push_int(&mut self, v: Option<i64>) -> usize {
        let size = match (self.kind, v) {
            // An unsigned 32-bit value is kept as its bits (the Parquet
            // rule for UINT_32).
            (Kind::Int32 { .. }, Some(v)) => {
                self.i32s.push(v as i32);
                4
            }
            (Kind::Int64 { .. }, Some(v)) => {
                self.i64s.push(v);
                8
            }
            (Kind::Bool, Some(v)) => {
                self.bools.push(v != 0);
                1
            }
            _ => 0,
        };
        if let Some(d) = &mut self.def {
            d.push(i16::from(v.is_some()));
        }
        size + 2
    }

    /// Adds a string or byte value to the arena.
    fn push_bytes(&mut self, b: &[u8]) -> usize {
        self.arena.extend_from_slice(b);
        self.ends.push(self.arena.len());
        b.len() + 8
    }

    /// Adds one row's value (`None`: null, the record too short for the
    /// field); returns the bytes it holds.
    fn push(&mut self, v: Option<Value<'_>>, e: crate::abi::Endian) -> usize {
        let present = v.is_some();
        let mut size = 2;
        match (self.kind, v) {
            (_, None) => {}
            (Kind::Int32 { .. } | Kind::Int64 { .. } | Kind::Bool, Some(v)) => return self.push_int(v.as_i64()),
            (Kind::Str, Some(Value::Str(b))) => size += self.push_bytes(String::from_utf8_lossy(b).as_bytes()),
            (Kind::Str | Kind::Bytes, Some(v)) => {
                size += match v {
                    Value::Str(b) | Value::Bytes(b) => self.push_bytes(b),
                    Value::Ints(a) => self.push_bytes(a.bytes()),
                    Value::Signed(n) => self.push_bytes(n.to_string().as_bytes()),
                    Value::Unsigned(n) => self.push_bytes(n.to_string().as_bytes()),
                };
            }
            (Kind::List { elem, signed }, Some(v)) => {
                let b = match v {
                    Value::Bytes(b) | Value::Str(b) => b,
                    Value::Ints(a) => a.bytes(),
                    _ => &[][..],
                };
                let n = b.len() / elem as usize;
                if n == 0 {
                    // An empty list: defined at the list's level.
                    self.rep.push(0);
                    if let Some(d) = &mut self.def {
                        d.push(1);
                    }
                    return size;
                }
                match Ints::new(b, u32::from(elem), signed, e) {
                    Some(a) if elem == 8 => self.i64s.extend(a.iter()),
                    Some(a) => self.i32s.extend(a.iter().map(|x| x as i32)),
                    // Single bytes (`u8 x[N]`).
                    None if signed => self.i32s.extend(b.iter().map(|&x| i32::from(x as i8))),
                    None => self.i32s.extend(b.iter().map(|&x| i32::from(x))),
                }
                // The first item starts a row (0); the others repeat at
                // the list's level (1).
                self.rep.push(0);
                self.rep.resize(self.rep.len() + n - 1, 1);
                if let Some(d) = &mut self.def {
                    d.resize(d.len() + n, 2);
                }
                return size + n * 10;
            }
        }
        if let Some(d) = &mut self.def {
            d.push(i16::from(present));
        }
        if matches!(self.kind, Kind::List { .. }) {
            self.rep.push(0);
        }
        size
    }

    /// Reads this column's values out of the held records (a print
    /// event's text is already in). An integer column with no null is one
    /// loop with no definition levels of its own (the write passes `ones`);
    /// one null, and it is read again a value at a time.
    fn fill(&mut self, h: &Held<'_>) {
        let e = h.endian;
        match (self.from, self.kind) {
            (Src::Ts, _) => self.i64s.extend(h.rows.iter().map(|r| r.ts as i64)),
            (Src::Cpu, _) => self.i32s.extend(h.rows.iter().map(|r| r.cpu as i32)),
            (Src::Int(loc), kind) => {
                let mut null = false;
                let mut get = |(_, rec): (&Row, &[u8])| {
                    loc.int(rec, e).unwrap_or_else(|| {
                        null = true;
                        0
                    })
                };
                match kind {
                    Kind::Int64 { .. } => self.i64s.extend(h.each().map(&mut get)),
                    Kind::Bool => self.bools.extend(h.each().map(|x| get(x) != 0)),
                    // An unsigned 32-bit value is kept as its bits (the
                    // Parquet rule for UINT_32).
                    _ => self.i32s.extend(h.each().map(|x| get(x) as i32)),
                }
                if null {
                    self.clear();
                    for (_, rec) in h.each() {
                        self.push_int(loc.int(rec, e));
                    }
                }
            }
            (Src::Str(loc), _) => {
                for (_, rec) in h.each() {
                    let v = loc.bytes(rec, e).map(|b| Value::Str(b.split(|&c| c == 0).next().unwrap_or(b)));
                    self.push(v, e);
                }
            }
            (Src::List(loc), _) => {
                for (_, rec) in h.each() {
                    self.push(loc.bytes(rec, e).map(Value::Bytes), e);
                }
            }
            (Src::Field(i), _) => {
                for (_, rec) in h.each() {
                    let v = h.fields.get(i).and_then(|fl| fl.typed(rec, e));
                    self.push(v, e);
                }
            }
            (Src::Text, _) => {}
        }
    }

    /// Writes the values held as this column's chunk of a row group.
    /// `ones`: a definition level of 1 for each row, for an optional column
    /// filled with no null.
    fn write(
        &mut self,
        w: &mut parquet::file::writer::SerializedColumnWriter<'_>,
        ones: &[i16],
    ) -> parquet::errors::Result<()> {
        let def = self.def.as_deref().map(|d| if d.is_empty() { ones } else { d });
        let rep = matches!(self.kind, Kind::List { .. }).then_some(&self.rep[..]);
        match self.kind {
            Kind::Int32 { .. } | Kind::List { elem: 1 | 2 | 4, .. } => {
                w.typed::<Int32Type>().write_batch(&self.i32s, def, rep)?;
            }
            Kind::Int64 { .. } | Kind::List { .. } => {
                w.typed::<Int64Type>().write_batch(&self.i64s, def, rep)?;
            }
            Kind::Bool => {
                w.typed::<BoolType>().write_batch(&self.bools, def, rep)?;
            }
            Kind::Str | Kind::Bytes => {
                let all = ByteArray::from(std::mem::take(&mut self.arena));
                let mut start = 0;
                let values: Vec<ByteArray> = (self.ends.iter())
                    .map(|&end| {
                        let v = all.slice(start, end - start);
                        start = end;
                        v
                    })
                    .collect();
                w.typed::<ByteArrayType>().write_batch(&values, def, rep)?;
            }
        }
        // Given back, not kept: a column is filled only while its group
        // is written, and every column of every table keeping the most it
        // ever held would add up past the memory budget.
        *self = self.empty();
        Ok(())
    }

    /// A column like this one, with no value.
    fn empty(&self) -> Column {
        Column::new(self.from, self.kind, self.def.is_none())
    }

    fn clear(&mut self) {
        if let Some(d) = &mut self.def {
            d.clear();
        }
        self.rep.clear();
        self.i32s.clear();
        self.i64s.clear();
        self.bools.clear();
        self.arena.clear();
        self.ends.clear();
    }
}

/// One held record of a [`Table`]: its time, CPU, and the length of its
/// bytes, which follow the previous record's in the table's `recs`.
struct Row {
    ts: u64,
    cpu: u32,
    len: u32,
}

/// One event's file, on the reading thread's side: the records held for
/// its next row group. The records are kept as their bytes, and each
/// column is read out of them in one pass when the group is written
/// ([`Sink::write`]): a loop per column is what keeps the size-optimised
/// build fast (a value at a time through every column was most of the
/// conversion's time).
struct Table {
    id: u32,
    /// The file's name in its directory (`sched_switch.parquet`).
    file: String,
    /// Its writer, shared with the threads that write its row groups.
    sink: Arc<Shared>,
    endian: crate::abi::Endian,
    /// The column of a print event's text, rendered as each record comes:
    /// the values of the rows held.
    text: Option<Column>,
    rows: Vec<Row>,
    recs: Vec<u8>,
    /// Bytes held (records, rows and texts).
    held: usize,
    /// Rows written and held.
    total: u64,
    /// Row groups cut.
    groups: u64,
}

/// An event's file on the writing side: one row group's write at a time,
/// in the order they were cut.
struct Shared {
    sink: Mutex<Sink>,
    /// The group written last changed (`Sink::next`).
    cv: Condvar,
}

struct Sink {
    path: PathBuf,
    writer: SerializedFileWriter<BufWriter<std::fs::File>>,
    cols: Vec<Column>,
    /// The format's fields (`common`, then its own), as `Src::Field`
    /// indexes them.
    fields: Vec<Field>,
    endian: crate::abi::Endian,
    text_col: Option<usize>,
    /// The number of the row group to write next.
    next: u64,
}

/// One row group of a table, cut: its rows, to be written as its table's
/// group number `seq`.
struct Group {
    sink: Arc<Shared>,
    seq: u64,
    rows: Vec<Row>,
    recs: Vec<u8>,
    text: Option<Column>,
}

impl Table {
    /// The file of `ev`'s event in `dir`, created at its first record.
    fn new(
        ev: &Event<'_>,
        endian: crate::abi::Endian,
        dir: &Path,
        others: &[Table],
        codec: Codec,
    ) -> Result<Table, Error> {
        let f = ev.format();
        // Two systems may name an event alike (a kprobe named as a
        // tracepoint): the second file says its system too.
        let mut file = format!("{}.parquet", f.name);
        if others.iter().any(|t| t.file == file) {
            file = format!("{}.{}.parquet", f.system, f.name);
        }
        let path = dir.join(&file);
        let (schema, cols) = schema(f).map_err(|e| parquet_error(&path, e))?;
        let out = crate::sys::record::create_output(&path)?;
        // A recording can have hundreds of events, each a file open at
        // once: a small buffer each (the column writer gathers pages).
        let props = Arc::new(properties(codec, &columns(f)));
        let writer = SerializedFileWriter::new(BufWriter::with_capacity(64 << 10, out), schema, props)
            .map_err(|e| parquet_error(&path, e))?;
        let text_col = cols.iter().position(|c| matches!(c.from, Src::Text));
        let sink = Sink {
            path,
            writer,
            fields: f.common.iter().chain(&f.fields).cloned().collect(),
            endian,
            text_col,
            next: 0,
            cols,
        };
        Ok(Table {
            id: f.id,
            file,
            text: text_col.and_then(|i| sink.cols.get(i)).map(Column::empty),
            sink: Arc::new(Shared { sink: Mutex::new(sink), cv: Condvar::new() }),
            endian,
            rows: Vec::new(),
            recs: Vec::new(),
            held: 0,
            total: 0,
            groups: 0,
        })
    }

    fn push(&mut self, ev: &Event<'_>, text: &mut Text<'_>) {
        let payload = ev.payload();
        self.recs.extend_from_slice(payload);
        // A record is at most a page long.
        self.rows.push(Row { ts: ev.ts(), cpu: ev.cpu(), len: payload.len() as u32 });
        self.held += payload.len() + core::mem::size_of::<Row>();
        if let Some(c) = &mut self.text {
            let mut s = String::new();
            text.body(ev, &mut s);
            self.held += c.push(Some(Value::Str(s.as_bytes())), self.endian);
        }
        self.total += 1;
    }

    /// The rows held, as a row group to write; `None` when there are none.
    fn cut(&mut self) -> Option<Group> {
        if self.rows.is_empty() {
            return None;
        }
        let seq = self.groups;
        self.groups += 1;
        self.held = 0;
        // Given back, not kept: the group holds them until it is written.
        Some(Group {
            sink: Arc::clone(&self.sink),
            seq,
            rows: std::mem::take(&mut self.rows),
            recs: std::mem::take(&mut self.recs),
            text: self.text.as_mut().map(|c| {
                let e = c.empty();
                std::mem::replace(c, e)
            }),
        })
    }

    /// Every group written (its threads joined): the file's end.
    fn close(self) -> Result<(), Error> {
        // Every group holds the sink until it is written, and all are.
        let Ok(shared) = Arc::try_unwrap(self.sink) else {
            let busy = std::io::Error::other("its row groups are still being written");
            return Err(Error::io(&self.file, busy));
        };
        let sink = shared.sink.into_inner().unwrap_or_else(PoisonError::into_inner);
        let path = sink.path;
        let mut w = sink.writer.into_inner().map_err(|e| parquet_error(&path, e))?;
        w.flush().map_err(|e| Error::io(&path, e))
    }
}

impl Group {
    /// The memory it holds, about.
    fn bytes(&self) -> usize {
        self.recs.len()
            + self.rows.len() * core::mem::size_of::<Row>()
            + self.text.as_ref().map_or(0, |t| t.arena.len())
    }

    /// Written as its table's next row group, once the groups cut before
    /// it are.
    fn write(self) -> Result<(), Error> {
        let Group { sink, seq, rows, recs, text } = self;
        let mut g = sink.sink.lock().unwrap_or_else(PoisonError::into_inner);
        while g.next != seq {
            g = sink.cv.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
        let res = g.write(&rows, &recs, text);
        g.next += 1;
        drop(g);
        sink.cv.notify_all();
        res
    }
}

impl Sink {
    /// `rows` (their records' bytes one after the other in `recs`; the
    /// text column's values in `text`) as a row group.
    fn write(&mut self, rows: &[Row], recs: &[u8], text: Option<Column>) -> Result<(), Error> {
        let n = rows.len();
        if let (Some(c), Some(t)) = (self.text_col.and_then(|i| self.cols.get_mut(i)), text) {
            *c = t;
        }
        let held = Held { rows, recs, fields: &self.fields, endian: self.endian };
        // The definition levels of a column with no null.
        let ones = vec![1i16; n];
        let (writer, cols) = (&mut self.writer, &mut self.cols);
        let res = (|| {
            let mut rg = writer.next_row_group()?;
            for c in cols.iter_mut() {
                if let Some(mut w) = rg.next_column()? {
                    c.fill(&held);
                    c.write(&mut w, &ones)?;
                    w.close()?;
                }
            }
            rg.close().map(|_| ())
        })();
        res.map_err(|e| parquet_error(&self.path, e))
    }
}

/// A table's held records, as its columns read them.
struct Held<'a> {
    rows: &'a [Row],
    recs: &'a [u8],
    fields: &'a [Field],
    endian: crate::abi::Endian,
}

impl Held<'_> {
    /// Each row with its record's bytes.
    fn each(&self) -> impl Iterator<Item = (&Row, &[u8])> {
        let mut at = 0usize;
        self.rows.iter().map(move |r| {
            let end = at + r.len as usize;
            let rec = self.recs.get(at..end).unwrap_or_default();
            at = end;
            (r, rec)
        })
    }
}

/// The writer's settings for an event's file of `cols`, chosen for the
/// conversion's speed (it was 1.4x LISA's CPU with the crate's defaults)
/// and the files' size:
/// - integers are stored as deltas (DELTA_BINARY_PACKED), not through a
///   dictionary: hashing every value was a sixth of the time, and time
///   stamps, addresses and counters are mostly distinct. Deltas shrink
///   the rising `common_ts` to a few bits a row;
/// - strings keep a dictionary: comms and names repeat;
/// - min/max statistics, whose per-value comparisons were another sixth,
///   are kept only for `common_ts`, per column chunk, and `common_ts` is
///   declared the rows' order (as LISA does): what lets an engine skip
///   row groups outside a time range.
fn properties(codec: Codec, cols: &[(String, Kind)]) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(codec.into())
        .set_created_by(concat!("trbox ", env!("CARGO_PKG_VERSION")).into())
        .set_max_row_group_size(GROUP_ROWS)
        .set_statistics_enabled(EnabledStatistics::None)
        .set_column_statistics_enabled(ColumnPath::from("common_ts"), EnabledStatistics::Chunk)
        .set_sorting_columns(Some(vec![SortingColumn { column_idx: 0, descending: false, nulls_first: false }]))
        .set_dictionary_enabled(false);
    for (name, kind) in cols {
        let path = ColumnPath::from(name.as_str());
        b = match kind {
            Kind::Int32 { .. } | Kind::Int64 { .. } => b.set_column_encoding(path, Encoding::DELTA_BINARY_PACKED),
            Kind::Str => b.set_column_dictionary_enabled(path, true),
            Kind::Bool | Kind::List { .. } | Kind::Bytes => b,
        };
    }
    b.build()
}

/// The schema of an event's file, and its columns: `common_ts`,
/// `common_cpu`, the format's fields in its order, and the text of a
/// print event.
fn schema(f: &crate::format::EventFormat) -> parquet::errors::Result<(TypePtr, Vec<Column>)> {
    let mut nodes = Vec::new();
    let mut cols = Vec::new();
    let fixed = [
        ("common_ts", Src::Ts, Kind::Int64 { signed: false }),
        ("common_cpu", Src::Cpu, Kind::Int32 { bits: 32, signed: false }),
    ];
    for (name, from, kind) in fixed {
        nodes.push(Arc::new(kind.node(name, Repetition::REQUIRED)?));
        cols.push(Column::new(from, kind, true));
    }
    for (i, fl) in f.common.iter().chain(&f.fields).enumerate() {
        let kind = Kind::of(fl);
        nodes.push(Arc::new(kind.node(&fl.name, Repetition::OPTIONAL)?));
        let from = match (kind, fl.kind) {
            (Kind::Int32 { .. } | Kind::Int64 { .. } | Kind::Bool, FieldKind::Scalar) => Src::Int(fl.loc()),
            // A string field of a fixed size or a data_loc (not ftrace's
            // open `buf[]`, which runs to the record's end).
            (Kind::Str, _) if fl.size > 0 || !matches!(fl.kind, FieldKind::Array { .. }) => Src::Str(fl.loc()),
            (Kind::List { .. }, _) if fl.size > 0 || !matches!(fl.kind, FieldKind::Array { .. }) => Src::List(fl.loc()),
            _ => Src::Field(i),
        };
        cols.push(Column::new(from, kind, false));
    }
    if f.system == "ftrace" && PRINTS.contains(&f.name.as_str()) {
        nodes.push(Arc::new(Kind::Str.node(TEXT_COLUMN, Repetition::OPTIONAL)?));
        cols.push(Column::new(Src::Text, Kind::Str, false));
    }
    let root = Type::group_type_builder(&f.name).with_fields(nodes).build()?;
    Ok((Arc::new(root), cols))
}

/// The column names and kinds an event's file has (what [`parquet()`]
/// writes for it).
pub(crate) fn columns(f: &crate::format::EventFormat) -> Vec<(String, Kind)> {
    let mut v = vec![
        ("common_ts".to_string(), Kind::Int64 { signed: false }),
        ("common_cpu".to_string(), Kind::Int32 { bits: 32, signed: false }),
    ];
    v.extend(f.common.iter().chain(&f.fields).map(|fl| (fl.name.clone(), Kind::of(fl))));
    if f.system == "ftrace" && PRINTS.contains(&f.name.as_str()) {
        v.push((TEXT_COLUMN.to_string(), Kind::Str));
    }
    v
}

fn parquet_error(path: &Path, e: parquet::errors::ParquetError) -> Error {
    Error::io(path, std::io::Error::other(e.to_string()))
}

/// meta.json: LISA's keys (`cpus-count`, `events-info`, `pid-comms`,
/// `symbols-address`, `time-range`, `trace-clock`, `trace-id`) and trbox's
/// (`trbox-kernel-version`, `trbox-lost-events`, `trbox-problems`).
/// `done`: the files written, (format id, file, rows).
fn meta_json(
    s: &Session,
    done: &[(u32, String, u64)],
    range: Option<(u64, u64)>,
    lost: &[u64],
    problems: &crate::problems::Problems,
) -> String {
    use crate::json;
    let mut o = String::new();
    // Writing to a String cannot fail.
    let _ = (|| -> std::fmt::Result {
        let mut m = json::Object::begin(&mut o)?;
        m.uint("cpus-count", u64::from(s.cpus()))?;
        let w = m.key("events-info")?;
        w.write_str("[")?;
        for (i, f) in s.events().iter().enumerate() {
            if i > 0 {
                w.write_str(",")?;
            }
            let mut e = json::Object::begin(&mut *w)?;
            e.string("event", &f.name)?;
            e.key("errors")?.write_str("[]")?;
            match done.iter().find(|d| d.0 == f.id) {
                Some((_, file, rows)) => {
                    e.uint("nr-rows", *rows)?;
                    e.string("path", file)?;
                    e.string("format", "parquet")?;
                }
                None => e.uint("nr-rows", 0)?,
            }
            e.end()?;
        }
        w.write_str("]")?;
        let w = m.key("pid-comms")?;
        w.write_str("[")?;
        for (i, (pid, comm)) in s.trace().cmdlines.iter().enumerate() {
            write!(w, "{}[{pid},", if i > 0 { "," } else { "" })?;
            json::string(&mut *w, comm)?;
            w.write_str("]")?;
        }
        w.write_str("]")?;
        let w = m.key("symbols-address")?;
        w.write_str("[")?;
        if let Some(k) = s.trace().symbols.table() {
            // LISA's shape: [address, [names at it]].
            let mut first = true;
            let mut last: Option<u64> = None;
            for (addr, name) in k.symbols() {
                if last == Some(addr) {
                    w.write_str(",")?;
                } else {
                    if last.is_some() {
                        w.write_str("]]")?;
                    }
                    write!(w, "{}[{addr},[", if first { "" } else { "," })?;
                    first = false;
                }
                json::string(&mut *w, name)?;
                last = Some(addr);
            }
            if last.is_some() {
                w.write_str("]]")?;
            }
        }
        w.write_str("]")?;
        if let Some((a, b)) = range {
            json::uint_array(m.key("time-range")?, [a, b])?;
        }
        m.string("trace-clock", s.clock())?;
        // LISA writes the TRACEID option's number as a string.
        if let Some(id) = s.trace_id() {
            m.string("trace-id", &id.to_string())?;
        }
        match s.kernel().version {
            Some((maj, min)) => m.string("trbox-kernel-version", &format!("{maj}.{min}"))?,
            None => m.key("trbox-kernel-version")?.write_str("null")?,
        }
        json::uint_array(m.key("trbox-lost-events")?, lost.iter().copied())?;
        let w = m.key("trbox-problems")?;
        w.write_str("{")?;
        json::problem_counts(&mut *w, problems)?;
        w.write_str("}")?;
        m.end()
    })();
    o.push('\n');
    o
}

#[cfg(test)]
mod tests {
    use super::{columns, Column, Held, Kind, Row, Src};
    use crate::abi::Endian;
    use crate::format::{EventFormat, FieldKind, FieldLoc};

    /// A record too short for a field is a null; the others keep their
    /// values, whichever way the column is read.
    #[test]
    fn a_short_record_is_a_null_in_its_column() {
        let loc = FieldLoc { offset: 4, size: 4, signed: true, kind: FieldKind::Scalar };
        let recs =
            [[0u8, 0, 0, 0, 7, 0, 0, 0].as_slice(), &[0, 0, 0, 0, 0xfe, 0xff], &[0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]];
        let rows: Vec<Row> = recs.iter().map(|r| Row { ts: 1, cpu: 0, len: r.len() as u32 }).collect();
        let bytes = recs.concat();
        let h = Held { rows: &rows, recs: &bytes, fields: &[], endian: Endian::Little };
        let mut c = Column::new(Src::Int(loc), Kind::Int32 { bits: 32, signed: true }, false);
        c.fill(&h);
        assert_eq!(c.i32s, [7, -1]);
        assert_eq!(c.def.as_deref(), Some(&[1, 0, 1][..]));
        // With every record whole, no levels are kept: the write passes 1s.
        let h = Held { rows: &rows[..1], recs: &bytes[..8], fields: &[], endian: Endian::Little };
        let mut c = Column::new(Src::Int(loc), Kind::Int64 { signed: true }, false);
        c.fill(&h);
        assert_eq!((c.i64s.as_slice(), c.def.as_deref()), (&[7][..], Some(&[][..])));
    }

    fn cols(path: &str, system: &str, long: u32) -> Vec<(String, Kind)> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/");
        let text = std::fs::read_to_string(format!("{dir}{path}")).unwrap();
        columns(&EventFormat::parse(&text, system, long).unwrap())
    }

    fn i(bits: u8, signed: bool) -> Kind {
        if bits == 64 {
            Kind::Int64 { signed }
        } else {
            Kind::Int32 { bits, signed }
        }
    }

    /// The fixed columns, then the format's common fields as LISA has them.
    fn common() -> Vec<(String, Kind)> {
        [
            ("common_ts", i(64, false)),
            ("common_cpu", i(32, false)),
            ("common_type", i(16, false)),
            ("common_flags", i(8, false)),
            ("common_preempt_count", i(8, false)),
            ("common_pid", i(32, true)),
        ]
        .into_iter()
        .map(|(n, k)| (n.to_string(), k))
        .collect()
    }

    fn with(rest: &[(&str, Kind)]) -> Vec<(String, Kind)> {
        let mut v = common();
        v.extend(rest.iter().map(|(n, k)| (n.to_string(), *k)));
        v
    }

    #[test]
    fn columns_follow_the_format_file() {
        // A 32-bit board: the same names and types (prev_state is a long).
        let sw = cols("armv7/events/events/sched/sched_switch/format", "sched", 4);
        let want = [
            ("prev_comm", Kind::Str),
            ("prev_pid", i(32, true)),
            ("prev_prio", i(32, true)),
            ("prev_state", i(32, true)),
            ("next_comm", Kind::Str),
            ("next_pid", i(32, true)),
            ("next_prio", i(32, true)),
        ];
        assert_eq!(sw, with(&want));
        // The kernel stores a syscall's `int` argument in 8 unsigned bytes
        // (the field LISA refuses: "inferred to be 4 but kernel reported
        // 8"): the column is what the kernel says.
        let open = cols("x86_64-6.12/events/events/syscalls/sys_enter_openat/format", "syscalls", 8);
        let want = [
            ("__syscall_nr", i(32, true)),
            ("dfd", i(64, false)),
            ("filename", i(64, false)),
            ("flags", i(64, false)),
            ("mode", i(64, false)),
        ];
        assert_eq!(open, with(&want));
        // A kprobe's string argument (__data_loc char[]).
        let kp = cols("aarch64-6.12/kprobe/events/kprobes/open_path/format", "kprobes", 8);
        let want = [("__probe_ip", i(64, false)), ("dfd", i(32, true)), ("path", Kind::Str), ("flags", i(64, false))];
        assert_eq!(kp, with(&want));
        // function_graph's entry; bprint: its arguments (u32 buf[]) as a
        // list, and its text.
        let fg = cols("x86_64-6.12/events/events/ftrace/funcgraph_entry/format", "ftrace", 8);
        assert_eq!(fg, with(&[("func", i(64, false)), ("depth", i(32, true))]));
        let bp = cols("x86_64-6.12/events/events/ftrace/bprint/format", "ftrace", 8);
        let buf = Kind::List { elem: 4, signed: false };
        let want = [("ip", i(64, false)), ("fmt", i(64, false)), ("buf", buf), ("text", Kind::Str)];
        assert_eq!(bp, with(&want));
    }
}
