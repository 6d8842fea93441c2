//! `tr-cat --listen [ADDR:]PORT [-o DIR] [-m KB]`: trace-cmd's listener
//! (protocol 3, pages over TCP, [`trbox::tracedat::msg`]) for hosts
//! without trace-cmd, built as a small server that anyone who reaches the
//! port may talk to (issue 27). Host build only.
//!
//! What bounds each sender (a session, on a thread of its own):
//!
//! | what | bound |
//! |------|-------|
//! | senders at once | [`SESSIONS`]; one more takes the place of the one longest in its handshake (shut down), or is refused when all are recording |
//! | handshake, TINIT and the whole header | [`HEADER_S`] in all, not per read; the header at most [`MAX_HEADER`] bytes |
//! | data ports | one per CPU (at most 4,096 a session, and what the descriptor limit leaves), bound where the listener is, each closed once its CPU connects, or [`CONNECT_S`] after the header, or when the session ends, however it ends |
//! | the recording | pages go to the file as they arrive (64 KiB at a time); at most `-m` KB ([`DEFAULT_MAX_KB`]); stopped when the disk has less than [`MIN_FREE`] left; ended by [`IDLE_S`] without a byte |
//! | after CLOSE, or the control connection's end | [`DRAIN_S`] in all for the data still coming |
//! | the file | created with O_EXCL (never through a symlink, never over a file), `trace.HOST:PORT.dat`, else `trace.HOST:PORT.N.dat` |
//!
//! With `-o DIR.parquet` each recording is received into a hidden
//! `.trace.HOST:PORT.dat` there (query engines skip names that start with
//! a dot), converted into `DIR.parquet/source=HOST_PORT/` once it ended
//! ([`to_parquet`]), and removed: the fleet layout of `tr-cat FILE… -o
//! OUT.parquet`, one `source` per sender.
//!
//! Every session that fails or is refused leaves one line on stderr:
//! `tr-cat: HOST:PORT: why`. There is no authentication: anyone who
//! reaches the port can send (and fill the `-m` cap [`SESSIONS`] times,
//! or hold every place with a recording that sends nothing).

use crate::applets::cli::Error;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::FileExt as _;
use std::os::unix::io::AsRawFd as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use trbox::sys::read::parquet::{into_dir, Options, Source};
use trbox::tracedat::msg;

/// Senders served at once.
pub(crate) const SESSIONS: usize = 16;
/// Seconds from the connection to the header's end (FIN_DATA), in all.
const HEADER_S: u64 = 30;
/// The largest header (a trace.dat up to its options, kallsyms included).
const MAX_HEADER: usize = 16 << 20;
/// Seconds after the header for the CPUs to connect.
const CONNECT_S: u64 = 15;
/// Seconds without a byte on any of a session's connections that end it.
const IDLE_S: u64 = 3600;
/// Seconds after CLOSE (or the control connection's end) for the data
/// still on its way.
const DRAIN_S: u64 = 10;
/// A recording stops when the disk has less than this left.
const MIN_FREE: u64 = 256 << 20;
/// `-m` when not given: 1 GiB per recording.
pub(crate) const DEFAULT_MAX_KB: u64 = 1 << 20;
/// The most CPUs a TINIT may announce.
const MAX_CPUS: u32 = 4096;

/// `[ADDR:]PORT`: a port alone listens on every address (0.0.0.0).
pub(crate) fn parse_addr(s: &str) -> Result<SocketAddr, Error> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    s.parse().map_err(|_| {
        Error::usage(format!("--listen: '{s}' is neither PORT nor ADDR:PORT"))
            .hint("e.g. --listen 12345 (every address) or --listen 127.0.0.1:12345 (loopback only)")
    })
}

/// What every session shares: the free places and data ports, and the
/// sessions still in their handshake.
struct Shared {
    sessions: AtomicUsize,
    ports: AtomicUsize,
    /// Before their header's end, oldest first: an id and a handle on the
    /// connection, to shut it down when a new sender needs the place.
    handshaking: Mutex<VecDeque<(u64, TcpStream)>>,
    ids: AtomicU64,
}

