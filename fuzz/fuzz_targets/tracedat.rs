//! The trace.dat reader on arbitrary bytes: metadata (v6 and v7, options,
//! instances, compressed sections when the decompressors are built in),
//! the trace session it describes, then every page of every CPU through the page decoder. Seeds: the
//! fixtures in tests/data/tracedat/*.dat.
//! The target itself is `trbox::fuzz_entry::tracedat` (src/fuzz_entry/tracedat.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| trbox::fuzz_entry::tracedat(data));
