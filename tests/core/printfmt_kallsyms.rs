//! kallsyms table: lookups on synthetic text, and on every board
//! fixture's table, held against the kernel's own rules (tests/common/ksym.rs:
//! `is_ksym_addr()` and its exceptions, by kernel version). The live
//! kernel's whole table is tests/live/kallsyms_live.rs'.

use super::common::ksym::{self, Rules};
use std::path::PathBuf;

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
         garbage line\n"
            .as_bytes(),
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

/// The `_etext`, `_einittext` and `_end` symbols are no kernel addresses
/// from 5.16 on (the first machine the suite failed on: `_einittext` of a
/// 6.18 kernel without CONFIG_KALLSYMS_ALL), but were before; with
/// KALLSYMS_ALL `__init_begin`..`__init_end` count from 5.17 on, wherever
/// they lie. trbox takes that range on every version: before 5.17 the
/// kernel did not, which differs only where init lies below `_stext`
/// (parisc, which trbox does not trace; on x86_64, arm64 and arm it lies
/// inside `_stext`..`_end`).
#[test]
fn end_symbols_and_init_range_by_kernel_version() {
    let text_only = "ffffffff81000000 T _stext\n\
        ffffffff81000000 T _text\n\
        ffffffff81000040 T last_fn\n\
        ffffffff81000080 T _etext\n\
        ffffffff83000000 T _sinittext\n\
        ffffffff83000000 B __init_begin\n\
        ffffffff83000100 T last_init_fn\n\
        ffffffff83000180 T _einittext\n\
        ffffffff83100000 R __start_runtime_ptr_x\n";
    let at = |text: &str, v: Option<(u32, u32)>, a: u64| {
        let mut k = trbox::kallsyms::Kallsyms::parse(text.as_bytes());
        k.set_kernel(v);
        ksym::trbox_answer(&k, a)
    };
    for v in [None, Some((5, 16)), Some((6, 18))] {
        assert_eq!(at(text_only, v, 0xffffffff83000180), None, "{v:?}");
        assert_eq!(at(text_only, v, 0xffffffff81000080), None, "{v:?}");
        assert_eq!(at(text_only, v, 0xffffffff8300017f).map(|s| (s.0, s.1)), Some(("last_init_fn".into(), 0x7f)));
    }
    let s = at(text_only, Some((5, 15)), 0xffffffff83000180).unwrap();
    assert_eq!((s.0.as_str(), s.1), ("_einittext", 0));
    assert_eq!(at(text_only, Some((5, 10)), 0xffffffff81000080).map(|s| s.0), Some("_etext".into()));
    assert_eq!(at(text_only, Some((5, 10)), 0xffffffff81000081), None);
    assert_eq!(at(text_only, None, 0xffffffff83100000), None, "a __start_ bound past the text");

    // KALLSYMS_ALL, the init section below _stext (as on parisc).
    let all = "0000000040100000 T _sinittext\n\
        0000000040100000 D __init_begin\n\
        0000000040100010 T init_fn\n\
        0000000040180000 T _einittext\n\
        00000000401a0000 D __init_end\n\
        0000000041000000 T _stext\n\
        0000000041000010 T text_fn\n\
        0000000041800000 T _etext\n\
        0000000041900000 d data_obj\n\
        0000000042000000 B _end\n";
    assert_eq!(at(all, Some((5, 17)), 0x40100014).map(|s| (s.0, s.1)), Some(("init_fn".into(), 4)));
    assert_eq!(at(all, None, 0x41900008).map(|s| (s.0, s.1)), Some(("data_obj".into(), 8)));
    assert_eq!(at(all, None, 0x42000000), None);
    assert_eq!(at(all, Some((5, 10)), 0x42000000).map(|s| s.0), Some("_end".into()));
    for v in [(5, 10), (5, 15), (5, 16), (5, 17), (6, 18)] {
        ksym::check(text_only, v, None, &format!("text only, {v:?}"));
    }
    for v in [(5, 17), (6, 18)] {
        ksym::check(all, v, None, &format!("KALLSYMS_ALL, init below _stext, {v:?}"));
    }
}