impl Shared {
    /// Take `n` of `what` if there are so many left.
    fn take(what: &AtomicUsize, n: usize) -> bool {
        what.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(n)).is_ok()
    }

    /// A place for a new sender: a free one, else the one of the session
    /// longest in its handshake, which is shut down (its thread ends at
    /// once: its read returns); so idle connections, however many, cannot
    /// keep a sender out. False when every place holds a recording.
    fn seat(&self) -> bool {
        if Shared::take(&self.sessions, 1) {
            return true;
        }
        let oldest = self.handshaking.lock().ok().and_then(|mut h| h.pop_front());
        let Some((_, old)) = oldest else { return false };
        let _ = old.shutdown(std::net::Shutdown::Both);
        (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(5));
            Shared::take(&self.sessions, 1)
        })
    }
}

/// A session among the handshaking ones, until dropped.
struct Handshaking<'a>(&'a Shared, u64);

impl<'a> Handshaking<'a> {
    fn enter(shared: &'a Shared, c: &TcpStream) -> Handshaking<'a> {
        let id = shared.ids.fetch_add(1, Ordering::SeqCst);
        if let (Ok(mut h), Ok(c)) = (shared.handshaking.lock(), c.try_clone()) {
            h.push_back((id, c));
        }
        Handshaking(shared, id)
    }

    /// Whether a newer sender took its place.
    fn evicted(&self) -> bool {
        self.0.handshaking.lock().is_ok_and(|h| !h.iter().any(|e| e.0 == self.1))
    }
}

impl Drop for Handshaking<'_> {
    fn drop(&mut self) {
        if let Ok(mut h) = self.0.handshaking.lock() {
            h.retain(|e| e.0 != self.1);
        }
    }
}

/// Ports taken, given back on drop (however the session ends).
struct Taken<'a>(&'a AtomicUsize, usize);

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(self.1, Ordering::SeqCst);
    }
}

/// A session's place, given back on drop (also when no thread could be
/// started for it).
struct Seat(Arc<Shared>);

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.sessions.fetch_add(1, Ordering::SeqCst);
    }
}

/// Where a session binds and writes, and its cap.
struct Place {
    ip: IpAddr,
    dir: PathBuf,
    max_bytes: u64,
    /// [`HEADER_S`], or TRBOX_LISTEN_HEADER_S (a test hook).
    header_s: u64,
    /// `-o DIR.parquet`: each recording converted so.
    parquet: Option<Options>,
}

/// Raise the soft limit of open descriptors to the hard one; the data
/// ports all sessions may hold (two descriptors each, a margin kept).
fn descriptor_budget() -> usize {
    // SAFETY: plain data in and out.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            let want = libc::rlimit { rlim_cur: r.rlim_max.min(1 << 20), rlim_max: r.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                r.rlim_cur = want.rlim_cur;
            }
        }
        (r.rlim_cur as usize).saturating_sub(64 + 4 * SESSIONS) / 2
    }
}

