//! `tr-cat --listen` as a server that faces the network (issue 27), each
//! finding replayed against a real listener on loopback by a client of
//! this file (trace-cmd's protocol 3, [`trbox::tracedat::msg`]): clients
//! that announce 4,096 CPUs and leave (threads and descriptors come back),
//! idle and half-done clients next to a valid sender (which is not held
//! up), a 600 MiB upload (peak RSS, the -m cap), a console-log
//! decompression bomb, --listen ADDR:PORT, files that never overwrite or
//! follow a symlink, and a soak of several senders at once among
//! misbehaving clients. No tracefs is needed; every loop is bounded in
//! count and time; nothing leaves 127.0.0.0/8.

use super::common;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use trbox::tracedat::msg;

/// A recording to send: a v6 header (up to its options, as `-N` sends
/// it), the page size, each CPU's pages, and how many events they hold.
struct Recording {
    header: Vec<u8>,
    page_size: u32,
    cpus: Vec<Vec<u8>>,
    events: u64,
}

/// The x86_64 fixture's `events` pages, as a sender would send them.
fn recording() -> Recording {
    let tmp = TempDir::new("listen-rec");
    recording_of("x86_64", &tmp.path().join("r.dat"))
}

/// A board fixture's `events` pages, as a sender would send them; `f`
/// the trace.dat they make.
fn recording_of(board: &str, f: &Path) -> Recording {
    let events = Path::new("tests/fixtures").join(board).join("events");
    let (n, cpus) = dat::build(&events, &[dat::Part { dir: &events, min_events: 1, lost_every: None }], f);
    let bytes = std::fs::read(f).unwrap();
    let at = bytes.windows(10).position(|w| w == b"flyrecord\0").expect("a v6 flyrecord section");
    Recording { header: bytes[..at].to_vec(), page_size: 4096, cpus, events: n }
}

/// A running `tr-cat --listen`, its stderr in a file.
struct Listener {
    run: Running,
    port: u16,
    dir: TempDir,
    log: PathBuf,
    _logdir: TempDir,
}

impl Listener {
    /// `tr-cat --listen 127.0.0.1:0 -o DIR EXTRA…`, once it says where it
    /// listens (the kernel picks the port: one picked here could be taken
    /// by a data port or a client before the listener binds it).
    fn start(extra: &[&str]) -> Listener {
        Listener::start_at("127.0.0.1", extra)
    }

    fn start_at(addr: &str, extra: &[&str]) -> Listener {
        Listener::start_env(addr, extra, &[])
    }

    fn start_env(addr: &str, extra: &[&str], env: &[(&str, &str)]) -> Listener {
        Listener::start_into(addr, None, extra, env)
    }

    /// With `sub`: `-o DIR/SUB`, a directory the listener makes.
    fn start_into(addr: &str, sub: Option<&str>, extra: &[&str], env: &[(&str, &str)]) -> Listener {
        let dir = TempDir::new("listen-out");
        let logdir = TempDir::new("listen-log");
        let log = logdir.path().join("stderr");
        let at = if addr.is_empty() { "0".to_string() } else { format!("{addr}:0") };
        let out = sub.map_or(dir.path().to_path_buf(), |s| dir.path().join(s));
        let mut args = vec!["tr-cat", "--listen", &at, "-o", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        let run = spawn(
            cmd(&trbox(), &args)
                .envs(env.iter().copied())
                .stdout(Stdio::null())
                .stderr(Stdio::from(std::fs::File::create(&log).unwrap())),
        );
        let mut l = Listener { run, port: 0, dir, log, _logdir: logdir };
        // (The whole line: stderr may take it in several writes.)
        assert!(l.wait_log(" each\n", Duration::from_secs(10)), "the listener did not start: {}", l.text());
        let text = l.text();
        let at = text.split("listening on ").nth(1).and_then(|r| r.split_whitespace().next()).unwrap_or_default();
        l.port = at.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("no port in: {text}"));
        l
    }

