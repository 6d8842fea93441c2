//! `/proc/self/mountinfo` parsing and the choice of a tracefs root.
//!
//! Sans-IO: the caller hands in the file's text and gets back candidate
//! directories, best first. The caller still has to check that `events/` is
//! really there (a directory can be shadowed in ways mountinfo cannot show).

use alloc::string::String;
use alloc::vec::Vec;

/// One line of mountinfo, with the fields trbox needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    /// Path inside the filesystem that is mounted here (`/` unless a bind mount
    /// of a subdirectory).
    pub(crate) root: String,
    /// Where it is mounted, octal escapes (`\040`…) decoded.
    pub(crate) mount_point: String,
    pub(crate) fstype: String,
    pub(crate) source: String,
}

/// Why a mountinfo line was not understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// Fewer than the mandatory fields, or no ` - ` separator.
    MissingField,
}

/// Decode the kernel's `\ooo` octal escapes (space, tab, newline, backslash).
/// An escape that is not three octal digits is kept as written.
pub(crate) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            let d = &b[i + 1..i + 4];
            if d.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = (u32::from(d[0] - b'0') << 6) | (u32::from(d[1] - b'0') << 3) | u32::from(d[2] - b'0');
                if v <= 0xff {
                    out.push(v as u8);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse one mountinfo line.
pub(crate) fn parse_line(line: &str) -> Result<Mount, ParseError> {
    let mut it = line.split(' ');
    // mount id, parent id, major:minor
    for _ in 0..3 {
        it.next().filter(|s| !s.is_empty()).ok_or(ParseError::MissingField)?;
    }
    let root = it.next().ok_or(ParseError::MissingField)?;
    let mount_point = it.next().ok_or(ParseError::MissingField)?;
    let _options = it.next().ok_or(ParseError::MissingField)?;
    // Zero or more optional fields ("shared:1", "master:2"…) end with "-".
    loop {
        match it.next() {
            Some("-") => break,
            Some(_) => continue,
            None => return Err(ParseError::MissingField),
        }
    }
    let fstype = it.next().ok_or(ParseError::MissingField)?;
    let source = it.next().unwrap_or("");
    Ok(Mount {
        root: unescape(root),
        mount_point: unescape(mount_point),
        fstype: unescape(fstype),
        source: unescape(source),
    })
}

/// Every line that parses; malformed lines are skipped (a kernel that adds
/// fields must not make trbox blind).
pub(crate) fn parse(text: &str) -> Vec<Mount> {
    text.lines().filter_map(|l| parse_line(l).ok()).collect()
}

/// Which kind of mount a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Tracefs,
    /// debugfs with the tracing directory below it (kernels before 4.1, or
    /// systems that only mount debugfs).
    Debugfs,
}

/// A directory that should be a tracing root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) path: String,
    pub(crate) kind: Kind,
}

/// Is `a` equal to `b` or an ancestor directory of it?
fn covers(a: &str, b: &str) -> bool {
    if a == "/" {
        return true;
    }
    b == a || (b.starts_with(a) && b.as_bytes().get(a.len()) == Some(&b'/'))
}

fn join(dir: &str, sub: &str) -> String {
    let mut p = String::from(dir.trim_end_matches('/'));
    p.push('/');
    p.push_str(sub);
    p
}

/// Tracing roots from a mountinfo text, best first: the canonical tracefs at
/// /sys/kernel/tracing, other whole-tracefs mounts, then debugfs + `/tracing`.
/// Mounts hidden by a later mount on the same point (or on a parent) and bind
/// mounts of some other subdirectory are left out.
pub(crate) fn tracefs_candidates(text: &str) -> Vec<Candidate> {
    let mounts = parse(text);
    let mut out: Vec<(u8, Candidate)> = Vec::new();
    for (i, m) in mounts.iter().enumerate() {
        let hidden = mounts[i + 1..].iter().any(|later| covers(&later.mount_point, &m.mount_point));
        if hidden {
            continue;
        }
        let cand = match m.fstype.as_str() {
            "tracefs" if m.root == "/" => {
                let rank = if m.mount_point == "/sys/kernel/tracing" { 0 } else { 1 };
                (rank, Candidate { path: m.mount_point.clone(), kind: Kind::Tracefs })
            }
            "debugfs" if m.root == "/" => (2, Candidate { path: join(&m.mount_point, "tracing"), kind: Kind::Debugfs }),
            "debugfs" if m.root == "/tracing" => (2, Candidate { path: m.mount_point.clone(), kind: Kind::Debugfs }),
            _ => continue,
        };
        if !out.iter().any(|(_, c)| c.path == cand.1.path) {
            out.push(cand);
        }
    }
    // By rank, mount order breaking ties (three ranks: no sort needed).
    let mut by_rank = Vec::with_capacity(out.len());
    for r in 0..3 {
        by_rank.extend(out.iter().filter(|(k, _)| *k == r).map(|(_, c)| c.clone()));
    }
    by_rank
}

