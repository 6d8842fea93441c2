//! ELF symbol resolution on arbitrary bytes, and probe definitions on
//! arbitrary text. First byte: bit 7 selects the definition parser, the
//! rest picks a probe place to resolve. Every symbol's address goes through
//! the segment mapping; the first names found are resolved back.
//! The target itself is `trbox::fuzz_entry::elf` (src/fuzz_entry/elf.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| trbox::fuzz_entry::elf(data));
