//! `saved_cmdlines`: the kernel's pid → comm table.

use alloc::string::String;
use alloc::vec::Vec;

/// `saved_cmdlines`: pid → comm, as the kernel's `trace_find_cmdline` sees it.
#[derive(Debug, Default, Clone)]
pub struct Cmdlines {
    /// Sorted by pid.
    map: Vec<(i32, String)>,
}

impl Cmdlines {
    /// Parse `saved_cmdlines` text (`PID COMM` per line; comm may hold spaces).
    pub fn parse(text: &str) -> Self {
        let mut map: Vec<(i32, String)> = text
            .lines()
            .filter_map(|l| {
                let (pid, comm) = l.split_once(' ')?;
                Some((pid.trim().parse().ok()?, String::from(comm)))
            })
            .collect();
        // The kernel's table has one line per pid: which of two a made-up
        // file keeps does not matter.
        map.sort_unstable_by_key(|e| e.0);
        map.dedup_by_key(|e| e.0);
        Cmdlines { map }
    }

    /// The comm the kernel would print for `pid`: `<idle>` for 0, `<...>`
    /// when it is not in the table.
    pub fn comm(&self, pid: i32) -> &str {
        if pid == 0 {
            return "<idle>";
        }
        if pid < 0 {
            return "<XXX>";
        }
        match self.map.binary_search_by_key(&pid, |e| e.0) {
            Ok(i) => self.map.get(i).map_or("<...>", |e| e.1.as_str()),
            Err(_) => "<...>",
        }
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
    }
}
