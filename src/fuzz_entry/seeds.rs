//! Every fuzz target over real inputs (the recordings, tracefs copies and
//! format files in tests/) and a fixed set of mutations of each: byte
//! flips, cuts, spliced runs. Not a fuzzer (no coverage guidance): it
//! proves each target builds, runs, and does not panic on what the kernel
//! writes or on near misses of it, in every `cargo test`. The fuzzer
//! proper is `make fuzz` (cargo fuzz, fuzz/README.md), which starts from
//! these inputs: with `TRBOX_FUZZ_SEEDS=DIR`, each input is also written
//! to `DIR/TARGET/`.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// The files below `dir` named `name` (or all, for `None`), sorted.
fn files(dir: &Path, name: Option<&str>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if name.map_or(true, |n| p.file_name().is_some_and(|f| f == n)) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// xorshift64*: the same mutations on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// A fuzz target: its name in fuzz/ and its entry.
type Target = (&'static str, fn(&[u8]));

const BTF: Target = ("btf", super::btf);
const ELF: Target = ("elf", super::elf);
const FORMAT: Target = ("format", super::format);
const GRAPH: Target = ("graph", super::graph);
const LAT: Target = ("lat", super::lat);
const MSG: Target = ("msg", super::msg);
const PAGE: Target = ("page", super::page);
const PRINTFMT: Target = ("printfmt", super::printfmt);
const STREAM: Target = ("stream", super::stream);
const TRACEDAT: Target = ("tracedat", super::tracedat);

/// Seeds larger than this stay out of a fuzzer's corpus (libFuzzer's
/// inputs grow to the largest one: a test binary as an ELF seed would
/// slow every run).
const MAX_CORPUS_SEED: usize = 1 << 20;

/// `seed` as it is, then `n` mutations of it.
fn run((name, target): Target, seed: &[u8], n: usize, rng: &mut Rng) {
    if let Some(dir) = std::env::var_os("TRBOX_FUZZ_SEEDS").filter(|_| seed.len() <= MAX_CORPUS_SEED) {
        // Named after the content, as libFuzzer names its corpus.
        let h = seed.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        let dir = Path::new(&dir).join(name);
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join(format!("{h:016x}")), seed)).unwrap();
    }
    target(seed);
    let mut m = Vec::with_capacity(seed.len() + 16);
    for _ in 0..n {
        m.clear();
        m.extend_from_slice(seed);
        match rng.below(4) {
            // A few bytes flipped (a damaged file).
            0 | 1 => {
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(m.len());
                    if let Some(b) = m.get_mut(at) {
                        *b ^= 1 << rng.below(8);
                    }
                }
            }
            // Cut short.
            2 => m.truncate(rng.below(seed.len() + 1)),
            // A run of the input copied over another place of it.
            _ => {
                let (from, to, len) = (rng.below(seed.len()), rng.below(seed.len()), 1 + rng.below(64));
                let run: Vec<u8> = seed.iter().skip(from).take(len).copied().collect();
                for (i, b) in run.into_iter().enumerate() {
                    if let Some(x) = m.get_mut(to + i) {
                        *x = b;
                    }
                }
            }
        }
        target(&m);
    }
}

/// `sel` then `rest`: the targets that take a selector byte first.
fn with_sel(sel: u8, rest: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(rest.len() + 1);
    v.push(sel);
    v.extend_from_slice(rest);
    v
}

/// Format files of two boards (8- and 4-byte longs), and their headers.
fn format_texts() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for board in ["x86_64", "armv7"] {
        let events = root().join("fixtures").join(board).join("events/events");
        out.extend(files(&events, Some("format")).iter().map(|p| read(p)));
        out.push(read(&events.join("header_page")));
    }
    assert!(out.len() > 100, "the boards' format files are in tests/fixtures");
    out
}

fn dat_files() -> Vec<Vec<u8>> {
    let dats: Vec<_> = files(&root().join("data/tracedat"), None)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "dat"))
        .collect();
    assert!(dats.len() >= 8, "the trace.dat files are in tests/data/tracedat");
    dats.iter().map(|p| read(p)).collect()
}

#[test]
fn format_and_printfmt_on_the_boards_formats() {
    let mut rng = Rng(1);
    for (i, text) in format_texts().iter().enumerate() {
        // A record of the event's size after the NUL: bytes of the text.
        let mut input = text.clone();
        input.push(0);
        input.extend(text.iter().take(64));
        let sel = i as u8;
        run(FORMAT, &with_sel(sel & 3, &input), 20, &mut rng);
        // printfmt: the text as a whole format file (selector 8..11).
        run(PRINTFMT, &with_sel(8 | (sel & 3) | (sel & 16), &input), 10, &mut rng);
    }
}

