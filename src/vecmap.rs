//! The core's small map with a key that is a number (tr-lat's tasks,
//! CPUs, syscalls and rows; tr-cat --stats' counts by CPU, event and
//! task): entries in a `Vec` sorted by key, found by binary search, in
//! place of a `BTreeMap`, whose every instantiation costs kilobytes on
//! aarch64. Iteration is in key order, which the reports print in.
//!
//! Not [`crate::strmap::StrMap`], the map of string keys: that one is
//! looked up by `&str` for every record (event names, folded stacks, by
//! the thousand), where a hash index finds the entry without comparing
//! strings along a binary search, and a new key is pushed, not inserted
//! in the middle of a long Vec. The keys here are a few hundred small
//! `Copy` values, compared in one instruction.

use alloc::vec::Vec;

/// A map on a sorted Vec.
#[derive(Debug, Clone)]
pub(crate) struct VecMap<K, V>(Vec<(K, V)>);

impl<K: Ord + Copy, V> VecMap<K, V> {
    pub(crate) const fn new() -> Self {
        VecMap(Vec::new())
    }

    fn find(&self, k: &K) -> Result<usize, usize> {
        self.0.binary_search_by(|e| e.0.cmp(k))
    }

    pub(crate) fn get(&self, k: &K) -> Option<&V> {
        self.find(k).ok().and_then(|i| self.0.get(i)).map(|e| &e.1)
    }

    pub(crate) fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        let i = self.find(k).ok()?;
        self.0.get_mut(i).map(|e| &mut e.1)
    }

    pub(crate) fn contains_key(&self, k: &K) -> bool {
        self.find(k).is_ok()
    }

    /// The value of `k`, made by `f` when absent.
    pub(crate) fn entry(&mut self, k: K, f: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(&k) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (k, f()));
                i
            }
        };
        &mut self.0[i].1
    }

    /// Set `k`; the old value, if any.
    pub(crate) fn insert(&mut self, k: K, v: V) -> Option<V> {
        match self.find(&k) {
            Ok(i) => Some(core::mem::replace(&mut self.0[i].1, v)),
            Err(i) => {
                self.0.insert(i, (k, v));
                None
            }
        }
    }

    pub(crate) fn remove(&mut self, k: &K) -> Option<V> {
        self.find(k).ok().map(|i| self.0.remove(i).1)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Empty the map; how many entries it had.
    pub(crate) fn take_all(&mut self) -> u64 {
        let n = self.0.len() as u64;
        self.0.clear();
        n
    }

    /// By key.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|e| (&e.0, &e.1))
    }
}

impl<K: Ord + Copy, V> Default for VecMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}
