//! One line of progress on stderr while a long run works (recording with
//! `tr-cat -o`, a window bounded by `-t`, converting a big file): drawn
//! again in place (`\r`, the rest of the line cleared) at most four times a
//! second, and cleared at the end. Only on a terminal: never in a pipe or a
//! log (stderr not a tty, or `TERM=dumb`), and not when something else
//! writes to the same terminal meanwhile (a traced command, streamed text).

use std::cell::Cell;
use std::io::Write;
use std::time::{Duration, Instant};

pub(crate) struct Progress {
    on: bool,
    start: Instant,
    /// -t.
    limit: Option<Duration>,
    /// When the line was drawn last.
    drawn: Cell<Option<Instant>>,
    shown: Cell<bool>,
}

/// The least time between two redraws: at 115200 baud a 60-character line
/// four times a second is 2% of a serial console.
const EVERY: Duration = Duration::from_millis(250);

impl Progress {
    /// A line for a run bounded by `limit` (-t) from now, if `want`ed (not
    /// while a traced command writes to the terminal too); `quiet_stdout`:
    /// nothing else writes to standard output until the end (else the
    /// line is drawn only when standard output is not a terminal).
    pub(crate) fn new(limit: Option<Duration>, want: bool, quiet_stdout: bool) -> Progress {
        // SAFETY: isatty only looks at the descriptor.
        let on = want && crate::applets::cli::terminal(2) && (quiet_stdout || unsafe { libc::isatty(1) } != 1);
        Progress { on, start: Instant::now(), limit, drawn: Cell::new(None), shown: Cell::new(false) }
    }

    /// Whether the line is shown at all.
    pub(crate) fn on(&self) -> bool {
        self.on
    }

    /// Time for a redraw (then [`Progress::show`] it).
    pub(crate) fn due(&self) -> bool {
        self.on && self.drawn.get().map_or(true, |d| d.elapsed() >= EVERY)
    }

    /// Draw `what` after the applet's name, and the seconds left of -t (or
    /// without -t: the seconds so far), in place of the last line.
    pub(crate) fn show(&self, what: std::fmt::Arguments) {
        self.drawn.set(Some(Instant::now()));
        let run = self.start.elapsed();
        let (secs, word) = match self.limit {
            Some(l) => {
                // Whole seconds, rounded up: "0 s left" only at the end.
                let d = l.saturating_sub(run);
                (d.as_secs() + u64::from(d.subsec_nanos() > 0), "left")
            }
            None => (run.as_secs(), "so far"),
        };
        let name = crate::applets::cli::applet_name();
        self.shown.set(write!(std::io::stderr(), "\r{name}: {what}, {secs} s {word}\x1b[K").is_ok());
    }

    /// Take the line away (the summary or the result goes there).
    pub(crate) fn clear(&self) {
        if self.shown.replace(false) {
            let _ = std::io::stderr().write_all(b"\r\x1b[K");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}
