//! This kernel's /proc/kallsyms, whole: trbox looks every address it lists
//! up as the kernel does (tests/common/ksym.rs: `is_ksym_addr()` of this
//! version, with and without CONFIG_KALLSYMS_ALL, its gate page); and the
//! kernel's own text of an address in the gate page, which it names after
//! its last symbol, is trbox's too. The table's build time is printed
//! (`-- --nocapture`, `--release` for representative numbers).

use super::common;
use super::common::ksym::{self, Rules};
use std::time::Instant;

/// /proc/kallsyms with its addresses, or why not.
fn kallsyms() -> Option<String> {
    let text = match std::fs::read_to_string("/proc/kallsyms") {
        Ok(t) => t,
        Err(e) => {
            common::skip(&format!("/proc/kallsyms: {e}"));
            return None;
        }
    };
    // Hidden (kallsyms_show_value() false): every address printed as 0.
    // Not the first line alone: x86_64's per-CPU symbols are at 0 (the
    // first lines of 6.1's /proc/kallsyms).
    if text.lines().all(|l| l.starts_with("0000000000000000") || l.starts_with("00000000 ")) {
        common::skip("kallsyms addresses hidden (kptr_restrict, or not root)");
        return None;
    }
    Some(text)
}

/// This kernel's (major, minor).
fn version() -> (u32, u32) {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    ksym::release_version(r.trim()).unwrap_or_else(|| panic!("release {r}"))
}

/// `in_gate_area_no_mm()`'s page here: x86_64's `[vsyscall]` (none with
/// vsyscall=none), a 32-bit arm kernel's `[vectors]` (CONFIG_KUSER_HELPERS).
fn gate() -> Option<(u64, u64)> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "arm")) {
        return None;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let l = maps.lines().find(|l| l.ends_with("[vsyscall]") || l.ends_with("[vectors]"))?;
    let (s, e) = l.split_whitespace().next()?.split_once('-')?;
    Some((u64::from_str_radix(s, 16).ok()?, u64::from_str_radix(e, 16).ok()?))
}

#[test]
fn every_listed_address_resolves_as_the_kernel_resolves_it() {
    let Some(text) = kallsyms() else { return };
    let (v, g) = (version(), gate());
    let t = Instant::now();
    let k = trbox::kallsyms::Kallsyms::parse(text.as_bytes());
    let dt = t.elapsed();
    println!(
        "kallsyms: {:.1} MB, {} symbols, built in {:.1} ms ({:.0} MB/s)",
        text.len() as f64 / 1e6,
        k.len(),
        dt.as_secs_f64() * 1e3,
        text.len() as f64 / 1e6 / dt.as_secs_f64()
    );
    let rules = Rules::new(&text, v, g);
    let n = ksym::check(&text, v, g, "/proc/kallsyms");
    println!("{n} addresses looked up as kernel {v:?} does (KALLSYMS_ALL: {}, gate page: {g:x?})", rules.all());
    // A kernel built without KALLSYMS_ALL lists its text only: checked too
    // (the machine the suite first failed on had such a kernel).
    if rules.all() {
        let n = ksym::check(&Rules::text_only(&text), v, g, "/proc/kallsyms as text only");
        println!("{n} addresses of the same table as a kernel without KALLSYMS_ALL lists it");
    }
}

/// A fault in x86_64's vsyscall page (`exceptions:page_fault_user`, whose
/// print fmt shows `address` and `ip` with `%ps`): the kernel's `trace`
/// names both after its last symbol (`in_gate_area_no_mm()`), and `tr-cat
/// --raw` prints the same line.
#[test]
#[cfg(target_arch = "x86_64")]
fn a_fault_in_the_vsyscall_page_reads_as_the_kernel_prints_it() {
    let Some((_l, root, before)) = common::live_with_snapshot() else { return };
    let ev = "events/exceptions/page_fault_user";
    if gate().is_none() || !root.join(ev).is_dir() {
        common::skip_absent("no vsyscall page (vsyscall=none) or no exceptions:page_fault_user event");
        return;
    }
    let name = format!("trbox-gate-{}", std::process::id());
    let inst = root.join("instances").join(&name);
    std::fs::create_dir(&inst).unwrap();
    struct Rm(std::path::PathBuf);
    impl Drop for Rm {
        fn drop(&mut self) {
            let _ = std::fs::write(self.0.join("events/exceptions/page_fault_user/enable"), "0");
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let rm = Rm(inst.clone());
    std::fs::write(inst.join(ev).join("filter"), "address >= 0xffffffffff600000").unwrap();
    std::fs::write(inst.join(ev).join("enable"), "1").unwrap();
    // time() through the vsyscall page: an instruction fetch there faults
    // (emulated since 4.20 whatever the mode, unless vsyscall=none).
    // SAFETY: the page is mapped ([vsyscall] in /proc/self/maps) and its
    // entry at 0x400 is time(NULL), which returns the kernel's `long`
    // (__kernel_old_time_t; libc's time_t is deprecated on musl).
    let time: extern "C" fn(*mut i64) -> i64 = unsafe { std::mem::transmute(0xffff_ffff_ff60_0400usize) };
    assert!(time(std::ptr::null_mut()) > 0);
    std::fs::write(inst.join(ev).join("enable"), "0").unwrap();
    let kernel = std::fs::read_to_string(inst.join("trace")).unwrap();
    let k: Vec<&str> = kernel.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(k.iter().any(|l| l.contains("page_fault_user: address=")), "no fault traced:\n{kernel}");
    let o = common::run(&["tr-cat", "--raw", "-B", &name]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let ours = common::stdout(&o);
    assert_eq!(ours.lines().collect::<Vec<_>>(), k, "kernel:\n{kernel}\ntr-cat --raw:\n{ours}");
    drop(rm);
    common::assert_same_state(&before, &common::snapshot(&root));
}
