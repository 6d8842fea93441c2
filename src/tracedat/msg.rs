//! trace-cmd's network protocol between `trace-cmd record -N` and
//! `trace-cmd listen` (protocol version 3, as in trace-cmd 3.1.6:
//! lib/trace-cmd/trace-msg.c, tracecmd/trace-listen.c), sans-IO.
//!
//! ```text
//! listener -> sender  "tracecmd"                 (8 bytes)
//! sender -> listener  "-1V3\0"                   the protocol asked for
//! listener -> sender  "V3\0"
//! sender -> listener  "766679\0\0"               the magic
//! listener -> sender  "OK"
//! then messages, each {size, cmd, cmd_size: u32 big-endian} + cmd part + data:
//!   TINIT (1)      cpus, page size, option count; options "tcp\0"
//!   RINIT (2)      cpus; one port per CPU, as decimal text, each NUL-ended
//!   SEND_DATA (3)  a piece of the trace.dat header (at most 8192 bytes a message)
//!   FIN_DATA (4)   the header is complete
//!   CLOSE (0)      the recording is over
//! ```
//!
//! The header's saved_cmdlines are those of the start: trace-cmd record
//! sends them once (tracecmd/trace-record.c `setup_connection()`), so a
//! task started during the run has no name on the listener. trbox's
//! sender names them all the same:
//! - trbox's listener says so after the ports of its RINIT
//!   (`TRBOX_LISTENER`; trace-cmd's sender reads only the ports); the
//!   sender then sends the final saved_cmdlines before CLOSE (`CMDLINES`,
//!   which the listener writes over the header's);
//! - to trace-cmd's listener it holds the header back from the saved
//!   cmdlines on (its reserved room, padded), one newline at a time every
//!   second (the listener gives up on a header after 5 s without a message:
//!   MSG_WAIT_MSEC in lib/trace-cmd/trace-msg.c, 3.1 to 3.4), and sends the
//!   final ones and the rest of the header at the end.
//!
//! The header is a trace.dat (version 6 here) up to and including its
//! options; the listener adds the flyrecord table, the clock and the data.
//! Each CPU's pages go on their own TCP connection to its port, whole
//! sub-buffers back to back, nothing else.

use alloc::vec::Vec;

/// The listener's first words to a sender.
pub(crate) const GREETING: &[u8; 8] = b"tracecmd";
/// The sender asks for protocol 3 (a CPU count of -1, then `V3`).
pub(crate) const V3_CPU: &[u8; 5] = b"-1V3\0";
/// The listener agrees to protocol 3.
pub(crate) const V3_REPLY: &[u8; 3] = b"V3\0";
/// `sizeof(V3_MAGIC)` of `"766679\0"`: the explicit NUL and C's.
pub(crate) const V3_MAGIC: &[u8; 8] = b"766679\0\0";
/// The listener accepts the magic.
pub(crate) const OK: &[u8; 2] = b"OK";

// Message commands, `enum tracecmd_msg_cmd` in trace-msg.c.
/// The recording is over.
pub(crate) const CLOSE: u32 = 0;
/// The sender's set-up: CPUs, page size, options.
pub(crate) const TINIT: u32 = 1;
/// The listener's reply: one port per CPU.
pub(crate) const RINIT: u32 = 2;
/// A piece of the trace.dat header.
pub(crate) const SEND_DATA: u32 = 3;
/// The header is complete.
pub(crate) const FIN_DATA: u32 = 4;

/// Bytes of saved_cmdlines room a `-N` sender may spend on keeping
/// trace-cmd's listener waiting for the rest of the header: a newline a
/// second, 18 hours (the listener gives up after 5 s without a message).
pub(crate) const NET_SPARE: usize = 64 << 10;

/// trbox to trbox, after the data and before CLOSE: a piece of the final
/// saved_cmdlines of the run; fixed part: the header's cmdlines slot
/// (offset, length), data: the next bytes of what goes there.
pub(crate) const CMDLINES: u32 = 0x7472_0001;
/// What trbox's listener adds to its RINIT after the ports.
pub(crate) const TRBOX_LISTENER: &[u8] = b"trbox";

