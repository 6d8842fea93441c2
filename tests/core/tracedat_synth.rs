//! Synthetic trace.dat files: v7 with zlib / zstd / no compression built
//! here from a trace-cmd fixture's contents (this machine's trace-cmd has no
//! zlib), with the options split over two chained sections; and truncated
//! or corrupted files, which must give errors, never panics.

use std::path::PathBuf;

use trbox::abi::Endian;
use trbox::tracedat::{opt, Compression, DatPages, ErrorKind, TraceDat, MAGIC};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tracedat").join(name)).unwrap()
}

/// Per instance, per CPU: the raw page bytes.
fn all_pages(td: &TraceDat, src: &mut Vec<u8>) -> Vec<Vec<Vec<u8>>> {
    td.instances
        .iter()
        .map(|inst| {
            inst.cpus
                .iter()
                .map(|c| {
                    let mut p = DatPages::new(td, inst, c);
                    let mut v = Vec::new();
                    while let Some(pg) = p.next_page(src).unwrap() {
                        v.extend_from_slice(pg);
                    }
                    v
                })
                .collect()
        })
        .collect()
}

fn compress(algo: &str, data: &[u8]) -> Vec<u8> {
    match algo {
        "zlib" => miniz_oxide::deflate::compress_to_vec_zlib(data, 6),
        "zstd" => ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest),
        _ => data.to_vec(),
    }
}

fn p16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn p32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn p64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn put_at(v: &mut [u8], at: usize, x: u64) {
    v[at..at + 8].copy_from_slice(&x.to_le_bytes());
}

