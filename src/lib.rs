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

extern crate alloc;

pub mod abi;
#[allow(missing_docs)] // to document (issue 28)
pub mod boot;
#[allow(missing_docs)] // to document (issue 28)
pub mod btf;
#[allow(missing_docs)] // to document (issue 28)
pub mod ctl;
#[allow(missing_docs)] // to document (issue 28)
pub mod elf;
#[allow(missing_docs)] // to document (issue 28)
pub mod format;
#[cfg(feature = "host")]
#[allow(missing_docs)] // to document (issue 28)
pub mod ftrace_dump;
#[allow(missing_docs)] // to document (issue 28)
pub mod graph;
pub mod kallsyms;
pub mod kernel;
pub mod kvars;
pub mod lastboot;
#[allow(missing_docs)] // to document (issue 28)
pub mod lat;
pub mod merge;
#[allow(missing_docs)] // to document (issue 28)
pub mod mountinfo;
pub mod names;
#[allow(missing_docs)] // to document (issue 28)
pub mod page;
#[cfg(feature = "host")]
#[allow(missing_docs)] // to document (issue 28)
pub mod perfetto;
#[allow(missing_docs)] // to document (issue 28)
pub mod printfmt;
pub mod printk;
#[allow(missing_docs)] // to document (issue 28)
pub mod probe;
pub mod problems;
#[allow(missing_docs)] // to document (issue 28)
pub mod render;
#[allow(missing_docs)] // to document (issue 28)
pub mod strmap;
pub mod trace;
#[allow(missing_docs)] // to document (issue 28)
pub mod tracedat;

pub use trace::Trace;

#[cfg(feature = "std")]
pub mod sys;