/// Bytes of a message header: size, cmd, cmd_size, each a big-endian u32.
pub(crate) const HEADER_LEN: usize = 12;
/// The largest message trace-cmd accepts, header included.
pub(crate) const MAX_LEN: usize = 8192;
/// Header bytes one SEND_DATA carries.
pub(crate) const MAX_DATA: usize = MAX_LEN - HEADER_LEN;
const TINIT_LEN: usize = 12;
const RINIT_LEN: usize = 4;

/// A message's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// The whole message, header included.
    pub(crate) size: u32,
    /// The command ([`TINIT`], [`SEND_DATA`], …).
    pub(crate) cmd: u32,
    /// The command's fixed part (after the header, before the data).
    pub(crate) cmd_size: u32,
}

impl Header {
    /// Reads the three big-endian words; [`Header::body_len`] checks them.
    pub(crate) fn parse(b: &[u8; HEADER_LEN]) -> Header {
        let be = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Header { size: be(0), cmd: be(4), cmd_size: be(8) }
    }

    /// Bytes after the header (fixed part and data), None when the sizes
    /// do not add up or exceed what trace-cmd allows.
    pub(crate) fn body_len(&self) -> Option<usize> {
        let n = (self.size as usize).checked_sub(HEADER_LEN)?;
        (self.size as usize <= MAX_LEN && self.cmd_size as usize <= n).then_some(n)
    }
}

/// A message: `cmd`, its fixed part, its data.
pub(crate) fn message(cmd: u32, fixed: &[u32], data: &[u8]) -> Vec<u8> {
    let cmd_size = 4 * fixed.len();
    let size = HEADER_LEN + cmd_size + data.len();
    let mut v = Vec::with_capacity(size);
    for w in [size as u32, cmd, cmd_size as u32].iter().chain(fixed) {
        v.extend_from_slice(&w.to_be_bytes());
    }
    v.extend_from_slice(data);
    v
}

/// TINIT: the CPU count and page size, with the option "tcp" (the pages go
/// over TCP; without it trace-cmd listens on UDP).
pub(crate) fn tinit(cpus: u32, page_size: u32) -> Vec<u8> {
    message(TINIT, &[cpus, page_size, 1], b"tcp\0")
}

/// RINIT: one port per CPU, then [`TRBOX_LISTENER`].
pub(crate) fn rinit(ports: &[u16]) -> Vec<u8> {
    let mut data = Vec::new();
    for p in ports {
        data.extend_from_slice(alloc::format!("{p}\0").as_bytes());
    }
    data.extend_from_slice(TRBOX_LISTENER);
    data.push(0);
    message(RINIT, &[ports.len() as u32], &data)
}

/// A RINIT body from trbox's listener: [`TRBOX_LISTENER`] after the ports
/// (which end in a NUL each; a port is digits).
pub(crate) fn rinit_of_trbox(body: &[u8]) -> bool {
    body.strip_suffix(b"\0").and_then(|b| b.strip_suffix(TRBOX_LISTENER)).is_some_and(|b| b.ends_with(b"\0"))
}

/// A [`CMDLINES`] body: the slot (offset, length) and the piece.
pub(crate) fn parse_cmdlines<'a>(h: &Header, body: &'a [u8]) -> Option<(u32, u32, &'a [u8])> {
    let (w, data) = split(h, body, 2).filter(|_| h.cmd == CMDLINES)?;
    Some((w[0], w[1], data))
}

/// Where a [`CMDLINES`] message's slot (`offset`, `len`) lies in the
/// sender's `header`, if the header says so: the 64-bit length before it,
/// in the header's byte order, is `len`.
pub(crate) fn cmdlines_slot(header: &[u8], offset: u32, len: u32) -> Option<core::ops::Range<usize>> {
    let (o, l) = (offset as usize, len as usize);
    let size: [u8; 8] = header.get(o.checked_sub(8)?..o)?.try_into().ok()?;
    let n = if header.get(12) == Some(&1) { u64::from_be_bytes(size) } else { u64::from_le_bytes(size) };
    (n == u64::from(len) && o + l <= header.len()).then_some(o..o + l)
}