/// `in_gate_area_no_mm()`: x86_64's vsyscall page is kernel text to the
/// kernel's lookups, where no symbol is; it names an address there after
/// its last symbol, the size from that one to `_end` (KALLSYMS_ALL) or
/// `_etext`, wrapped as an `unsigned long` (32 bits on arm, whose vectors
/// page is the gate).
#[test]
fn the_gate_page_is_named_after_the_last_symbol() {
    let x86 = "ffffffff81000000 T _stext\n\
        ffffffff82000000 T _etext\n\
        ffffffff83000000 T _sinittext\n\
        ffffffff83000100 T _einittext\n\
        ffffffff83b24974 R __stop_runtime_ptr_USER_PTR_MAX\n\
        ffffffffc0001000 t mod_fn\t[m]\n\
        ffffffffc0002000 t ftrace_trampoline\t[__builtin__ftrace]\n";
    let gate = Some((0xffffffffff600000, 0xffffffffff601000));
    let mut k = trbox::kallsyms::Kallsyms::parse(x86.as_bytes());
    assert_eq!(ksym::trbox_answer(&k, 0xffffffffff600400), None, "no gate page known");
    k.set_gate_area(0xffffffffff600000, 0xffffffffff601000);
    let s = ksym::trbox_answer(&k, 0xffffffffff600400).unwrap();
    assert_eq!(
        s,
        (
            "__stop_runtime_ptr_USER_PTR_MAX".into(),
            0xffffffffff600400 - 0xffffffff83b24974,
            Some(0xffffffff82000000u64.wrapping_sub(0xffffffff83b24974)),
            None
        )
    );
    assert_eq!(ksym::trbox_answer(&k, 0xffffffffff601000), None);
    ksym::check(x86, (6, 18), gate, "x86_64 with its vsyscall page");
    let arm = "c0300000 T _stext\n\
        c0e00000 D _etext\n\
        c1200000 T _sinittext\n\
        c1280000 T _einittext\n\
        c1400000 B _end\n\
        c1500000 b last_obj\n";
    let mut k = trbox::kallsyms::Kallsyms::parse(arm.as_bytes());
    k.set_gate_area(0xffff0000, 0xffff1000);
    let s = ksym::trbox_answer(&k, 0xffff0fa0).unwrap();
    assert_eq!((s.0.as_str(), s.1, s.2), ("last_obj", 0xffff0fa0 - 0xc1500000, Some(0xfff00000)));
    ksym::check(arm, (6, 1), Some((0xffff0000, 0xffff1000)), "arm with its vectors page");
}

/// A module's mapping symbols (`$x` where its code starts, `$d`), which
/// /proc/kallsyms lists, name nothing: the function there does.
#[test]
fn module_mapping_symbols_name_nothing() {
    let t = "ffff800080010000 T _stext\n\
        ffff800081000000 T _etext\n\
        ffff80007a000000 t $x\t[m]\n\
        ffff80007a000000 t m_first\t[m]\n\
        ffff80007a000040 t $d\t[m]\n\
        ffff80007a000048 t m_second\t[m]\n";
    let k = trbox::kallsyms::Kallsyms::parse(t.as_bytes());
    let s = k.lookup(0xffff80007a000044).unwrap();
    assert_eq!((s.name, s.offset, s.size, s.module), ("m_first", 0x44, 0x48, Some("m")));
    ksym::check(t, (6, 18), None, "mapping symbols");
}

/// Every board fixture's table (cut down, of kernels 5.10 to 7.2 on three
/// architectures) at every address it lists, as the kernel of that tree
/// looks it up; and, where the table is CONFIG_KALLSYMS_ALL's, the same
/// table as a kernel without it lists it.
#[test]
fn every_fixture_table_by_is_ksym_addr() {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut n = (0, 0);
    for arch in std::fs::read_dir(&base).unwrap().flatten().filter(|a| a.path().is_dir()) {
        for tree in std::fs::read_dir(arch.path()).unwrap().flatten() {
            let Ok(text) = std::fs::read_to_string(tree.path().join("kallsyms")) else { continue };
            let uname = std::fs::read_to_string(tree.path().join("uname")).unwrap();
            let release = uname.split_whitespace().nth(2).unwrap();
            let v = ksym::release_version(release).unwrap_or_else(|| panic!("{release}"));
            let what = tree.path().display().to_string();
            n.0 += ksym::check(&text, v, None, &what);
            if Rules::new(&text, v, None).all() {
                n.1 += ksym::check(&Rules::text_only(&text), v, None, &format!("{what}, text only"));
            }
        }
    }
    println!("fixture tables: {} addresses, {} more as a kernel without KALLSYMS_ALL lists them", n.0, n.1);
    assert!(n.0 > 1000, "{n:?}");
}
