//! The host's side of getting a trace off the board: converting a stream
//! or a console log to a trace.dat, writing Perfetto's format, listening
//! for `tr-cat -N`. The module is behind the cargo feature `host` (on in
//! the default build, off in the board build, which only writes streams
//! and sends).

use crate::cli::Error;
use crate::decode;
use std::path::Path;

/// `tr-cat STREAM -o trace.dat`: the stream (`-`: standard input) as a
/// version 6 trace.dat.
pub fn convert(input: &str, output: &str) -> Result<(), Error> {
    use std::io::Write as _;
    let inp = Path::new(input);
    let Some(bytes) = crate::stream_in::load_stream(inp)? else {
        return Err(Error::usage(format!("{input}: not a trbox stream (tr-cat -o - writes one); nothing to convert"))
            .hint("a trace.dat is read as it is: tr-cat FILE"));
    };
    if output == "-" {
        return Err(Error::usage("the stream is already on standard output's side: give -o a file name"));
    }
    let mut f = trbox::sys::record::create_output(Path::new(output))?;
    f.write_all(&bytes).map_err(|e| Error::runtime(format!("{output}: {}", trbox::sys::describe(&e))))?;
    eprintln!("tr-cat: {output}: {} bytes (trace.dat version 6)", bytes.len());
    Ok(())
}

/// `tr-cat FILE -o OUT.pftrace`: Perfetto's protobuf trace format.
pub fn perfetto(input: decode::Input<'_>, o: &decode::RawOpts, output: &str) -> Result<(), Error> {
    use std::io::Write as _;
    let mut tr = trbox::perfetto::Trace::new();
    let meta = decode::collect(input, o, &|| false, &mut |m, it| {
        if let decode::Item::Record { cpu, ts, payload, .. } = it {
            let endian = m.trace.endian;
            if let Some(ev) = m.trace.events.event_of(payload, endian) {
                tr.event(ev, cpu, ts, m.pid(ev, payload), payload, endian);
            }
        }
    })?;
    let threads: Vec<(i32, &str)> = meta
        .saved_cmdlines
        .lines()
        .filter_map(|l| l.trim().split_once(' ').and_then(|(p, c)| Some((p.parse().ok()?, c.trim()))))
        .collect();
    let events = tr.events;
    let symbol = |a: u64| {
        use trbox::printfmt::SymbolLookup;
        // The name alone, as the function_graph tracer prints it (%ps).
        meta.trace.symbols.lookup(a).map(|s| s.name.to_string())
    };
    let bytes = tr.finish(&threads, meta.uname.as_deref(), &symbol);
    let mut f = trbox::sys::record::create_output(Path::new(output))?;
    f.write_all(&bytes).map_err(|e| Error::runtime(format!("{output}: {}", trbox::sys::describe(&e))))?;
    eprintln!("tr-cat: {output}: {events} events, {} bytes (Perfetto trace)", bytes.len());
    Ok(())
}

/// `tr-cat --listen PORT [-o DIR]`: trace-cmd's listener (protocol 3, pages
/// over TCP), for hosts without trace-cmd. Each recording received becomes
/// `DIR/trace.HOST:PORT.dat`; one sender at a time, until Ctrl-C. A sender
/// that drops leaves a file with the pages that arrived.
pub fn listen(port: u16, dir: &str) -> Result<(), Error> {
    let l = std::net::TcpListener::bind(("0.0.0.0", port))
        .map_err(|e| Error::runtime(format!("--listen {port}: {}", trbox::sys::describe(&e))))?;
    // Ctrl-C (or SIGTERM) ends the listener at once: tr-cat's handlers only
    // set a flag, and the accept loop would never look at it.
    // SAFETY: resetting two signals to their default action.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
    eprintln!("tr-cat: listening on port {port} (tr-cat -N HOST:{port}, trace-cmd record -N HOST:{port} -t)");
    for c in l.incoming() {
        let Ok(c) = c else { continue };
        let peer = c.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "unknown".into());
        match receive(c) {
            Ok((bytes, pages)) => {
                let out = Path::new(dir).join(format!("trace.{peer}.dat"));
                match std::fs::write(&out, &bytes) {
                    Ok(()) => eprintln!("tr-cat: {}: {pages} pages from {peer}", out.display()),
                    Err(e) => eprintln!("tr-cat: {}: {}", out.display(), trbox::sys::describe(&e)),
                }
            }
            Err(e) => eprintln!("tr-cat: {peer}: {e}"),
        }
    }
    Ok(())
}

