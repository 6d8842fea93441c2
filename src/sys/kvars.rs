//! Kernel constants for the print-fmt compiler, from the files a system
//! offers: BTF from `/sys/kernel/btf/` (or `DIR/btf/` of a copied tracefs
//! tree), and the current values of kernel variables on the live system:
//! the address from `/proc/kallsyms`, the bytes from `/proc/kcore` (an ELF
//! core, parsed by [`crate::elf`]); what to do without them is decided in
//! `crate::kvars`.
//!
//! Reading a variable needs root, a kernel with CONFIG_KALLSYMS_ALL (data
//! symbols in kallsyms) and CONFIG_PROC_KCORE, and no lockdown; anything
//! missing gives `None`, never an error.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::btf::{Btf, BtfInfo, VarReader};
use crate::elf::{segment_offset, Header, Segment, HEADER_LEN};
use crate::kallsyms::Kallsyms;
use crate::kvars::{jiffies_from_timer_list, x86_64_unrandomized};

/// An open ELF core (`/proc/kcore`): its header and PT_LOAD segments; the
/// bytes are read when asked for.
struct Core {
    file: File,
    header: Header,
    loads: Vec<Segment>,
}

impl Core {
    fn open(path: &Path) -> Option<Core> {
        let file = File::open(path).ok()?;
        let mut h = [0u8; HEADER_LEN];
        file.read_exact_at(&mut h, 0).ok()?;
        let header = Header::parse(&h).ok()?;
        let (off, len) = header.program_table().ok()??;
        let mut table = vec![0u8; usize::try_from(len).ok()?];
        file.read_exact_at(&mut table, off).ok()?;
        let loads = header.loads(&table).ok()?;
        Some(Core { file, header, loads })
    }

    fn read_long(&self, addr: u64) -> Option<u64> {
        let n = if self.header.is64 { 8 } else { 4 };
        let off = segment_offset(&self.loads, addr, n as u64)?;
        let mut b = [0u8; 8];
        self.file.read_exact_at(&mut b[..n], off).ok()?;
        self.header.endian.uint(&b, 0, n)
    }
}

/// Values of kernel variables on the running system. Opens /proc/kallsyms
/// and /proc/kcore on first use; if that fails it stays failed.
#[derive(Default)]
pub(crate) struct LiveVars {
    syms: OnceLock<Option<Kallsyms>>,
    core: OnceLock<Option<Core>>,
}

impl LiveVars {
    /// Nothing read yet: the symbols and /proc/kcore on first use.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The value (`sizeof(long)` bytes) of the kernel variable `name`.
    pub(crate) fn read(&self, name: &str) -> Option<u64> {
        let syms =
            self.syms.get_or_init(|| std::fs::read("/proc/kallsyms").ok().map(|t| Kallsyms::parse(&t))).as_ref()?;
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
            // No /proc/kcore; KASLR is off: the default layout's value.
            x86_64_unrandomized(name, syms.address_of("_text"), &cmdline, &cpuinfo)
        })
    }
}

impl VarReader for LiveVars {
    fn read_var(&self, name: &str) -> Option<u64> {
        self.read(name)
    }
}

/// BTF of a `btf` directory: `vmlinux`, then every other file in it as a
/// module's split BTF on top of it. `None` without a readable vmlinux.
pub(crate) fn load_btf_dir(dir: &Path) -> Option<Btf> {
    let base = std::fs::read(dir.join("vmlinux")).ok()?;
    let mut btf = match Btf::parse(&base) {
        Ok(b) => b,
        Err(e) => {
            log::warn!("{}: {e}", dir.join("vmlinux").display());
            return None;
        }
    };
    let mut mods: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n != "vmlinux")).collect())
        .unwrap_or_default();
    mods.sort_unstable();
    let raws: Vec<(PathBuf, Vec<u8>)> =
        mods.into_iter().filter_map(|m| Some((std::fs::read(&m).ok()?, m))).map(|(r, m)| (m, r)).collect();
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
pub(crate) fn load_for_tree(top: &Path, live: bool) -> Option<BtfInfo> {
    if live {
        let mut k = BtfInfo { btf: load_btf_dir(Path::new("/sys/kernel/btf")), ..Default::default() };
        k.reader = Some(Box::new(LiveVars::new()));
        Some(k)
    } else {
        load_btf_dir(&top.join("btf")).map(BtfInfo::from_btf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf::{kcore_image, KCORE_BASE};

    #[test]
    fn kcore_reader() {
        for class64 in [true, false] {
            for be in [false, true] {
                let val = if class64 { 0xffffea0000000000 } else { 0xc1234567 };
                let img = kcore_image(class64, be, val);
                let base: u64 = if class64 { KCORE_BASE } else { 0xc2000000 };
                let n = if class64 { 8 } else { 4 };
                let path = std::env::temp_dir().join(format!("trbox-kcore-{}-{class64}-{be}", std::process::id()));
                std::fs::write(&path, &img).unwrap();
                let c = Core::open(&path).unwrap();
                assert_eq!(c.read_long(base + 8), Some(val));
                assert_eq!(c.read_long(base + 0x1000 - n / 2), None, "runs past the segment");
                assert_eq!(c.read_long(base + 0x1000 - n), Some(0));
                assert_eq!(c.read_long(base - 8), None, "between segments");
                assert_eq!(c.read_long(u64::MAX), None);
                let _ = std::fs::remove_file(&path);
            }
        }
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
