//! The function_graph renderer and its aggregations on arbitrary records:
//! the first byte picks the kernel layout (64-bit 6.1, 32-bit packed, a
//! newer one with `retval`), byte order and options; the rest is split into
//! records (one length byte each) fed in order, each with the following
//! record as its peeked successor. The same records go through the
//! kernel_stack counter (stacks) too.
//! The target itself is `trbox::fuzz_entry::graph` (src/fuzz_entry/graph.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| trbox::fuzz_entry::graph(data));
