//! Sending a recording to `trace-cmd listen` (`tr-cat -N HOST:PORT`): the
//! protocol of [`crate::tracedat::msg`] over TCP. One control connection
//! carries the handshake and the trace.dat header; each CPU's pages go on
//! a connection of their own to the port the listener gave for it.

use super::error::Error;
use crate::tracedat::msg;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long a silent listener is waited for at each step of the handshake.
const WAIT: Duration = Duration::from_secs(10);

/// An open session with a listener.
pub struct Session {
    pub control: TcpStream,
    /// Per CPU of the recording (in the flyrecord table's order).
    pub cpus: Vec<TcpStream>,
}

fn fail(addr: &str, what: String) -> Error {
    Error::Listener { addr: addr.into(), what }
}

/// Connect to the listener at `addr` (HOST:PORT), agree on protocol 3,
/// send the `header` (a trace.dat up to its options) and open one data
/// connection per CPU.
pub fn connect(addr: &str, cpus: u32, page_size: u32, header: &[u8]) -> Result<Session, Error> {
    let io = |what: &str, e: std::io::Error| fail(addr, format!("{what}: {}", super::describe(&e)));
    let to: Vec<SocketAddr> = addr.to_socket_addrs().map_err(|e| io("cannot resolve it", e))?.collect();
    let first = *to.first().ok_or_else(|| fail(addr, "no address for that name".into()))?;
    let mut c = TcpStream::connect_timeout(&first, WAIT).map_err(|e| io("cannot connect", e))?;
    c.set_read_timeout(Some(WAIT)).map_err(|e| io("socket", e))?;
    let expect = |c: &mut TcpStream, want: &[u8], step: &str| {
        let mut got = vec![0u8; want.len()];
        match c.read_exact(&mut got) {
            Ok(()) if got == want => Ok(()),
            Ok(()) => Err(fail(
                addr,
                format!(
                    "{step}: the listener answered '{}', not trace-cmd's protocol 3",
                    String::from_utf8_lossy(&got)
                ),
            )),
            Err(e) => Err(io(step, e)),
        }
    };
    expect(&mut c, msg::GREETING, "waiting for its greeting")?;
    c.write_all(msg::V3_CPU).map_err(|e| io("sending the protocol", e))?;
    expect(&mut c, msg::V3_REPLY, "agreeing on protocol 3")?;
    c.write_all(msg::V3_MAGIC).map_err(|e| io("sending the magic", e))?;
    expect(&mut c, msg::OK, "waiting for its OK")?;
    c.write_all(&msg::tinit(cpus, page_size)).map_err(|e| io("sending TINIT", e))?;
    let mut h = [0u8; msg::HEADER_LEN];
    c.read_exact(&mut h).map_err(|e| io("waiting for the ports (RINIT)", e))?;
    let h = msg::Header::parse(&h);
    let mut body = vec![0u8; h.body_len().ok_or_else(|| fail(addr, format!("a malformed message {h:?}")))?];
    c.read_exact(&mut body).map_err(|e| io("reading RINIT", e))?;
    let ports = msg::parse_rinit(&h, &body)
        .filter(|p| p.len() == cpus as usize)
        .ok_or_else(|| fail(addr, format!("expected the ports of {cpus} CPUs (RINIT), got message {}", h.cmd)))?;
    for piece in header.chunks(msg::MAX_DATA) {
        c.write_all(&msg::message(msg::SEND_DATA, &[], piece)).map_err(|e| io("sending the header", e))?;
    }
    c.write_all(&msg::message(msg::FIN_DATA, &[], &[])).map_err(|e| io("sending the header", e))?;
    let mut data = Vec::new();
    for p in ports {
        let at = SocketAddr::new(first.ip(), p);
        data.push(TcpStream::connect_timeout(&at, WAIT).map_err(|e| io(&format!("connecting to port {p}"), e))?);
    }
    Ok(Session { control: c, cpus: data })
}

impl Session {
    /// The end: the data connections closed, then CLOSE on the control one
    /// (the listener then puts the file together).
    pub fn close(self) -> std::io::Result<()> {
        drop(self.cpus);
        let mut c = self.control;
        c.write_all(&msg::message(msg::CLOSE, &[], &[]))
    }
}
