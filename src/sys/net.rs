//! Sending a recording to `trace-cmd listen` (`tr-cat -N HOST:PORT`): the
//! protocol of [`crate::tracedat::msg`] over TCP. One control connection
//! carries the handshake and the trace.dat header; each CPU's pages go on
//! a connection of their own to the port the listener gave for it.

use super::error::Error;
use crate::tracedat::msg;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::io::FromRawFd;

/// How long a silent listener is waited for at each step of the handshake.
const WAIT_S: u32 = 10;

/// An open session with a listener. The sockets are plain descriptors in
/// a `File` (SIGPIPE is ignored: a peer gone is EPIPE on the next write):
/// std::net and getaddrinfo would cost the board ~25 KiB, so the host is
/// an IPv4 address.
pub(crate) struct Session {
    /// The control connection.
    pub(crate) control: File,
    /// Per CPU of the recording (in the flyrecord table's order).
    pub(crate) cpus: Vec<File>,
    /// The header's saved_cmdlines slot (offset, length), filled at the end
    /// with the run's final ones ([`msg`]: tasks started meanwhile).
    slot: (u32, u32),
    /// The live saved_cmdlines.
    cmdlines: std::path::PathBuf,
    /// trace-cmd's listener: the header from the slot on, held back.
    held: Option<Held>,
    /// trbox's listener, which takes [`msg::CMDLINES`].
    trbox: bool,
}

/// The end of a header held back from trace-cmd's listener.
struct Held {
    /// What follows the slot (the CPU count, the options).
    tail: Vec<u8>,
    /// Bytes of the slot not sent yet (newlines went before them).
    room: usize,
    /// Newlines that may still go ([`super::record`]'s spare room).
    spare: usize,
    last: std::time::Instant,
}

/// The listener at `addr` did not do `what` (`err`: the socket's error).
fn fail(addr: &str, what: String, err: Option<io::Error>) -> Error {
    Error::Net { addr: addr.into(), what, err }
}

/// `A.B.C.D:PORT`.
fn parse_addr(addr: &str) -> Option<([u8; 4], u16)> {
    let (host, port) = addr.rsplit_once(':')?;
    let mut ip = [0u8; 4];
    let mut parts = host.split('.');
    for b in &mut ip {
        *b = parts.next()?.parse().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some((ip, u16::try_from(port.parse::<u32>().ok()?).ok()?))
}

/// A TCP connection to `ip:port`; connect and reads give up after
/// [`WAIT_S`] (SO_SNDTIMEO bounds connect on Linux), writes never do.
fn connect_to(ip: [u8; 4], port: u16) -> io::Result<File> {
    // SAFETY: plain socket calls on a descriptor we own; the structs are
    // zeroed and filled before use.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let f = File::from_raw_fd(fd);
        let tv = libc::timeval { tv_sec: WAIT_S as _, tv_usec: 0 };
        let set = |opt, tv: &libc::timeval| {
            let p = (tv as *const libc::timeval).cast();
            libc::setsockopt(fd, libc::SOL_SOCKET, opt, p, core::mem::size_of::<libc::timeval>() as libc::socklen_t)
        };
        set(libc::SO_SNDTIMEO, &tv);
        set(libc::SO_RCVTIMEO, &tv);
        let mut sa: libc::sockaddr_in = core::mem::zeroed();
        sa.sin_family = libc::AF_INET as libc::sa_family_t;
        sa.sin_port = port.to_be();
        sa.sin_addr.s_addr = u32::from_ne_bytes(ip);
        let len = core::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::connect(fd, (&sa as *const libc::sockaddr_in).cast(), len) != 0 {
            let e = io::Error::last_os_error();
            // What a connect cut short by SO_SNDTIMEO says.
            return Err(match e.raw_os_error() {
                Some(libc::EINPROGRESS) => io::Error::from_raw_os_error(libc::ETIMEDOUT),
                _ => e,
            });
        }
        set(libc::SO_SNDTIMEO, &libc::timeval { tv_sec: 0, tv_usec: 0 });
        Ok(f)
    }
}

