//! What the read loop itself reads past, counted into the session's
//! problems at the end of a run (`--json`'s last line, `--stats`' table):
//! the pages each stream skipped (damaged, or with times out of their
//! range: told by the stream as it meets them) and the records of event
//! ids no format describes (told once per id, by the sink that meets them,
//! on any rendering thread).

use crate::problems::{ProblemKind, Problems};
use crate::sys::pages::CpuPages;
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// Records of unknown event ids, counted per id from any thread.
#[derive(Default)]
pub(crate) struct UnknownEvents(Mutex<BTreeMap<Option<u32>, u64>>);

impl UnknownEvents {
    /// Count one record whose `common_type` is `id` (`None`: too short to
    /// hold one); the first of each id is told.
    pub(crate) fn count(&self, id: Option<u32>) {
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let n = m.entry(id).or_insert(0);
        if *n == 0 {
            log::warn!("{}: no event format describes it (`type: N` in text, left out of JSON)", what(id));
        }
        *n += 1;
    }

    /// Into `p`, one problem per id.
    fn add_to(&self, p: &mut Problems) {
        let m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for (&id, &n) in m.iter() {
            let s = if n == 1 { "" } else { "s" };
            p.add_counted(
                ProblemKind::UnknownEvent,
                n,
                format!("{}: {n} record{s} no event format describes", what(id)),
            );
        }
    }
}

fn what(id: Option<u32>) -> String {
    id.map_or_else(|| "a record too short for its event id".to_string(), |id| format!("event id {id}"))
}

/// The run's problems into `p`: the pages `streams` skipped, and the
/// records of `unknown` events. `buffers` names the streams' buffers
/// when there are several.
pub(crate) fn add_run_problems(streams: &[CpuPages], unknown: &UnknownEvents, buffers: &[String], p: &mut Problems) {
    for s in streams {
        let at = match buffers.get(s.buffer as usize) {
            Some(b) if buffers.len() > 1 => format!("cpu{} of {}", s.cpu, if b.is_empty() { "(top)" } else { b }),
            _ => format!("cpu{}", s.cpu),
        };
        let kinds = [
            (ProblemKind::DamagedPage, s.counts.damaged, s.first_damage, "damaged"),
            (ProblemKind::BadTime, s.counts.bad_time, s.first_bad_time, "with times out of order"),
        ];
        for (kind, n, first, what) in kinds {
            if let (true, Some((page, e))) = (n > 0, first) {
                let s = if n == 1 { "" } else { "s" };
                let msg = format!("{at}: {n} page{s} {what} skipped (the first, its page {page}: {e})");
                p.add_counted(kind, n, msg);
            }
        }
    }
    unknown.add_to(p);
}
