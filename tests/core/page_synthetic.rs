//! Hand-assembled sub-buffers (bytes written out from the kernel's layout,
//! not produced by the crate's own page builder), and corrupted real pages.

use trbox::abi::Endian;
use trbox::format::HeaderPage;
use trbox::page::{Missed, Page, PageErrorKind, PageItem, PageLayout};

/// Little-endian x86_64-style page: 8-byte commit word with both flags
/// added the way the kernel's `local_add(int)` does (sign-extended).
#[test]
fn le64_hand_made_with_stored_loss() {
    let l = PageLayout::new(8, 4096);
    let mut p = vec![0u8; 4096];
    p[0..8].copy_from_slice(&1_000_000u64.to_le_bytes());
    // len 0x24 + RB_MISSED_STORED + (int)RB_MISSED_EVENTS, as a 64-bit long.
    let commit: i64 = 0x24 + 0x4000_0000 + i64::from(i32::MIN);
    p[8..16].copy_from_slice(&commit.to_le_bytes());
    let d = 16;
    // type_len 2 (8 bytes), delta 7.
    p[d..d + 4].copy_from_slice(&((7u32 << 5) | 2).to_le_bytes());
    p[d + 4..d + 12].copy_from_slice(b"ABCDEFGH");
    // time extend: delta = (3 << 27) + 5.
    p[d + 12..d + 16].copy_from_slice(&((5u32 << 5) | 30).to_le_bytes());
    p[d + 16..d + 20].copy_from_slice(&3u32.to_le_bytes());
    // type_len 0: array[0] = 12 -> 8 payload bytes, delta 1.
    p[d + 20..d + 24].copy_from_slice(&(1u32 << 5).to_le_bytes());
    p[d + 24..d + 28].copy_from_slice(&12u32.to_le_bytes());
    p[d + 28..d + 36].copy_from_slice(b"longdata");
    // The stored lost count right after the data.
    p[d + 36..d + 44].copy_from_slice(&4242u64.to_le_bytes());
    let page = Page::parse(&p, &l, Endian::Little).unwrap();
    assert_eq!((page.len, page.missed), (0x24, Missed::Count(4242)));
    let items: Vec<_> = page.items().map(Result::unwrap).collect();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0], PageItem::Lost { ts: 1_000_000, count: Some(4242) });
    let PageItem::Record(a) = items[1] else { panic!() };
    let PageItem::Record(b) = items[2] else { panic!() };
    assert_eq!((a.ts, a.payload), (1_000_007, &b"ABCDEFGH"[..]));
    assert_eq!((b.ts, b.payload), (1_000_007 + (3 << 27) + 5 + 1, &b"longdata"[..]));
}

/// Big-endian 32-bit (armv7eb / ppc-style) page: 4-byte commit word at 8,
/// data at 12, MISSED_EVENTS without a stored count.
#[test]
fn be32_hand_made_unknown_loss() {
    let hp = HeaderPage::parse(
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
         \tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\
         \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
         \tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n",
    )
    .unwrap();
    let l = PageLayout::from(&hp);
    let mut p = vec![0u8; 4096];
    p[0..8].copy_from_slice(&50u64.to_be_bytes());
    p[8..12].copy_from_slice(&(0x8000_0000u32 | 24).to_be_bytes());
    let d = 12;
    // BE header: type_len in the top 5 bits. type_len 1, delta 2.
    p[d..d + 4].copy_from_slice(&((1u32 << 27) | 2).to_be_bytes());
    p[d + 4..d + 8].copy_from_slice(b"wxyz");
    // Absolute time stamp 10_000 (type 31).
    p[d + 8..d + 12].copy_from_slice(&((31u32 << 27) | 10_000).to_be_bytes());
    p[d + 12..d + 16].copy_from_slice(&0u32.to_be_bytes());
    // Discarded event (padding, delta 1) of 8 bytes total.
    p[d + 16..d + 20].copy_from_slice(&((29u32 << 27) | 1).to_be_bytes());
    p[d + 20..d + 24].copy_from_slice(&4u32.to_be_bytes());
    let page = Page::parse(&p, &l, Endian::Big).unwrap();
    assert_eq!(page.missed, Missed::Unknown);
    let items: Vec<_> = page.items().map(Result::unwrap).collect();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0], PageItem::Lost { ts: 50, count: None });
    let PageItem::Record(r) = items[1] else { panic!() };
    assert_eq!((r.ts, r.payload), (52, &b"wxyz"[..]));
    // Read as little endian, the same bytes are garbage: an error, not a panic.
    let bad = Page::parse(&p, &l, Endian::Little);
    if let Ok(b) = bad {
        b.items().for_each(drop);
    }
}

