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
pub struct Session {
    /// The control connection.
    pub control: File,
    /// Per CPU of the recording (in the flyrecord table's order).
    pub cpus: Vec<File>,
}

/// `listener ADDR: WHAT` and what to do (said like a file that cannot be
/// read: a variant of its own, or a boxed io::Error, costs the board more).
fn fail(addr: &str, what: String) -> Error {
    let hint = "; start the listener on the host first (trace-cmd listen -p PORT, or tr-cat --listen PORT)";
    Error::TraceDat { path: format!("listener {addr}").into(), what: what + hint }
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
/// send the `header` (a trace.dat up to its options) and open one data
/// connection per CPU.
pub fn connect(addr: &str, cpus: u32, page_size: u32, header: &[u8]) -> Result<Session, Error> {
    let io = |what: &str, e: io::Error| fail(addr, format!("{what}: {}", super::describe(&e)));
    let (ip, port) =
        parse_addr(addr).ok_or_else(|| fail(addr, "not an IPv4 address and port (A.B.C.D:PORT)".into()))?;
    let mut c = connect_to(ip, port).map_err(|e| io("cannot connect", e))?;
    // The handshake, each step a write then the answer expected (the
    // greeting comes first, unasked).
    let mut buf = [0u8; 8];
    for (send, want) in [(&b""[..], &msg::GREETING[..]), (msg::V3_CPU, msg::V3_REPLY), (msg::V3_MAGIC, msg::OK)] {
        let got = buf.get_mut(..want.len()).unwrap_or_default();
        c.write_all(send).and_then(|_| c.read_exact(got)).map_err(|e| io("the handshake", e))?;
        if got != want {
            return Err(fail(addr, "not trace-cmd's listener (protocol 3)".into()));
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
        .ok_or_else(|| fail(addr, format!("expected the ports of {cpus} CPUs (RINIT), got message {}", h.cmd)))?;
    for piece in header.chunks(msg::MAX_DATA) {
        c.write_all(&msg::message(msg::SEND_DATA, &[], piece)).map_err(|e| io("sending the header", e))?;
    }
    c.write_all(&msg::message(msg::FIN_DATA, &[], &[])).map_err(|e| io("sending the header", e))?;
    let mut data = Vec::new();
    for p in ports {
        data.push(connect_to(ip, p).map_err(|e| io(&format!("connecting to port {p}"), e))?);
    }
    Ok(Session { control: c, cpus: data })
}

impl Session {
    /// The end: the data connections closed, then CLOSE on the control one
    /// (the listener then puts the file together).
    pub fn close(self) -> io::Result<()> {
        drop(self.cpus);
        let mut c = self.control;
        c.write_all(&msg::message(msg::CLOSE, &[], &[]))
    }
}
