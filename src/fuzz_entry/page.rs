//! The page decoder on arbitrary bytes, with the layout chosen by the first
//! byte: endian, 4- or 8-byte commit word, sub-buffer size.

use crate::abi::Endian;
use crate::page::{Page, PageItem, PageLayout};
use alloc::vec::Vec;

/// One input of the `page` target.
pub fn page(data: &[u8]) {
    let Some((&sel, bytes)) = data.split_first() else { return };
    let e = if sel & 1 == 0 { Endian::Little } else { Endian::Big };
    let long = if sel & 2 == 0 { 8 } else { 4 };
    // Small sizes too, so the fuzzer can fill whole pages.
    let size = [4096u32, 16384, 65536, 64, 128, 256, 1024, 24][usize::from(sel >> 2) & 7];
    let mut layout = PageLayout::new(long, size);
    if sel & 0x20 != 0 {
        // A layout with padding between the header and the data.
        layout.data_offset += 8;
    }
    let Ok(page) = Page::parse(bytes, &layout, e) else { return };
    assert!(page.data().len() <= page.len as usize);
    let mut n = 0usize;
    let mut it = page.items();
    while let Some(item) = it.next() {
        match item {
            Ok(PageItem::Record(r)) => {
                // Payloads point inside the input.
                let lo = bytes.as_ptr() as usize;
                let p = r.payload.as_ptr() as usize;
                assert!(p >= lo && p + r.payload.len() <= lo + bytes.len());
                n += 1;
            }
            Ok(PageItem::Lost { .. }) => {}
            Err(_) => {
                assert!(it.next().is_none());
                break;
            }
        }
        // Resuming from the cursor gives the same continuation.
        if n == 1 {
            let c = it.cursor();
            let a: Vec<_> = page.items_at(c).collect();
            let b: Vec<_> = it.clone().collect();
            assert_eq!(a, b);
        }
    }
    // Records are at least 4 bytes apart: no more than len/4 of them.
    assert!(n <= page.len as usize / 4 + 1);
}
