//! trace-cmd's listener protocol (`tr-cat -N`, `--listen`) on arbitrary
//! bytes: a message header and body (TINIT, RINIT), the trace.dat a
//! listener puts together from a header and pages read back; and the
//! console lines of the same bytes (miniz_oxide's deflate, base64, CRC).

use crate::tracedat::{msg, TraceDat};

/// One input of the `msg` target.
pub fn msg(data: &[u8]) {
    if let Some((h, body)) = data.split_first_chunk::<{ msg::HEADER_LEN }>() {
        let h = msg::Header::parse(h);
        if h.body_len().is_some() {
            let _ = msg::parse_tinit(&h, body);
            let _ = msg::parse_rinit(&h, body);
        }
    }
    // The data as a header, with one CPU of the data as its pages.
    if data.len() < 1 << 16 {
        let whole = msg::assemble(data, 4096, &[data.to_vec()]);
        let _ = TraceDat::read(&mut whole.as_slice());
    }
    // Never panics (the round trip through an inflater is a unit test).
    let mut e = crate::tracedat::console::Encoder::new();
    let _ = e.push(data);
    let _ = e.end();
}
