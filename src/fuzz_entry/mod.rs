//! The fuzz targets' way into the core (fuzz/): one function per target,
//! each taking the fuzzer's bytes. They live in the crate, so they reach
//! what they test whatever the library makes public; fuzz/ only wraps each
//! in `fuzz_target!`. Built with the `fuzzing` feature (fuzz/Cargo.toml
//! turns it on) and in the library's own tests, which run every target
//! over real inputs and their mutations (`seeds`), so a target that no
//! longer builds or panics fails `cargo test`.
//!
//! A target may assert what its parser promises (a payload inside its
//! page, counts that add up): a failed assertion is a finding, as a panic
//! of the parser is.

mod btf;
mod elf;
mod format;
mod graph;
mod lat;
mod msg;
mod page;
mod printfmt;
mod stream;
mod tracedat;

#[cfg(all(test, feature = "std"))]
mod seeds;

pub use btf::btf;
pub use elf::elf;
pub use format::format;
pub use graph::graph;
pub use lat::lat;
pub use msg::msg;
pub use page::page;
pub use printfmt::printfmt;
pub use stream::stream;
pub use tracedat::tracedat;
