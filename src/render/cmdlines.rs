//! `saved_cmdlines`: the kernel's pid → comm table.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Most lines a kernel's `saved_cmdlines` has: `saved_cmdlines_size` is at
/// most PID_MAX_DEFAULT (32768; kernel/trace/trace_sched_switch.c refuses
/// more, and since 6.9 its pid map holds PID_MAP_SIZE, the same 0x8000).
/// A longer table is not a kernel's: every reader thread holds a copy.
pub(crate) const MAX_CMDLINES: usize = 32_768;
/// Longest comm a kernel saves: TASK_COMM_LEN (16) less its NUL (each
/// entry of the table is TASK_COMM_LEN bytes).
pub(crate) const MAX_COMM: usize = 15;
// A comm's length fits in the 4 bits `Cmdlines::map` gives it.
const _: () = assert!(MAX_COMM < 16);

/// `saved_cmdlines`: pid → comm, as the kernel's `trace_find_cmdline` sees it.
/// The comms are in one string: every rendering thread holds a copy, and a
/// table has up to [`MAX_CMDLINES`] of them.
#[derive(Debug, Default, Clone)]
pub(crate) struct Cmdlines {
    /// Sorted by pid: each pid, and where its comm is in `comms`: its
    /// offset shifted left by 4, or'd with its length (at most
    /// [`MAX_COMM`], 15).
    map: Vec<(i32, u32)>,
    comms: String,
    /// Lines past [`MAX_CMDLINES`] left out, comms cut to [`MAX_COMM`].
    left_out: usize,
    cut: usize,
}

impl Cmdlines {
    /// Parse `saved_cmdlines` text (`PID COMM` per line; comm may hold
    /// spaces), as a kernel can have made it: the first [`MAX_CMDLINES`]
    /// lines, comms cut to [`MAX_COMM`] bytes ([`Cmdlines::too_large`]
    /// says what was left out).
    pub(crate) fn parse(text: &str) -> Self {
        let mut c = Cmdlines::default();
        // A recording's table is padded with empty lines to the room it
        // kept (110,000 of them after 14,000 lines in one): not a line each.
        let mut lines = text.trim_end_matches(char::from(crate::tracedat::CMDLINES_PAD)).lines();
        for l in lines.by_ref() {
            let Some((pid, comm)) = l.split_once(' ') else { continue };
            let Ok(pid) = pid.trim().parse() else { continue };
            let mut end = comm.len().min(MAX_COMM);
            while !comm.is_char_boundary(end) {
                end -= 1;
            }
            c.cut += usize::from(end < comm.len());
            c.map.push((pid, (c.comms.len() as u32) << 4 | end as u32));
            c.comms.push_str(comm.get(..end).unwrap_or(""));
            if c.map.len() == MAX_CMDLINES {
                break;
            }
        }
        c.left_out = lines.count();
        // The kernel's table has one line per pid: which of two a made-up
        // file keeps does not matter.
        c.map.sort_unstable_by_key(|e| e.0);
        c.map.dedup_by_key(|e| e.0);
        c
    }

    /// What [`Cmdlines::parse`] left out of a table larger than a
    /// kernel's, if anything.
    pub(crate) fn too_large(&self) -> Option<String> {
        if self.left_out == 0 && self.cut == 0 {
            return None;
        }
        Some(format!(
            "saved_cmdlines: {} lines past a kernel's {MAX_CMDLINES} left out, {} comms cut to {MAX_COMM} bytes",
            self.left_out, self.cut
        ))
    }

    /// Every pid and comm the table holds, by pid.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (i32, &str)> {
        self.map.iter().map(|&(p, at)| (p, self.comm_at(at)))
    }

    /// The comm the kernel would print for `pid`: `<idle>` for 0, `<...>`
    /// when it is not in the table.
    pub(crate) fn comm(&self, pid: i32) -> &str {
        if pid == 0 {
            return "<idle>";
        }
        if pid < 0 {
            return "<XXX>";
        }
        match self.map.binary_search_by_key(&pid, |e| e.0) {
            Ok(i) => self.map.get(i).map_or("<...>", |&(_, at)| self.comm_at(at)),
            Err(_) => "<...>",
        }
    }

    fn comm_at(&self, at: u32) -> &str {
        let (at, len) = ((at >> 4) as usize, (at & 15) as usize);
        self.comms.get(at..at + len).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdlines() {
        let c = Cmdlines::parse("12 bash\n7 kworker/0:1 x\nbad line\n");
        assert_eq!(c.comm(12), "bash");
        assert_eq!(c.comm(7), "kworker/0:1 x");
        assert_eq!(c.comm(0), "<idle>");
        assert_eq!(c.comm(99), "<...>");
        assert_eq!(c.map.len(), 2);
        assert_eq!(c.too_large(), None);
    }

    #[test]
    fn a_table_larger_than_a_kernels_is_cut_to_it() {
        let mut text = String::from(
            "1 a-name-longer-than-fifteen
2 ééééééééé
",
        );
        for pid in 3..40_000 {
            text += &format!("{pid} x\n");
        }
        let c = Cmdlines::parse(&text);
        assert_eq!(c.map.len(), MAX_CMDLINES);
        assert_eq!((c.comm(1), c.comm(2)), ("a-name-longer-t", "ééééééé"));
        assert_eq!(c.comm(MAX_CMDLINES as i32), "x");
        assert_eq!(c.comm(MAX_CMDLINES as i32 + 1), "<...>");
        let said = c.too_large().unwrap();
        // 39,999 lines (pids 1 to 39,999): 7,231 past the kernel's 32,768.
        assert!(said.contains("7231 lines past a kernel's 32768 left out, 2 comms cut to 15 bytes"), "{said}");
    }
}