/// Bind `addr`, then serve each sender on a thread of its own (module
/// docs) until Ctrl-C or SIGTERM; files go to `dir`. A recording cut
/// short that way leaves a file that reads as an empty recording (its
/// table is written with the header, every CPU empty, and filled in at
/// the end).
pub(crate) fn listen(addr: SocketAddr, dir: &str, max_kb: Option<u64>, parquet: Option<Options>) -> Result<(), Error> {
    if parquet.is_some() && !Path::new(dir).is_dir() {
        // The fleet's directory, made once; a listener started again adds
        // its senders to it.
        std::fs::create_dir(dir)
            .map_err(|e| Error::runtime(format!("--listen: -o {dir}: {}", trbox::sys::describe(&e))))?;
    }
    if !Path::new(dir).is_dir() {
        return Err(Error::usage(format!("--listen: -o {dir}: not a directory (the received files go there)")));
    }
    let l = TcpListener::bind(addr)
        .map_err(|e| Error::runtime(format!("--listen {addr}: {}", trbox::sys::describe(&e))))?;
    // Ctrl-C (or SIGTERM) ends the listener at once: tr-cat's handlers only
    // set a flag, and the accept loop would never look at it.
    // SAFETY: resetting two signals to their default action.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
    let max_bytes = max_kb.unwrap_or(DEFAULT_MAX_KB).saturating_mul(1024);
    let shared = Arc::new(Shared {
        sessions: AtomicUsize::new(SESSIONS),
        ports: AtomicUsize::new(descriptor_budget()),
        handshaking: Mutex::new(VecDeque::new()),
        ids: AtomicU64::new(0),
    });
    let header_s = std::env::var("TRBOX_LISTEN_HEADER_S").ok().and_then(|s| s.parse().ok()).unwrap_or(HEADER_S);
    let place = Arc::new(Place { ip: addr.ip(), dir: PathBuf::from(dir), max_bytes, header_s, parquet });
    let at = l.local_addr().unwrap_or(addr);
    let port = at.port();
    eprintln!(
        "tr-cat: listening on {at} (tr-cat -N HOST:{port}, trace-cmd record -N HOST:{port} -t), {SESSIONS} senders at once, {} each",
        mib(max_bytes)
    );
    for c in l.incoming() {
        let c = match c {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors, or a connection reset while queued:
                // wait a little rather than spin.
                eprintln!("tr-cat: --listen: {}", trbox::sys::describe(&e));
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let peer = c.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "unknown".into());
        if !shared.seat() {
            eprintln!("tr-cat: {peer}: refused: {SESSIONS} recordings already");
            continue;
        }
        let (seat, place) = (Seat(shared.clone()), place.clone());
        let spawned = std::thread::Builder::new().name("tr-cat-listen".into()).spawn(move || {
            match session(c, &peer, &place, &seat.0) {
                Ok((path, pages, note)) => match &place.parquet {
                    None => eprintln!("tr-cat: {}: {pages} pages from {peer}{note}", path.display()),
                    Some(o) => match to_parquet(&path, &peer, &place.dir, o) {
                        Ok(to) => eprintln!("tr-cat: {}: {pages} pages from {peer}{note}", to.display()),
                        Err(why) => eprintln!("tr-cat: {peer}: {why}"),
                    },
                },
                Err(why) => eprintln!("tr-cat: {peer}: {why}"),
            }
        });
        if let Err(e) = spawned {
            // (The closure, and the place it held, are dropped.)
            eprintln!("tr-cat: --listen: no thread for a sender: {}", trbox::sys::describe(&e));
        }
    }
    Ok(())
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

/// Read exactly `buf` from `c` by `deadline` (when, and its seconds for
/// the message; each read's timeout is what is left of it).
fn read_by(c: &mut TcpStream, buf: &mut [u8], deadline: (Instant, u64)) -> Result<(), String> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.0.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("refused: the handshake and header took more than {} s", deadline.1));
        }
        c.set_read_timeout(Some(left)).map_err(|e| trbox::sys::describe(&e))?;
        match c.read(buf.get_mut(got..).unwrap_or_default()) {
            Ok(0) => return Err("gone before the header was complete".into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(format!("gone before the header was complete: {}", trbox::sys::describe(&e))),
        }
    }
    Ok(())
}

/// One message (header and body) by `deadline`.
fn message_by(c: &mut TcpStream, deadline: (Instant, u64)) -> Result<(msg::Header, Vec<u8>), String> {
    let mut h = [0u8; msg::HEADER_LEN];
    read_by(c, &mut h, deadline)?;
    let h = msg::Header::parse(&h);
    let mut body = vec![
        0u8;
        h.body_len().ok_or_else(|| format!(
            "refused: a malformed message (size {}, command {}, fixed part {} bytes; at most {} in all)",
            h.size,
            h.cmd,
            h.cmd_size,
            msg::MAX_LEN
        ))?
    ];
    read_by(c, &mut body, deadline)?;
    Ok((h, body))
}

/// Where a CPU's pages go: CPU 0 straight into the file at its place,
/// the others into a file of their own (unnamed, in DIR) copied in at
/// the end.
enum Sink<'a> {
    Out(&'a File, u64),
    Temp(File),
}

impl Sink<'_> {
    fn put(&mut self, at: u64, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Out(f, start) => f.write_all_at(bytes, *start + at),
            Sink::Temp(f) => f.write_all(bytes),
        }
    }
}

/// An unnamed file in `dir`, gone when closed: O_TMPFILE, or where the
/// file system has none, a file created (O_EXCL) and unlinked at once.
fn temp_in(dir: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let open = || std::fs::OpenOptions::new().read(true).write(true).mode(0o600).clone();
    match open().custom_flags(libc::O_TMPFILE).open(dir) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)) => {
            for n in 0..100 {
                let p = dir.join(format!(".trace.part.{}.{n}", std::process::id()));
                if let Ok(f) = open().create_new(true).open(&p) {
                    std::fs::remove_file(&p)?;
                    return Ok(f);
                }
            }
            Err(e)
        }
        r => r,
    }
}

