//! The header of a recorded trace.dat, from a live tracefs: written before
//! the data (the data follows it in the same file), with room reserved for
//! what is only known at the end — saved_cmdlines (tasks started while
//! recording) and the options (CPUSTAT with the final per-CPU stats).

use super::super::error::Error;
use super::super::tracefs::{read_text, Tracefs};
use crate::abi::Abi;
use crate::tracedat::{
    cpustat_text, encode_options, encode_u32, Endian, FlyrecordSlot, OptionsSlot, V6Writer, WriteOptions,
};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Where the end-of-run parts go.
pub(crate) struct Slots {
    pub(crate) endian: Endian,
    /// File offset and length of the saved_cmdlines text (NUL-padded).
    pub(crate) cmdlines: (u64, usize),
    pub(crate) options: OptionsSlot,
    pub(crate) fly: FlyrecordSlot,
    clock: String,
    uname: String,
    /// LAST_BOOT_INFO: `INSTANCE:` + a persistent instance's `last_boot_info`.
    last_boot: Option<String>,
}

/// Bytes a saved_cmdlines line can take: pid (7 digits), space, comm (15),
/// newline.
const CMDLINE_MAX: usize = 24;

/// Write the header to `file` (at its start): everything up to the first
/// data page. `cpus` is the length of the flyrecord table; `more_systems`
/// are stored besides those with an enabled event (the run enables them
/// after this); without `with_kallsyms` its section is empty; `spare`:
/// bytes of the saved_cmdlines room that a sender may spend before the end
/// ([`crate::tracedat::msg`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_header(
    t: &Tracefs,
    file: &mut File,
    path: &Path,
    page_size: u32,
    abi: Abi,
    cpus: u32,
    more_systems: &[String],
    with_kallsyms: bool,
    spare: usize,
) -> Result<Slots, Error> {
    let e = abi.endian;
    let top = t.top();
    let mut w = V6Writer::new(abi, page_size);
    let bad = |what: crate::tracedat::WriteError| Error::Format { path: top.into(), line: 0, what: what.to_string() };
    let hp = read_bytes(&top.join("events/header_page"))?;
    let he = read_bytes(&top.join("events/header_event"))?;
    w.header_files(&hp, &he).map_err(bad)?;
    let ftrace = formats_of(&top.join("events/ftrace"));
    let ftrace: Vec<Vec<u8>> = ftrace.iter().filter_map(|p| read_bytes(p).ok()).collect();
    w.ftrace_formats(&ftrace).map_err(bad)?;
    drop(ftrace);
    let mut systems = t.enabled_systems();
    systems.extend(more_systems.iter().filter(|s| s.as_str() != "ftrace").cloned());
    systems.sort_unstable();
    systems.dedup();
    w.event_systems_begin(systems.len() as u32).map_err(bad)?;
    for sys in &systems {
        let files = formats_of(&top.join("events").join(sys));
        // A format that cannot be read now is left out, with the count
        // matching what is written.
        let texts: Vec<Vec<u8>> = files.iter().filter_map(|p| read_bytes(p).ok()).collect();
        w.event_system(sys, texts.len() as u32).map_err(bad)?;
        for f in &texts {
            w.event_format(f).map_err(bad)?;
        }
        put(file, path, &mut w)?;
    }
    // /proc/kallsyms says size 0: stream it, patch its length after.
    let len_pos = w.kallsyms_unsized().map_err(bad)?;
    if with_kallsyms {
        kallsyms_pieces(t, &mut |piece| {
            w.raw(piece);
            put(file, path, &mut w)
        })?;
    }
    let klen = u32::try_from(w.blob_len()).map_err(|_| bad(crate::tracedat::WriteError::TooLarge("kallsyms")))?;
    let pf = t.read_top_opt("printk_formats")?.unwrap_or_default();
    w.printk_formats(pf.as_bytes()).map_err(bad)?;
    let n = t.read_top_opt("saved_cmdlines_size")?.and_then(|s| s.trim().parse::<usize>().ok()).unwrap_or(128);
    let reserve = n.saturating_mul(CMDLINE_MAX).clamp(4096, 1 << 22) + spare;
    let cmdlines_pos = w.pos() + 8;
    w.saved_cmdlines(&vec![crate::tracedat::CMDLINES_PAD; reserve]).map_err(bad)?;
    w.cpus(cpus).map_err(bad)?;
    let clock = t.read_opt("trace_clock")?.unwrap_or_else(|| "[local]".into()).trim().to_string();
    let uname = uname();
    // A persistent instance (6.12+): its last_boot_info, as trace-cmd 3.4.
    let last_boot = t.read_opt("last_boot_info")?.map(|i| t.instance.clone().unwrap_or_default() + ":" + &i);
    let provisional = WriteOptions {
        trace_clock: Some(&clock),
        uname: Some(&uname),
        version: Some(VERSION),
        cpucount: Some(cpus),
        last_boot: last_boot.as_deref(),
        ..Default::default()
    };
    // Room for one CPUSTAT per CPU (about 200 bytes each).
    let room = 1024 + 320 * cpus as usize + last_boot.as_deref().unwrap_or_default().len();
    let options = w.options(&provisional, Some(room)).map_err(bad)?;
    let fly = w.flyrecord().map_err(bad)?;
    put(file, path, &mut w)?;
    file.write_all_at(&encode_u32(e, klen), len_pos).map_err(|e| Error::io(path, e))?;
    Ok(Slots { endian: e, cmdlines: (cmdlines_pos, reserve), options, fly, clock, uname, last_boot })
}

