//! The library against this machine's live tracefs (root; skips say why, and fail under TRBOX_REQUIRE_LIVE=1).

use crate::test_common as common;

mod btf_live;
mod decode_live;
mod format_live;
mod kallsyms_live;
mod page_live;
mod printfmt_coverage;
mod printfmt_live;
mod state_live;
mod state_restore;
mod trace_pipe_live;
mod tracedat_live;
mod tracedat_write;