/// Bytes free for us on the file system of `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: a NUL-ended path and a struct to fill.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        (libc::statvfs(c.as_ptr(), &mut s) == 0).then(|| s.f_bavail as u64 * s.f_frsize as u64)
    }
}

/// The file for `peer`: `trace.PEER.dat`, or `trace.PEER.N.dat` when that
/// name is taken (by anything: a file, a symlink); `.trace…` when it is
/// to be converted (`hidden`).
fn create_file(dir: &Path, peer: &str, hidden: bool) -> Result<(PathBuf, File), String> {
    let dot = if hidden { "." } else { "" };
    for n in 0..100 {
        let name = if n == 0 { format!("{dot}trace.{peer}.dat") } else { format!("{dot}trace.{peer}.{n}.dat") };
        let p = dir.join(name);
        match trbox::sys::record::create_new_output(&p) {
            Ok(Some(f)) => return Ok((p, f)),
            Ok(None) => {}
            Err(e) => return Err(format!("refused: {e}")),
        }
    }
    Err(format!("refused: trace.{peer}.dat and 99 more names are taken in {}", dir.display()))
}

/// `peer` as a `source=` value: HOST_PORT, every byte but letters,
/// digits, `.` and `-` as `_` (a `:` is a URI scheme to Hadoop's paths,
/// which Spark reads the directory with).
fn source_name(peer: &str) -> String {
    peer.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect()
}

/// `-o DIR.parquet`: the recording received at `dat` into
/// `DIR.parquet/source=NAME/` (`source=NAME.N/` when taken: nothing is
/// written over), then `dat` removed; kept, and said, when the
/// conversion fails (and the directory made for it removed: a half
/// source would spoil every query over the fleet).
fn to_parquet(dat: &Path, peer: &str, dir: &Path, o: &Options) -> Result<PathBuf, String> {
    let name = source_name(peer);
    let mut made = None;
    for n in 0..100 {
        let p = dir.join(if n == 0 { format!("source={name}") } else { format!("source={name}.{n}") });
        match std::fs::create_dir(&p) {
            Ok(()) => {
                made = Some(p);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(format!(
                    "{}: {}: the recording is kept as {}",
                    p.display(),
                    trbox::sys::describe(&e),
                    dat.display()
                ))
            }
        }
    }
    let to = made.ok_or_else(|| {
        format!(
            "source={name} and 99 more names are taken in {}: the recording is kept as {}",
            dir.display(),
            dat.display()
        )
    })?;
    let one = [Source { path: dat, name: None }];
    match into_dir(&one, &to, o) {
        Ok(_) => {
            let _ = std::fs::remove_file(dat);
            Ok(to)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&to);
            Err(format!("{e}: the recording is kept as {}", dat.display()))
        }
    }
}

/// A CPU's data port and connection.
enum Data {
    Port(TcpListener),
    Open(TcpStream),
    Done,
}

/// What the handshake settled: the CPUs, the page size, each CPU's data
/// port, the header (a trace.dat up to its options), and the ports
/// taken.
struct Handshake<'a> {
    cpus: u32,
    page_size: u32,
    data: Vec<Data>,
    header: Vec<u8>,
    _ports: Taken<'a>,
}

