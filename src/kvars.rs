//! Kernel constants for the print-fmt compiler, from the files a system
//! offers (std only): BTF from `/sys/kernel/btf/` (or `DIR/btf/` of a copied
//! tracefs tree), and the current values of kernel variables on the live
//! system: the address from `/proc/kallsyms`, the bytes from `/proc/kcore`.
//!
//! Reading a variable needs root, a kernel with CONFIG_KALLSYMS_ALL (data
//! symbols in kallsyms) and CONFIG_PROC_KCORE, and no lockdown; anything
//! missing gives `None`, never an error.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::btf::{Btf, KernelInfo, VarReader};
use crate::kallsyms::Kallsyms;

/// One PT_LOAD segment of /proc/kcore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    pub vaddr: u64,
    pub offset: u64,
    pub filesz: u64,
}

/// What the ELF header of a core file says about its program headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElfLayout {
    pub class64: bool,
    pub big_endian: bool,
    pub phoff: u64,
    pub phentsize: u16,
    pub phnum: u16,
}

fn rd(b: &[u8], off: usize, n: usize, be: bool) -> Option<u64> {
    let s = b.get(off..off.checked_add(n)?)?;
    let mut v = 0u64;
    for i in 0..n {
        let byte = if be { s.get(i)? } else { s.get(n - 1 - i)? };
        v = v << 8 | u64::from(*byte);
    }
    Some(v)
}

/// Parse an ELF header (the first 64 bytes of /proc/kcore).
pub fn elf_layout(h: &[u8]) -> Option<ElfLayout> {
    if h.get(..4)? != b"\x7fELF" {
        return None;
    }
    let class64 = match *h.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let be = match *h.get(5)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let (phoff, phentsize, phnum) = if class64 { (rd(h, 32, 8, be)?, rd(h, 54, 2, be)?, rd(h, 56, 2, be)?) } else { (rd(h, 28, 4, be)?, rd(h, 42, 2, be)?, rd(h, 44, 2, be)?) };
    let min = if class64 { 56 } else { 32 };
    // PN_XNUM (0xffff) keeps the real count elsewhere: not supported.
    if phentsize < min || phnum == 0xffff {
        return None;
    }
    Some(ElfLayout { class64, big_endian: be, phoff, phentsize: phentsize as u16, phnum: phnum as u16 })
}

/// The PT_LOAD entries of a program header table.
pub fn elf_loads(l: &ElfLayout, table: &[u8]) -> Vec<Load> {
    let be = l.big_endian;
    let mut v = Vec::new();
    for i in 0..usize::from(l.phnum) {
        let o = i * usize::from(l.phentsize);
        let Some(ty) = rd(table, o, 4, be) else { break };
        if ty != 1 {
            continue;
        }
        let f = if l.class64 { (rd(table, o + 8, 8, be), rd(table, o + 16, 8, be), rd(table, o + 32, 8, be)) } else { (rd(table, o + 4, 4, be), rd(table, o + 8, 4, be), rd(table, o + 16, 4, be)) };
        if let (Some(offset), Some(vaddr), Some(filesz)) = f {
            v.push(Load { vaddr, offset, filesz });
        }
    }
    v
}

/// File offset of `len` bytes at kernel address `addr`, if one segment holds
/// them all.
pub fn file_offset(loads: &[Load], addr: u64, len: u64) -> Option<u64> {
    loads.iter().find_map(|s| {
        let rel = addr.checked_sub(s.vaddr)?;
        (rel.checked_add(len)? <= s.filesz).then(|| s.offset.checked_add(rel)).flatten()
    })
}

struct Core {
    file: File,
    layout: ElfLayout,
    loads: Vec<Load>,
}

impl Core {
    fn open(path: &Path) -> Option<Core> {
        let file = File::open(path).ok()?;
        let mut h = [0u8; 64];
        file.read_exact_at(&mut h, 0).ok()?;
        let layout = elf_layout(&h)?;
        let size = usize::from(layout.phnum).checked_mul(usize::from(layout.phentsize))?;
        let mut table = vec![0u8; size];
        file.read_exact_at(&mut table, layout.phoff).ok()?;
        let loads = elf_loads(&layout, &table);
        Some(Core { file, layout, loads })
    }

