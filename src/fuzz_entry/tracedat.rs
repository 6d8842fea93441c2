//! The trace.dat reader on arbitrary bytes: metadata (v6 and v7, options,
//! instances, compressed sections when the decompressors are built in),
//! the trace session it describes, then every page of every CPU through the page decoder. Seeds: the
//! fixtures in tests/data/tracedat/*.dat.

use crate::page::{Page, PageLayout};
use crate::tracedat::{DatPages, TraceDat};
use crate::Trace;

/// One input of the `tracedat` target.
pub fn tracedat(data: &[u8]) {
    let mut src = data;
    let Ok(td) = TraceDat::read(&mut src) else { return };
    // The session (header_page, every format, cmdlines, printk formats).
    let layout = Trace::from_dat(&td, "fuzz", ()).map_or_else(|_| PageLayout::new(8, 4096), |t| t.layout);
    for inst in &td.instances {
        for c in inst.cpus.iter().take(64) {
            let mut pages = DatPages::new(&td, inst, c);
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
}
