//! trbox's stream reader (`tr-cat -o -` output) on arbitrary bytes: the
//! frames, then the trace.dat rebuilt from them and read back; and the
//! same bytes as a console log (`--console` lines: checksums, base64,
//! inflate). Seeds: a recorded stream and a console log, cut anywhere
//! (tests/tr_cat_stream.rs makes both). The console part needs
//! `--features zlib`.

use crate::tracedat::stream;
use crate::tracedat::TraceDat;

fn rebuild(data: &[u8]) {
    let Ok(s) = stream::parse(data) else { return };
    // Every page is padded to the page size: bound what the rebuild takes.
    if (s.page_count() as u64 + 1) * u64::from(s.page_size) > 64 << 20 {
        return;
    }
    let Ok(td) = stream::to_tracedat(&s) else {
        return;
    };
    let _ = TraceDat::read(&mut td.as_slice());
}

/// One input of the `stream` target.
pub fn stream(data: &[u8]) {
    rebuild(data);
    #[cfg(feature = "zlib")]
    if let Ok(d) = crate::tracedat::console::decode(data) {
        rebuild(&d.stream);
    }
}