    fn read_long(&self, addr: u64) -> Option<u64> {
        let n = if self.layout.class64 { 8 } else { 4 };
        let off = file_offset(&self.loads, addr, n as u64)?;
        let mut b = [0u8; 8];
        self.file.read_exact_at(&mut b[..n], off).ok()?;
        rd(&b, 0, n, self.layout.big_endian)
    }
}

/// Values of kernel variables on the running system. Opens /proc/kallsyms
/// and /proc/kcore on first use; if that fails it stays failed.
#[derive(Default)]
pub struct LiveVars {
    syms: OnceLock<Option<Kallsyms>>,
    core: OnceLock<Option<Core>>,
}

impl LiveVars {
    pub fn new() -> Self {
        Self::default()
    }

    /// Use an already parsed /proc/kallsyms.
    pub fn with_kallsyms(k: Kallsyms) -> Self {
        let s = Self::default();
        let _ = s.syms.set(Some(k));
        s
    }

    /// The value (`sizeof(long)` bytes) of the kernel variable `name`.
    pub fn read(&self, name: &str) -> Option<u64> {
        let syms = self.syms.get_or_init(|| std::fs::read_to_string("/proc/kallsyms").ok().map(|t| Kallsyms::parse(&t))).as_ref()?;
        let from_core = || {
            let addr = syms.address_of(name)?;
            let core = self.core.get_or_init(|| Core::open(Path::new("/proc/kcore"))).as_ref()?;
            core.read_long(addr)
        };
        from_core().or_else(|| {
            if name == "jiffies" {
                // Root-only, but present without kcore or data symbols.
                return jiffies_from_timer_list(&std::fs::read_to_string("/proc/timer_list").ok()?);
            }
            let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
            let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
            let v = x86_64_unrandomized(name, syms.address_of("_text"), &cmdline, &cpuinfo)?;
            log::debug!("{name}: no /proc/kcore; KASLR is off, so the default layout's {v:#x}");
            Some(v)
        })
    }
}

/// `jiffies` now, from /proc/timer_list's `jiffies: N` lines. A print fmt
/// that uses it (writeback's `age=`) is rendered by the kernel with the value
/// at read time too; the compiler takes it once per run.
fn jiffies_from_timer_list(text: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix("jiffies: ")?.trim().parse().ok())
}

/// x86_64's memory-layout bases when KASLR is off (kernels without
/// /proc/kcore or data symbols in kallsyms cannot be asked): `nokaslr` on
/// the command line, or the kernel text at its link address (with
/// CONFIG_RANDOMIZE_BASE the text and the memory regions move together;
/// Documentation/arch/x86/x86_64/mm.rst). Only 4-level paging is known for
/// sure: a CPU with `la57` may run 5-level, whose bases differ.
fn x86_64_unrandomized(name: &str, text: Option<u64>, cmdline: &str, cpuinfo: &str) -> Option<u64> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let kaslr_off = cmdline.split_whitespace().any(|w| w == "nokaslr") || text == Some(0xffff_ffff_8100_0000);
    let four_level = !cpuinfo.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "la57"));
    if !kaslr_off || !four_level {
        return None;
    }
    match name {
        "vmemmap_base" => Some(0xffff_ea00_0000_0000),
        "page_offset_base" => Some(0xffff_8880_0000_0000),
        "vmalloc_base" => Some(0xffff_c900_0000_0000),
        _ => None,
    }
}

impl VarReader for LiveVars {
    fn read_var(&self, name: &str) -> Option<u64> {
        self.read(name)
    }
}

/// BTF of a `btf` directory: `vmlinux`, then every other file in it as a
/// module's split BTF on top of it. `None` without a readable vmlinux.
pub fn load_btf_dir(dir: &Path) -> Option<Btf> {
    let base = std::fs::read(dir.join("vmlinux")).ok()?;
    let mut btf = match Btf::parse(&base) {
        Ok(b) => b,
        Err(e) => {
            log::warn!("{}: {e}", dir.join("vmlinux").display());
            return None;
        }
    };
    let mut mods: Vec<_> = std::fs::read_dir(dir).map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n != "vmlinux")).collect()).unwrap_or_default();
    mods.sort();
    let raws: Vec<(PathBuf, Vec<u8>)> = mods.into_iter().filter_map(|m| Some((std::fs::read(&m).ok()?, m))).map(|(r, m)| (m, r)).collect();
    let slices: Vec<&[u8]> = raws.iter().map(|(_, r)| r.as_slice()).collect();
    for ((m, _), r) in raws.iter().zip(btf.add_splits(&base, &slices)) {
        if let Err(e) = r {
            log::debug!("{}: {e}", m.display());
        }
    }
    Some(btf)
}

