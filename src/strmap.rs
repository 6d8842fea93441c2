//! The core's one string-keyed map (event names, folded stacks, stack
//! counts): entries in a `Vec` with an open-addressing hash index, in
//! place of `BTreeMap<String, u64>`, whose one instantiation cost 2.9 KiB
//! on aarch64. A lookup that hits allocates nothing; key order, where the
//! output needs it, is a sort at the end ([`StrMap::sorted`]).
//!
//! Not [`crate::vecmap::VecMap`], the map of number keys, on a Vec sorted
//! by key: here a key is looked up by `&str` for every record, among
//! thousands (folded stacks), where a binary search compares whole
//! strings at each step and a new key is inserted in the middle of the
//! Vec; the hash finds it in one probe and a new key is pushed.

use alloc::string::String;
use alloc::vec::Vec;

#[derive(Debug, Clone, Default)]
pub(crate) struct StrMap {
    entries: Vec<(String, u64)>,
    /// Entry position + 1 (0: free); the length is 0 or a power of two,
    /// kept at most 3/4 full.
    index: Vec<u32>,
}

/// FNV-1a: short, and good enough for names and symbol paths.
fn hash(key: &str) -> usize {
    key.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193)) as usize
}

impl StrMap {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// `Ok(entry)` where `key` is, or `Err(slot)`: the free slot of the
    /// index where it would go (the index is never full).
    fn find(&self, key: &str) -> Result<usize, usize> {
        let mask = self.index.len().wrapping_sub(1);
        let mut at = hash(key) & mask;
        loop {
            match self.index.get(at) {
                Some(&0) | None => return Err(at),
                Some(&e) => {
                    let i = e as usize - 1;
                    if self.entries.get(i).is_some_and(|(k, _)| k == key) {
                        return Ok(i);
                    }
                }
            }
            at = (at + 1) & mask;
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<u64> {
        self.find(key).ok().and_then(|i| self.entries.get(i)).map(|e| e.1)
    }

    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut u64> {
        let i = self.find(key).ok()?;
        self.entries.get_mut(i).map(|e| &mut e.1)
    }

    /// The value of `key`, inserted as `default` when absent.
    pub(crate) fn entry(&mut self, key: &str, default: u64) -> &mut u64 {
        if (self.entries.len() + 1) * 4 > self.index.len() * 3 {
            self.grow();
        }
        let i = match self.find(key) {
            Ok(i) => i,
            Err(slot) => {
                self.entries.push((String::from(key), default));
                if let Some(s) = self.index.get_mut(slot) {
                    *s = self.entries.len() as u32;
                }
                self.entries.len() - 1
            }
        };
        // `i` is a valid position: found, or just pushed.
        &mut self.entries[i].1
    }

    fn grow(&mut self) {
        let n = (self.index.len() * 2).max(16);
        self.index = alloc::vec![0; n];
        for i in 0..self.entries.len() {
            let slot = match self.entries.get(i).map(|e| self.find(&e.0)) {
                Some(Err(slot)) => slot,
                _ => continue,
            };
            if let Some(s) = self.index.get_mut(slot) {
                *s = i as u32 + 1;
            }
        }
    }

    /// The entries in insertion order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// The entries in key order.
    pub(crate) fn sorted(&self) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = self.iter().collect();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn counts_and_orders() {
        let mut m = StrMap::new();
        for i in 0..1000u64 {
            *m.entry(&format!("k{}", i % 300), 0) += i;
        }
        assert_eq!(m.entries.len(), 300);
        assert_eq!(m.get("k7"), Some(7 + 307 + 607 + 907));
        assert_eq!(m.get("nope"), None);
        *m.get_mut("k7").unwrap() = 1;
        assert_eq!(m.get("k7"), Some(1));
        let s = m.sorted();
        assert!(s.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(s[0].0, "k0");
        assert_eq!(*m.entry("", 5), 5);
        assert_eq!(m.get(""), Some(5));
    }
}
