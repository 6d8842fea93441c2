//! Format-file, header_page and header_event parsers on arbitrary text; the
//! parsed fields are then used to read an arbitrary record.
//! The target itself is `trbox::fuzz_entry::format` (src/fuzz_entry/format.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| trbox::fuzz_entry::format(data));
