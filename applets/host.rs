//! The host's side of getting a trace off the board: converting a stream
//! or a console log to a trace.dat, writing Perfetto's format (listening
//! for `tr-cat -N`: listen.rs). The module is behind the cargo feature
//! `host` (on in the default build, off in the board build, which only
//! writes streams and sends).

use crate::cli::Error;
use std::path::Path;
use trbox::sys::read;

/// `tr-cat STREAM -o trace.dat`: the stream (`-`: standard input) as a
/// version 6 trace.dat.
pub fn convert(input: &str, output: &str) -> Result<(), Error> {
    use std::io::Write as _;
    let inp = Path::new(input);
    let Some(bytes) = trbox::sys::read::load_stream(inp)? else {
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

/// `tr-cat FILE -o OUT.pftrace`: Perfetto's protobuf trace format (the
/// library's Perfetto sink), written to `output`.
pub fn perfetto(input: read::Input<'_>, o: &read::RawOpts, output: &str) -> Result<(), Error> {
    use std::io::Write as _;
    let (bytes, events) = read::perfetto(input, o)?;
    let mut f = trbox::sys::record::create_output(Path::new(output))?;
    f.write_all(&bytes).map_err(|e| Error::runtime(format!("{output}: {}", trbox::sys::describe(&e))))?;
    eprintln!("tr-cat: {output}: {events} events, {} bytes (Perfetto trace)", bytes.len());
    Ok(())
}
