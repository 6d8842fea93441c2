//! trbox's stream reader (`tr-cat -o -` output) on arbitrary bytes: the
//! frames, then the trace.dat rebuilt from them and read back; and the
//! same bytes as a console log (`--console` lines: checksums, base64,
//! inflate). Seeds: a recorded stream and a console log, cut anywhere
//! (tests/tr_cat_stream.rs makes both). The console part needs
//! `--features zlib`.
//! The target itself is `trbox::fuzz_entry::stream` (src/fuzz_entry/stream.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| trbox::fuzz_entry::stream(data));
