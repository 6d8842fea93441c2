//! One line of progress on stderr while a long run works (recording with
//! `tr-cat -o`, a window bounded by `-t`, converting a big file): drawn
//! again in place (`\r`, the rest of the line cleared) at most four times a
//! second, and cleared at the end. Only on a terminal: never in a pipe or a
//! log (stderr not a tty, or `TERM=dumb`), and not when something else
//! writes to the same terminal meanwhile (a traced command, streamed text).

use std::io::Write;
use std::time::{Duration, Instant};

pub struct Progress {
    /// When the line may be drawn next; None: never (not a terminal).
    next: Option<Instant>,
    /// The end of -t.
    end: Option<Instant>,
    shown: bool,
}

/// The least time between two redraws: at 115200 baud a 60-character line
/// four times a second is 2% of a serial console.
const EVERY: Duration = Duration::from_millis(250);

impl Progress {
    /// A line for a run bounded by `limit` (-t) from now, if `want`ed (not
    /// while a traced command writes to the terminal too); `quiet_stdout`:
    /// nothing else writes to standard output until the end (else the
    /// line is drawn only when standard output is not a terminal).
    pub fn new(limit: Option<Duration>, want: bool, quiet_stdout: bool) -> Progress {
        let now = Instant::now();
        let on = want && crate::cli::terminal(2) && (quiet_stdout || !crate::cli::terminal(1));
        Progress { next: on.then_some(now), end: limit.map(|l| now + l), shown: false }
    }

    /// Whether the line is shown at all.
    pub fn on(&self) -> bool {
        self.next.is_some()
    }

    /// Time for a redraw (then [`Progress::show`] it).
    pub fn due(&self) -> bool {
        self.next.is_some_and(|n| Instant::now() >= n)
    }

    /// Draw `what` after the applet's name (and the time left of -t), in
    /// place of the last line.
    pub fn show(&mut self, what: std::fmt::Arguments) {
        let now = Instant::now();
        self.next = Some(now + EVERY);
        let name = crate::cli::applet_name();
        let mut e = std::io::stderr();
        self.shown = match self.end {
            Some(end) => {
                // Whole seconds, rounded up: "0 s left" only at the end.
                let d = end.saturating_duration_since(now);
                let left = d.as_secs() + u64::from(d.subsec_nanos() > 0);
                write!(e, "\r{name}: {what}, {left} s left\x1b[K")
            }
            None => write!(e, "\r{name}: {what}\x1b[K"),
        }
        .is_ok();
    }

    /// Take the line away (the summary or the result goes there).
    pub fn clear(&mut self) {
        if std::mem::take(&mut self.shown) {
            let _ = std::io::stderr().write_all(b"\r\x1b[K");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}