#[test]
fn page_on_the_boards_pages() {
    let mut rng = Rng(2);
    let mut n = 0;
    for (board, sel) in [("x86_64", 0u8), ("aarch64", 0), ("armv7", 2), ("aarch64-6.12-16k", 4)] {
        let size = if sel == 4 { 16384 } else { 4096 };
        let dir = root().join("fixtures").join(board);
        for p in files(&dir, Some("trace_pipe_raw")).iter().take(6) {
            for page in read(p).chunks(size).take(3) {
                run(PAGE, &with_sel(sel, page), 30, &mut rng);
                n += 1;
            }
        }
    }
    assert!(n > 20, "pages read: {n}");
}

#[test]
fn tracedat_msg_and_stream_on_the_recordings() {
    let mut rng = Rng(3);
    for dat in dat_files() {
        run(TRACEDAT, &dat, 40, &mut rng);
        // A trace.dat is no stream or listener message: each says so
        // without panicking, whatever the bytes.
        run(STREAM, &dat, 5, &mut rng);
        run(MSG, &dat[..dat.len().min(4096)], 5, &mut rng);
    }
    // Real streams: each v6 recording as `tr-cat -o -` frames it.
    let mut streams = 0;
    for dat in dat_files() {
        if let Some(s) = stream_of(&dat) {
            let rebuilt =
                crate::tracedat::stream::parse(&s).ok().and_then(|p| crate::tracedat::stream::to_tracedat(&p).ok());
            streams +=
                usize::from(rebuilt.is_some_and(|td| crate::tracedat::TraceDat::read(&mut td.as_slice()).is_ok()));
            run(STREAM, &s, 40, &mut rng);
        }
    }
    assert!(streams >= 2, "v6 recordings framed as streams that read back: {streams}");
    for log in files(&root().join("data/console"), None).iter().filter(|p| p.extension().is_some_and(|e| e == "log")) {
        run(STREAM, &read(log), 10, &mut rng);
    }
}

/// A v6 trace.dat as a stream: its header up to the flyrecord table as
/// the `H` frame, then each CPU's pages as `D` frames (module docs of
/// tracedat::stream).
fn stream_of(dat: &[u8]) -> Option<Vec<u8>> {
    use crate::tracedat::stream::{data_header, frame, kind, preamble, start_frame};
    let td = crate::tracedat::TraceDat::read(&mut &dat[..]).ok()?;
    let top = td.top().filter(|_| td.version == 6)?;
    let fly = dat.windows(10).position(|w| w == b"flyrecord\0")?;
    let cpus: Vec<u32> = top.cpus.iter().map(|c| c.cpu).collect();
    let mut s = preamble().to_vec();
    s.extend(start_frame(td.endian, td.long_size as u8, td.page_size, &cpus));
    s.extend(frame(kind::HEADER, dat.get(..fly)?));
    for c in &top.cpus {
        let data = dat.get(c.offset as usize..(c.offset + c.size) as usize)?;
        for page in data.chunks(td.page_size as usize) {
            s.extend(data_header(c.cpu, page.len()));
            s.extend_from_slice(page);
        }
    }
    s.extend(frame(kind::END, &[]));
    Some(s)
}

#[test]
fn btf_on_a_recordings_btf() {
    let mut rng = Rng(4);
    let mut n = 0;
    for dat in dat_files() {
        let Ok(td) = crate::tracedat::TraceDat::read(&mut dat.as_slice()) else { continue };
        if td.btf.is_empty() {
            continue;
        }
        for sel in [0u8, 1, 2] {
            run(BTF, &with_sel(sel, &td.btf), 20, &mut rng);
        }
        n += 1;
    }
    assert!(n > 0, "a trace.dat of tests/data/tracedat carries BTF (trace-cmd 3.4's BTF_FILE)");
}

#[test]
fn elf_on_this_program_and_probe_definitions() {
    let mut rng = Rng(5);
    let exe = read(Path::new("/proc/self/exe"));
    for sel in [0u8, 3, 7] {
        run(ELF, &with_sel(sel, &exe), 3, &mut rng);
    }
    // A small program as a corpus seed too, where there is one.
    if let Ok(small) = std::fs::read("/bin/true") {
        run(ELF, &with_sel(1, &small), 20, &mut rng);
    }
    for def in ["p:grp/ev do_sys_open dfd=%ax filename=+0(%si):string", "r /bin/sh:0x1000 $retval", "f:x vfs_read"] {
        run(ELF, &with_sel(0x80, def.as_bytes()), 50, &mut rng);
    }
}

#[test]
fn graph_and_lat_on_arbitrary_records() {
    let mut rng = Rng(6);
    for sel in 0..=255u8 {
        let mut input = vec![sel];
        input.extend((0..256).map(|_| rng.next() as u8));
        run(GRAPH, &input, 2, &mut rng);
        run(LAT, &input, 2, &mut rng);
    }
}