/// One sender: the handshake, the header, each CPU's pages until CLOSE (or
/// the connection's end); the trace.dat and its page count.
fn receive(mut c: std::net::TcpStream) -> Result<(Vec<u8>, usize), String> {
    use std::io::{Read as _, Write as _};
    use trbox::tracedat::msg;
    let e = |what: &'static str| move |err: std::io::Error| format!("{what}: {}", trbox::sys::describe(&err));
    c.set_read_timeout(Some(std::time::Duration::from_secs(30))).map_err(e("socket"))?;
    c.write_all(msg::GREETING).map_err(e("greeting"))?;
    let mut v = [0u8; 5];
    c.read_exact(&mut v).map_err(e("reading the protocol"))?;
    if &v != msg::V3_CPU {
        return Err(format!("protocol '{}': only trace-cmd's protocol 3 is spoken here", String::from_utf8_lossy(&v)));
    }
    c.write_all(msg::V3_REPLY).map_err(e("reply"))?;
    let mut magic = [0u8; 8];
    c.read_exact(&mut magic).map_err(e("reading the magic"))?;
    c.write_all(msg::OK).map_err(e("OK"))?;
    let read_msg = |c: &mut std::net::TcpStream| -> Result<(msg::Header, Vec<u8>), String> {
        let mut h = [0u8; msg::HEADER_LEN];
        c.read_exact(&mut h).map_err(e("reading a message"))?;
        let h = msg::Header::parse(&h);
        let mut body = vec![0u8; h.body_len().ok_or_else(|| format!("a malformed message {h:?}"))?];
        c.read_exact(&mut body).map_err(e("reading a message"))?;
        Ok((h, body))
    };
    let (h, body) = read_msg(&mut c)?;
    let (cpus, page_size, opts) = msg::parse_tinit(&h, &body).ok_or("expected TINIT")?;
    if !opts.iter().any(|o| o.eq_ignore_ascii_case(b"tcp")) {
        return Err("the sender wants UDP: only TCP is taken here (trace-cmd record -N HOST:PORT -t)".into());
    }
    if cpus > 4096 || !(512..=1 << 24).contains(&page_size) {
        return Err(format!("TINIT with {cpus} CPUs and {page_size}-byte pages: refused"));
    }
    let mut listeners = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..cpus {
        let l = std::net::TcpListener::bind(("0.0.0.0", 0)).map_err(e("a port for a CPU"))?;
        ports.push(l.local_addr().map_err(e("a port for a CPU"))?.port());
        listeners.push(l);
    }
    c.write_all(&msg::rinit(&ports)).map_err(e("sending the ports"))?;
    // A test hook: drop every connection this long after the header is
    // complete (FIN_DATA), as a link that fails mid-run would.
    let drop_ms: Option<u64> = std::env::var("TRBOX_LISTEN_DROP_MS").ok().and_then(|m| m.parse().ok());
    let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<std::thread::JoinHandle<Vec<u8>>> = listeners
        .into_iter()
        .map(|l| {
            let dropped = dropped.clone();
            std::thread::spawn(move || {
                let mut data = Vec::new();
                let Ok((mut s, _)) = l.accept() else { return data };
                if drop_ms.is_none() {
                    let _ = s.read_to_end(&mut data);
                    return data;
                }
                let _ = s.set_read_timeout(Some(std::time::Duration::from_millis(20)));
                let mut buf = vec![0u8; 1 << 16];
                while !dropped.load(std::sync::atomic::Ordering::SeqCst) {
                    match s.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => data.extend_from_slice(&buf[..n]),
                        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                        }
                        Err(_) => break,
                    }
                }
                data
            })
        })
        .collect();
    let mut header = Vec::new();
    let mut closed = false;
    // The header, then nothing until CLOSE; a recording may last long.
    c.set_read_timeout(None).map_err(e("socket"))?;
    while let Ok((h, body)) = read_msg(&mut c) {
        match h.cmd {
            msg::SEND_DATA => header.extend_from_slice(body.get(h.cmd_size as usize..).unwrap_or_default()),
            msg::FIN_DATA => {
                if let (Some(ms), Ok(c2)) = (drop_ms, c.try_clone()) {
                    let dropped = dropped.clone();
                    std::thread::spawn(move || {
                        std::thread::sleep(std::time::Duration::from_millis(ms));
                        dropped.store(true, std::sync::atomic::Ordering::SeqCst);
                        let _ = c2.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
            msg::CLOSE => {
                closed = true;
                break;
            }
            _ => {}
        }
    }
    if !closed {
        eprintln!("tr-cat: the sender dropped the connection before its end: keeping what arrived");
    }
    if header.is_empty() {
        return Err("no header arrived".into());
    }
    // A sender gone without connecting a CPU leaves its reader waiting.
    for p in &ports {
        let _ = std::net::TcpStream::connect(("127.0.0.1", *p));
    }
    let data: Vec<Vec<u8>> = readers.into_iter().map(|r| r.join().unwrap_or_default()).collect();
    let pages = data.iter().map(|d| d.len() / page_size as usize).sum();
    Ok((msg::assemble(&header, page_size, &data), pages))
}