/// A v7 file with the metadata and pages of `td`.
fn build_v7(td: &TraceDat, pages: &[Vec<Vec<u8>>], algo: &str) -> Vec<u8> {
    let compressed = algo != "none";
    let mut f = Vec::new();
    f.extend_from_slice(&MAGIC);
    f.extend_from_slice(b"7\0");
    f.push(0);
    f.push(8);
    p32(&mut f, td.page_size);
    f.extend_from_slice(algo.as_bytes());
    f.push(0);
    f.extend_from_slice(if compressed { b"1.0\0" } else { b"\0" });
    let opt_off_at = f.len();
    p64(&mut f, 0);

    let section = |f: &mut Vec<u8>, id: u16, body: &[u8]| -> u64 {
        let at = f.len() as u64;
        p16(f, id);
        p16(f, compressed as u16);
        p32(f, 0);
        if compressed {
            let c = compress(algo, body);
            p64(f, c.len() as u64 + 8);
            p32(f, c.len() as u32);
            p32(f, body.len() as u32);
            f.extend_from_slice(&c);
        } else {
            p64(f, body.len() as u64);
            f.extend_from_slice(body);
        }
        at
    };
    let mut b = Vec::new();
    b.extend_from_slice(b"header_page\0");
    p64(&mut b, td.header_page.len() as u64);
    b.extend_from_slice(&td.header_page);
    b.extend_from_slice(b"header_event\0");
    p64(&mut b, td.header_event.len() as u64);
    b.extend_from_slice(&td.header_event);
    let s_hdr = section(&mut f, opt::HEADER_INFO, &b);
    let mut b = Vec::new();
    p32(&mut b, td.ftrace_formats.len() as u32);
    for x in &td.ftrace_formats {
        p64(&mut b, x.len() as u64);
        b.extend_from_slice(x);
    }
    let s_ftrace = section(&mut f, opt::FTRACE_EVENTS, &b);
    let mut b = Vec::new();
    p32(&mut b, td.systems.len() as u32);
    for s in &td.systems {
        b.extend_from_slice(s.name.as_bytes());
        b.push(0);
        p32(&mut b, s.formats.len() as u32);
        for x in &s.formats {
            p64(&mut b, x.len() as u64);
            b.extend_from_slice(x);
        }
    }
    let s_events = section(&mut f, opt::EVENT_FORMATS, &b);
    let mut b = Vec::new();
    p32(&mut b, td.kallsyms.len() as u32);
    b.extend_from_slice(&td.kallsyms);
    let s_ksyms = section(&mut f, opt::KALLSYMS, &b);
    let mut b = Vec::new();
    p32(&mut b, td.printk_formats.len() as u32);
    b.extend_from_slice(&td.printk_formats);
    let s_printk = section(&mut f, opt::PRINTK, &b);
    let mut b = Vec::new();
    p64(&mut b, td.saved_cmdlines.len() as u64);
    b.extend_from_slice(&td.saved_cmdlines);
    let s_cmd = section(&mut f, opt::CMDLINES, &b);

    // Buffer sections: header, then page-aligned per-CPU data.
    let ps = td.page_size as usize;
    let mut buffer_opts = Vec::new();
    for (inst, cpus) in td.instances.iter().zip(pages) {
        let at = f.len() as u64;
        p16(&mut f, opt::BUFFER);
        p16(&mut f, compressed as u16);
        p32(&mut f, 0);
        p64(&mut f, 0);
        let mut entries = Vec::new();
        for (i, data) in cpus.iter().enumerate() {
            f.resize(f.len().div_ceil(ps) * ps, 0);
            let off = f.len() as u64;
            if compressed {
                let chunks: Vec<&[u8]> = data.chunks(ps * 10).collect();
                p32(&mut f, chunks.len() as u32);
                for ch in chunks {
                    let c = compress(algo, ch);
                    p32(&mut f, c.len() as u32);
                    p32(&mut f, ch.len() as u32);
                    f.extend_from_slice(&c);
                }
            } else {
                f.extend_from_slice(data);
            }
            entries.push((inst.cpus[i].cpu, off, f.len() as u64 - off));
        }
        let mut o = Vec::new();
        p64(&mut o, at);
        o.extend_from_slice(inst.name.as_bytes());
        o.push(0);
        o.extend_from_slice(b"local\0");
        p32(&mut o, td.page_size);
        p32(&mut o, entries.len() as u32);
        for (cpu, off, size) in entries {
            p32(&mut o, cpu);
            p64(&mut o, off);
            p64(&mut o, size);
        }
        buffer_opts.push(o);
    }

    // Two options sections: the first points at the second.
    let opt = |v: &mut Vec<u8>, id: u16, data: &[u8]| {
        p16(v, id);
        p32(v, data.len() as u32);
        v.extend_from_slice(data);
    };
    let first = f.len();
    let mut o = Vec::new();
    for (id, at) in [(opt::HEADER_INFO, s_hdr), (opt::FTRACE_EVENTS, s_ftrace), (opt::EVENT_FORMATS, s_events)] {
        opt(&mut o, id, &at.to_le_bytes());
    }
    opt(&mut o, opt::CPUCOUNT, &2u32.to_le_bytes());
    opt(&mut o, opt::UNAME, b"Linux synth\0");
    opt(&mut o, opt::DONE, &0u64.to_le_bytes());
    let done_at = o.len() - 8;
    f.extend_from_slice(&section_bytes(&o, compressed, algo));
    put_at(&mut f, opt_off_at, first as u64);
    let second = f.len();
    let mut o = Vec::new();
    for (id, at) in [(opt::KALLSYMS, s_ksyms), (opt::PRINTK, s_printk), (opt::CMDLINES, s_cmd)] {
        opt(&mut o, id, &at.to_le_bytes());
    }
    opt(&mut o, opt::TRACECLOCK, b"[local] global\0");
    for b in &buffer_opts {
        opt(&mut o, opt::BUFFER, b);
    }
    opt(&mut o, opt::DONE, &0u64.to_le_bytes());
    f.extend_from_slice(&section_bytes(&o, compressed, algo));
    // Patch the first section's DONE (inside compressed data: rebuild it).
    let mut o1 = section_body_of(&f[first..second], compressed, algo);
    put_at(&mut o1, done_at, second as u64);
    let rebuilt = section_bytes(&o1, compressed, algo);
    let mut out = f[..first].to_vec();
    let shift = rebuilt.len() as i64 - (second - first) as i64;
    out.extend_from_slice(&rebuilt);
    out.extend_from_slice(&f[second..]);
    if shift != 0 {
        // Sizes changed: the second section moved; patch the pointer again.
        let second2 = (second as i64 + shift) as u64;
        let mut o1 = section_body_of(&out[first..first + rebuilt.len()], compressed, algo);
        put_at(&mut o1, done_at, second2);
        let again = section_bytes(&o1, compressed, algo);
        assert_eq!(again.len(), rebuilt.len(), "options section size must settle");
        out[first..first + again.len()].copy_from_slice(&again);
    }
    out
}