/// The fixed part's words and the data of a message body.
fn split<'a>(h: &Header, body: &'a [u8], words: usize) -> Option<(Vec<u32>, &'a [u8])> {
    let fixed = body.get(..h.cmd_size as usize)?;
    let w = (0..words)
        .map(|i| fixed.get(4 * i..4 * i + 4).map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]])))
        .collect::<Option<Vec<u32>>>()?;
    Some((w, body.get(h.cmd_size as usize..)?))
}

/// The ports of a RINIT body (None: malformed).
pub(crate) fn parse_rinit(h: &Header, body: &[u8]) -> Option<Vec<u16>> {
    if h.cmd != RINIT || (h.cmd_size as usize) < RINIT_LEN {
        return None;
    }
    let (w, data) = split(h, body, 1)?;
    let ports: Vec<u16> = data
        .split(|&b| b == 0)
        .take(w[0] as usize)
        .map(|s| u16::try_from(core::str::from_utf8(s).ok()?.parse::<u32>().ok()?).ok())
        .collect::<Option<Vec<u16>>>()?;
    (ports.len() == w[0] as usize).then_some(ports)
}

/// A TINIT body: (CPUs, page size, options).
pub(crate) fn parse_tinit<'a>(h: &Header, body: &'a [u8]) -> Option<(u32, u32, Vec<&'a [u8]>)> {
    if h.cmd != TINIT || (h.cmd_size as usize) < TINIT_LEN {
        return None;
    }
    let (w, data) = split(h, body, 3)?;
    let opts = data.split(|&b| b == 0).filter(|s| !s.is_empty()).take(w[2] as usize).collect();
    Some((w[0], w[1], opts))
}

/// The start of the trace.dat a listener writes, before any page: the
/// sender's `header` (up to its options) and the flyrecord section, whose
/// per-CPU table is filled in at the end ([`Head::table`]; until then it
/// says every CPU is empty), padded with zeros to the first page. The clock is
/// the one the header's TRACECLOCK option selects (trace-cmd's reader
/// looks for it there).
#[derive(Debug, Clone)]
pub(crate) struct Head {
    /// The bytes to write at the start of the file.
    pub(crate) bytes: Vec<u8>,
    /// Where the `{u64 offset, u64 size}` per CPU go in `bytes`.
    pub(crate) table_pos: usize,
    /// The first page-aligned offset after `bytes`: CPU 0's pages go here.
    pub(crate) data_start: u64,
    page_size: u32,
    endian: super::Endian,
}

impl Head {
    /// The head for the sender's `header` (taken, not copied: it may be
    /// megabytes of kallsyms).
    pub(crate) fn new(header: Vec<u8>, page_size: u32, cpus: u32) -> Head {
        let endian = if header.get(12) == Some(&1) { super::Endian::Big } else { super::Endian::Little };
        let header_len = header.len();
        let build = |mut bytes: Vec<u8>, clock: &str| {
            let (fly, table_rel) = super::write::encode_flyrecord_header(endian, cpus, Some(clock));
            let table_pos = bytes.len() + table_rel;
            bytes.extend_from_slice(&fly);
            let ps = u64::from(page_size.max(1));
            let data_start = (bytes.len() as u64).div_ceil(ps) * ps;
            let mut h = Head { bytes, table_pos, data_start, page_size, endian };
            // Empty CPUs until the end: a file that reads.
            let t = h.table(&h.layout(&alloc::vec![0; cpus as usize]));
            if let Some(dst) = h.bytes.get_mut(table_pos..table_pos + t.len()) {
                dst.copy_from_slice(&t);
            }
            h.bytes.resize(data_start as usize, 0);
            h
        };
        let first = build(header, "local");
        let clock = super::TraceDat::read(&mut first.bytes.as_slice())
            .ok()
            .and_then(|td| td.options.trace_clock_text.as_deref().and_then(super::selected_clock));
        match clock {
            Some(c) if c != "local" => {
                let mut header = first.bytes;
                header.truncate(header_len);
                build(header, &c)
            }
            _ => first,
        }
    }