/// From the greeting to the header's end (FIN_DATA), by the deadline.
fn handshake<'a>(c: &mut TcpStream, place: &Place, shared: &'a Shared) -> Result<Handshake<'a>, String> {
    let e = |what: &'static str| move |err: std::io::Error| format!("{what}: {}", trbox::sys::describe(&err));
    let deadline = (Instant::now() + Duration::from_secs(place.header_s), place.header_s);
    c.set_write_timeout(Some(Duration::from_secs(HEADER_S))).map_err(e("socket"))?;
    c.write_all(msg::GREETING).map_err(e("greeting"))?;
    let mut v = [0u8; 5];
    read_by(c, &mut v, deadline)?;
    if &v != msg::V3_CPU {
        return Err(format!("refused: protocol '{}': only trace-cmd's protocol 3 is spoken here", v.escape_ascii()));
    }
    c.write_all(msg::V3_REPLY).map_err(e("reply"))?;
    let mut magic = [0u8; 8];
    read_by(c, &mut magic, deadline)?;
    c.write_all(msg::OK).map_err(e("OK"))?;
    let (h, body) = message_by(c, deadline)?;
    let (cpus, page_size, opts) = msg::parse_tinit(&h, &body).ok_or("refused: expected TINIT")?;
    if !opts.iter().any(|o| o.eq_ignore_ascii_case(b"tcp")) {
        return Err("refused: the sender wants UDP: only TCP is taken here (trace-cmd record -N HOST:PORT -t)".into());
    }
    if !(1..=MAX_CPUS).contains(&cpus) || !(512..=1 << 24).contains(&page_size) {
        return Err(format!("refused: TINIT with {cpus} CPUs and {page_size}-byte pages"));
    }
    if !Shared::take(&shared.ports, cpus as usize) {
        return Err(format!("refused: {cpus} CPUs: the other senders hold the data ports this process may open"));
    }
    let ports_taken = Taken(&shared.ports, cpus as usize);
    let mut data = Vec::with_capacity(cpus as usize);
    let mut ports = Vec::with_capacity(cpus as usize);
    for _ in 0..cpus {
        let l = TcpListener::bind((place.ip, 0)).map_err(e("refused: a port for a CPU"))?;
        ports.push(l.local_addr().map_err(e("refused: a port for a CPU"))?.port());
        l.set_nonblocking(true).map_err(e("socket"))?;
        data.push(Data::Port(l));
    }
    c.write_all(&msg::rinit(&ports)).map_err(e("sending the ports"))?;
    let mut header = Vec::new();
    loop {
        let (h, body) = message_by(c, deadline)?;
        match h.cmd {
            msg::SEND_DATA => {
                let piece = body.get(h.cmd_size as usize..).unwrap_or_default();
                if header.len() + piece.len() > MAX_HEADER {
                    return Err(format!("refused: a header of more than {}", mib(MAX_HEADER as u64)));
                }
                header.extend_from_slice(piece);
            }
            msg::FIN_DATA => break,
            msg::CLOSE => return Err("refused: CLOSE before the header's end".into()),
            _ => {}
        }
    }
    if !header.starts_with(&trbox::tracedat::MAGIC) {
        return Err("refused: the header is not the start of a trace.dat".into());
    }
    Ok(Handshake { cpus, page_size, data, header, _ports: ports_taken })
}

/// One sender, from the greeting to its file: (file, pages, a note).
fn session(mut c: TcpStream, peer: &str, place: &Place, shared: &Shared) -> Result<(PathBuf, u64, String), String> {
    let waiting = Handshaking::enter(shared, &c);
    let done = handshake(&mut c, place, shared);
    if done.is_err() && waiting.evicted() {
        return Err(format!(
            "refused: {SESSIONS} senders at once: this one, the longest in its handshake, made room for a new one"
        ));
    }
    drop(waiting);
    let Handshake { cpus, page_size, mut data, header, _ports } = done?;
    if free_bytes(&place.dir).is_some_and(|f| f < MIN_FREE) {
        return Err(format!("refused: less than {} free in {}", mib(MIN_FREE), place.dir.display()));
    }
    let head = msg::Head::new(header, page_size, cpus);
    let (path, file) = create_file(&place.dir, peer, place.parquet.is_some())?;
    let werr = |err: std::io::Error| format!("{}: {}", path.display(), trbox::sys::describe(&err));
    file.write_all_at(&head.bytes, 0).map_err(werr)?;
    let mut sinks = Vec::with_capacity(cpus as usize);
    for i in 0..cpus {
        sinks.push(if i == 0 {
            Sink::Out(&file, head.data_start)
        } else {
            Sink::Temp(temp_in(&place.dir).map_err(werr)?)
        });
    }
    let mut late = Late::default();
    let (sizes, note) = record(&mut c, peer, &mut data, &mut sinks, place, &mut late)?;
    // The layout, the table, each CPU after the first copied in.
    let layout = head.layout(&sizes);
    let mut out = &file;
    for (sink, &(off, size)) in sinks.iter_mut().zip(&layout) {
        if let Sink::Temp(t) = sink {
            use std::io::Seek as _;
            t.seek(std::io::SeekFrom::Start(0)).map_err(werr)?;
            out.seek(std::io::SeekFrom::Start(off)).map_err(werr)?;
            std::io::copy(&mut t.take(size), &mut out).map_err(werr)?;
        }
    }
    file.write_all_at(&head.table(&layout), head.table_pos as u64).map_err(werr)?;
    // The names of the tasks started during the run.
    if let Some((at, bytes)) = late.patch(&head.bytes) {
        file.write_all_at(bytes, at).map_err(werr)?;
    }
    let end = layout.last().map_or(head.data_start, |&(off, size)| off + size);
    file.set_len(end).map_err(werr)?;
    let pages = layout.iter().map(|&(_, size)| size / u64::from(page_size)).sum();
    Ok((path, pages, note))
}

