//! The body memo: texts of event bodies rendered lately, reused for a
//! payload seen before.

use alloc::vec::Vec;

use crate::printfmt::digits::StackBuf;

/// Texts of event bodies rendered lately, by event and payload. In a busy
/// trace most records repeat one of a few payloads (a softirq's vector, a
/// timer's address, a switch between the same two tasks), and a print fmt's
/// text depends on the payload's bytes alone (`Program::reads_from`): a
/// payload seen before costs a compare and a copy instead of the program.
pub(super) struct Memo {
    slots: Vec<Slot>,
}

/// Direct-mapped entries of [`Memo`] (a power of two).
const MEMO: usize = 256;
/// Longest payload (from the first byte the program reads) and text kept.
const KEY: usize = 64;
const TEXT: usize = 104;

#[derive(Clone, Copy)]
struct Slot {
    /// Event id; `u32::MAX`: empty.
    id: u32,
    klen: u8,
    key: [u8; KEY],
    text: StackBuf<TEXT>,
}

/// How an event uses the [`Memo`]: from which payload byte its key starts,
/// and whether reuse pays (the hits are counted; an event whose payloads
/// rarely repeat, a timestamp in each, stops looking).
#[derive(Clone, Copy)]
pub(super) struct MemoUse {
    /// `None`: not used for this event.
    from: Option<u32>,
    tries: u32,
    hits: u32,
}

impl MemoUse {
    /// Keys from payload byte `from` on (`None`: no memo for this event).
    pub(super) fn new(from: Option<u32>) -> Self {
        MemoUse { from, tries: 0, hits: 0 }
    }

    /// The key of `payload`, when the memo is used for this event.
    #[inline]
    pub(super) fn key<'p>(&self, payload: &'p [u8]) -> Option<&'p [u8]> {
        payload.get(self.from? as usize..).filter(|k| k.len() <= KEY)
    }

    pub(super) fn count(&mut self, hit: bool) {
        self.tries += 1;
        self.hits += u32::from(hit);
        // Every 1024 tries: a hit rate under a quarter does not pay for
        // the lookups.
        if self.tries == 1024 {
            if self.hits < 256 {
                self.from = None;
            }
            (self.tries, self.hits) = (0, 0);
        }
    }
}

impl Memo {
    /// Empty: its slots are allocated on the first text kept.
    pub(super) fn new() -> Self {
        Memo { slots: Vec::new() }
    }

    /// Where `key` goes: a hash of its first, middle and last eight bytes
    /// (whole keys are compared; this only spreads them).
    #[inline]
    fn slot(id: u32, key: &[u8]) -> usize {
        let n = key.len();
        let word = |at: usize| key.get(at..at + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()).map(u64::from_le_bytes);
        let last = n.saturating_sub(8);
        let h = match word(0) {
            Some(w) => w ^ word(last / 2).unwrap_or(0).rotate_left(21) ^ word(last).unwrap_or(0).rotate_left(42),
            // A key shorter than a word.
            None => key.iter().fold(0, |h, &b| h << 8 | u64::from(b)),
        };
        let h = (h ^ u64::from(id) << 40 ^ n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> 56) as usize & (MEMO - 1)
    }

    pub(super) fn get(&self, id: u32, key: &[u8]) -> Option<&StackBuf<TEXT>> {
        let s = self.slots.get(Memo::slot(id, key))?;
        (s.id == id && s.key.get(..usize::from(s.klen)) == Some(key)).then_some(&s.text)
    }

    pub(super) fn put(&mut self, id: u32, key: &[u8], text: &str) {
        if text.len() > TEXT || key.len() > KEY {
            return;
        }
        if self.slots.is_empty() {
            let empty = Slot { id: u32::MAX, klen: 0, key: [0; KEY], text: StackBuf::new() };
            self.slots = alloc::vec![empty; MEMO];
        }
        if let Some(s) = self.slots.get_mut(Memo::slot(id, key)) {
            s.id = id;
            s.klen = key.len() as u8;
            s.key.get_mut(..key.len()).unwrap_or(&mut []).copy_from_slice(key);
            s.text.clear();
            s.text.push_str(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::abi::{Abi, Endian};
    use crate::format::{EventFormat, EventTable};
    use crate::render::{Cmdlines, Renderer};
    use alloc::string::{String, ToString};

    /// Two scalar fields, a fixed string and a symbolic table; one common
    /// field read by the print fmt (keys must then hold it too).
    const EV: &str = concat!(
        "name: ev\nID: 9\nformat:\n",
        crate::format::common_fields!(),
        "\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:char comm[16];\toffset:12;\tsize:16;\tsigned:0;\n\
\tfield:u64 t;\toffset:32;\tsize:8;\tsigned:0;\n\n\
print fmt: \"vec=%u [%s] comm=%s t=%llu\", REC->vec, __print_symbolic(REC->vec, { 0, \"HI\" }, { 1, \"TIMER\" }), REC->comm, REC->t\n"
    );

    fn rec(vec: u32, comm: &str, t: u64, pid: i32) -> [u8; 40] {
        let mut r = [0u8; 40];
        r[..2].copy_from_slice(&9u16.to_le_bytes());
        r[4..8].copy_from_slice(&pid.to_le_bytes());
        r[8..12].copy_from_slice(&vec.to_le_bytes());
        r[12..12 + comm.len()].copy_from_slice(comm.as_bytes());
        r[32..40].copy_from_slice(&t.to_le_bytes());
        r
    }

    /// Every line of one renderer that has seen many payloads (repeats,
    /// slot collisions, an event that stops using the memo) is the line a
    /// fresh renderer makes of that record alone.
    #[test]
    fn remembered_texts_are_the_programs() {
        for (fmt, name) in [(EV.to_string(), "fields"), (EV.replace("REC->t\n", "REC->t + REC->common_pid\n"), "pid")] {
            let mut t = EventTable::new();
            t.insert(EventFormat::parse(&fmt, "irq", 8).unwrap());
            let abi = Abi::new(Endian::Little, 8);
            let mut one = Renderer::new(&t, Cmdlines::default(), abi, true);
            let mut x = 7u64;
            for i in 0..6000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // The first half repeats a few payloads; the second half
                // has a new value in each (the memo gives up on it).
                let v = if i < 3000 { x >> 62 } else { x >> 20 };
                let r = rec((v % 3) as u32, ["sh", "kworker/0:1", "a"][(v % 3) as usize], v, (x >> 60) as i32);
                let mut a = String::new();
                one.record(&mut a, 0, i * 1000, &r).unwrap();
                let mut b = String::new();
                Renderer::new(&t, Cmdlines::default(), abi, true).record(&mut b, 0, i * 1000, &r).unwrap();
                assert_eq!(a, b, "{name}: record {i}");
            }
        }
    }
}
