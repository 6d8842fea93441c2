//! The page decoder on arbitrary bytes, with the layout chosen by the first
//! byte: endian, 4- or 8-byte commit word, sub-buffer size.
//! The target itself is `trbox::fuzz_entry::page` (src/fuzz_entry/page.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| trbox::fuzz_entry::page(data));