fn section_bytes(body: &[u8], compressed: bool, algo: &str) -> Vec<u8> {
    let mut v = Vec::new();
    p16(&mut v, opt::DONE);
    p16(&mut v, compressed as u16);
    p32(&mut v, 0);
    if compressed {
        let c = compress(algo, body);
        p64(&mut v, c.len() as u64 + 8);
        p32(&mut v, c.len() as u32);
        p32(&mut v, body.len() as u32);
        v.extend_from_slice(&c);
    } else {
        p64(&mut v, body.len() as u64);
        v.extend_from_slice(body);
    }
    v
}

fn section_body_of(sec: &[u8], compressed: bool, algo: &str) -> Vec<u8> {
    if !compressed {
        return sec[16..].to_vec();
    }
    let usize_ = u32::from_le_bytes(sec[20..24].try_into().unwrap()) as usize;
    let mut out = Vec::new();
    let a = match algo {
        "zlib" => Compression::Zlib,
        _ => Compression::Zstd,
    };
    trbox::tracedat::decompress(&a, &sec[24..], usize_, &mut out, "test", 0).unwrap();
    out
}

fn roundtrip(algo: &str) {
    let mut v6 = fixture("v6-inst.dat");
    let td = TraceDat::read(&mut v6).unwrap();
    let pages = all_pages(&td, &mut v6);
    let mut v7 = build_v7(&td, &pages, algo);
    let td7 = TraceDat::read(&mut v7).unwrap_or_else(|e| panic!("{algo}: {e}"));
    assert_eq!(td7.version, 7);
    assert_eq!(td7.compression.as_ref().unwrap().0, Compression::from_name(algo));
    assert_eq!(td7.header_page, td.header_page);
    assert_eq!(td7.header_event, td.header_event);
    assert_eq!(td7.ftrace_formats, td.ftrace_formats);
    assert_eq!(td7.systems, td.systems);
    assert_eq!(td7.kallsyms, td.kallsyms);
    assert_eq!(td7.printk_formats, td.printk_formats);
    assert_eq!(td7.saved_cmdlines, td.saved_cmdlines);
    assert_eq!(td7.cpus, 2);
    assert_eq!(td7.options.uname.as_deref(), Some("Linux synth"));
    assert_eq!(td7.options.clock.as_deref(), Some("local"));
    assert_eq!(td7.instances.len(), 2);
    assert_eq!(td7.instances[1].name, "inst1");
    assert!(td7.instances.iter().all(|i| i.compressed == (algo != "none")));
    assert_eq!(all_pages(&td7, &mut v7), pages, "{algo}: page bytes");
}

#[cfg(feature = "zlib")]
#[test]
fn v7_zlib_synthetic() {
    roundtrip("zlib");
}

#[cfg(feature = "zstd")]
#[test]
fn v7_zstd_synthetic() {
    roundtrip("zstd");
}

#[test]
fn v7_none_synthetic() {
    roundtrip("none");
}

/// Per instance, per CPU: the page bytes read until the end or the first
/// error; that error (the metadata's, or the first page's); and whether
/// the metadata came with warnings.
fn read_prefix(mut b: Vec<u8>) -> (Vec<Vec<Vec<u8>>>, Option<trbox::tracedat::Error>, bool) {
    let td = match TraceDat::read(&mut b) {
        Ok(td) => td,
        Err(e) => return (Vec::new(), Some(e), false),
    };
    let mut first = None;
    let mut out = Vec::new();
    for inst in &td.instances {
        let mut cpus = Vec::new();
        for c in &inst.cpus {
            let mut p = DatPages::new(&td, inst, c);
            let mut v = Vec::new();
            loop {
                match p.next_page(&mut b) {
                    Ok(Some(pg)) => v.extend_from_slice(pg),
                    Ok(None) => break,
                    Err(e) => {
                        first.get_or_insert(e);
                        break;
                    }
                }
            }
            cpus.push(v);
        }
        out.push(cpus);
    }
    (out, first, !td.problems.is_empty())
}

