//! tr-lat's accumulators on arbitrary records: the real formats of the
//! events each mode reads (sched, irq, raw_syscalls, ftrace/timerlat and
//! ftrace/osnoise, from a 6.18 x86_64 kernel) or an arbitrary format text,
//! then records, losses and the printers (table, histogram, JSON).
//! The target itself is `trbox::fuzz_entry::lat` (src/fuzz_entry/lat.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| trbox::fuzz_entry::lat(data));
