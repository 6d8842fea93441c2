//! Probe definitions as people type them to `--kprobe`, `--kretprobe`,
//! `--uprobe` (`[p|r[N]][:[GROUP/]EVENT]] PLACE [ARGS]`, the kernel's own
//! syntax with the prefix optional) → the line written to `dynamic_events`,
//! always with a group and an event name so the event can be enabled and
//! removed again by name.

use alloc::string::String;
use core::fmt;

/// The group of probes trbox names itself.
pub(crate) const GROUP: &str = "trbox";

/// Which probe: the two differ in what a place is and in the file under
/// tracefs that defines them (`dynamic_events` takes both; kprobe_events
/// and uprobe_events on older kernels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A kernel function or address (kernel/trace/trace_kprobe.c).
    Kprobe,
    /// An offset in an executable file (kernel/trace/trace_uprobe.c).
    Uprobe,
}

/// A parsed definition. `place` is the kprobe's `[MOD:]SYM[+OFF]` or
/// address, the uprobe's `PATH:SYMBOL[+OFF]`, without `%return` (that
/// became `ret`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Def<'a> {
    pub(crate) kind: Kind,
    pub(crate) ret: bool,
    /// A kretprobe's `maxactive` (the digits of `r10:`), or empty.
    pub(crate) maxactive: &'a str,
    /// The `GROUP/` given; `None`: [`GROUP`].
    pub(crate) group: Option<&'a str>,
    /// The `EVENT` name given; `None`: one is made from the place.
    pub(crate) event: Option<&'a str>,
    /// Where the probe goes (see above).
    pub(crate) place: &'a str,
    /// Fetch arguments, as given.
    pub(crate) args: &'a str,
}

/// Why a definition was refused before the kernel saw it; `Display`
/// says it as one line for a usage error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DefError {
    /// Nothing but white space.
    Empty,
    /// `-:NAME` removes an event; not a probe.
    Removal,
    /// `e:`, `f:`, `t:` and other prefixes.
    Prefix,
    /// `p:` given to a return-probe option.
    EntryForReturn,
    /// A uprobe place without `PATH:`.
    NoPath,
    /// Nothing after `PATH:`.
    NoSymbol,
}

impl fmt::Display for DefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DefError::Empty => "empty probe definition",
            DefError::Removal => "'-:' removes an event; trbox removes the probes it made by itself",
            DefError::Prefix => "only 'p' (entry) and 'r' (return) probes can be made here",
            DefError::EntryForReturn => "a return probe cannot start with 'p'",
            DefError::NoPath => "a uprobe place is PATH:SYMBOL[+OFFSET] (or PATH:0xOFFSET)",
            DefError::NoSymbol => "no symbol or offset after PATH:",
        })
    }
}

/// `p`, `r`, `r10`, each optionally followed by `:[GROUP/]EVENT`:
/// (is return, maxactive, the part after `:`).
fn prefix(tok: &str) -> Option<(bool, &str, Option<&str>)> {
    let (head, name) = match tok.split_once(':') {
        Some((h, n)) => (h, Some(n)),
        None => (tok, None),
    };
    let ret = match head.as_bytes().first() {
        Some(b'p') => false,
        Some(b'r') => true,
        _ => return None,
    };
    let digits = head.get(1..)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) || (!ret && !digits.is_empty()) {
        return None;
    }
    Some((ret, digits, name))
}

