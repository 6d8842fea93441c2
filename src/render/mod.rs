//! Records into text: the kernel's `trace` lines and their JSON form.
//!
//! One file per concept: `cmdlines` (`saved_cmdlines`), `lat_flags`
//! (the latency columns), `prefix` (the line prefix before the body),
//! `common_fields` (the common fields of every record), `memo` (the
//! body memo), `renderer` (`Renderer`), `json` (`--json`) and `hwlat`
//! (the hwlat tracer's line).

pub(crate) mod cmdlines;
pub(crate) mod common_fields;
mod fields;
mod hwlat;
pub(crate) mod json;
pub(crate) mod lat_flags;
mod memo;
pub(crate) mod prefix;
pub(crate) mod renderer;

pub(crate) use cmdlines::Cmdlines;
pub(crate) use common_fields::CommonFields;
pub(crate) use lat_flags::write_lat_flags;
pub(crate) use prefix::{clock_in_ns, write_lost, write_timestamp};
pub(crate) use renderer::Renderer;