    fn pid(&self) -> u32 {
        self.run.id()
    }

    fn text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Wait until the listener's stderr holds `needle`.
    fn wait_log(&self, needle: &str, limit: Duration) -> bool {
        let t = Instant::now();
        while t.elapsed() < limit {
            if self.text().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// A line of /proc/PID/status, as a number (kB for sizes).
    fn status(&self, key: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        s.lines()
            .find_map(|l| l.strip_prefix(key)?.trim_start_matches(':').split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid())).map(|d| d.count()).unwrap_or(0)
    }

    /// Wait until the thread count is at most `n`; the last count seen.
    fn threads_down_to(&self, n: u64, limit: Duration) -> u64 {
        let t = Instant::now();
        loop {
            let now = self.status("Threads");
            if now <= n || t.elapsed() > limit {
                return now;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A connection to the listener, reads and writes bounded.
fn connect(port: u16) -> TcpStream {
    let c = TcpStream::connect(("127.0.0.1", port)).expect("connect to the listener");
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    c
}

/// The handshake up to TINIT's answer: the ports of the CPUs.
fn handshake(c: &mut TcpStream, cpus: u32, page_size: u32) -> std::io::Result<Vec<u16>> {
    let mut greeting = [0u8; 8];
    c.read_exact(&mut greeting)?;
    assert_eq!(&greeting, msg::GREETING);
    c.write_all(msg::V3_CPU)?;
    let mut v = [0u8; 3];
    c.read_exact(&mut v)?;
    c.write_all(msg::V3_MAGIC)?;
    let mut ok = [0u8; 2];
    c.read_exact(&mut ok)?;
    c.write_all(&msg::tinit(cpus, page_size))?;
    let mut h = [0u8; msg::HEADER_LEN];
    c.read_exact(&mut h)?;
    let h = msg::Header::parse(&h);
    let mut body = vec![0u8; h.body_len().unwrap_or(0)];
    c.read_exact(&mut body)?;
    msg::parse_rinit(&h, &body).ok_or_else(|| std::io::Error::other("no RINIT"))
}

fn send_header(c: &mut TcpStream, header: &[u8]) -> std::io::Result<()> {
    for piece in header.chunks(msg::MAX_DATA) {
        c.write_all(&msg::message(msg::SEND_DATA, &[], piece))?;
    }
    c.write_all(&msg::message(msg::FIN_DATA, &[], &[]))
}

/// A whole valid recording: each CPU's pages (`per_cpu` bytes from
/// `fill`, called with the CPU and a buffer to fill until it returns
/// false), data connections closed, then CLOSE. The peer address the
/// listener sees.
fn send_with(
    port: u16,
    r: &Recording,
    fill: &mut dyn FnMut(usize, &mut TcpStream) -> std::io::Result<()>,
) -> std::io::Result<String> {
    let mut c = connect(port);
    let peer = c.local_addr()?.to_string();
    let ports = handshake(&mut c, r.cpus.len() as u32, r.page_size)?;
    send_header(&mut c, &r.header)?;
    for (i, p) in ports.iter().enumerate() {
        let mut d = connect(*p);
        fill(i, &mut d)?;
    }
    c.write_all(&msg::message(msg::CLOSE, &[], &[]))?;
    Ok(peer)
}

fn send(port: u16, r: &Recording) -> std::io::Result<String> {
    send_with(port, r, &mut |i, d| d.write_all(&r.cpus[i]))
}

/// The file the listener wrote for `peer`, once it says it is done.
fn file_of(l: &Listener, peer: &str, limit: Duration) -> PathBuf {
    let needle = format!("pages from {peer}");
    assert!(l.wait_log(&needle, limit), "no file for {peer} in {limit:?}: {}", l.text());
    let line = l.text().lines().find(|x| x.contains(&needle)).unwrap().to_string();
    let path = line.trim_start_matches("tr-cat: ").split(": ").next().unwrap().to_string();
    PathBuf::from(path)
}

/// `tr-cat FILE` reads every event of the recording.
fn check_read_back(f: &Path, r: &Recording) {
    let o = run(&["tr-cat", f.to_str().unwrap()]);
    assert!(o.status.success(), "tr-cat {}: {}", f.display(), stderr(&o));
    let n = stdout(&o).lines().filter(|l| !l.contains("[LOST ")).count();
    assert_eq!(n as u64, r.events, "events read back from {}", f.display());
}

/// Finding 1: after 3 clients that announce 4,096 CPUs and leave, the
/// listener's threads and descriptors are back where they were.
#[test]
fn listen_cpus_announced_then_gone() {
    let l = Listener::start(&[]);
    let threads = l.status("Threads");
    let fds = l.fds();
    for _ in 0..3 {
        let mut c = connect(l.port);
        let _ = handshake(&mut c, 4096, 4096);
        drop(c);
    }
    let now = l.threads_down_to(threads, Duration::from_secs(10));
    assert!(now <= threads, "{now} threads, {threads} before the clients: {}", l.text());
    let t = Instant::now();
    while l.fds() > fds && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(l.fds() <= fds, "{} descriptors open, {fds} before", l.fds());
    // And it still serves.
    let r = recording();
    let peer = send(l.port, &r).expect("a sender after them");
    check_read_back(&file_of(&l, &peer, Duration::from_secs(10)), &r);
}

/// Finding 2: clients that stop part way (silent after connecting, after
/// TINIT, a page cut short on a data connection held open after CLOSE, a
/// byte every second) do not delay a valid sender; each is cut off in the
/// end: the handshake and header by a total time (3 s here, through
/// TRBOX_LISTEN_HEADER_S; each read of the drip is much quicker), the
/// data after CLOSE 10 s later.
#[test]
fn listen_idle_clients_do_not_hold_a_sender() {
    let l = Listener::start_env("127.0.0.1", &[], &[("TRBOX_LISTEN_HEADER_S", "3")]);
    let threads = l.status("Threads");
    let r = recording();
    let _silent = connect(l.port);
    let mut after_tinit = connect(l.port);
    handshake(&mut after_tinit, 2, 4096).unwrap();
    // A whole session whose data connection sends half a page and stays.
    let mut half = connect(l.port);
    let ports = handshake(&mut half, 1, 4096).unwrap();
    send_header(&mut half, &r.header).unwrap();
    let mut held = connect(ports[0]);
    held.write_all(&r.cpus[0][..2048]).unwrap();
    half.write_all(&msg::message(msg::CLOSE, &[], &[])).unwrap();
    // One byte of the handshake and TINIT every second: cut at 3 s.
    let drip_port = l.port;
    let drip = std::thread::spawn(move || {
        let mut c = connect(drip_port);
        let t = Instant::now();
        let mut want = msg::V3_CPU.to_vec();
        want.extend_from_slice(&msg::tinit(1, 4096));
        let mut got = [0u8; 64];
        // Whether the listener cut it before its last byte, and when.
        for b in want {
            std::thread::sleep(Duration::from_secs(1));
            // The listener's replies are read as they come; its close
            // (a read of 0) ends the drip.
            c.set_nonblocking(true).unwrap();
            let closed = loop {
                match c.read(&mut got) {
                    Ok(0) => break true,
                    Ok(_) => {}
                    Err(_) => break false,
                }
            };
            c.set_nonblocking(false).unwrap();
            if closed || c.write_all(&[b]).is_err() {
                return (true, t.elapsed());
            }
        }
        (false, t.elapsed())
    });
    // The silent, after-TINIT, half and dripping clients each hold a
    // session (a thread) before the valid sender comes.
    let t = Instant::now();
    while l.status("Threads") < threads + 4 {
        assert!(t.elapsed() < Duration::from_secs(30), "the listener took 4 clients in: {}", l.text());
        std::thread::sleep(Duration::from_millis(20));
    }
    let peer = send(l.port, &r).expect("the valid sender");
    let f = file_of(&l, &peer, Duration::from_secs(30));
    check_read_back(&f, &r);
    // Served while they held on: its file came before the first of them was
    // cut at the 3 s deadline (the stderr lines are in the listener's order).
    let log = l.text();
    let served = log.find(&format!("pages from {peer}")).unwrap();
    assert!(log.find("took more than 3 s").is_none_or(|cut| served < cut), "served after a cut: {log}");
    let (cut, dripped) = drip.join().unwrap();
    assert!(cut, "the drip was never cut ({dripped:?}): {}", l.text());
    assert!(l.wait_log("took more than 3 s", Duration::from_secs(30)), "{}", l.text());
    // The half page after CLOSE: the session ends 10 s after CLOSE.
    let peer = half.local_addr().unwrap().to_string();
    assert!(l.wait_log(&format!("pages from {peer}"), Duration::from_secs(15)), "{}", l.text());
    let mut one = [0u8; 1];
    held.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    match held.read(&mut one) {
        Ok(0) => {}
        Err(e) if !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
        other => panic!("the data connection is still open: {other:?}"),
    }
    drop((held, half, after_tinit));
}

/// Finding 3: a 600 MiB upload goes to the file as it comes (peak RSS
/// at most 128 MiB), and -m stops one at the cap.
#[test]
fn listen_big_upload_streams_and_stops_at_the_cap() {
    let r = recording();
    // 1 MiB of the fixture's pages, sent again and again.
    let mut block = Vec::new();
    while block.len() < 1 << 20 {
        block.extend_from_slice(&r.cpus[0]);
    }
    block.truncate(1 << 20);
    let per_cpu = 300usize;
    let big = Recording { header: r.header.clone(), page_size: r.page_size, cpus: vec![Vec::new(); 2], events: 0 };
    let upload = |port: u16| {
        send_with(port, &big, &mut |_, d| {
            for _ in 0..per_cpu {
                d.write_all(&block)?;
            }
            Ok(())
        })
    };
    let l = Listener::start(&[]);
    let t = Instant::now();
    let peer = upload(l.port).expect("the upload");
    let f = file_of(&l, &peer, Duration::from_secs(60));
    let hwm = l.status("VmHWM");
    let len = std::fs::metadata(&f).unwrap().len();
    println!("600 MiB in {:?}: peak RSS {} MiB, file {} MiB", t.elapsed(), hwm / 1024, len >> 20);
    std::fs::remove_file(&f).unwrap();
    assert!(len >= (2 * per_cpu as u64) << 20, "{len} bytes");
    assert!(hwm <= 128 * 1024, "the listener's peak RSS: {hwm} kB");
    drop(l);
    // With a cap of 64 MiB: the upload is cut there, the file keeps it.
    let l = Listener::start(&["-m", "65536"]);
    let sent = upload(l.port);
    assert!(sent.is_err(), "the whole upload went through a 64 MiB cap");
    assert!(l.wait_log("64 MiB", Duration::from_secs(20)), "no refusal: {}", l.text());
    let t = Instant::now();
    let f = loop {
        let f = std::fs::read_dir(l.dir.path()).unwrap().flatten().map(|e| e.path()).next();
        if let Some(f) = f.filter(|_| l.text().contains("pages from")) {
            break f;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "no file: {}", l.text());
        std::thread::sleep(Duration::from_millis(100));
    };
    let len = std::fs::metadata(&f).unwrap().len();
    println!("capped: {} MiB kept; {}", len >> 20, l.text().trim());
    assert!(len <= (64 << 20) + (1 << 20), "{len} bytes kept past a 64 MiB cap");
    assert!(len >= 32 << 20, "{len} bytes kept: the cap cut too early");
    assert!(l.status("VmHWM") <= 128 * 1024);
}

/// Finding 4: a console log of 40 blocks that each inflate to just under
/// 32 MiB of zeros is refused within 256 MiB.
#[test]
fn console_decompression_bomb() {
    let tmp = TempDir::new("console-bomb");
    let log = tmp.path().join("bomb.log");
    let z = miniz_oxide::deflate::compress_to_vec(&vec![0u8; (1 << 25) - 1], 10);
    let mut text = String::from("trbox-console-begin 1\n");
    let mut seq = 0;
    for _ in 0..40 {
        let n = z.chunks(57).len();
        for (i, part) in z.chunks(57).enumerate() {
            seq += 1;
            let flag = match (i == 0, i + 1 == n) {
                (true, true) => "=",
                (true, false) => "b",
                (false, false) => "+",
                (false, true) => ".",
            };
            let body = format!("{seq}:{flag}:{}", base64(part));
            text += &format!("trbox:{body}:{:08x}\n", trbox::tracedat::console::crc32(body.as_bytes()));
        }
    }
    text += &format!("trbox-console-end {seq}\n");
    std::fs::write(&log, &text).unwrap();
    let out = tmp.path().join("out.dat");
    let err = tmp.path().join("stderr");
    let t = Instant::now();
    // Reaped by wait_peak (wait4, for the child's own peak RSS).
    #[allow(clippy::zombie_processes)]
    let child = cmd(&trbox(), &["tr-cat", "--from-console", log.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&err).unwrap()))
        .spawn()
        .unwrap();
    let (status, maxrss_kb) = wait_peak(child.id());
    let err = std::fs::read_to_string(&err).unwrap();
    println!("{} bytes of log: exit {status}, peak RSS {} MiB, {:?}: {err}", text.len(), maxrss_kb >> 10, t.elapsed());
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status, 2, "{err}");
    assert!(maxrss_kb <= 256 * 1024, "peak RSS {maxrss_kb} kB");
    assert!(!out.exists());
}

/// The exit status and peak RSS (kB) of child `pid`, reaped here.
fn wait_peak(pid: u32) -> (i32, u64) {
    let mut st = 0;
    // SAFETY: rusage is plain data; wait4 on our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid as i32, &mut st, 0, &mut ru) };
    assert_eq!(r, pid as i32);
    (libc::WEXITSTATUS(st), ru.ru_maxrss as u64)
}

fn base64(data: &[u8]) -> String {
    const B: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in data.chunks(3) {
        let n =
            (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            s.push(if i <= c.len() { B[(n >> (18 - 6 * i)) as usize & 63] as char } else { '=' });
        }
    }
    s
}

/// Finding 5: --listen ADDR:PORT binds there only (127.0.0.2 is not
/// answered when 127.0.0.1 is asked for), and the data ports too.
#[test]
fn listen_on_one_address() {
    let l = Listener::start_at("127.0.0.1", &[]);
    assert!(l.text().contains(&format!("127.0.0.1:{}", l.port)), "{}", l.text());
    assert!(TcpStream::connect(("127.0.0.2", l.port)).is_err(), "answered on 127.0.0.2");
    let mut c = connect(l.port);
    let ports = handshake(&mut c, 2, 4096).unwrap();
    for p in ports {
        assert!(TcpStream::connect(("127.0.0.2", p)).is_err(), "data port {p} answered on 127.0.0.2");
    }
    drop(c);
    let r = recording();
    let peer = send(l.port, &r).unwrap();
    check_read_back(&file_of(&l, &peer, Duration::from_secs(10)), &r);
    let o = run(&["tr-cat", "--listen", "127.0.0.1:notaport"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// Files are created, never written over: not through a symlink planted
/// under the name the listener would take, nor over an earlier file of
/// the same HOST:PORT.
#[test]
fn listen_files_never_overwrite() {
    let l = Listener::start(&[]);
    let r = recording();
    let victim_dir = TempDir::new("listen-victim");
    let victim = victim_dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    // Connect first, then plant the names the file would take.
    let mut c = connect(l.port);
    let peer = c.local_addr().unwrap().to_string();
    std::os::unix::fs::symlink(&victim, l.dir.path().join(format!("trace.{peer}.dat"))).unwrap();
    std::fs::write(l.dir.path().join(format!("trace.{peer}.1.dat")), "earlier\n").unwrap();
    let ports = handshake(&mut c, r.cpus.len() as u32, r.page_size).unwrap();
    send_header(&mut c, &r.header).unwrap();
    for (i, p) in ports.iter().enumerate() {
        connect(*p).write_all(&r.cpus[i]).unwrap();
    }
    c.write_all(&msg::message(msg::CLOSE, &[], &[])).unwrap();
    let f = file_of(&l, &peer, Duration::from_secs(10));
    assert!(std::fs::read(&victim).unwrap() == b"precious\n", "written through the symlink");
    assert_eq!(std::fs::read_to_string(l.dir.path().join(format!("trace.{peer}.1.dat"))).unwrap(), "earlier\n");
    assert!(!std::fs::symlink_metadata(&f).unwrap().file_type().is_symlink(), "{}", f.display());
    check_read_back(&f, &r);
}

/// Soak: four valid senders at once, twice, next to clients that
/// announce 4,096 CPUs and leave, stay silent, drip bytes, send garbage
/// or a header that never ends; every recording arrives whole within a
/// few seconds, and the threads come back. Bounded: ~20 s.
#[test]
fn listen_soak_senders_among_misbehaving_clients() {
    let l = Listener::start(&[]);
    let threads = l.status("Threads");
    let r = std::sync::Arc::new(recording());
    let port = l.port;
    let t = Instant::now();
    let mut bad = Vec::new();
    for k in 0..6u32 {
        bad.push(std::thread::spawn(move || {
            let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) else { return };
            let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
            let _ = c.set_write_timeout(Some(Duration::from_secs(10)));
            match k % 6 {
                0 => {
                    let _ = handshake(&mut c, 4096, 4096);
                }
                // not synchronisation: a client that connects and stays silent.
                1 => std::thread::sleep(Duration::from_secs(8)),
                2 => {
                    for _ in 0..8 {
                        std::thread::sleep(Duration::from_secs(1));
                        if c.write_all(b"-").is_err() {
                            break;
                        }
                    }
                }
                3 => {
                    let _ = c.write_all(&[0xffu8; 4096]);
                }
                4 => {
                    if handshake(&mut c, 1, 4096).is_ok() {
                        for _ in 0..16 {
                            if c.write_all(&msg::message(msg::SEND_DATA, &[], &[7u8; 4000])).is_err() {
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(500));
                        }
                    }
                }
                _ => {
                    // A header, then a data connection that never sends.
                    if let Ok(p) = handshake(&mut c, 1, 4096) {
                        let _ = send_header(&mut c, &[0u8; 100]);
                        let _d = TcpStream::connect(("127.0.0.1", p[0]));
                        // not synchronisation: a data connection held open, silent.
                        std::thread::sleep(Duration::from_secs(8));
                    }
                }
            }
        }));
    }
    for round in 0..2 {
        let senders: Vec<_> = (0..4)
            .map(|_| {
                let r = r.clone();
                std::thread::spawn(move || send(port, &r))
            })
            .collect();
        for s in senders {
            let peer = s.join().unwrap().unwrap_or_else(|e| panic!("round {round}: a sender failed: {e}"));
            check_read_back(&file_of(&l, &peer, Duration::from_secs(5)), &r);
        }
    }
    for b in bad {
        let _ = b.join();
    }
    let now = l.threads_down_to(threads, Duration::from_secs(20));
    println!("soak: {:?}; {now} threads at the end, {threads} at the start\n{}", t.elapsed(), l.text());
    assert!(now <= threads, "{now} threads left, {threads} at the start: {}", l.text());
    assert!(t.elapsed() < Duration::from_secs(45));
    let refusals = l.text().lines().filter(|x| x.contains("refused")).count();
    assert!(refusals >= 2, "each misbehaving client is logged: {}", l.text());
}

/// Finding 2, the backlog: 200 idle connections keep no sender out for
/// long (a new sender takes the place of the one longest in its
/// handshake), and the threads stay at one per place.
#[test]
fn listen_a_flood_of_idle_connections() {
    let l = Listener::start(&[]);
    let t = Instant::now();
    let idle: Vec<TcpStream> = (0..200).filter_map(|_| TcpStream::connect(("127.0.0.1", l.port)).ok()).collect();
    println!("{} idle connections in {:?}", idle.len(), t.elapsed());
    // Each one past the 16 places took the place of the longest in its
    // handshake (which says it made room) or was refused: one line each
    // once the listener has taken them all in.
    let extra = idle.len().saturating_sub(16);
    let taken = |log: &str| log.matches("made room").count() + log.matches("recordings already").count();
    let t = Instant::now();
    while taken(&l.text()) < extra {
        assert!(t.elapsed() < Duration::from_secs(60), "{} of {extra} taken in: {}", taken(&l.text()), l.text());
        std::thread::sleep(Duration::from_millis(50));
    }
    let threads = l.status("Threads");
    assert!(threads <= 17, "{threads} threads");
    let r = recording();
    let t = Instant::now();
    let peer = send(l.port, &r).expect("the valid sender");
    let f = file_of(&l, &peer, Duration::from_secs(30));
    println!("the sender after 200 idle connections: {:?}, {threads} threads", t.elapsed());
    // Served at once, not once the idle ones reach the header deadline
    // (30 s): none of them was cut before its file came.
    let log = l.text();
    let served = log.find(&format!("pages from {peer}")).unwrap();
    assert!(log.find("took more than").is_none_or(|cut| served < cut), "served after a cut: {log}");
    check_read_back(&f, &r);
    drop(idle);
}

/// `--listen -o DIR.parquet`: two senders into one fleet directory, each
/// its `source=HOST_PORT/` (converted once its recording ended, the
/// received file gone), which DuckDB reads as one table per event with
/// two `source` values, each with its recording's rows.
#[test]
fn listen_into_a_parquet_fleet() {
    let Some(()) = super::tr_cat_parquet::duckdb() else { return };
    let l = Listener::start_into("127.0.0.1", Some("fleet.parquet"), &["--compression", "zstd"], &[]);
    let tmp = TempDir::new("listen-parquet");
    let mut want = Vec::new();
    for board in ["x86_64", "aarch64"] {
        let f = tmp.path().join(format!("{board}.dat"));
        let r = recording_of(board, &f);
        let peer = send(l.port, &r).expect("a sender");
        let dir = file_of(&l, &peer, Duration::from_secs(60));
        let name = format!("source={}", peer.replace(':', "_"));
        assert_eq!(dir.file_name().unwrap().to_str(), Some(name.as_str()), "{}", l.text());
        let j = run(&["tr-cat", f.to_str().unwrap(), "--json", "-e", "sched:sched_switch"]);
        want.push(format!("{} {}", &name["source=".len()..], stdout(&j).lines().count()));
    }
    let fleet = l.dir.path().join("fleet.parquet");
    let left: Vec<String> =
        std::fs::read_dir(&fleet).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(left.iter().all(|n| n.starts_with("source=")), "a received file left in the fleet: {left:?}");
    want.sort();
    let got = super::tr_cat_parquet::check(&[Path::new("fleet"), &fleet, Path::new("sched_switch")]);
    assert_eq!(got, want.join("\n") + "\n", "sched_switch rows per source");
    let codecs = super::tr_cat_parquet::check(&[Path::new("codecs"), &fleet.join(&left[0])]);
    assert_eq!(codecs.trim(), "ZSTD");
}
