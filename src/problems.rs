//! Problems a reader met in its input and read past, counted by kind, as
//! Perfetto's ftrace reader keeps its stats (one counter per kind of
//! damage): every reader of a trace.dat, a stream, a console log or the
//! event formats records them in one [`Problems`], and says what it lost
//! in the same words as before (each message, in the order met).
//!
//! A problem that stops reading is an error of that reader instead.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// What kind of damage a reader read past.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProblemKind {
    /// An event format (a format file, a trace.dat's) that does not parse:
    /// its records print as `type: N`.
    BadFormat,
    /// A section of a trace.dat (a buffer, the BTF or modules section)
    /// that could not be read: left out.
    BadSection,
    /// The input ends before what it announces: a trace.dat's CPU data
    /// past the end of the file, a stream or a console log cut off (read
    /// up to there).
    CutOff,
    /// A stream or console log without its end (saved comms, CPU stats,
    /// the end marker's line count): what it would have said is missing.
    MissingEnd,
    /// Frames of a stream that do not parse: left out.
    BadFrame,
    /// A console line failing its checksum or layout.
    DamagedLine,
    /// A console block left out (a line of it damaged or missing, or it
    /// inflates past what trbox writes).
    LostBlock,
    /// A console block that inflates past what trbox's writer can have
    /// made of it (not trbox's; a decompression bomb?).
    OversizedBlock,
    /// A ring-buffer page (or the rest of one) that does not decode:
    /// skipped.
    DamagedPage,
    /// A page (or the rest of one) whose times leave its range (a record
    /// before the page's stamp or after the next page's, a page stamp
    /// before the records of the page before it): skipped, its times not
    /// used.
    BadTime,
    /// Records of an event id no format describes: printed as `type: N`
    /// in text, left out of JSON.
    UnknownEvent,
    /// A table larger than any kernel makes (saved_cmdlines lines,
    /// fields of one event): cut to the kernel's limit.
    TooLarge,
}

impl ProblemKind {
    /// Every kind, in the order counts are shown.
    pub(crate) const ALL: [ProblemKind; 12] = [
        ProblemKind::BadFormat,
        ProblemKind::BadSection,
        ProblemKind::CutOff,
        ProblemKind::MissingEnd,
        ProblemKind::BadFrame,
        ProblemKind::DamagedLine,
        ProblemKind::LostBlock,
        ProblemKind::OversizedBlock,
        ProblemKind::DamagedPage,
        ProblemKind::BadTime,
        ProblemKind::UnknownEvent,
        ProblemKind::TooLarge,
    ];

    /// The kind's name in counts (`--stats`, `--json`): snake case, as
    /// Perfetto names its stats.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ProblemKind::BadFormat => "bad_format",
            ProblemKind::BadSection => "bad_section",
            ProblemKind::CutOff => "cut_off",
            ProblemKind::MissingEnd => "missing_end",
            ProblemKind::BadFrame => "bad_frame",
            ProblemKind::DamagedLine => "damaged_line",
            ProblemKind::LostBlock => "lost_block",
            ProblemKind::OversizedBlock => "oversized_block",
            ProblemKind::DamagedPage => "damaged_page",
            ProblemKind::BadTime => "bad_time",
            ProblemKind::UnknownEvent => "unknown_event",
            ProblemKind::TooLarge => "too_large",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One problem: its kind and what a person is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Its kind (what is counted).
    pub(crate) kind: ProblemKind,
    /// What a person is told.
    pub(crate) message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The problems of one input: a count per kind, and each message in the
/// order met. `for p in &problems` gives the messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problems {
    counts: [u64; ProblemKind::ALL.len()],
    messages: Vec<Problem>,
}

impl Problems {
    /// None yet.
    pub fn new() -> Self {
        Problems::default()
    }

    /// Count one problem of `kind`, told as `message`. Not inlined (as
    /// the next): one copy, not one per call site.
    #[inline(never)]
    pub(crate) fn add(&mut self, kind: ProblemKind, message: impl Into<String>) {
        if let Some(c) = self.counts.get_mut(kind.index()) {
            *c += 1;
        }
        self.messages.push(Problem { kind, message: message.into() });
    }

    /// Count `n` problems of `kind`, told once as `message` (`3 malformed
    /// frames left out`).
    #[inline(never)]
    pub(crate) fn add_counted(&mut self, kind: ProblemKind, n: u64, message: impl Into<String>) {
        if let Some(c) = self.counts.get_mut(kind.index()) {
            *c += n;
        }
        self.messages.push(Problem { kind, message: message.into() });
    }

    /// Those of `other` after these (a reader's, taken into a session's).
    #[cfg(test)]
    pub(crate) fn extend(&mut self, other: Problems) {
        for (c, o) in self.counts.iter_mut().zip(other.counts) {
            *c += o;
        }
        self.messages.extend(other.messages);
    }

    /// How many of `kind`.
    pub fn count(&self, kind: ProblemKind) -> u64 {
        self.counts.get(kind.index()).copied().unwrap_or(0)
    }

    /// How many in all.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// No problem was met.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    /// The kinds met and their counts, in `ProblemKind::ALL`'s order.
    pub fn counts(&self) -> impl Iterator<Item = (ProblemKind, u64)> + '_ {
        ProblemKind::ALL.into_iter().map(|k| (k, self.count(k))).filter(|(_, n)| *n > 0)
    }

    /// The first message of `kind`.
    pub fn first(&self, kind: ProblemKind) -> Option<&str> {
        self.messages.iter().find(|p| p.kind == kind).map(|p| p.message.as_str())
    }

    /// Every problem, in the order met.
    pub fn iter(&self) -> core::slice::Iter<'_, Problem> {
        self.messages.iter()
    }
}

impl<'a> IntoIterator for &'a Problems {
    type Item = &'a Problem;
    type IntoIter = core::slice::Iter<'a, Problem>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn counts_per_kind_and_every_message_in_order() {
        let mut p = Problems::new();
        assert!(p.is_empty() && p.counts().next().is_none());
        p.add(ProblemKind::DamagedLine, "log line 7: damaged");
        p.add(ProblemKind::LostBlock, "log lines 5-9: a block is left out");
        p.add(ProblemKind::DamagedLine, "log line 8: damaged");
        assert_eq!(p.count(ProblemKind::DamagedLine), 2);
        assert_eq!(p.count(ProblemKind::CutOff), 0);
        assert_eq!(p.total(), 3);
        assert_eq!(p.first(ProblemKind::DamagedLine), Some("log line 7: damaged"));
        let said: Vec<String> = p.iter().map(|m| m.to_string()).collect();
        assert_eq!(said, ["log line 7: damaged", "log lines 5-9: a block is left out", "log line 8: damaged"]);
        let mut q = Problems::new();
        q.add_counted(ProblemKind::CutOff, 1, "cut");
        q.extend(p);
        assert_eq!(
            q.counts().collect::<Vec<_>>(),
            vec![(ProblemKind::CutOff, 1), (ProblemKind::DamagedLine, 2), (ProblemKind::LostBlock, 1)]
        );
        assert_eq!(q.iter().next().map(|m| m.message.as_str()), Some("cut"));
    }

    #[test]
    fn every_kind_has_its_own_slot_and_name() {
        for (i, k) in ProblemKind::ALL.iter().enumerate() {
            assert_eq!(k.index(), i);
            assert!(ProblemKind::ALL.iter().filter(|o| o.name() == k.name()).count() == 1);
        }
    }
}