#[cfg(test)]
mod tests {
    use super::*;

    const TYPICAL: &str = "\
22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
24 22 0:7 / /sys/kernel/debug rw,nosuid,nodev,noexec,relatime shared:8 - debugfs debugfs rw
25 22 0:12 / /sys/kernel/tracing rw,nosuid,nodev,noexec,relatime shared:9 - tracefs tracefs rw
";

    #[test]
    fn typical_system_prefers_sys_kernel_tracing() {
        let c = tracefs_candidates(TYPICAL);
        assert_eq!(c[0], Candidate { path: "/sys/kernel/tracing".into(), kind: Kind::Tracefs });
        assert_eq!(c[1], Candidate { path: "/sys/kernel/debug/tracing".into(), kind: Kind::Debugfs });
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn nothing_mounted() {
        assert!(tracefs_candidates("22 28 0:21 / /sys rw - sysfs sysfs rw\n").is_empty());
        assert!(tracefs_candidates("").is_empty());
    }

    #[test]
    fn octal_escapes_in_mount_point() {
        let t = "30 22 0:12 / /mnt/my\\040trace\\011dir rw - tracefs tracefs rw\n";
        let c = tracefs_candidates(t);
        assert_eq!(c[0].path, "/mnt/my trace\tdir");
        assert_eq!(unescape("a\\134b\\012"), "a\\b\n");
        // Not an escape: kept literally.
        assert_eq!(unescape("a\\9b\\"), "a\\9b\\");
        assert_eq!(unescape("x\\04"), "x\\04");
    }

    #[test]
    fn debugfs_only() {
        let t = "24 22 0:7 / /sys/kernel/debug rw,relatime - debugfs none rw\n";
        assert_eq!(
            tracefs_candidates(t),
            [Candidate { path: "/sys/kernel/debug/tracing".into(), kind: Kind::Debugfs }]
        );
    }

    #[test]
    fn bind_mounts() {
        // A bind mount of tracefs' root elsewhere is a root; of an instance is not.
        let t = "\
25 22 0:12 / /mnt/t rw - tracefs tracefs rw
26 22 0:12 /instances/foo /mnt/foo rw - tracefs tracefs rw
27 22 0:7 /tracing /mnt/dbg rw - debugfs debugfs rw
";
        let c = tracefs_candidates(t);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].path, "/mnt/t");
        assert_eq!(c[1], Candidate { path: "/mnt/dbg".into(), kind: Kind::Debugfs });
    }

    #[test]
    fn several_tracefs_mounts_keep_order_and_rank() {
        let t = "\
25 22 0:12 / /tmp/a rw - tracefs tracefs rw
26 22 0:12 / /sys/kernel/tracing rw - tracefs tracefs rw
27 22 0:12 / /tmp/b rw - tracefs tracefs rw
";
        let p: Vec<_> = tracefs_candidates(t).into_iter().map(|c| c.path).collect();
        assert_eq!(p, ["/sys/kernel/tracing", "/tmp/a", "/tmp/b"]);
    }

    #[test]
    fn shadowed_mounts_are_skipped() {
        let t = "\
25 22 0:12 / /sys/kernel/tracing rw - tracefs tracefs rw
40 22 0:50 / /sys/kernel/tracing rw - tmpfs tmpfs rw
41 22 0:12 / /srv/t rw - tracefs tracefs rw
42 1 0:51 / /srv rw - tmpfs tmpfs rw
";
        assert!(tracefs_candidates(t).is_empty());
    }

    #[test]
    fn no_optional_fields_and_many_optional_fields() {
        let a = parse_line("25 22 0:12 / /t rw - tracefs tracefs rw").unwrap();
        assert_eq!(a.fstype, "tracefs");
        let b =
            parse_line("25 22 0:12 / /t rw shared:1 master:2 propagate_from:3 unbindable - tracefs nodev rw").unwrap();
        assert_eq!((b.fstype.as_str(), b.source.as_str()), ("tracefs", "nodev"));
    }

    #[test]
    fn malformed_lines_are_skipped_not_fatal() {
        assert_eq!(parse_line("garbage"), Err(ParseError::MissingField));
        assert_eq!(parse_line("1 2 3 / /x rw shared:1"), Err(ParseError::MissingField));
        assert_eq!(parse_line(""), Err(ParseError::MissingField));
        let t = "garbage\n\n25 22 0:12 / /t rw - tracefs tracefs rw\n1 2 3 4\n";
        assert_eq!(tracefs_candidates(t).len(), 1);
    }

    #[test]
    fn root_mount_point_covers_everything() {
        assert!(covers("/", "/sys"));
        assert!(covers("/sys", "/sys/kernel"));
        assert!(!covers("/sy", "/sys"));
    }
}
