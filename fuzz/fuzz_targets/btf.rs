//! BTF parser on arbitrary bytes: a whole blob, or (first byte odd) a base
//! and a split blob cut at a position given by the next two bytes. Lookups
//! and the vmemmap helper run on whatever parsed; the function parameters
//! (funcgraph-args) are read from the whole blob too.
//! The target itself is `trbox::fuzz_entry::btf` (src/fuzz_entry/btf.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| trbox::fuzz_entry::btf(data));
