//! Buffered stdout that survives `| head` and a stuck reader: a closed pipe
//! (EPIPE; SIGPIPE is ignored) turns into "stop quietly" so the applet still
//! restores tracefs, instead of a panic from `print!`; and a write blocked on
//! a full pipe gives up once Ctrl-C/SIGTERM asked us to stop (std's writers
//! retry EINTR for ever).
//!
//! Lines are formatted straight into the buffer (it is a `fmt::Write`): a
//! block of fixed capacity, so each piece of a line is one copy.
//!
//! On a terminal, what is written is shown with its control characters
//! escaped ([`escape_controls`], as `ls -b` shows a file name): a comm, a
//! `trace_marker` string or a console line is written by whoever ran on
//! the traced machine, and `\e]0;…\a\e[2J` in one would drive the reader's
//! terminal. Anywhere else the bytes go out exactly as the kernel wrote
//! them (its own `trace` file prints them raw too). The decision is made
//! here, once per run, not by the renderers.

use crate::sys::error::Error;
use std::io::{self, Write};

/// Standard output, buffered (or a block of text in memory).
pub(crate) struct Out {
    buf: Vec<u8>,
    err: Option<io::Error>,
    /// A block of text in memory (a worker's batch, see parallel.rs): it only
    /// grows and is never written out by itself.
    mem: bool,
    /// Anything was put: an applet whose window showed nothing says so.
    wrote: bool,
    /// Standard output is a terminal: control characters are escaped as
    /// they go out, and the start of a character cut by the end of a
    /// write waits for the rest.
    tty: bool,
    held: Vec<u8>,
    /// Where it goes: fd 1, or the file it owns ([`Out::file`]).
    fd: i32,
    #[cfg(feature = "host")]
    _file: Option<std::fs::File>,
}

const CAP: usize = 64 * 1024;
/// [`Out::line_done`] writes out once this much is buffered, so writes
/// usually end on a line boundary.
const HIGH: usize = CAP - 8 * 1024;

impl Out {
    /// Standard output (fd 1), its control characters escaped when it is
    /// a terminal.
    pub(crate) fn stdout() -> Self {
        // SAFETY: isatty only looks at the descriptor.
        let tty = unsafe { libc::isatty(1) } == 1;
        let mut o = Out::stdout_raw();
        o.tty = tty;
        o
    }

    /// Standard output for a writer that draws the terminal itself (its
    /// own escape sequences): nothing is escaped; what it shows of the
    /// trace goes through [`for_terminal`] first.
    pub(crate) fn stdout_raw() -> Self {
        Out::new(Vec::with_capacity(CAP), false)
    }

    fn new(buf: Vec<u8>, mem: bool) -> Self {
        Out {
            buf,
            err: None,
            mem,
            wrote: false,
            tty: false,
            held: Vec::new(),
            fd: 1,
            #[cfg(feature = "host")]
            _file: None,
        }
    }

    /// A conversion's output file, written as standard output is (nothing
    /// escaped): a read by time slices writes its slices in order here.
    #[cfg(feature = "host")]
    pub(crate) fn file(f: std::fs::File) -> Self {
        use std::os::unix::io::AsRawFd;
        let mut o = Out::stdout_raw();
        o.fd = f.as_raw_fd();
        o._file = Some(f);
        o
    }

    /// Text kept in memory, to be written later with `Out::put_block`.
    pub(crate) fn memory() -> Self {
        Out::new(Vec::new(), true)
    }

    /// Nothing is buffered (for a block in memory: nothing was written).
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes buffered (for a block in memory: written).
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Let a block in memory keep at most about `bytes` of capacity.
    pub(crate) fn shrink_to(&mut self, bytes: usize) {
        self.buf.shrink_to(bytes);
    }

    /// What is buffered (a block in memory: all of it).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The reader went away (or writing failed): stop producing output.
    pub(crate) fn broken(&self) -> bool {
        self.err.is_some()
    }

    fn drain(&mut self) {
        if !self.mem {
            let buf = std::mem::take(&mut self.buf);
            self.write_out(&buf);
            self.buf = buf;
            self.buf.clear();
        }
    }

    /// Write `b` to fd 1, escaped on a terminal.
    fn write_out(&mut self, b: &[u8]) {
        if !self.tty {
            return write_fd(self.fd, &mut self.err, b);
        }
        let mut text = std::mem::take(&mut self.held);
        text.extend_from_slice(b);
        let mut shown = Vec::with_capacity(text.len() + 64);
        let rest = escape_controls(&text, &mut shown);
        self.held = text.split_off(text.len() - rest);
        write_fd(self.fd, &mut self.err, &shown);
    }

    /// Write out what is buffered once it is big enough: call between
    /// lines.
    pub(crate) fn line_done(&mut self) {
        if self.buf.len() >= HIGH {
            self.drain();
        }
    }

    /// Was anything put (a line, a block)?
    pub(crate) fn wrote(&self) -> bool {
        self.wrote
    }

    fn put(&mut self, b: &[u8]) {
        if self.err.is_some() {
            return;
        }
        self.wrote |= !b.is_empty();
        if !self.mem && self.buf.len() + b.len() > CAP {
            self.drain();
            if b.len() > CAP {
                // Big blocks go out as they are, not through the buffer.
                return self.write_out(b);
            }
        }
        self.buf.extend_from_slice(b);
    }

