//! The thin std layer: finding and reading tracefs. Everything that decides
//! what bytes mean lives in the core modules; this only moves them.

pub mod child;
pub mod elf;
mod error;
pub mod events;
pub mod kvars;
pub mod lock;
pub mod prefetch;
pub mod raw;
pub mod record;
pub mod reset;
pub mod signals;
pub mod state;
pub mod status;
pub mod stream;
pub mod thread;
mod tracedat;
mod tracefs;
pub mod watch;

pub use error::{describe, Error};
pub use tracefs::{event_dir, instance_name_problem, read_text, Found, Tracefs};

/// Are we root (effective uid 0)?
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}
