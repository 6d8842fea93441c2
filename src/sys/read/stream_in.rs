//! What came off a board, read on the host: a trbox stream (`tr-cat -o
//! -`) or a console log (`--console`) at a path or on standard input, as
//! the bytes of a trace.dat that the one trace.dat reader then reads. A
//! board build reads trace.dat files only and says where the rest is read.

use crate::sys::error::Error;
use std::path::Path;

#[cfg(not(feature = "host"))]
fn on_the_host(what: &str) -> Error {
    Error::HostOnly { what: what.to_string() }
}

/// A trbox stream (`tr-cat -o -`) at `path` (`-`: standard input), or a
/// console log with one, read whole and turned into the bytes of a
/// trace.dat; None for a file that is not a stream (a trace.dat, read in
/// place). A stream cut off reads up to the cut, with warnings.
#[cfg(feature = "host")]
pub(crate) fn load_stream(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    load_stream_with(path, &|_| {})
}

/// [`load_stream`], telling `read_so_far` the bytes read after each MiB
/// (a progress line: a stream of a long recording runs to gigabytes).
#[cfg(feature = "host")]
pub(crate) fn load_stream_with(path: &Path, read_so_far: &dyn Fn(u64)) -> Result<Option<Vec<u8>>, Error> {
    use crate::tracedat::stream;
    use std::io::Read as _;
    let io = |e: std::io::Error| Error::TraceDat { path: path.into(), what: crate::sys::describe(&e) };
    let bytes = if path.as_os_str() == "-" {
        read_all(&mut std::io::stdin().lock(), Vec::new(), read_so_far).map_err(io)?
    } else {
        let mut f = std::fs::File::open(path).map_err(io)?;
        let mut head = [0u8; 16];
        let n = f.read(&mut head).map_err(io)?;
        if head[..n].starts_with(&crate::tracedat::MAGIC) {
            return Ok(None);
        }
        read_all(&mut f, head[..n].to_vec(), read_so_far).map_err(io)?
    };
    if bytes.starts_with(&crate::tracedat::MAGIC) {
        // A trace.dat on standard input.
        return Ok(Some(bytes));
    }
    let bytes = if stream::is_stream(&bytes) { bytes } else { from_console(path, &bytes)? };
    let s = stream::parse(&bytes).map_err(|e| Error::TraceDat { path: path.into(), what: e.to_string() })?;
    for w in &s.problems {
        log::warn!("{}: {w}", path.display());
    }
    let td = stream::to_tracedat(&s).map_err(|e| Error::TraceDat {
        path: path.into(),
        what: format!("cannot rebuild a trace.dat from the stream: {e}"),
    })?;
    Ok(Some(td))
}

/// A board build reads trace.dat files only (in place): a stream, a
/// console log or standard input is refused with where to read it.
#[cfg(not(feature = "host"))]
pub(crate) fn load_stream(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    use std::io::Read as _;
    let mut head = [0u8; 16];
    let n = match std::fs::File::open(path) {
        _ if path.as_os_str() == "-" => 0,
        Ok(mut f) => f.read(&mut head).unwrap_or(0),
        // TraceDat's own open says why.
        Err(_) => return Ok(None),
    };
    if head[..n].starts_with(&crate::tracedat::MAGIC) {
        return Ok(None);
    }
    Err(on_the_host(&format!("reading {} (a stream or a console log?)", path.display())))
}

/// The rest of `r` after `v`, a MiB at a time.
#[cfg(feature = "host")]
fn read_all(r: &mut dyn std::io::Read, mut v: Vec<u8>, read_so_far: &dyn Fn(u64)) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(v),
            Ok(k) => {
                v.extend_from_slice(&buf[..k]);
                read_so_far(v.len() as u64);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The stream in a console log (`tr-cat -o - --console` captured).
#[cfg(feature = "host")]
fn from_console(path: &Path, log: &[u8]) -> Result<Vec<u8>, Error> {
    use crate::tracedat::console;
    let d = console::decode(log).map_err(|e| Error::NotARecording { path: path.into(), what: e.to_string() })?;
    for w in &d.problems {
        log::warn!("{}: {w}", path.display());
    }
    log::info!("{}: {} lines of the recording read, {} damaged", path.display(), d.lines, d.damaged());
    Ok(d.stream)
}