/// The final saved_cmdlines a trbox sender sends before CLOSE
/// ([`msg::CMDLINES`]): the header's slot (offset, length) and what goes
/// there, in pieces.
#[derive(Default)]
struct Late {
    slot: Option<(u32, u32)>,
    bytes: Vec<u8>,
}

impl Late {
    fn take(&mut self, h: &msg::Header, body: &[u8]) {
        let Some((off, len, piece)) = msg::parse_cmdlines(h, body) else { return };
        let fits = self.bytes.len() + piece.len() <= (len as usize).min(MAX_HEADER);
        if *self.slot.get_or_insert((off, len)) == (off, len) && fits {
            self.bytes.extend_from_slice(piece);
        }
    }

    /// Where it goes in the file and what, once all of it came and the
    /// header's slot is where the sender said.
    fn patch(&self, header: &[u8]) -> Option<(u64, &[u8])> {
        let (off, len) = self.slot?;
        let r = msg::cmdlines_slot(header, off, len).filter(|r| r.len() == self.bytes.len())?;
        Some((r.start as u64, &self.bytes))
    }
}

/// Read what the control connection has after the header: Some(CLOSE)
/// once CLOSE came, Some(another command) once it ended otherwise (its
/// end, an error, a malformed message); the final saved_cmdlines go to
/// `late`, other messages are let go.
fn control_end(c: &mut TcpStream, pending: &mut Vec<u8>, buf: &mut [u8], late: &mut Late) -> Option<u32> {
    const GONE: u32 = u32::MAX;
    match c.read(buf) {
        Ok(0) => return Some(GONE),
        Ok(n) => pending.extend_from_slice(buf.get(..n).unwrap_or_default()),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
        Err(_) => return Some(GONE),
    }
    while let Some(h) = pending.first_chunk::<{ msg::HEADER_LEN }>().map(msg::Header::parse) {
        let Some(len) = h.body_len().map(|b| b + msg::HEADER_LEN) else { return Some(GONE) };
        if pending.len() < len {
            break;
        }
        if h.cmd == msg::CLOSE {
            return Some(msg::CLOSE);
        }
        late.take(&h, pending.get(msg::HEADER_LEN..len).unwrap_or_default());
        pending.drain(..len);
    }
    None
}