impl<'a> Def<'a> {
    /// Parse `text` given to the option for `kind`; `ret` for
    /// `--kretprobe` / `--uretprobe`.
    pub(crate) fn parse(kind: Kind, ret: bool, text: &'a str) -> Result<Self, DefError> {
        let t = text.trim();
        let (first, rest) = match t.split_once(char::is_whitespace) {
            Some((f, r)) => (f, r.trim_start()),
            None => (t, ""),
        };
        if first.is_empty() {
            return Err(DefError::Empty);
        }
        if first.starts_with('-') {
            return Err(DefError::Removal);
        }
        let mut d = Def { kind, ret, maxactive: "", group: None, event: None, place: first, args: rest };
        if let Some((r, maxactive, name)) = prefix(first).filter(|_| !rest.is_empty()) {
            if ret && !r {
                return Err(DefError::EntryForReturn);
            }
            d.ret = r;
            d.maxactive = maxactive;
            if let Some(name) = name {
                match name.split_once('/') {
                    Some((g, e)) => {
                        d.group = Some(g).filter(|g| !g.is_empty());
                        d.event = Some(e).filter(|e| !e.is_empty());
                    }
                    None => d.event = Some(name).filter(|e| !e.is_empty()),
                }
            }
            (d.place, d.args) = match rest.split_once(char::is_whitespace) {
                Some((p, a)) => (p, a.trim_start()),
                None => (rest, ""),
            };
        } else if matches!(first.split_once(':'), Some(("e" | "f" | "t", _))) {
            return Err(DefError::Prefix);
        }
        if let Some(p) = d.place.strip_suffix("%return") {
            d.place = p;
            d.ret = true;
        }
        if kind == Kind::Uprobe {
            let (path, sym) = d.uprobe_target().ok_or(DefError::NoPath)?;
            if path.is_empty() {
                return Err(DefError::NoPath);
            }
            if sym.is_empty() {
                return Err(DefError::NoSymbol);
            }
        }
        Ok(d)
    }

    /// A uprobe's (PATH, SYMBOL[+OFF]).
    pub(crate) fn uprobe_target(&self) -> Option<(&'a str, &'a str)> {
        self.place.rsplit_once(':')
    }

    /// The event name when none was given: the function (`do_sys_openat2`,
    /// `main_0x10` for `main+0x10`; the file's name for a bare offset),
    /// `_ret` added for a return probe; only characters the kernel takes.
    pub(crate) fn default_name(&self) -> String {
        let what = match self.kind {
            Kind::Kprobe => self.place.rsplit(':').next().unwrap_or(self.place),
            Kind::Uprobe => {
                let (path, sym) = self.uprobe_target().unwrap_or(("", self.place));
                if sym.starts_with(|c: char| c.is_ascii_digit()) {
                    let file = path.rsplit('/').next().unwrap_or(path);
                    return finish(alloc::format!("{file}_{sym}"), self.ret);
                }
                sym
            }
        };
        // `memcpy@@GLIBC_2.14`: the version is not part of the name.
        let what = what.split('@').next().unwrap_or(what);
        finish(what.into(), self.ret)
    }

    /// The line for `dynamic_events` (or `kprobe_events` / `uprobe_events`),
    /// with `place` as the kernel will get it (a uprobe's resolved
    /// `PATH:0xOFFSET`).
    pub(crate) fn line(&self, group: &str, event: &str, place: &str) -> String {
        let mut s = alloc::format!("{}{}:{group}/{event} {place}", if self.ret { 'r' } else { 'p' }, self.maxactive);
        if !self.args.is_empty() {
            s.push(' ');
            s.push_str(self.args);
        }
        s
    }
}