/// Connect to the listener at `addr` (HOST:PORT), agree on protocol 3,
/// send the `header` (a trace.dat up to its options, whose saved_cmdlines
/// are in `slot`: offset, length; to trace-cmd's listener only up to them)
/// and open one data connection per CPU. `cmdlines`: the live
/// saved_cmdlines, read at the end.
pub(crate) fn connect(
    addr: &str,
    cpus: u32,
    page_size: u32,
    header: &[u8],
    slot: (u64, usize),
    cmdlines: std::path::PathBuf,
) -> Result<Session, Error> {
    let io = |what: &str, e: io::Error| fail(addr, what.into(), Some(e));
    let (ip, port) = parse_addr(addr).ok_or_else(|| Error::NetAddr(addr.into()))?;
    let mut c = connect_to(ip, port).map_err(|e| io("cannot connect", e))?;
    // The handshake, each step a write then the answer expected (the
    // greeting comes first, unasked).
    let mut buf = [0u8; 8];
    for (send, want) in [(&b""[..], &msg::GREETING[..]), (msg::V3_CPU, msg::V3_REPLY), (msg::V3_MAGIC, msg::OK)] {
        let got = buf.get_mut(..want.len()).unwrap_or_default();
        c.write_all(send).and_then(|_| c.read_exact(got)).map_err(|e| io("the handshake", e))?;
        if got != want {
            return Err(fail(addr, "not trace-cmd's listener (protocol 3)".into(), None));
        }
    }
    c.write_all(&msg::tinit(cpus, page_size)).map_err(|e| io("the handshake", e))?;
    let mut h = [0u8; msg::HEADER_LEN];
    c.read_exact(&mut h).map_err(|e| io("waiting for the ports (RINIT)", e))?;
    let h = msg::Header::parse(&h);
    let mut body = vec![0u8; h.body_len().unwrap_or(0)];
    c.read_exact(&mut body).map_err(|e| io("waiting for the ports (RINIT)", e))?;
    let ports = msg::parse_rinit(&h, &body)
        .filter(|p| p.len() == cpus as usize)
        .ok_or_else(|| fail(addr, format!("expected the ports of {cpus} CPUs (RINIT), got message {}", h.cmd), None))?;
    let (at, len) = (slot.0 as usize, slot.1);
    let trbox = msg::rinit_of_trbox(&body);
    let held = (!trbox).then(|| Held {
        tail: header.get(at + len..).unwrap_or_default().to_vec(),
        room: len,
        spare: msg::NET_SPARE,
        last: std::time::Instant::now(),
    });
    let now = if held.is_some() { header.get(..at).unwrap_or_default() } else { header };
    send(&mut c, msg::SEND_DATA, &[], now).map_err(|e| io("sending the header", e))?;
    if held.is_none() {
        c.write_all(&msg::message(msg::FIN_DATA, &[], &[])).map_err(|e| io("sending the header", e))?;
    }
    let mut data = Vec::new();
    for p in ports {
        data.push(connect_to(ip, p).map_err(|e| io(&format!("connecting to port {p}"), e))?);
    }
    Ok(Session { control: c, cpus: data, slot: (at as u32, len as u32), cmdlines, held, trbox })
}

/// `bytes` as `cmd` messages of at most [`msg::MAX_LEN`] bytes each.
fn send(c: &mut File, cmd: u32, fixed: &[u32], bytes: &[u8]) -> io::Result<()> {
    for piece in bytes.chunks(msg::MAX_DATA - 4 * fixed.len()) {
        c.write_all(&msg::message(cmd, fixed, piece))?;
    }
    Ok(())
}

impl Session {
    /// A header held back from trace-cmd's listener: a newline of the
    /// saved_cmdlines room once a second, so that it waits on; the rest of
    /// the header now when the room for them is spent.
    pub(crate) fn keep_alive(&mut self) -> io::Result<()> {
        let Some(h) = self.held.as_mut().filter(|h| h.last.elapsed().as_secs() >= 1) else { return Ok(()) };
        if h.spare == 0 {
            return self.finish_header();
        }
        h.spare -= 1;
        h.room -= 1;
        h.last = std::time::Instant::now();
        self.control.write_all(&msg::message(msg::SEND_DATA, &[], b"\n"))
    }

    /// The saved_cmdlines of now into the slot: the rest of a held header
    /// and its end; trbox's listener takes them over those of the start.
    fn finish_header(&mut self) -> io::Result<()> {
        let held = self.held.take();
        if held.is_none() && !self.trbox {
            // Sent already (its room spent).
            return Ok(());
        }
        let (room, tail) = held.map_or((self.slot.1 as usize, Vec::new()), |h| (h.room, h.tail));
        let mut b = crate::tracedat::fit_cmdlines(&std::fs::read(&self.cmdlines).unwrap_or_default(), room);
        b.extend_from_slice(&tail);
        if self.trbox {
            return send(&mut self.control, msg::CMDLINES, &[self.slot.0, self.slot.1], &b);
        }
        send(&mut self.control, msg::SEND_DATA, &[], &b)?;
        self.control.write_all(&msg::message(msg::FIN_DATA, &[], &[]))
    }

    /// The end: the header's saved_cmdlines made final, the data
    /// connections closed, then CLOSE on the control one (the listener
    /// then puts the file together).
    pub(crate) fn close(mut self) -> io::Result<()> {
        self.finish_header()?;
        drop(self.cpus);
        let mut c = self.control;
        c.write_all(&msg::message(msg::CLOSE, &[], &[]))
    }
}
