//! print-fmt compiler and evaluator, bstr_printf, kallsyms and
//! printk_formats parsers on arbitrary input. Nothing may panic.
//! The target itself is `trbox::fuzz_entry::printfmt` (src/fuzz_entry/printfmt.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| trbox::fuzz_entry::printfmt(data));
