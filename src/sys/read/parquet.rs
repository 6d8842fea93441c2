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
use crate::format::{Field, FieldKind, Value};
use crate::sys::error::Error;
use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{Type, TypePtr};
use std::collections::HashMap;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows of one event held before they are written as a row group.
const GROUP_ROWS: usize = 64 * 1024;
/// Bytes of rows held, all events together, before the largest event's
/// are written out (what bounds the memory with many events).
const HELD_BYTES: usize = 12 << 20;

/// The events whose text is their point: `trace_printk()` and
/// `trace_marker` writes, whose format fields hold a format and its
/// arguments (bprint) or the bytes written, not the message.
const PRINTS: [&str; 3] = ["bprint", "print", "bputs"];
/// The column that holds such an event's text, as the `trace` file prints
/// it.
pub const TEXT_COLUMN: &str = "text";

/// What a conversion wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// Records written, over every input.
    pub rows: u64,
    /// `EVENT.parquet` files written.
    pub files: usize,
}

/// One recording to convert: the file, and its `source=` name when the
/// conversion has several.
pub struct Source<'a> {
    /// The recording (a trace.dat or a stream).
    pub path: &'a Path,
    /// `Some(NAME)`: written under `source=NAME/`.
    pub name: Option<String>,
}

/// How the column chunks are compressed (`tr-cat --compression`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
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
    pub const NAMES: &'static str = "snappy, zstd or none";
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

/// Converts each of `sources` into the directory `out`, which must not
/// exist yet (nothing is written over), its column chunks compressed with
/// `codec`. An input with no record writes no event file; its meta.json
/// says so.
pub fn parquet(sources: &[Source<'_>], out: &Path, codec: Codec) -> Result<Written, Error> {
    std::fs::create_dir(out).map_err(|e| Error::io(out, e))?;
    into_dir(sources, out, codec)
}

/// [`parquet()`] into `out`, a directory the caller made (empty).
pub fn into_dir(sources: &[Source<'_>], out: &Path, codec: Codec) -> Result<Written, Error> {
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(codec.into())
            .set_created_by(concat!("trbox ", env!("CARGO_PKG_VERSION")).into())
            .set_max_row_group_size(GROUP_ROWS)
            .build(),
    );
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
        let one = convert(s.path, &dir, &props)?;
        w.rows += one.rows;
        w.files += one.files;
    }
    Ok(w)
}

