//! kallsyms table: lookups on synthetic text, and the build time for a
//! 10 MB text (this machine's /proc/kallsyms, repeated), printed with
//! `-- --nocapture` (use `--release` for representative numbers).

use crate::common;
use std::time::Instant;

use trbox::kallsyms::Kallsyms;
use trbox::printk::PrintkFormats;

#[test]
fn lookup_rules() {
    let k = Kallsyms::parse(
        "ffffffff81000000 T _stext\n\
         ffffffff81000000 T _text\n\
         ffffffff81000010 t first_alias\n\
         ffffffff81000010 T second_alias\n\
         ffffffff81000040 T next_fn\n\
         0000000000000000 A fixed_percpu_data\n\
         ffffffff81000080 T _etext\n\
         ffffffffc0001000 t m1_fn\t[m1]\n\
         ffffffffc0001100 t m1_fn2\t[m1]\n\
         ffffffffc0002000 t m2_fn\t[m2]\n\
         garbage line\n",
    );
    let s = k.lookup(0xffffffff81000015).unwrap();
    assert_eq!((s.name, s.offset, s.size, s.module), ("first_alias", 5, 0x30, None));
    assert!(k.lookup(0xffffffff80ffffff).is_none());
    // Past _etext (no _end: not CONFIG_KALLSYMS_ALL) is not kernel text.
    assert!(k.lookup(0xffffffff81000090).is_none());
    let s = k.lookup(0xffffffffc0001104).unwrap();
    assert_eq!((s.name, s.offset, s.size, s.module), ("m1_fn2", 4, 0xf00, Some("m1")));
    let s = k.lookup(0xffffffffc0002001).unwrap();
    assert_eq!((s.name, s.module), ("m2_fn", Some("m2")));
    assert_eq!(k.address_of("next_fn"), Some(0xffffffff81000040));
}

#[test]
fn printk_formats_unescape() {
    let t = PrintkFormats::parse(
        "0xffffffff82000000 : \"a\\tb\\nc \\\"q\\\" \\x\"\n0xffffffff81000000 : \"first\"\nnonsense\n",
    );
    assert_eq!(t.get(0xffffffff82000000), Some("a\tb\nc \"q\" \\x"));
    assert_eq!(t.get(0xffffffff81000000), Some("first"));
    assert_eq!(t.get(0xffffffff81000001), None);
    assert_eq!(t.len(), 2);
}

#[test]
fn build_time_and_live_lookups() {
    let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else { return };
    // Hidden (kallsyms_show_value() false): every address is printed as 0.
    // Not the first line alone: x86_64's per-CPU symbols start at 0 (on
    // 6.1, the first lines of /proc/kallsyms; that board skipped here).
    if text.lines().all(|l| l.starts_with("0000000000000000") || l.starts_with("00000000 ")) {
        common::skip("kallsyms addresses hidden");
        return;
    }
    let mut big = String::with_capacity(text.len() * 2 + 1);
    while big.len() < 10 << 20 {
        big.push_str(&text);
    }
    let t = Instant::now();
    let k = Kallsyms::parse(&big);
    let dt = t.elapsed();
    println!(
        "kallsyms: {:.1} MB, {} symbols, built in {:.1} ms ({:.0} MB/s)",
        big.len() as f64 / 1e6,
        k.len(),
        dt.as_secs_f64() * 1e3,
        big.len() as f64 / 1e6 / dt.as_secs_f64()
    );
    let t = Instant::now();
    let k = Kallsyms::parse(&text);
    let dt = t.elapsed();
    println!(
        "kallsyms: {:.1} MB (sorted, as the kernel lists it) built in {:.1} ms ({:.0} MB/s)",
        text.len() as f64 / 1e6,
        dt.as_secs_f64() * 1e3,
        text.len() as f64 / 1e6 / dt.as_secs_f64()
    );
    // Every text symbol resolves to itself or an alias at the same address.
    let mut n = 0;
    let t = Instant::now();
    for line in text.lines().step_by(7) {
        let mut it = line.split_whitespace();
        let (Some(a), Some(ty), Some(name)) = (it.next(), it.next(), it.next()) else { continue };
        if !matches!(ty, "T" | "t") {
            continue;
        }
        let addr = u64::from_str_radix(a, 16).unwrap();
        let s = k.lookup(addr).unwrap_or_else(|| panic!("{name} not found"));
        assert_eq!(s.offset, 0, "{name} -> {}", s.name);
        n += 1;
    }
    println!("{n} lookups in {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
}
