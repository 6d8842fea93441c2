//! Records into text: the kernel's `trace` lines and their JSON form.
//!
//! One file per concept: [`cmdlines`] (`saved_cmdlines`), [`lat_flags`]
//! (the latency columns), [`prefix`] (the line prefix before the body),
//! [`common_fields`] (the common fields of every record), `memo` (the
//! body memo), [`renderer`] ([`Renderer`]), [`json`] (`--json`) and `hwlat`
//! (the hwlat tracer's line).

pub mod cmdlines;
pub mod common_fields;
mod fields;
mod hwlat;
pub mod json;
pub mod lat_flags;
mod memo;
pub mod prefix;
pub mod renderer;

pub use cmdlines::Cmdlines;
pub use common_fields::CommonFields;
pub use json::write_json;
pub use lat_flags::write_lat_flags;
pub use prefix::{clock_in_ns, write_lost, write_prefix, write_timestamp};
pub use renderer::Renderer;