    /// Each CPU's `(offset, size)` for the bytes that arrived (`sizes`),
    /// cut to whole pages (a connection that dropped may end inside one),
    /// CPU 0 at [`Head::data_start`], each next one page-aligned after.
    pub(crate) fn layout(&self, sizes: &[u64]) -> Vec<(u64, u64)> {
        let ps = u64::from(self.page_size.max(1));
        let whole: Vec<u64> = sizes.iter().map(|s| s / ps * ps).collect();
        super::write::data_layout(self.data_start, self.page_size, &whole)
    }

    /// The table's bytes for a [`Head::layout`], to go at `table_pos`.
    pub(crate) fn table(&self, layout: &[(u64, u64)]) -> Vec<u8> {
        super::write::encode_flyrecord_table(self.endian, layout)
    }
}

/// The whole trace.dat in memory: the [`Head`], its table, then each
/// CPU's pages.
pub(crate) fn assemble(header: &[u8], page_size: u32, cpus: &[Vec<u8>]) -> Vec<u8> {
    let head = Head::new(header.to_vec(), page_size, cpus.len() as u32);
    let sizes: Vec<u64> = cpus.iter().map(|c| c.len() as u64).collect();
    let layout = head.layout(&sizes);
    let t = head.table(&layout);
    let mut out = head.bytes;
    if let Some(dst) = out.get_mut(head.table_pos..head.table_pos + t.len()) {
        dst.copy_from_slice(&t);
    }
    for (&(off, size), data) in layout.iter().zip(cpus) {
        out.resize(off as usize, 0);
        out.extend_from_slice(data.get(..size as usize).unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(m: &[u8]) -> (Header, &[u8]) {
        let h = Header::parse(m[..HEADER_LEN].try_into().unwrap());
        assert_eq!(h.body_len(), Some(m.len() - HEADER_LEN));
        (h, &m[HEADER_LEN..])
    }

    #[test]
    fn init_round_trip() {
        let m = tinit(4, 4096);
        let (h, b) = head(&m);
        assert_eq!(parse_tinit(&h, b), Some((4, 4096, alloc::vec![&b"tcp"[..]])));
        let m = rinit(&[1500, 1501]);
        assert_eq!(&m[HEADER_LEN + 4..], b"1500\x001501\x00trbox\x00");
        let (h, b) = head(&m);
        assert_eq!(parse_rinit(&h, b), Some(alloc::vec![1500, 1501]));
        assert!(rinit_of_trbox(b));
        assert_eq!(parse_rinit(&h, &b[..b.len() - 11]), None);
        // trace-cmd's: the ports only.
        let tc = message(RINIT, &[2], b"1500\x001501\x00");
        let (h, b) = head(&tc);
        assert_eq!(parse_rinit(&h, b), Some(alloc::vec![1500, 1501]));
        assert!(!rinit_of_trbox(b));
        assert_eq!(message(FIN_DATA, &[], b""), [0, 0, 0, 12, 0, 0, 0, 4, 0, 0, 0, 0]);
    }

    #[test]
    fn a_cmdlines_slot_is_where_its_length_says() {
        let mut h = alloc::vec![0u8; 40];
        h[20..28].copy_from_slice(&8u64.to_le_bytes());
        assert_eq!(cmdlines_slot(&h, 28, 8), Some(28..36));
        assert_eq!(cmdlines_slot(&h, 28, 9), None);
        assert_eq!(cmdlines_slot(&h, 36, 8), None);
        assert_eq!(cmdlines_slot(&h, 4, 8), None);
        h[12] = 1;
        h[20..28].copy_from_slice(&8u64.to_be_bytes());
        assert_eq!(cmdlines_slot(&h, 28, 8), Some(28..36));
    }
}
