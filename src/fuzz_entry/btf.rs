//! BTF parser on arbitrary bytes: a whole blob, or (first byte odd) a base
//! and a split blob cut at a position given by the next two bytes. Lookups
//! and the vmemmap helper run on whatever parsed; the function parameters
//! (funcgraph-args) are read from the whole blob too.

use crate::btf::{vmemmap_base_from_trace, Btf, BtfInfo, FuncArgs, KernelConsts};
use alloc::string::String;

const NAMES: &[&str] = &["", "I_NEW", "I_DIRTY_SYNC", "page", "gfp_t", "loff_t", "a", "int", "long int"];

fn probe(b: &Btf) {
    for n in NAMES {
        let _ = (b.enum_value(n), b.struct_size(n), b.union_size(n), b.enum_size(n), b.typedef(n));
    }
    let _ = (b.len(), b.heap_bytes(), b.long_size());
    let k = BtfInfo::from_btf(b.clone());
    let _ = (k.enum_value("I_NEW"), k.sizeof_struct("page"), k.variable("vmemmap_base"));
}

/// One input of the `btf` target.
pub fn btf(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    if sel & 1 == 0 {
        if let Ok(b) = Btf::parse(rest) {
            probe(&b);
        }
        if let Ok(f) = FuncArgs::parse(rest, &|n| !n.is_empty()) {
            for n in NAMES {
                let _ = f.params(n);
            }
        }
    } else if rest.len() >= 2 {
        let cut = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
        let rest = &rest[2..];
        let (base, split) = rest.split_at(cut.min(rest.len()));
        let mut b = Btf::parse(base).unwrap_or_default();
        let _ = b.add_split(base, split);
        probe(&b);
    }
    if sel & 2 != 0 {
        let text = String::from_utf8_lossy(data);
        let _ = vmemmap_base_from_trace(&text, u32::from(sel));
    }
}
