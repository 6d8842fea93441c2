//! trbox core: everything that turns tracefs text and ring-buffer bytes into
//! meaning, without doing any I/O itself.
//!
//! Built with `--no-default-features` this crate is `#![no_std]` + `alloc`, so
//! the same decoder can be embedded anywhere; the `std` feature adds `sys`,
//! the thin layer that reads tracefs, and is what the applets link against.
//!
//! Modules go from the kernel's lowest concepts upwards; imports only point
//! downwards.
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]
// A build without `host` (the board configurations full and minimal,
// the no_std core alone) leaves unused what only the applets, options
// and capabilities it lacks use: the linker drops it. The host build,
// which has them all, still warns.
#![cfg_attr(not(feature = "host"), allow(dead_code, unused_imports))]

extern crate alloc;
// The applets (applets/, compiled in the library so that what they use of
// the core need not be public) name the crate `trbox::`, as a user would.
extern crate self as trbox;

pub mod abi;
pub(crate) mod boot;
pub(crate) mod btf;
pub mod ctl;
pub(crate) mod elf;
pub mod format;
#[cfg(feature = "host")]
pub(crate) mod ftrace_dump;
// The fuzz targets' way in (fuzz/), not part of the library's API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzz_entry;
pub(crate) mod graph;
pub(crate) mod json;
pub mod kallsyms;
pub(crate) mod kernel;
pub(crate) mod kvars;
pub(crate) mod lastboot;
pub(crate) mod lat;
pub mod merge;
// Only the std layer reads /proc/self/mountinfo (sys::tracefs).
#[cfg(feature = "std")]
pub(crate) mod mountinfo;
pub(crate) mod names;
pub mod page;
#[cfg(feature = "host")]
pub(crate) mod perfetto;
pub mod printfmt;
pub(crate) mod printk;
pub(crate) mod probe;
pub mod problems;
pub(crate) mod render;
pub(crate) mod stacks;
pub(crate) mod strmap;
pub(crate) mod summary;
pub(crate) mod trace;
pub mod tracedat;
pub(crate) mod vecmap;

pub use trace::Trace;

#[cfg(feature = "std")]
pub mod sys;

#[cfg(feature = "std")]
#[path = "../applets/mod.rs"]
mod applets;
// The crate's tests are its unit tests, in one test binary: so they reach
// its internals without making them public, and 2 cores link one binary
// much faster than many. tests/core: the core on recorded fixtures;
// tests/live: the library against the live tracefs; tests/applets: the
// trbox binary as a user runs it (the boards run those two:
// cross/qemu/session-live).
#[cfg(all(test, feature = "host"))]
#[path = "../tests/applets/main.rs"]
mod applets_tests;
#[cfg(all(test, feature = "host"))]
#[path = "../tests/core/main.rs"]
mod core_tests;
#[cfg(all(test, feature = "host"))]
#[path = "../tests/live/main.rs"]
mod live_tests;
#[cfg(all(test, feature = "host"))]
#[path = "../tests/common/mod.rs"]
mod test_common;
/// The `trbox` binary's entry point (applets/main.rs): not part of the
/// library's API.
#[cfg(feature = "std")]
#[doc(hidden)]
pub use applets::main as applets_main;
