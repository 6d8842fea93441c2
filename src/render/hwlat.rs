//! The hwlat tracer's line, as kernel/trace/trace_output.c's
//! `trace_hwlat_print` writes it (not its print fmt).

use core::fmt::{self, Write};

use crate::abi::Endian;
use crate::format::EventFormat;

/// `trace_hwlat_print` of kernel/trace/trace_output.c. ` count:` came with
/// the entry's `count` field (5.14), so it is printed where the format has
/// the field; ` nmi-total:` only where the kernel measures it (not with
/// CONFIG_GENERIC_SCHED_CLOCK, as on arm and arm64, where it stays 0).
pub(super) fn write_hwlat<W: Write>(w: &mut W, ev: &EventFormat, rec: &[u8], e: Endian) -> fmt::Result {
    // The format lists `struct timespec64 timestamp` as its two members,
    // and on 32-bit arm (where a s64 is 8-aligned) leaves out the 4 bytes
    // of padding after `long tv_nsec`: the fields after it are 4 bytes
    // further on than it says. The record, longer than the format, shows
    // it (i386 aligns a s64 to 4 and has no padding).
    let nsec = ev.field("tv_nsec");
    let end = ev.fields.iter().map(|f| f.offset as usize + f.size as usize).max().unwrap_or(0);
    let pad = match nsec {
        Some(f) if f.size == 4 && rec.len() >= end + 4 => 4,
        _ => 0,
    };
    let v = |n: &str| {
        let f = ev.field(n)?;
        let mut l = f.loc();
        if nsec.is_some_and(|t| f.offset > t.offset) {
            l.offset += pad;
        }
        l.int(rec, e)
    };
    let v = |n: &str| v(n).unwrap_or(0);
    write!(
        w,
        "#{:<5} inner/outer(us): {:>4}/{:<5} ts:{}.{:09}",
        v("seqnum") as u32,
        v("duration") as u64,
        v("outer_duration") as u64,
        v("tv_sec"),
        v("tv_nsec")
    )?;
    if ev.field("count").is_some() {
        write!(w, " count:{}", v("count") as i32)?;
    }
    let (nmi, total) = (v("nmi_count") as u32, v("nmi_total_ts") as u64);
    if nmi != 0 {
        if total != 0 {
            write!(w, " nmi-total:{total}")?;
        }
        write!(w, " nmi-count:{nmi}")?;
    }
    w.write_char('\n')
}

#[cfg(test)]
mod tests {
    use crate::abi::{Abi, Endian};
    use crate::format::{EventFormat, EventTable};
    use crate::render::{Cmdlines, Renderer};
    use alloc::string::String;

    const HWLAT: &str = concat!(
        "name: hwlat\nID: 15\nformat:\n",
        crate::format::common_fields!(),
        "\tfield:u64 duration;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:u64 outer_duration;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:u64 nmi_total_ts;\toffset:24;\tsize:8;\tsigned:0;\n\
\tfield:s64 tv_sec;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:long tv_nsec;\toffset:40;\tsize:8;\tsigned:1;\n\
\tfield:unsigned int nmi_count;\toffset:48;\tsize:4;\tsigned:0;\n\
\tfield:unsigned int seqnum;\toffset:52;\tsize:4;\tsigned:0;\n\
\tfield:unsigned int count;\toffset:56;\tsize:4;\tsigned:0;\n\n\
print fmt: \"cnt:%u\", REC->seqnum\n"
    );

    /// One hwlat record's body, as trace_hwlat_print writes it.
    fn body(format: &str, nmi: (u32, u64)) -> String {
        let mut t = EventTable::new();
        t.insert(EventFormat::parse(format, "ftrace", 8).unwrap());
        let mut rec = [0u8; 64];
        let mut put = |off: usize, v: &[u8]| rec[off..off + v.len()].copy_from_slice(v);
        put(0, &15u16.to_le_bytes());
        put(8, &12u64.to_le_bytes());
        put(16, &3u64.to_le_bytes());
        put(24, &nmi.1.to_le_bytes());
        put(32, &100u64.to_le_bytes());
        put(40, &5u64.to_le_bytes());
        put(48, &nmi.0.to_le_bytes());
        put(52, &7u32.to_le_bytes());
        put(56, &2u32.to_le_bytes());
        let mut r = Renderer::new(&t, Cmdlines::default(), Abi::new(Endian::Little, 8), true);
        let mut out = String::new();
        r.record(&mut out, 0, 1_000_000, &rec).unwrap();
        String::from(out.split_once(": ").unwrap().1)
    }

    #[test]
    fn hwlat_lines_are_the_kernels() {
        assert_eq!(body(HWLAT, (0, 0)), "#7     inner/outer(us):   12/3     ts:100.000000005 count:2\n");
        // NMIs: their time only where the kernel measured it (not 0).
        assert!(body(HWLAT, (1, 40)).ends_with(" count:2 nmi-total:40 nmi-count:1\n"));
        assert!(body(HWLAT, (2, 0)).ends_with(" count:2 nmi-count:2\n"));
        // Before 5.14 the entry has no count, and the line none either.
        let old = HWLAT.replace("\tfield:unsigned int count;\toffset:56;\tsize:4;\tsigned:0;\n", "");
        assert!(body(&old, (0, 0)).ends_with("ts:100.000000005\n"));
    }
}
