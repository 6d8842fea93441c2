//! Decompression of v7 sections and buffer chunks (zstd and zlib, each
//! behind its cargo feature; both pure Rust, `no_std` + alloc).

use alloc::string::String;
use alloc::vec::Vec;

use super::{Error, ErrorKind};

/// The algorithm named in a v7 file's compression header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Compression {
    /// `"none"`: sections are stored as they are.
    None,
    /// `"zstd"`: trace-cmd's default where libzstd is built in.
    Zstd,
    /// `"zlib"`: deflate in zlib framing.
    Zlib,
    /// Some other name: the metadata that is not compressed can still be
    /// read, compressed sections cannot.
    Other(String),
}

impl Compression {
    /// The algorithm of a compression header's name (empty reads as none).
    pub(crate) fn from_name(name: &str) -> Compression {
        match name {
            "none" | "" => Compression::None,
            "zstd" => Compression::Zstd,
            "zlib" => Compression::Zlib,
            other => Compression::Other(other.into()),
        }
    }

    pub(crate) fn name(&self) -> &str {
        match self {
            Compression::None => "none",
            Compression::Zstd => "zstd",
            Compression::Zlib => "zlib",
            Compression::Other(s) => s,
        }
    }
}

/// Decompress one block (a compressed section body or one buffer chunk)
/// whose uncompressed size the file states, into `out` (cleared first; its
/// allocation is reused). `section`/`offset` only label errors.
pub(crate) fn decompress(
    algo: &Compression,
    input: &[u8],
    usize_: usize,
    out: &mut Vec<u8>,
    section: &'static str,
    offset: u64,
) -> Result<(), Error> {
    out.clear();
    let err = |k| Error::new(k, section, offset);
    match algo {
        Compression::None => {
            if input.len() != usize_ {
                return Err(err(ErrorKind::Invalid("uncompressed block size")));
            }
            out.extend_from_slice(input);
            Ok(())
        }
        #[cfg(feature = "zstd")]
        Compression::Zstd => {
            out.resize(usize_, 0);
            let mut dec = ruzstd::decoding::FrameDecoder::new();
            match dec.decode_all(input, out) {
                Ok(n) if n == usize_ => Ok(()),
                Ok(_) => {
                    out.clear();
                    Err(err(ErrorKind::Decompress("zstd: size differs from the header")))
                }
                Err(_) => {
                    out.clear();
                    Err(err(ErrorKind::Decompress("zstd")))
                }
            }
        }
        #[cfg(feature = "zlib")]
        Compression::Zlib => {
            out.resize(usize_, 0);
            let flags = miniz_oxide::inflate::core::inflate_flags::TINFL_FLAG_PARSE_ZLIB_HEADER
                | miniz_oxide::inflate::core::inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
            let mut st = alloc::boxed::Box::new(miniz_oxide::inflate::core::DecompressorOxide::new());
            let (status, _inp, n) = miniz_oxide::inflate::core::decompress(&mut st, input, out, 0, flags);
            if status == miniz_oxide::inflate::TINFLStatus::Done && n == usize_ {
                Ok(())
            } else {
                out.clear();
                Err(err(ErrorKind::Decompress("zlib")))
            }
        }
        other => Err(err(ErrorKind::UnsupportedCompression(other.name().into()))),
    }
}
