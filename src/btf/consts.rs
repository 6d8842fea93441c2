//! What the print-fmt compiler asks of the traced kernel beyond its
//! format files ([`KernelConsts`]): BTF's enumerators, sizes and typedefs,
//! and kernel variables ([`BtfInfo`] with a [`VarReader`], or values
//! derived from a trace's own text).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::{Btf, TypeInfo};

/// What the print-fmt compiler needs to know about the traced kernel beyond
/// its format files. Every method answers `None` for "unknown": the caller
/// then falls back to `name=value` rendering.
pub(crate) trait KernelConsts {
    /// Value of an enumerator (`I_DIRTY_SYNC`). Unsigned 64-bit values above
    /// `i64::MAX` come back as their bit pattern (`as u64` restores them).
    fn enum_value(&self, name: &str) -> Option<i64>;
    /// `sizeof(struct NAME)` (NAME without the `struct` keyword).
    fn sizeof_struct(&self, name: &str) -> Option<u32>;
    /// The current value of the kernel variable NAME (`vmemmap_base`),
    /// `sizeof(long)` bytes wide. Only a live system can answer this.
    fn variable(&self, name: &str) -> Option<u64>;
    /// A typedef name as it appears in casts (`gfp_t`, `loff_t`), resolved
    /// through const/volatile/typedef chains.
    fn typedef(&self, _name: &str) -> Option<TypeInfo> {
        None
    }
}

/// A source of kernel variable values (the live system: `sys::kvars::LiveVars`,
/// std only).
pub(crate) trait VarReader {
    /// The value of the kernel variable `name` (a `u64` or pointer), or
    /// `None` when it cannot be read (no such symbol, no `/proc/kcore`).
    fn read_var(&self, name: &str) -> Option<u64>;
}

/// [`KernelConsts`] from BTF, values of variables known in advance, and an
/// optional reader of live variables.
#[derive(Default)]
pub(crate) struct BtfInfo {
    pub(crate) btf: Option<Btf>,
    /// Variables with known values (checked before the reader).
    pub(crate) known: Vec<(String, u64)>,
    /// Asked for variables not in `known`: the live kernel's memory, when
    /// trbox runs on the traced machine; `None` for a recorded file.
    pub(crate) reader: Option<Box<dyn VarReader + Send + Sync>>,
}

impl fmt::Debug for BtfInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BtfInfo")
            .field("btf", &self.btf)
            .field("known", &self.known)
            .field("reader", &self.reader.is_some())
            .finish()
    }
}

impl BtfInfo {
    /// Constants from `btf` (a kernel's `/sys/kernel/btf/vmlinux`), no
    /// variables known yet.
    pub(crate) fn from_btf(btf: Btf) -> Self {
        BtfInfo { btf: Some(btf), ..Default::default() }
    }

    /// Record a variable's value (e.g. one learned by
    /// [`vmemmap_base_from_trace`]); it takes precedence over the reader.
    #[cfg(test)]
    pub(crate) fn set_variable(&mut self, name: &str, value: u64) {
        match self.known.iter_mut().find(|(n, _)| n == name) {
            Some(e) => e.1 = value,
            None => self.known.push((name.into(), value)),
        }
    }
}

impl KernelConsts for Btf {
    fn enum_value(&self, name: &str) -> Option<i64> {
        Btf::enum_value(self, name)
    }
    fn sizeof_struct(&self, name: &str) -> Option<u32> {
        self.struct_size(name)
    }
    fn variable(&self, _name: &str) -> Option<u64> {
        None
    }
    fn typedef(&self, name: &str) -> Option<TypeInfo> {
        Btf::typedef(self, name)
    }
}

impl KernelConsts for BtfInfo {
    fn enum_value(&self, name: &str) -> Option<i64> {
        self.btf.as_ref()?.enum_value(name)
    }
    fn sizeof_struct(&self, name: &str) -> Option<u32> {
        self.btf.as_ref()?.struct_size(name)
    }
    fn variable(&self, name: &str) -> Option<u64> {
        if let Some(&(_, v)) = self.known.iter().find(|(n, _)| n == name) {
            return Some(v);
        }
        self.reader.as_ref()?.read_var(name)
    }
    fn typedef(&self, name: &str) -> Option<TypeInfo> {
        self.btf.as_ref()?.typedef(name)
    }
}

/// Learn x86_64's `vmemmap_base` from the kernel's own text of page events
/// (`mm_page_alloc: page=ffffea0004a1b2c0 pfn=0x1286cb …`, `0x` optional;
/// needs `options/hash-ptr` 0): `page = vmemmap_base + pfn *
/// sizeof(struct page)`. Every line with both values must agree, else `None`.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn vmemmap_base_from_trace(text: &str, struct_page_size: u32) -> Option<u64> {
    fn hex(s: &str) -> Option<(u64, &str)> {
        let s = s.strip_prefix("0x").unwrap_or(s);
        let n = s.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(s.len());
        let v = u64::from_str_radix(s.get(..n)?, 16).ok()?;
        Some((v, s.get(n..)?))
    }
    let mut found: Option<u64> = None;
    for line in text.lines() {
        let Some(i) = line.find(" page=") else { continue };
        let Some((page, rest)) = line.get(i + 6..).and_then(hex) else { continue };
        let Some(rest) = rest.strip_prefix(" pfn=") else { continue };
        let Some((pfn, _)) = hex(rest) else { continue };
        if page == 0 {
            continue;
        }
        let base = page.wrapping_sub(pfn.wrapping_mul(u64::from(struct_page_size)));
        match found {
            None => found = Some(base),
            Some(b) if b == base => {}
            Some(_) => return None,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmemmap_from_text() {
        let t = "  bash-1 [000] ..... 1.0: mm_page_alloc: page=0xffffea0000040000 pfn=0x1000 order=0 migratetype=0 gfp_flags=GFP_KERNEL\n\
                 x: mm_page_alloc: page=0xffffea0000040040 pfn=0x1001 order=0\n\
                 x: mm_page_free: page=0xffffea0000080000 pfn=0x2000 order=0\n\
                 x: other: page=0x12\n";
        assert_eq!(vmemmap_base_from_trace(t, 64), Some(0xffffea0000000000));
        assert_eq!(vmemmap_base_from_trace(t, 56), None);
        assert_eq!(vmemmap_base_from_trace("nothing here", 64), None);
        assert_eq!(vmemmap_base_from_trace("a page=0xzz pfn=0x1", 64), None);
        assert_eq!(vmemmap_base_from_trace(" page=0x40 pfn=0x1", 64), Some(0));
        assert_eq!(vmemmap_base_from_trace(" page=ffffea0000000080 pfn=0x2 order=0", 64), Some(0xffffea0000000000));
        assert_eq!(vmemmap_base_from_trace(" page=0000000000000000 pfn=0x0 order=0\n page=(null) pfn=0x0", 64), None);
        assert_eq!(vmemmap_base_from_trace(" page=0x40 pfn=0x1\n page=0x", 64), Some(0));
    }
}