/// Read the metadata and every page; return the first error.
fn read_all(mut b: Vec<u8>) -> Result<(), trbox::tracedat::Error> {
    let td = TraceDat::read(&mut b)?;
    for inst in &td.instances {
        for c in &inst.cpus {
            let mut p = DatPages::new(&td, inst, c);
            while p.next_page(&mut b)?.is_some() {}
        }
    }
    Ok(())
}

#[test]
fn truncated_files_give_errors_with_offsets() {
    for name in ["v6-inst.dat", "v7-none-inst.dat", "v7-zstd-inst.dat", "v7-zlib-inst.dat"] {
        let full = fixture(name);
        let td = TraceDat::read(&mut full.clone()).unwrap();
        // Every cut inside the metadata fails with a located error.
        let meta_end = if td.version == 6 { td.metadata_end as usize } else { 4096 };
        let step = (meta_end / 600).max(1);
        for cut in (0..meta_end.min(full.len())).step_by(step) {
            let r = TraceDat::read(&mut full[..cut].to_vec());
            if td.version == 6 {
                // Either an error located at or before the cut, or (cut in
                // the optional clock after the table) a result whose data
                // lies beyond the end, reported as warnings.
                match r {
                    Err(e) => {
                        assert!(e.offset <= cut as u64, "{name} cut {cut}: error at {} ({e})", e.offset);
                        assert!(!e.to_string().is_empty());
                    }
                    Ok(t) => assert!(!t.problems.is_empty(), "{name} cut {cut}: no error, no warning"),
                }
            }
        }
        // Cuts in the data: no panic; what is read of each CPU is a prefix
        // of its pages in the whole file, and a cut that loses pages says
        // so (an error, or a warning of the metadata).
        let (whole, err, _) = read_prefix(full.clone());
        assert!(err.is_none(), "{name}: {err:?}");
        let total = |p: &[Vec<Vec<u8>>]| p.iter().flatten().map(Vec::len).sum::<usize>();
        for cut in (0..full.len()).step_by(97) {
            let (got, err, warned) = read_prefix(full[..cut].to_vec());
            assert!(got.len() <= whole.len(), "{name} cut {cut}: more instances than the whole file");
            for (i, (g, w)) in got.iter().zip(&whole).enumerate() {
                assert!(g.len() <= w.len(), "{name} cut {cut}: instance {i} has more CPUs");
                for (c, (g, w)) in g.iter().zip(w).enumerate() {
                    assert!(w.starts_with(g), "{name} cut {cut}: instance {i} CPU {c}: not a prefix");
                }
            }
            if total(&got) < total(&whole) {
                assert!(err.is_some() || warned, "{name} cut {cut}: pages lost, no error or warning");
            }
        }
    }
}

#[test]
fn corrupted_files_never_panic() {
    // A small deterministic PRNG (xorshift).
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for name in ["v6-inst.dat", "v7-none-inst.dat", "v7-zstd-inst.dat", "v7-zlib-inst.dat"] {
        let full = fixture(name);
        for _ in 0..200 {
            let mut b = full.clone();
            for _ in 0..1 + rnd() % 8 {
                // Bias toward the metadata and the small headers.
                let limit = if rnd() % 2 == 0 { 8192.min(b.len()) } else { b.len() };
                let i = (rnd() as usize) % limit;
                b[i] = rnd() as u8;
            }
            let _ = read_all(b);
        }
    }
}

#[test]
fn bad_magic_and_version() {
    let mut b = fixture("v6-inst.dat");
    b[0] = 0;
    assert_eq!(TraceDat::read(&mut b.clone()).unwrap_err().kind, ErrorKind::BadMagic);
    let mut b = fixture("v6-inst.dat");
    b[10] = b'9';
    assert!(matches!(TraceDat::read(&mut b).unwrap_err().kind, ErrorKind::UnsupportedVersion(_)));
}