    /// Append a block of text made in memory, and empty it for reuse.
    pub(crate) fn put_block(&mut self, block: &mut Out) {
        self.put(&block.buf);
        block.buf.clear();
    }

    /// Flush; a closed pipe or an interrupted write at a stop is a normal
    /// end, any other error a failure.
    pub(crate) fn finish(mut self) -> Result<(), Error> {
        self.drain();
        // A character the output ended in the middle of.
        let held = std::mem::take(&mut self.held);
        if !held.is_empty() {
            let mut shown = Vec::new();
            escape_bytes(&held, &mut shown);
            write_fd(self.fd, &mut self.err, &shown);
        }
        match self.err.take() {
            None => Ok(()),
            Some(e) if matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::Interrupted) => Ok(()),
            Some(e) => Err(Error::Output(e)),
        }
    }
}

/// `text` as a terminal should show it, into `out`, as `ls -b` (GNU's
/// `escape` quoting style) shows a file name: the control characters — C0
/// but tab and newline (a line's own), DEL, C1 — and bytes that are not
/// UTF-8 as `\a \b \f \r \v` or three octal digits (ESC is `\033`); every
/// other byte as it is (a backslash too: a trace is text to read, not a
/// name to quote back). Returns how many bytes at the end begin a
/// character the text is cut in the middle of: not written, for the next
/// call.
pub(crate) fn escape_controls(text: &[u8], out: &mut Vec<u8>) -> usize {
    let mut chunks = text.utf8_chunks().peekable();
    while let Some(c) = chunks.next() {
        for ch in c.valid().chars() {
            if ch.is_control() && ch != '\t' && ch != '\n' {
                let mut b = [0; 4];
                escape_bytes(ch.encode_utf8(&mut b).as_bytes(), out);
            } else {
                let mut b = [0; 4];
                out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
            }
        }
        let bad = c.invalid();
        // A character cut by the end of `text` is no error yet.
        if chunks.peek().is_none() && !bad.is_empty() && bad.len() < 4 && starts_char(bad) {
            return bad.len();
        }
        escape_bytes(bad, out);
    }
    0
}

/// Whether `b` is the start of a UTF-8 character that more bytes complete.
fn starts_char(b: &[u8]) -> bool {
    let want = match b.first() {
        Some(0xc2..=0xdf) => 2,
        Some(0xe0..=0xef) => 3,
        Some(0xf0..=0xf4) => 4,
        _ => return false,
    };
    b.len() < want && b.iter().skip(1).all(|&x| x & 0xc0 == 0x80)
}

fn escape_bytes(b: &[u8], out: &mut Vec<u8>) {
    for &x in b {
        let c = match x {
            7 => b'a',
            8 => b'b',
            0x0c => b'f',
            b'\r' => b'r',
            0x0b => b'v',
            _ => {
                out.extend_from_slice(&[b'\\', b'0' + (x >> 6), b'0' + (x >> 3 & 7), b'0' + (x & 7)]);
                continue;
            }
        };
        out.extend_from_slice(&[b'\\', c]);
    }
}

/// A text as a terminal should show it ([`escape_controls`]): for writers
/// that draw the terminal themselves (`Out::stdout_raw`).
pub(crate) fn for_terminal(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    escape_controls(text.as_bytes(), &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// Write all of `b` to fd 1 unless an error was seen; record the first.
fn write_fd(fd: i32, err: &mut Option<io::Error>, b: &[u8]) {
    let mut off = 0;
    while off < b.len() && err.is_none() {
        let rest = b.get(off..).unwrap_or(&[]);
        // SAFETY: writing an initialised buffer to fd 1 or the Out's own file.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n >= 0 {
            off += n as usize;
            continue;
        }
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted && crate::sys::signals::stop_requested().is_none() {
            continue;
        }
        *err = Some(e);
    }
}

impl std::fmt::Write for Out {
    #[inline]
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.put(s.as_bytes());
        Ok(())
    }
}

impl Write for Out {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.put(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain();
        Ok(())
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        self.drain();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(b: &[u8]) -> (String, usize) {
        let mut out = Vec::new();
        let held = escape_controls(b, &mut out);
        (String::from_utf8(out).unwrap(), held)
    }

    #[test]
    fn control_characters_show_as_ls_b_shows_them() {
        let comm = b"\x1b]0;owned\x07\x1b[2Jsh";
        assert_eq!(shown(comm), ("\\033]0;owned\\a\\033[2Jsh".into(), 0));
        // A line's tab and newline stay; the rest of C0, DEL, C1 go.
        assert_eq!(shown(b"a\tb\r\x08\x0b\x0c\x00\x7f\n").0, "a\tb\\r\\b\\v\\f\\000\\177\n");
        assert_eq!(shown("x\u{9b}y é ✓ \\033".as_bytes()).0, "x\\302\\233y é ✓ \\033");
        // Bytes that are not UTF-8, in octal; the start of a character at
        // the end waits for the rest.
        assert_eq!(shown(b"\x9b\xff-"), ("\\233\\377-".into(), 0));
        assert_eq!(shown(b"ok\xe2\x9c"), ("ok".into(), 2));
        assert_eq!(shown(b"ok\xe2-"), ("ok\\342-".into(), 0));
        assert_eq!(for_terminal("\u{1b}[31mred"), "\\033[31mred");
    }
}