/// 16 KiB and 64 KiB sub-buffers filled to the last byte, ending in a null
/// padding word.
#[test]
fn big_subbuffers_full() {
    for size in [16384usize, 65536] {
        let l = PageLayout::new(8, size as u32);
        let mut p = vec![0u8; size];
        p[0..8].copy_from_slice(&0u64.to_le_bytes());
        let data = size - 16;
        // 28-word events (116 bytes) until fewer than 116 bytes are left.
        let mut off = 16;
        let mut n = 0;
        while off + 116 <= size {
            p[off..off + 4].copy_from_slice(&((1u32 << 5) | 28).to_le_bytes());
            p[off + 4] = n as u8;
            off += 116;
            n += 1;
        }
        let len = off - 16;
        assert!(len <= data);
        p[8..16].copy_from_slice(&(len as u64).to_le_bytes());
        let page = Page::parse(&p, &l, Endian::Little).unwrap();
        let recs: Vec<_> = page.records().map(Result::unwrap).collect();
        assert_eq!(recs.len(), n);
        assert_eq!(recs.last().unwrap().ts, n as u64);
        assert_eq!(recs[5].payload[0], 5);
        assert_eq!(recs[5].payload.len(), 112);
        // The same page claimed as a 4 KiB sub-buffer: commit too large.
        if len > 4080 {
            let e = Page::parse(&p, &PageLayout::new(8, 4096), Endian::Little).unwrap_err();
            assert_eq!(e.kind, PageErrorKind::CommitTooLarge);
        }
    }
}

/// Every single-byte corruption and every truncation of real pages: never a
/// panic, records stay inside the page, an error ends the page.
#[test]
fn corrupted_and_truncated_real_pages() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pages/x86_64-6.18");
    let l = trbox::sys::trace::open(&dir).unwrap().layout;
    let raw = std::fs::read(dir.join("per_cpu/cpu0/trace_pipe_raw")).unwrap();
    let page0 = &raw[..4096];
    let clean = Page::parse(page0, &l, Endian::Little).unwrap().records().count();
    let walk = |p: &[u8]| -> (usize, Option<PageErrorKind>) {
        let Ok(page) = Page::parse(p, &l, Endian::Little) else { return (0, Some(PageErrorKind::ShortPage)) };
        let mut n = 0;
        let mut it = page.items();
        while let Some(x) = it.next() {
            match x {
                Ok(PageItem::Record(r)) => {
                    let lo = p.as_ptr() as usize;
                    let at = r.payload.as_ptr() as usize;
                    assert!(at >= lo && at + r.payload.len() <= lo + p.len());
                    n += 1;
                }
                Ok(PageItem::Lost { .. }) => {}
                Err(e) => {
                    assert!(it.next().is_none());
                    return (n, Some(e.kind));
                }
            }
        }
        (n, None)
    };
    let mut errors = 0;
    let mut p = page0.to_vec();
    for i in 0..p.len() {
        for v in [0x00u8, 0xff, 0x1d, 0xa0] {
            let keep = p[i];
            p[i] = v;
            if walk(&p).1.is_some() {
                errors += 1;
            }
            p[i] = keep;
        }
    }
    assert!(errors > 0);
    let mut truncated = 0;
    for cut in 0..page0.len() {
        let (n, e) = walk(&page0[..cut]);
        assert!(n <= clean);
        if e == Some(PageErrorKind::Truncated) {
            truncated += 1;
        }
    }
    assert!(truncated > 0);
}
