//! trace-cmd's listener protocol (`tr-cat -N`, `--listen`) on arbitrary
//! bytes: a message header and body (TINIT, RINIT), the trace.dat a
//! listener puts together from a header and pages read back; and the
//! console lines of the same bytes (miniz_oxide's deflate, base64, CRC).
//! The target itself is `trbox::fuzz_entry::msg` (src/fuzz_entry/msg.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| trbox::fuzz_entry::msg(data));