/// /proc/kallsyms (or the copy's) in pieces of 64 KiB: it says size 0, and
/// is megabytes on a desktop kernel. A read of it returns one page of
/// text (seq_file), so the pieces are filled from several: one write per
/// 64 KiB, not per 4 KiB (on a board under TCG, 660 system calls fewer).
pub(crate) fn kallsyms_pieces(t: &Tracefs, f: &mut dyn FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error> {
    if let Ok(mut k) = File::open(kallsyms_path(t)) {
        let mut buf = vec![0u8; 64 * 1024];
        let mut filled = 0;
        loop {
            let n = match k.read(buf.get_mut(filled..).unwrap_or_default()) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => 0,
            };
            filled += n;
            if n == 0 || filled == buf.len() {
                if filled > 0 {
                    f(buf.get(..filled).unwrap_or_default())?;
                }
                if n == 0 {
                    break;
                }
                filled = 0;
            }
        }
    }
    Ok(())
}

/// The header as `trace-cmd listen` takes it (`-N`, with kallsyms and
/// [`crate::tracedat::msg::NET_SPARE`]), and as a stream (`-o -`) carries it (without kallsyms:
/// the stream sends those in pieces, so that a damaged console line loses
/// symbols, not the recording): a trace.dat up to its options, with the
/// saved_cmdlines of now (the listener, or the host's reader of the
/// stream, adds the flyrecord table, the clock and the data). Built in
/// `file`. With it, the saved_cmdlines slot: its offset and length.
#[allow(clippy::too_many_arguments)]
pub(crate) fn net_header(
    t: &Tracefs,
    file: &mut File,
    path: &Path,
    page_size: u32,
    abi: Abi,
    cpus: u32,
    more_systems: &[String],
    net: bool,
) -> Result<(Vec<u8>, (u64, usize)), Error> {
    let spare = if net { crate::tracedat::msg::NET_SPARE } else { 0 };
    let slots = write_header(t, file, path, page_size, abi, cpus, more_systems, net, spare)?;
    finish_header(file, path, &slots, t, &[], &vec![(0, 0); cpus as usize])?;
    // The table follows "flyrecord\0".
    let mut v = vec![0u8; slots.fly.table_pos.saturating_sub(10) as usize];
    file.read_exact_at(&mut v, 0).map_err(|e| Error::io(path, e))?;
    Ok((v, slots.cmdlines))
}

const VERSION: &str = concat!("trbox ", env!("CARGO_PKG_VERSION"));

/// Write the parts known only at the end: saved_cmdlines, the options with
/// each CPU's stats text (`stats`: per CPU of the table, its number and
/// `per_cpu/cpuN/stats`), and the flyrecord table.
pub(crate) fn finish_header(
    file: &File,
    path: &Path,
    s: &Slots,
    t: &Tracefs,
    stats: &[(u32, String)],
    table: &[(u64, u64)],
) -> Result<(), Error> {
    let e = s.endian;
    let cl =
        crate::tracedat::fit_cmdlines(t.read_top_opt("saved_cmdlines")?.unwrap_or_default().as_bytes(), s.cmdlines.1);
    let io = |err| Error::io(path, err);
    file.write_all_at(&cl, s.cmdlines.0).map_err(io)?;
    let texts: Vec<String> = stats.iter().map(|(c, st)| cpustat_text(*c, st)).collect();
    let o = WriteOptions {
        trace_clock: Some(&s.clock),
        uname: Some(&s.uname),
        version: Some(VERSION),
        cpucount: Some(s.fly.cpus),
        cpustat: &texts,
        last_boot: s.last_boot.as_deref(),
        ..Default::default()
    };
    let block = match encode_options(e, &o, Some(s.options.len)) {
        Ok((b, _)) => b,
        // Stats larger than the room: the file stays valid without them.
        Err(_) => {
            encode_options(e, &WriteOptions { cpustat: &[], ..o }, Some(s.options.len))
                .map_err(|w| Error::Format { path: t.top().into(), line: 0, what: w.to_string() })?
                .0
        }
    };
    file.write_all_at(&block, s.options.pos).map_err(io)?;
    file.write_all_at(&crate::tracedat::encode_flyrecord_table(e, table), s.fly.table_pos).map_err(io)?;
    Ok(())
}

/// Append what the writer produced.
fn put(file: &mut File, path: &Path, w: &mut V6Writer) -> Result<(), Error> {
    file.write_all(&w.take()).map_err(|e| Error::io(path, e))
}

fn read_bytes(p: &Path) -> Result<Vec<u8>, Error> {
    read_text(p).map(String::into_bytes).map_err(|e| Error::io(p, e))
}

/// The `format` files below an events directory, sorted by event name
/// (with `enable/format` and such, which no read finds: no stat of each).
fn formats_of(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> =
        std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path().join("format")).collect();
    v.sort_unstable();
    v
}

fn kallsyms_path(t: &Tracefs) -> std::path::PathBuf {
    if t.is_live() {
        "/proc/kallsyms".into()
    } else {
        t.top().join("kallsyms")
    }
}

/// `sysname nodename release version machine`, as trace-cmd stores it.
fn uname() -> String {
    super::super::uname().map(|u| u.join(" ")).unwrap_or_default()
}
