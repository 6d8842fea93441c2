//! The common fields every record starts with: flags, preempt count, pid.

use crate::abi::Endian;
use crate::format::{EventFormat, EventTable};

/// Offsets of the common fields every record starts with (read from a format
/// file, never assumed).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CommonFields {
    /// (offset, size) of common_flags, common_preempt_count and common_pid;
    /// size 0 when the field is missing.
    at: [(u32, u32); 3],
    /// The layout of every kernel: two bytes and an int.
    plain: bool,
    /// Offset of `common_preempt_lazy_count` (RT kernels with lazy
    /// preemption, [`LatColumns::RtLazy`]).
    lazy: Option<u32>,
}

impl CommonFields {
    /// Those of a kernel's events: every format of one kernel starts with
    /// the same common fields. `None` for an empty table.
    pub(crate) fn of_table(events: &EventTable) -> Option<Self> {
        events.iter().next().map(Self::of)
    }

    pub(crate) fn of(ev: &EventFormat) -> Self {
        let f = |n: &str| ev.common.iter().find(|f| f.name == n).map_or((0, 0), |f| (f.offset, f.size));
        let at = [f("common_flags"), f("common_preempt_count"), f("common_pid")];
        let lazy = ev.common.iter().find(|f| f.name == "common_preempt_lazy_count").map(|f| f.offset);
        CommonFields { at, plain: at[0].1 == 1 && at[1].1 == 1 && at[2].1 == 4, lazy }
    }

    /// Whether the events carry `common_preempt_lazy_count`.
    pub(crate) fn has_lazy_count(&self) -> bool {
        self.lazy.is_some()
    }

    /// A record's `common_preempt_lazy_count` (0 without one).
    #[inline]
    pub(crate) fn lazy_count(&self, p: &[u8]) -> u8 {
        self.lazy.and_then(|o| p.get(o as usize).copied()).unwrap_or(0)
    }

    /// (flags, preempt_count, pid) of a record payload.
    #[cfg_attr(feature = "host", inline(always))]
    #[cfg_attr(not(feature = "host"), inline)]
    pub(crate) fn read(&self, e: Endian, p: &[u8]) -> (u8, u8, i32) {
        let [f, pc, pid] = self.at;
        if !self.plain {
            return self.read_any(e, p);
        }
        let byte = |o: u32| p.get(o as usize).copied().unwrap_or(0);
        (byte(f.0), byte(pc.0), e.u32(p, pid.0 as usize).unwrap_or(0) as i32)
    }

    /// [`read`](Self::read) of any layout (apart: the common one needs
    /// few registers).
    #[inline(never)]
    fn read_any(&self, e: Endian, p: &[u8]) -> (u8, u8, i32) {
        let get = |(o, s): (u32, u32)| if s == 0 { 0 } else { e.uint(p, o as usize, s as usize).unwrap_or(0) };
        let [f, pc, pid] = self.at;
        (get(f) as u8, get(pc) as u8, get(pid) as u32 as i32)
    }
}