/// Keep `[A-Za-z0-9_]`, start with a letter or `_`, add `_ret` for a return
/// probe, stay well under the kernel's 64-byte name limit.
fn finish(raw: String, ret: bool) -> String {
    let mut s: String = raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s.truncate(50);
    if ret {
        s.push_str("_ret");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kprobes() {
        let d = Def::parse(Kind::Kprobe, false, "do_sys_openat2 path=+0($arg2):ustring").unwrap();
        assert_eq!(
            (d.ret, d.group, d.event, d.place, d.args),
            (false, None, None, "do_sys_openat2", "path=+0($arg2):ustring")
        );
        assert_eq!(d.default_name(), "do_sys_openat2");
        assert_eq!(d.line(GROUP, "open", d.place), "p:trbox/open do_sys_openat2 path=+0($arg2):ustring");
        let d = Def::parse(Kind::Kprobe, false, "p:my/open do_sys_openat2+0x4 dfd=%di").unwrap();
        assert_eq!((d.group, d.event, d.place, d.args), (Some("my"), Some("open"), "do_sys_openat2+0x4", "dfd=%di"));
        assert_eq!(d.default_name(), "do_sys_openat2_0x4");
        let d = Def::parse(Kind::Kprobe, false, "p:open vfs_read").unwrap();
        assert_eq!((d.group, d.event), (None, Some("open")));
        let d = Def::parse(Kind::Kprobe, true, "r10 do_sys_openat2 ret=$retval").unwrap();
        assert_eq!((d.ret, d.maxactive, d.event), (true, "10", None));
        assert_eq!(d.line("g", &d.default_name(), d.place), "r10:g/do_sys_openat2_ret do_sys_openat2 ret=$retval");
        let d = Def::parse(Kind::Kprobe, true, "vfs_read").unwrap();
        assert_eq!(d.line(GROUP, &d.default_name(), d.place), "r:trbox/vfs_read_ret vfs_read");
        let d = Def::parse(Kind::Kprobe, false, "vfs_read%return $retval").unwrap();
        assert!(d.ret);
        // A symbol that looks like a prefix, alone, is the place.
        assert_eq!(Def::parse(Kind::Kprobe, false, "r4k_wait").unwrap().place, "r4k_wait");
        assert_eq!(Def::parse(Kind::Kprobe, false, "p").unwrap().place, "p");
        assert_eq!(Def::parse(Kind::Kprobe, false, "ext4:ext4_sync_fs").unwrap().default_name(), "ext4_sync_fs");
    }

    #[test]
    fn uprobes() {
        let d = Def::parse(Kind::Uprobe, false, "/bin/bash:readline+4 x=%di").unwrap();
        assert_eq!(d.uprobe_target(), Some(("/bin/bash", "readline+4")));
        assert_eq!(d.default_name(), "readline_4");
        assert_eq!(d.line(GROUP, "rl", "/bin/bash:0x1234"), "p:trbox/rl /bin/bash:0x1234 x=%di");
        let d = Def::parse(Kind::Uprobe, false, "r:u/rl /bin/bash:readline%return ret=$retval").unwrap();
        assert_eq!((d.ret, d.group, d.event, d.place), (true, Some("u"), Some("rl"), "/bin/bash:readline"));
        let d = Def::parse(Kind::Uprobe, false, "/lib/libc.so.6:0x9be70").unwrap();
        assert_eq!(d.default_name(), "libc_so_6_0x9be70");
        assert_eq!(
            Def::parse(Kind::Uprobe, false, "/lib/libc.so.6:memcpy@@GLIBC_2.14").unwrap().default_name(),
            "memcpy"
        );
        assert_eq!(Def::parse(Kind::Uprobe, false, "bash").unwrap_err(), DefError::NoPath);
        assert_eq!(Def::parse(Kind::Uprobe, false, "/bin/bash:").unwrap_err(), DefError::NoSymbol);
        assert_eq!(Def::parse(Kind::Uprobe, false, ":main").unwrap_err(), DefError::NoPath);
    }

    #[test]
    fn refused() {
        assert_eq!(Def::parse(Kind::Kprobe, false, "  ").unwrap_err(), DefError::Empty);
        assert_eq!(Def::parse(Kind::Kprobe, false, "-:trbox/x").unwrap_err(), DefError::Removal);
        assert_eq!(Def::parse(Kind::Kprobe, false, "e:x sched.sched_switch").unwrap_err(), DefError::Prefix);
        assert_eq!(Def::parse(Kind::Kprobe, true, "p:x vfs_read").unwrap_err(), DefError::EntryForReturn);
        assert_eq!(finish("9x-y".into(), false), "_9x_y");
    }
}
