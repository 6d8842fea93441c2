//! The ELF resolver on real files, cross-checked against binutils: every
//! function symbol `readelf -s` lists (a sample on big files) resolves to
//! the file offset its PT_LOAD segment gives (`readelf -l`), the test
//! programs' function to the offset `objdump -dF` prints; ELF32 ARM (Thumb)
//! programs when a cross compiler is here; the boards' static busybox
//! (stripped) gives the stripped-binary error and maps its segments right.

use super::common;
use common::cprog::{self, FUNC};
use common::TempDir;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use trbox::elf::{Elf, Error, Table};

/// (offset, vaddr, filesz) of each LOAD in `readelf -lW`.
fn loads(bin: &Path) -> Vec<(u64, u64, u64)> {
    let o = Command::new("readelf").arg("-lW").arg(bin).output().unwrap();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.first() == Some(&"LOAD")).then(|| (hex(w[1]), hex(w[2]), hex(w[4])))
        })
        .collect()
}

/// Function symbols `readelf -sW` lists, by name as it prints it (with
/// `@VER`/`@@VER` in .dynsym): the set of values each name has.
fn readelf_functions(bin: &Path) -> BTreeMap<String, BTreeSet<u64>> {
    let o = Command::new("readelf").arg("-sW").arg(bin).output().unwrap();
    let mut m: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() < 8 || !w[0].ends_with(':') || w[3] != "FUNC" || w[6] == "UND" || w[6] == "ABS" {
            continue;
        }
        let v = u64::from_str_radix(w[1], 16).unwrap();
        if v != 0 {
            m.entry(w[7].to_string()).or_default().insert(v);
        }
    }
    m
}

/// Names that denote one function only: the name as printed has one value,
/// and (without a version) so does every spelling of its base name.
fn unambiguous(funcs: &BTreeMap<String, BTreeSet<u64>>) -> Vec<(String, u64)> {
    let mut by_base: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
    for (n, vs) in funcs {
        by_base.entry(n.split('@').next().unwrap()).or_default().extend(vs);
    }
    funcs
        .iter()
        .filter(|(n, vs)| vs.len() == 1 && (n.contains('@') || by_base[n.split('@').next().unwrap()].len() == 1))
        .map(|(n, vs)| (n.clone(), *vs.iter().next().unwrap()))
        .collect()
}

/// Check up to `max` symbols of `bin` against readelf; returns how many.
fn cross_check(bin: &Path, arm: bool, max: usize) -> usize {
    let bytes = std::fs::read(bin).unwrap();
    let elf = Elf::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    let loads = loads(bin);
    assert!(!loads.is_empty(), "{}: no LOAD", bin.display());
    // Every segment's first and last file byte map back.
    for &(off, vaddr, filesz) in loads.iter().filter(|l| l.2 > 0) {
        assert_eq!(elf.file_offset(vaddr), Some(off), "{}", bin.display());
        assert_eq!(elf.file_offset(vaddr + filesz - 1), Some(off + filesz - 1), "{}", bin.display());
    }
    let names = unambiguous(&readelf_functions(bin));
    let step = (names.len() / max).max(1);
    let mut n = 0;
    for (name, value) in names.iter().step_by(step) {
        let vaddr = if arm { value & !1 } else { *value };
        let want = loads.iter().find(|l| vaddr >= l.1 && vaddr < l.1 + l.2).map(|l| l.0 + (vaddr - l.1));
        match (elf.resolve(name), want) {
            (Ok(loc), Some(want)) => assert_eq!(loc.offset, want, "{} {name}", bin.display()),
            (Err(Error::Ifunc { .. }), _) => {}
            (r, w) => panic!("{} {name}: {r:?}, readelf says {w:?}", bin.display()),
        }
        n += 1;
    }
    n
}

#[test]
fn test_programs_match_objdump_and_readelf() {
    if !cprog::have("readelf") || !cprog::have("objdump") {
        common::skip("no readelf/objdump to cross-check with");
        return;
    }
    let d = TempDir::new("elf");
    let Some(p) = cprog::build(d.path()) else { return };
    for bin in [&p.pie, &p.nopie] {
        let want = cprog::objdump_offset(bin, FUNC).expect("objdump offset");
        let loc = trbox::sys::elf::resolve(bin, FUNC).unwrap();
        assert_eq!(loc.offset, want, "{}", bin.display());
        assert_eq!(loc.table, Some(Table::Symtab));
        assert!(cross_check(bin, false, 1000) > 5);
        // A file-local function resolves too.
        assert!(trbox::sys::elf::resolve(bin, "trbox_local_helper").is_ok());
    }
    // Stripped: only .dynsym is left, which does not have it.
    match trbox::sys::elf::resolve(&p.stripped, FUNC) {
        Err(trbox::sys::Error::Elf { err: Error::Stripped { .. }, .. }) => {}
        r => panic!("{r:?}"),
    }
}