/// Kernel constants for the tracefs tree at `top`. `live`: the running
/// kernel's /sys/kernel/btf plus the live variable reader. Otherwise `top` is
/// a copy from another machine: `top/btf/vmlinux` (a copy of that machine's
/// /sys/kernel/btf/vmlinux; module blobs beside it) and no variables — never
/// anything of this machine's. `None` when there is nothing to offer.
pub fn load_for_tree(top: &Path, live: bool) -> Option<KernelInfo> {
    if live {
        let mut k = KernelInfo { btf: load_btf_dir(Path::new("/sys/kernel/btf")), ..Default::default() };
        k.reader = Some(Box::new(LiveVars::new()));
        Some(k)
    } else {
        load_btf_dir(&top.join("btf")).map(KernelInfo::from_btf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(v: &mut Vec<u8>, off: usize, n: usize, x: u64, be: bool) {
        if v.len() < off + n {
            v.resize(off + n, 0);
        }
        for i in 0..n {
            let sh = if be { 8 * (n - 1 - i) } else { 8 * i };
            v[off + i] = (x >> sh) as u8;
        }
    }

    /// An ELF core with a note and two PT_LOADs; `var` holds `val` at
    /// kernel address 0xffffffff82001008.
    fn core(class64: bool, be: bool, val: u64) -> Vec<u8> {
        let mut v = b"\x7fELF".to_vec();
        v.push(if class64 { 2 } else { 1 });
        v.push(if be { 2 } else { 1 });
        let (phoff, phent) = if class64 { (64u64, 56usize) } else { (52, 32) };
        if class64 {
            put(&mut v, 32, 8, phoff, be);
            put(&mut v, 54, 2, phent as u64, be);
            put(&mut v, 56, 2, 3, be);
        } else {
            put(&mut v, 28, 4, phoff, be);
            put(&mut v, 42, 2, phent as u64, be);
            put(&mut v, 44, 2, 3, be);
        }
        let base: u64 = if class64 { 0xffffffff82000000 } else { 0xc2000000 };
        let segs = [(4u64, 0u64, 0u64, 0u64), (1, 0x1000, base - 0x1000_0000, 0x100), (1, 0x2000, base, 0x1000)];
        for (i, (ty, off, va, sz)) in segs.into_iter().enumerate() {
            let o = phoff as usize + i * phent;
            put(&mut v, o, 4, ty, be);
            if class64 {
                put(&mut v, o + 8, 8, off, be);
                put(&mut v, o + 16, 8, va, be);
                put(&mut v, o + 32, 8, sz, be);
            } else {
                put(&mut v, o + 4, 4, off, be);
                put(&mut v, o + 8, 4, va, be);
                put(&mut v, o + 16, 4, sz, be);
            }
        }
        let n = if class64 { 8 } else { 4 };
        put(&mut v, 0x2000 + 8, n, val, be);
        v.resize(0x3000, 0);
        v
    }

    #[test]
    fn kcore_layouts() {
        for class64 in [true, false] {
            for be in [false, true] {
                let val = if class64 { 0xffffea0000000000 } else { 0xc1234567 };
                let img = core(class64, be, val);
                let l = elf_layout(&img).unwrap();
                assert_eq!((l.class64, l.big_endian, l.phnum), (class64, be, 3));
                let table = &img[l.phoff as usize..][..usize::from(l.phnum) * usize::from(l.phentsize)];
                let loads = elf_loads(&l, table);
                assert_eq!(loads.len(), 2);
                let base: u64 = if class64 { 0xffffffff82000000 } else { 0xc2000000 };
                let n = if class64 { 8 } else { 4 };
                let off = file_offset(&loads, base + 8, n).unwrap();
                assert_eq!(off, 0x2008);
                assert_eq!(rd(&img, off as usize, n as usize, be), Some(val));
                // Through the file reader.
                let dir = std::env::temp_dir().join(format!("trbox-kcore-{}-{class64}-{be}", std::process::id()));
                std::fs::write(&dir, &img).unwrap();
                let c = Core::open(&dir).unwrap();
                assert_eq!(c.read_long(base + 8), Some(val));
                assert_eq!(c.read_long(base + 0x1000 - n / 2), None, "runs past the segment");
                assert_eq!(c.read_long(base + 0x1000 - n), Some(0));
                assert_eq!(c.read_long(base - 8), None, "between segments");
                assert_eq!(c.read_long(u64::MAX), None);
                let _ = std::fs::remove_file(&dir);
            }
        }
        assert_eq!(elf_layout(b"\x7fELF"), None);
        assert_eq!(elf_layout(b"\x7fELX\x02\x01"), None);
        let mut bad = core(true, false, 0);
        bad[4] = 3;
        assert_eq!(elf_layout(&bad), None);
        let mut bad = core(true, false, 0);
        put(&mut bad, 54, 2, 8, false); // phentsize too small
        assert_eq!(elf_layout(&bad), None);
        // Every prefix of a header: no panic.
        let img = core(true, true, 1);
        for n in 0..64 {
            let _ = elf_layout(&img[..n]);
        }
        let l = elf_layout(&img).unwrap();
        for n in 0..200 {
            let _ = elf_loads(&l, &img[64..64 + n]);
        }
        assert_eq!(file_offset(&[Load { vaddr: u64::MAX - 8, offset: u64::MAX, filesz: 8 }], u64::MAX - 4, 4), None);
        assert_eq!(file_offset(&[Load { vaddr: u64::MAX - 8, offset: 0, filesz: 8 }], u64::MAX - 4, 8), None);
    }

    #[test]
    fn jiffies_line() {
        let t = "Tick Device: mode:     1\nclock event device: lapic\n .idle_jiffies   : 4297477899\njiffies: 4297517350\n";
        assert_eq!(jiffies_from_timer_list(t), Some(4297517350));
        assert_eq!(jiffies_from_timer_list("  .last_jiffies   : 1\n"), None);
    }

    #[test]
    fn x86_64_layout_only_when_kaslr_is_evidently_off() {
        let flags = "flags\t\t: fpu vme de pse\n";
        let la57 = "flags\t\t: fpu la57 vme\n";
        let text = Some(0xffff_ffff_8100_0000);
        let moved = Some(0xffff_ffff_9a20_0000);
        let want = cfg!(target_arch = "x86_64").then_some(0xffff_ea00_0000_0000);
        assert_eq!(x86_64_unrandomized("vmemmap_base", text, "console=ttyS0", flags), want);
        assert_eq!(x86_64_unrandomized("vmemmap_base", moved, "quiet nokaslr", flags), want);
        assert_eq!(x86_64_unrandomized("vmemmap_base", moved, "console=ttyS0", flags), None);
        assert_eq!(x86_64_unrandomized("vmemmap_base", None, "nokaslrx", flags), None);
        assert_eq!(x86_64_unrandomized("vmemmap_base", text, "", la57), None);
        assert_eq!(x86_64_unrandomized("jiffies", text, "", flags), None);
    }

    #[test]
    fn tree_copy_uses_only_its_own_btf() {
        let top = std::env::temp_dir().join(format!("trbox-kvars-tree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        std::fs::create_dir_all(&top).unwrap();
        // No btf/ in the copy: nothing, even though this machine has BTF.
        assert!(load_for_tree(&top, false).is_none());
        // A minimal blob: one struct `page` of 56 bytes.
        let mut blob = vec![0x9f, 0xeb, 1, 0];
        let strs = b"\0page\0";
        let types: [u32; 3] = [1, 4 << 24, 56];
        for v in [24u32, 0, 12, 12, strs.len() as u32] {
            blob.extend_from_slice(&v.to_le_bytes());
        }
        for v in types {
            blob.extend_from_slice(&v.to_le_bytes());
        }
        blob.extend_from_slice(strs);
        std::fs::create_dir_all(top.join("btf")).unwrap();
        std::fs::write(top.join("btf/vmlinux"), &blob).unwrap();
        std::fs::write(top.join("btf/junk_module"), b"not btf").unwrap();
        let k = load_for_tree(&top, false).unwrap();
        use crate::btf::KernelConsts;
        assert_eq!(k.sizeof_struct("page"), Some(56));
        assert_eq!(k.enum_value("I_NEW"), None);
        assert!(k.reader.is_none());
        assert_eq!(k.variable("vmemmap_base"), None);
        // A corrupt vmlinux copy: nothing.
        std::fs::write(top.join("btf/vmlinux"), &blob[..30]).unwrap();
        assert!(load_for_tree(&top, false).is_none());
        let _ = std::fs::remove_dir_all(&top);
    }
}