/// One recording into `dir`.
fn convert(path: &Path, dir: &Path, props: &Arc<WriterProperties>) -> Result<Written, Error> {
    let mut r = Reader::trace_dat(path, &ReadOptions::default())?;
    let (session, mut entries) = r.split();
    let mut text = session.text();
    let mut tables: Vec<Table> = Vec::new();
    // Format id -> index into `tables`.
    let mut by_id: HashMap<u32, usize> = HashMap::new();
    let mut held = 0usize;
    let mut lost = vec![0u64; session.cpus() as usize];
    let mut range: Option<(u64, u64)> = None;
    while let Some(e) = entries.next_entry() {
        match e {
            Entry::Event(ev) => {
                let id = ev.format().id;
                let i = match by_id.get(&id) {
                    Some(&i) => i,
                    None => {
                        let t = Table::new(&ev, dir, &tables, props)?;
                        tables.push(t);
                        by_id.insert(id, tables.len() - 1);
                        tables.len() - 1
                    }
                };
                let Some(t) = tables.get_mut(i) else { continue };
                let before = t.held;
                t.push(session, &ev, &mut text);
                held += t.held - before;
                if t.rows == GROUP_ROWS {
                    held -= t.held;
                    t.flush()?;
                }
                if held > HELD_BYTES {
                    if let Some(t) = tables.iter_mut().max_by_key(|t| t.held) {
                        held -= t.held;
                        t.flush()?;
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

/// How a column's values are stored: the Parquet type a field of the
/// format file maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
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
    pub fn of(f: &Field) -> Kind {
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
    /// The format's field: an index into its `common` then `fields`.
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
    bytes: Vec<ByteArray>,
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
            bytes: Vec::new(),
        }
    }

    /// Adds one row's value (`None`: null, the record too short for the
    /// field); returns the bytes it holds.
    fn push(&mut self, v: Option<Value<'_>>, e: crate::abi::Endian) -> usize {
        let present = v.is_some();
        let mut size = 2;
        match (self.kind, v) {
            (_, None) => {}
            (Kind::Int32 { .. }, Some(v)) => {
                // An unsigned 32-bit value is kept as its bits (the
                // Parquet rule for UINT_32).
                self.i32s.push(v.as_i64().unwrap_or(0) as i32);
                size += 4;
            }
            (Kind::Int64 { .. }, Some(v)) => {
                self.i64s.push(v.as_i64().unwrap_or(0));
                size += 8;
            }
            (Kind::Bool, Some(v)) => {
                self.bools.push(v.as_i64().unwrap_or(0) != 0);
                size += 1;
            }
            (Kind::Str, Some(Value::Str(b))) => {
                size += b.len() + 16;
                self.bytes.push(ByteArray::from(String::from_utf8_lossy(b).into_owned().into_bytes()));
            }
            (Kind::Str | Kind::Bytes, Some(v)) => {
                let b = match v {
                    Value::Str(b) | Value::Bytes(b) => b.to_vec(),
                    Value::Signed(n) => n.to_string().into_bytes(),
                    Value::Unsigned(n) => n.to_string().into_bytes(),
                };
                size += b.len() + 16;
                self.bytes.push(ByteArray::from(b));
            }
            (Kind::List { elem, signed }, Some(v)) => {
                let b = match v {
                    Value::Bytes(b) | Value::Str(b) => b,
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
                for (i, c) in b.chunks_exact(elem as usize).enumerate() {
                    let x = int_of(c, e, signed);
                    if elem == 8 {
                        self.i64s.push(x);
                    } else {
                        self.i32s.push(x as i32);
                    }
                    self.rep.push(i16::from(i > 0));
                    if let Some(d) = &mut self.def {
                        d.push(2);
                    }
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

    /// Writes the rows held as this column's chunk of a row group.
    fn write(&mut self, w: &mut parquet::file::writer::SerializedColumnWriter<'_>) -> parquet::errors::Result<()> {
        let def = self.def.as_deref();
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
                w.typed::<ByteArrayType>().write_batch(&self.bytes, def, rep)?;
            }
        }
        self.clear();
        Ok(())
    }

    fn clear(&mut self) {
        if let Some(d) = &mut self.def {
            d.clear();
        }
        self.rep.clear();
        self.i32s.clear();
        self.i64s.clear();
        self.bools.clear();
        self.bytes.clear();
    }
}

/// An integer of 1, 2, 4 or 8 bytes in the record's byte order.
fn int_of(c: &[u8], e: crate::abi::Endian, signed: bool) -> i64 {
    let mut b = [0u8; 8];
    let n = c.len().min(8);
    let (v, bits) = match e {
        crate::abi::Endian::Little => {
            b[..n].copy_from_slice(&c[..n]);
            (u64::from_le_bytes(b), n * 8)
        }
        crate::abi::Endian::Big => {
            b[8 - n..].copy_from_slice(&c[..n]);
            (u64::from_be_bytes(b), n * 8)
        }
    };
    if signed && bits < 64 {
        let shift = 64 - bits;
        ((v << shift) as i64) >> shift
    } else {
        v as i64
    }
}

/// One event's file: its writer and the rows held.
struct Table {
    id: u32,
    /// The file's name in its directory (`sched_switch.parquet`).
    file: String,
    path: PathBuf,
    writer: SerializedFileWriter<BufWriter<std::fs::File>>,
    cols: Vec<Column>,
    /// Rows held, and their bytes.
    rows: usize,
    held: usize,
    /// Rows written and held.
    total: u64,
}

impl Table {
    /// The file of `ev`'s event in `dir`, created at its first record.
    fn new(ev: &Event<'_>, dir: &Path, others: &[Table], props: &Arc<WriterProperties>) -> Result<Table, Error> {
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
        let writer = SerializedFileWriter::new(BufWriter::with_capacity(64 << 10, out), schema, props.clone())
            .map_err(|e| parquet_error(&path, e))?;
        Ok(Table { id: f.id, file, path, writer, cols, rows: 0, held: 0, total: 0 })
    }

    fn push(&mut self, session: &Session, ev: &Event<'_>, text: &mut Text<'_>) {
        let endian = session.trace().endian;
        let (f, payload) = (ev.format(), ev.payload());
        let mut s = String::new();
        for c in &mut self.cols {
            let v = match c.from {
                Src::Ts => Some(Value::Unsigned(ev.ts())),
                Src::Cpu => Some(Value::Unsigned(u64::from(ev.cpu()))),
                Src::Field(i) => f.common.iter().chain(&f.fields).nth(i).and_then(|fl| fl.typed(payload, endian)),
                Src::Text => {
                    text.body(ev, &mut s);
                    Some(Value::Str(s.as_bytes()))
                }
            };
            self.held += c.push(v, endian);
        }
        self.rows += 1;
        self.total += 1;
    }

    /// Writes the rows held as a row group.
    fn flush(&mut self) -> Result<(), Error> {
        if self.rows == 0 {
            return Ok(());
        }
        let path = self.path.clone();
        let res = (|| {
            let mut rg = self.writer.next_row_group()?;
            for c in &mut self.cols {
                if let Some(mut w) = rg.next_column()? {
                    c.write(&mut w)?;
                    w.close()?;
                }
            }
            rg.close().map(|_| ())
        })();
        res.map_err(|e| parquet_error(&path, e))?;
        self.rows = 0;
        self.held = 0;
        Ok(())
    }

    fn close(mut self) -> Result<(), Error> {
        self.flush()?;
        let path = self.path.clone();
        let mut w = self.writer.into_inner().map_err(|e| parquet_error(&path, e))?;
        w.flush().map_err(|e| Error::io(&path, e))
    }
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
        cols.push(Column::new(Src::Field(i), kind, false));
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
pub fn columns(f: &crate::format::EventFormat) -> Vec<(String, Kind)> {
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
    use super::{columns, Kind};
    use crate::format::EventFormat;

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
