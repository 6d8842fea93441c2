//! A table redrawn in place on a terminal, every second: no more lines than
//! the terminal has, none wider, and only the lines that changed sent again
//! (at 115200 baud a serial console takes about 11 KiB a second: a redraw
//! of a whole 800-row table never finished).

/// What is on the screen now.
pub(crate) struct Screen {
    shown: Vec<String>,
    rows: usize,
    cols: usize,
}

impl Screen {
    /// The terminal's size, or a serial console's usual 24×80 when it does
    /// not say.
    pub(crate) fn new() -> Screen {
        let (rows, cols) = trbox::sys::terminal_size().unwrap_or((24, 80));
        Screen { shown: Vec::new(), rows: rows.max(3), cols: cols.max(20) }
    }

    /// The bytes that turn the screen into `text`: the cursor home, each
    /// changed line rewritten and cleared to its end, unchanged ones passed
    /// over, the rest of the screen cleared. Lines past the screen's height
    /// give way to one line saying how many were left out.
    pub(crate) fn redraw(&mut self, text: &str) -> String {
        let mut lines: Vec<String> = text.lines().map(|l| cut(l, self.cols)).collect();
        // The last row stays empty: a line written there would scroll.
        let room = self.rows - 1;
        if lines.len() > room {
            let more = lines.len() - (room - 1);
            lines.truncate(room - 1);
            lines.push(cut(&format!("# {more} more lines: a taller terminal, --all, or --json"), self.cols));
        }
        let mut out = String::from("\x1b[H");
        for (i, l) in lines.iter().enumerate() {
            if self.shown.get(i) != Some(l) {
                out.push_str(l);
                out.push_str("\x1b[K");
            }
            out.push_str("\r\n");
        }
        out.push_str("\x1b[J");
        self.shown = lines;
        out
    }
}

/// `line` in at most `cols` characters.
fn cut(line: &str, cols: usize) -> String {
    line.chars().take(cols).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changed_lines_are_sent_and_the_height_is_kept() {
        let mut s = Screen { shown: Vec::new(), rows: 5, cols: 10 };
        assert_eq!(s.redraw("a\nb\n"), "\x1b[Ha\x1b[K\r\nb\x1b[K\r\n\x1b[J");
        assert_eq!(s.redraw("a\nc\n"), "\x1b[H\r\nc\x1b[K\r\n\x1b[J");
        // 6 lines on 5 rows: 3 of them and a line for the other 3.
        let out = s.redraw("1\n2\n3\n4\n5\n6\n");
        assert_eq!(out, "\x1b[H1\x1b[K\r\n2\x1b[K\r\n3\x1b[K\r\n# 3 more l\x1b[K\r\n\x1b[J");
        // Wider than the terminal: cut.
        assert!(s.redraw("0123456789abc").starts_with("\x1b[H0123456789\x1b[K"));
    }
}
