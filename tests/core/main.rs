//! Decoders and writers on recorded fixtures and synthetic input: no kernel needed.

use crate::test_common as common;

mod debug_format;
mod decode_fixtures;
mod elf_files;
mod field_counts;
mod fixed_sleeps;
mod format_fixtures;
mod graph_fixtures;
mod kallsyms_used;
mod module_cycles;
mod no_side_effects;
mod page_fixture;
mod page_qemu_fixtures;
mod page_synthetic;
mod printfmt_fixtures;
mod printfmt_kallsyms;
mod printfmt_render;
mod reader;
mod reader_live;
mod sched_runtime;
mod tracedat_read;
mod tracedat_synth;