#[test]
fn system_binaries_and_libraries() {
    if !cprog::have("readelf") {
        common::skip("no readelf to cross-check with");
        return;
    }
    let mut checked = 0;
    for f in ["/bin/true", "/bin/ls", "/bin/sh"] {
        let p = PathBuf::from(f);
        if p.exists() {
            cross_check(&std::fs::canonicalize(&p).unwrap(), false, 200);
            checked += 1;
        }
    }
    // glibc: versioned .dynsym (memcpy@GLIBC_2.2.5 next to the IFUNC
    // memcpy@@GLIBC_2.14).
    let o = Command::new("sh").args(["-c", "ldd /bin/true | awk '/libc.so/ {print $3}'"]).output().unwrap();
    let libc = String::from_utf8_lossy(&o.stdout).trim().to_string();
    if libc.is_empty() {
        common::skip("part: no libc found with ldd");
    } else {
        let n = cross_check(Path::new(&libc), false, 400);
        assert!(n > 100, "{libc}: {n}");
        checked += 1;
        let bytes = std::fs::read(&libc).unwrap();
        let elf = Elf::parse(&bytes).unwrap();
        if let Ok(loc) = elf.resolve("memcpy@GLIBC_2.2.5") {
            assert_eq!(loc.table, Some(Table::Dynsym));
        }
        if let Err(e) = elf.resolve("mallocc") {
            assert!(e.hint().unwrap_or_default().contains("malloc"), "{e:?}");
        }
    }
    assert!(checked > 0, "no system binary found");
}

/// A bare library name is found where the dynamic loader finds it: the
/// same file `ldd` names for /bin/true's libc.
#[test]
fn bare_library_names_in_the_loaders_directories() {
    let o = Command::new("sh").args(["-c", "ldd /bin/true | awk '/libc.so/ {print $1, $3}'"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let Some((name, path)) = out.split_once(' ') else {
        common::skip("no dynamically linked libc found with ldd");
        return;
    };
    let found = trbox::sys::elf::locate(name).unwrap();
    assert_eq!(std::fs::canonicalize(path).unwrap(), found);
    assert!(trbox::sys::elf::resolve(&found, "exit").is_ok());
    // Not in $PATH: programs stay there.
    match trbox::sys::elf::locate("libtrbox-no-such.so.1") {
        Err(e) => assert_eq!(e.errno(), Some(libc::ENOENT), "{e}"),
        Ok(p) => panic!("{}", p.display()),
    }
}

#[test]
fn arm_thumb_programs() {
    let cc = "arm-linux-gnueabihf-gcc";
    if !cprog::have(cc) || !cprog::have("readelf") {
        common::skip(&format!("no {cc}/readelf for ELF32 ARM test programs"));
        return;
    }
    let d = TempDir::new("elf-arm");
    let src = "int helper(int x) { return x + 1; }\n__attribute__((noinline)) int trbox_probe_me(int x) { return helper(x) * 3; }\nvoid _start(void) { trbox_probe_me(4); for (;;) ; }\n";
    for (name, flags) in [
        ("thumb", &["-O1", "-nostdlib", "-static", "-mthumb"][..]),
        ("arm", &["-O1", "-nostdlib", "-fPIE", "-pie", "-marm"][..]),
    ] {
        let bin = d.path().join(name);
        if cprog::cc(cc, src, flags, &bin) {
            assert!(cross_check(&bin, true, 100) >= 2, "{name}");
            let bytes = std::fs::read(&bin).unwrap();
            let loc = Elf::parse(&bytes).unwrap().resolve(FUNC).unwrap();
            assert_eq!(loc.offset % 2, 0, "{name}: the Thumb bit is not part of the offset");
        }
    }
}

#[test]
fn board_busyboxes() {
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("cross/cache/qemu");
    let mut seen = 0;
    for (arch, machine) in [("aarch64", 183), ("armv7", 40), ("x86_64", 62)] {
        let bin = cache.join(arch).join("busybox");
        let Ok(bytes) = std::fs::read(&bin) else { continue };
        seen += 1;
        let elf = Elf::parse(&bytes).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert_eq!((elf.machine, elf.kind), (machine, 2), "{arch}");
        if cprog::have("readelf") {
            cross_check(&bin, arch == "armv7", 200);
        }
        if !elf.has_symtab() {
            match elf.resolve("main") {
                Err(e @ Error::Stripped { .. }) => assert!(e.to_string().starts_with("stripped binary"), "{e}"),
                r => panic!("{arch}: {r:?}"),
            }
        }
    }
    if seen == 0 {
        eprintln!("SKIP: no board busybox in {} (make cross fetches them)", cache.display());
    }
}
