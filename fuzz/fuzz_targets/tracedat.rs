//! The trace.dat reader on arbitrary bytes: metadata (v6 and v7, options,
//! instances, compressed sections when the decompressors are built in),
//! then every page of every CPU through the page decoder. Seeds: the
//! fixtures in tests/data/tracedat/*.dat.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trbox::format::HeaderPage;
use trbox::page::{Page, PageLayout};
use trbox::tracedat::{CpuPages, TraceDat};

fuzz_target!(|data: &[u8]| {
    let mut src = data;
    let Ok(td) = TraceDat::read(&mut src) else { return };
    let layout = core::str::from_utf8(&td.header_page)
        .ok()
        .and_then(|t| HeaderPage::parse(t).ok())
        .map(|h| PageLayout::from(&h))
        .unwrap_or_else(|| PageLayout::new(8, 4096));
    let _ = td.formats().count();
    for inst in &td.instances {
        for c in inst.cpus.iter().take(64) {
            let mut pages = CpuPages::new(&td, inst, c);
            let page_size = pages.page_size().max(1);
            // Bounded: a size field may claim far more pages than the input has.
            for _ in 0..256 {
                match pages.next_page(&mut src) {
                    Ok(Some(p)) => {
                        assert!(p.len() <= page_size);
                        if let Ok(page) = Page::parse(p, &layout, td.endian) {
                            for r in page.records().take(1024) {
                                if r.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                    Ok(None) | Err(_) => break,
                }
            }
        }
    }
});