/// The recording: each CPU's pages into its sink until CLOSE (and the
/// data after it), the sender's end, the cap, the disk or a deadline.
/// The bytes each CPU sent, and a note on how it ended.
fn record(
    c: &mut TcpStream,
    peer: &str,
    data: &mut [Data],
    sinks: &mut [Sink<'_>],
    place: &Place,
    late: &mut Late,
) -> Result<(Vec<u64>, String), String> {
    let e = |err: std::io::Error| format!("socket: {}", trbox::sys::describe(&err));
    c.set_nonblocking(true).map_err(e)?;
    let now = Instant::now();
    let connect_by = now + Duration::from_secs(CONNECT_S);
    let mut idle_by = now + Duration::from_secs(IDLE_S);
    let mut drain_by: Option<Instant> = None;
    // A test hook: drop every connection this long after the first page
    // came, as a link that fails mid-run would (from the first page, not
    // the header: a loaded sender may take long to fill one).
    let drop_after = std::env::var("TRBOX_LISTEN_DROP_MS").ok().and_then(|m| m.parse().ok()).map(Duration::from_millis);
    let mut drop_at = None;
    let mut sizes = vec![0u64; data.len()];
    let mut total = 0u64;
    let mut checked = 0u64;
    let mut control = Vec::new();
    let mut control_open = true;
    let mut note = String::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let now = Instant::now();
        if data.iter().all(|d| matches!(d, Data::Done)) && drain_by.is_some() {
            break;
        }
        if now >= connect_by {
            for d in data.iter_mut().filter(|d| matches!(d, Data::Port(_))) {
                *d = Data::Done;
            }
        }
        if drain_by.is_some() {
            // The sender connected every CPU it meant to before CLOSE: a
            // port without a connection waiting gets none.
            for d in data.iter_mut() {
                if let Data::Port(l) = d {
                    *d = match l.accept() {
                        Ok((s, _)) if s.set_nonblocking(true).is_ok() => Data::Open(s),
                        _ => Data::Done,
                    };
                }
            }
        }
        if drain_by.is_some_and(|t| now >= t) {
            note = format!(" (data still open {DRAIN_S} s after the end: cut there)");
            break;
        }
        if now >= idle_by {
            note = format!(" (nothing for {IDLE_S} s: ended)");
            break;
        }
        if drop_at.is_some_and(|t| now >= t) {
            note = " (connections dropped: TRBOX_LISTEN_DROP_MS)".into();
            break;
        }
        let mut fds = Vec::with_capacity(data.len() + 1);
        let mut who = Vec::with_capacity(data.len() + 1);
        if control_open {
            fds.push(libc::pollfd { fd: c.as_raw_fd(), events: libc::POLLIN, revents: 0 });
            who.push(None);
        }
        for (i, d) in data.iter().enumerate() {
            let fd = match d {
                Data::Port(l) => l.as_raw_fd(),
                Data::Open(s) => s.as_raw_fd(),
                Data::Done => continue,
            };
            fds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
            who.push(Some(i));
        }
        let mut next = idle_by;
        for t in [Some(connect_by).filter(|_| data.iter().any(|d| matches!(d, Data::Port(_)))), drain_by, drop_at]
            .into_iter()
            .flatten()
        {
            next = next.min(t);
        }
        let ms = next.saturating_duration_since(now).as_millis().clamp(1, 1000) as i32;
        // SAFETY: a vector of pollfds we own, its length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n <= 0 {
            continue;
        }
        for (p, w) in fds.iter().zip(&who) {
            if p.revents == 0 {
                continue;
            }
            let Some(i) = *w else {
                // The control connection: CLOSE, or its end, starts the drain.
                idle_by = Instant::now() + Duration::from_secs(IDLE_S);
                if let Some(end) = control_end(c, &mut control, &mut buf, late) {
                    control_open = false;
                    drain_by = Some(Instant::now() + Duration::from_secs(DRAIN_S));
                    if end != msg::CLOSE {
                        note = " (the sender dropped the connection before its end: what arrived is kept)".into();
                    }
                }
                continue;
            };
            let Some(d) = data.get_mut(i) else { continue };
            match d {
                Data::Port(l) => {
                    if let Ok((s, _)) = l.accept() {
                        s.set_nonblocking(true).map_err(e)?;
                        *d = Data::Open(s);
                    }
                }
                Data::Open(s) => match s.read(&mut buf) {
                    Ok(0) => *d = Data::Done,
                    Ok(n) => {
                        idle_by = Instant::now() + Duration::from_secs(IDLE_S);
                        if drop_at.is_none() {
                            drop_at = drop_after.map(|d| Instant::now() + d);
                        }
                        let room = place.max_bytes.saturating_sub(total);
                        let take = (n as u64).min(room) as usize;
                        if let (Some(sink), Some(size)) = (sinks.get_mut(i), sizes.get_mut(i)) {
                            sink.put(*size, buf.get(..take).unwrap_or_default())
                                .map_err(|err| format!("writing: {}", trbox::sys::describe(&err)))?;
                            *size += take as u64;
                        }
                        total += take as u64;
                        if take < n {
                            eprintln!(
                                "tr-cat: {peer}: refused: the recording reached the cap of {} (-m); the file keeps what came before",
                                mib(place.max_bytes)
                            );
                            return Ok((sizes, format!(" (cut at the cap of {})", mib(place.max_bytes))));
                        }
                        if total - checked >= 16 << 20 {
                            checked = total;
                            let pending: u64 = sizes.iter().skip(1).sum();
                            if free_bytes(&place.dir).is_some_and(|f| f < MIN_FREE + pending) {
                                eprintln!(
                                    "tr-cat: {peer}: refused: less than {} free in {}: the file keeps what came before",
                                    mib(MIN_FREE),
                                    place.dir.display()
                                );
                                return Ok((sizes, " (cut: the disk is nearly full)".into()));
                            }
                        }
                    }
                    Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => *d = Data::Done,
                },
                Data::Done => {}
            }
        }
    }
    Ok((sizes, note))
}