#[test]
fn big_endian_v6_roundtrip_header() {
    // The writer in big-endian: the reader must get the same metadata back.
    use trbox::tracedat::{V6Writer, WriteOptions};
    let mut w = V6Writer::new(trbox::abi::Abi::new(Endian::Big, 4), 4096);
    w.header_files(b"hp", b"he").unwrap();
    w.ftrace_formats(&[b"f1".as_slice()]).unwrap();
    w.event_systems(&[("sys", vec![b"a".as_slice(), b"b".as_slice()])]).unwrap();
    w.kallsyms(b"k").unwrap();
    w.printk_formats(b"p").unwrap();
    w.saved_cmdlines(b"c").unwrap();
    w.cpus(4).unwrap();
    let stats = vec!["CPU: 0\nentries: 1\n".to_string()];
    w.options(&WriteOptions { trace_clock: Some("global"), cpustat: &stats, ..Default::default() }, None).unwrap();
    let fly = w.flyrecord().unwrap();
    let mut b = w.take();
    assert_eq!(b.len() as u64, fly.data_start);
    let td = TraceDat::read(&mut b).unwrap();
    assert_eq!(td.endian, Endian::Big);
    assert_eq!(td.long_size, 4);
    assert_eq!(td.header_page, b"hp");
    assert_eq!(td.systems[0].formats, [b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(td.cpus, 4);
    assert_eq!(td.options.clock.as_deref(), Some("global"));
    assert_eq!(td.options.cpustat, ["CPU: 0\nentries: 1\n"]);
    assert_eq!(td.instances[0].cpus.len(), 4);
    // Writer order is enforced.
    let mut w = V6Writer::new(trbox::abi::Abi::new(Endian::Little, 8), 4096);
    assert!(w.kallsyms(b"").is_err());
}

/// A CPU's pages read from a file cut inside its data are exactly the
/// pages before the cut and the cut one's first bytes (pages are read
/// several at a time: the cut may fall in the middle of a read).
#[test]
fn a_cut_in_a_cpus_data_keeps_the_pages_before_it() {
    let full = fixture("v6-inst.dat");
    let td = TraceDat::read(&mut full.clone()).unwrap();
    let mut regions = 0;
    for inst in &td.instances {
        for c in &inst.cpus {
            let pages = |b: &mut Vec<u8>| {
                let mut p = DatPages::new(&td, inst, c);
                let mut v: Vec<Vec<u8>> = Vec::new();
                while let Ok(Some(pg)) = p.next_page(b) {
                    v.push(pg.to_vec());
                }
                v
            };
            let whole = pages(&mut full.clone());
            let ps = td.page_size as u64;
            assert_eq!(whole.concat().len() as u64, c.size);
            regions += 1;
            for k in [1, ps - 1, ps, ps + 1, 3 * ps + 17, 17 * ps + 5, c.size.saturating_sub(1)] {
                if k == 0 || k >= c.size {
                    continue;
                }
                let got = pages(&mut full[..(c.offset + k) as usize].to_vec());
                let (n, rest) = ((k / ps) as usize, (k % ps) as usize);
                let mut want: Vec<Vec<u8>> = whole[..n].to_vec();
                if rest > 0 {
                    want.push(whole[n][..rest].to_vec());
                }
                assert_eq!(got, want, "{:?} cpu {} cut at +{k}", inst.name, c.cpu);
            }
        }
    }
    assert!(regions >= 4);
}

/// CPU data larger than one read (64 KiB) comes back page by page, each
/// page where it was: the fixture's regions repeated 40 times in a v7 file
/// without compression.
#[test]
fn large_cpu_regions_come_back_page_by_page() {
    let mut v6 = fixture("v6-inst.dat");
    let td = TraceDat::read(&mut v6).unwrap();
    let big: Vec<Vec<Vec<u8>>> =
        all_pages(&td, &mut v6).iter().map(|i| i.iter().map(|c| c.repeat(40)).collect()).collect();
    assert!(big.iter().flatten().any(|c| c.len() > 4 * 64 * 1024));
    let mut v7 = build_v7(&td, &big, "none");
    let td7 = TraceDat::read(&mut v7).unwrap();
    let ps = td.page_size as usize;
    for (inst, want) in td7.instances.iter().zip(&big) {
        for (c, data) in inst.cpus.iter().zip(want) {
            let mut p = DatPages::new(&td7, inst, c);
            let mut got: Vec<Vec<u8>> = Vec::new();
            while let Some(pg) = p.next_page(&mut v7).unwrap() {
                got.push(pg.to_vec());
            }
            let want: Vec<Vec<u8>> = data.chunks(ps).map(<[u8]>::to_vec).collect();
            assert_eq!(got, want, "{:?} cpu {}", inst.name, c.cpu);
        }
    }
}
