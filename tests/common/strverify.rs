//! The kernel's string verifier and the first `%s` it empties: a defect of
//! the kernel's own `trace` text on x86_64 kernels 5.12 to 6.12 (Debian's
//! 6.1.176 has it) with `options/hash-ptr` 0, which the tests compare
//! with. trbox prints the string, as those kernels do with hash-ptr on
//! (their default), so the tests state the kernel's exception here.
//!
//! The kernel source (6.1.176's kernel/trace; the same since 5.12):
//! - trace_output.c `trace_event_printf()`, which every TRACE_EVENT's
//!   `trace_raw_output_*()` calls (include/trace/trace_events.h), passes
//!   `trace_event_format(iter, fmt)` to `trace_check_vprintf()`;
//! - trace.c `trace_event_format()`: with hash-ptr off it copies the fmt
//!   into `iter->fmt` (turning `%p` into `%px`) and returns `iter->fmt`;
//! - trace.c `trace_check_vprintf()` uses `iter->fmt` as its scratch
//!   buffer while reading the fmt from it: on its first pass `p ==
//!   iter->fmt`, so `strncpy(iter->fmt, p, i); iter->fmt[i] = '\0';`
//!   writes over the `%` of the first `%s` (the first `%` followed by
//!   digits, `.` and `*` then `s`), `strncpy(iter->fmt, p + i, j + 1)`
//!   then copies an empty format, and `trace_seq_printf(&iter->seq,
//!   iter->fmt, str)` prints nothing. The argument was taken with
//!   `va_arg()`, so what follows prints right. When the fmt begins with
//!   that `%s` (`i == 0`), `iter->fmt[j + 1] = '\0'` lands on the next
//!   character to read: nothing more of the body is printed, not even
//!   its `"\n"` (`TP_printk()` appends it), and the next record's line
//!   follows on the same line of `trace`;
//! - the verifier runs only where `test_can_verify()` finds that
//!   `vsnprintf()` moves the caller's `va_list` (passed by reference:
//!   x86_64); arm64, arm and i386 pass it by value, print "trace event
//!   string verifier disabled" at boot and print every string.
//!
//! 6.13 removed `trace_check_vprintf()` ("tracing: Check "%s" dereference
//! via the field and not the TP_printk format"), and so has Debian's
//! 6.12.118 (a 6.12.y backport); 5.15.215 and 6.1.176 still have it.
//! Events printed by other functions (ftrace's own entries, the syscall
//! tracer, kprobes, synthetic events, and DEFINE_EVENT_PRINT events
//! through `trace_output_raw()`) print the string; so the comparison takes
//! the line as trbox prints it too.

use std::collections::HashMap;
use std::path::Path;

use trbox::format::EventFormat;

/// The first conversion `trace_check_vprintf()` takes for a `%s` in a
/// print fmt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstString {
    /// The literal text the fmt prints right before it (after the
    /// previous conversion), as printed.
    pub before: String,
    /// It is the fmt's first character: the kernel prints no body at all.
    pub at_start: bool,
}

/// The format string of a print fmt (`"…", args`), as the format file
/// writes it (C escapes).
fn format_string(print_fmt: &str) -> Option<&str> {
    let s = print_fmt.trim_start().strip_prefix('"')?;
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(&s[..i]),
            _ => i += 1,
        }
    }
    None
}

/// `s` with its C escapes resolved (the ones format files show).
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        match (c, c == '\\') {
            (_, true) => match it.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(o) => out.push(o),
                None => {}
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// The verifier's first `%s` in `print_fmt`, scanned as
/// `trace_check_vprintf()` does: `%`, then digits, `.` or `*`, then `s`
/// (so `%-10s` and `%ps` are not one), a backslash skipping the next
/// character.
pub fn first_string(print_fmt: &str) -> Option<FirstString> {
    let f = format_string(print_fmt)?.as_bytes();
    // Where the literal text before a conversion starts: after the
    // previous conversion (`%`, flags, width, precision, length, the
    // letter; `%p` with its extension letters).
    let mut lit = 0;
    let mut i = 0;
    while i < f.len() {
        if f[i] == b'\\' {
            i += 2;
            continue;
        }
        if f[i] != b'%' {
            i += 1;
            continue;
        }
        let j = 1 + f[i + 1..].iter().take_while(|c| c.is_ascii_digit() || **c == b'.' || **c == b'*').count();
        if f.get(i + j) == Some(&b's') {
            let before = std::str::from_utf8(&f[lit..i]).ok()?;
            return Some(FirstString { before: unescape(before), at_start: i == 0 });
        }
        // Not a `%s`: the verifier goes on at the next character; the
        // literal text starts after this conversion.
        let mut k = i + 1;
        if f.get(k) == Some(&b'%') {
            i = k;
            continue;
        }
        k += f[k..].iter().take_while(|c| b"-+ #0123456789.*hlLzjt".contains(c)).count();
        if f.get(k) == Some(&b'p') {
            k += f[k + 1..].iter().take_while(|c| c.is_ascii_alphanumeric()).count();
        }
        lit = (k + 1).min(f.len());
        i += 1;
    }
    None
}

/// Whether the running kernel prints with the verifier's empty first
/// string: it has `trace_check_vprintf()` (/proc/kallsyms names it) and
/// runs it (x86_64). The callers set `options/hash-ptr` to 0 themselves.
pub fn live_kernel_empties_first_string() -> bool {
    cfg!(target_arch = "x86_64")
        && std::fs::read_to_string("/proc/kallsyms")
            .is_ok_and(|k| k.lines().any(|l| l.split_whitespace().nth(2) == Some("trace_check_vprintf")))
}

/// The same for a recorded kernel of `version` on `arch` (a fixture's
/// INFO): 5.12 to 6.11 on x86_64. 6.12 is left out: Debian's 6.12.118
/// has the verifier's removal, and which 6.12.y brought it is not
/// recorded here.
pub fn kernel_empties_first_string(version: Option<(u32, u32)>, arch: &str) -> bool {
    arch == "x86_64" && version.is_some_and(|v| ((5, 12)..(6, 12)).contains(&v))
}

/// The systems whose events the kernel prints with functions of their
/// own, not `trace_event_printf()`: ftrace's entries (trace_output.c),
/// the syscall tracer (`print_syscall_enter()`), kprobes and uprobes
/// (`print_kprobe_event()`, `print_uprobe_event()`) and synthetic events
/// (`print_synth_event()`), all through `trace_seq_printf()`.
const OWN_PRINTERS: &[&str] = &["ftrace", "syscalls", "kprobes", "uprobes", "synthetic"];

/// [`first_string`] of every event the verifier prints, by `system:name`
/// and by name.
pub fn events<'a>(formats: impl Iterator<Item = &'a EventFormat>) -> HashMap<String, FirstString> {
    let mut m = HashMap::new();
    for f in formats.filter(|f| !OWN_PRINTERS.contains(&f.system.as_str())) {
        if let Some(s) = first_string(&f.print_fmt) {
            m.insert(format!("{}:{}", f.system, f.name), s.clone());
            m.insert(f.name.clone(), s);
        }
    }
    m
}

/// Where in a kernel line the verifier's empty string can be: after
/// the literal text before it, or, when the fmt begins with it, at the
/// line's end after the event's name (`NAME: `).
pub fn cuts(kernel: &str, first: &FirstString) -> Vec<usize> {
    if first.at_start {
        return if kernel.ends_with(": ") { vec![kernel.len()] } else { Vec::new() };
    }
    (0..=kernel.len()).filter(|&n| kernel.is_char_boundary(n) && kernel[..n].ends_with(first.before.as_str())).collect()
}

/// Whether `ours` with a non-empty text put in at `cut` is `kernel`.
pub fn fits(kernel: &str, ours: &str, cut: usize) -> bool {
    ours.len() > kernel.len() && ours.starts_with(&kernel[..cut]) && ours.ends_with(&kernel[cut..])
}

/// Whether `kernel` is `ours` as the verifier prints it: the text of the
/// first `%s` left out ([`cuts`]).
pub fn as_kernel_prints(kernel: &str, ours: &str, first: &FirstString) -> bool {
    cuts(kernel, first).into_iter().any(|n| fits(kernel, ours, n))
}

/// The kernel's `trace` text with the lines the verifier ran together
/// parted again: after `NAME: ` of an event whose fmt begins with the
/// `%s`, the next record's line follows on the same line.
pub fn unglue(text: &str, first: &HashMap<String, FirstString>) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut rest = line;
        loop {
            let head = super::trace_text::split_line(rest).and_then(|(_, body)| {
                let name = body.split(": ").next()?;
                let at = rest.len() - body.len();
                let after = &body[name.len()..];
                (first.get(name).is_some_and(|f| f.at_start) && after.len() > 2 && after.starts_with(": "))
                    .then_some(at + name.len() + 2)
            });
            match head {
                Some(n) => {
                    out.push_str(&rest[..n]);
                    out.push('\n');
                    rest = &rest[n..];
                }
                None => break,
            }
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}

/// Whether a tracefs copy was read with hash-ptr off (its
/// `trace_options` says `nohash-ptr`).
pub fn hash_ptr_off_in(copy: &Path) -> bool {
    std::fs::read_to_string(copy.join("trace_options")).is_ok_and(|o| o.lines().any(|l| l.trim() == "nohash-ptr"))
}

/// [`events`] for a board fixture's tracefs copy (tests/fixtures/BOARD/
/// SCENARIO), when its kernel empties the first `%s` (the board's INFO:
/// `arch:`, `kernel:`) and it was read with hash-ptr off; else none.
pub fn fixture_events(copy: &Path) -> HashMap<String, FirstString> {
    let info = copy.parent().and_then(|b| std::fs::read_to_string(b.join("INFO")).ok()).unwrap_or_default();
    let field = |k: &str| info.lines().find_map(|l| l.strip_prefix(k)).unwrap_or("").trim().to_string();
    let kernel = field("kernel:");
    let mut v = kernel.split(['.', '-', ' ']).map(|n| n.parse::<u32>().ok());
    let version = match (v.next().flatten(), v.next().flatten()) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    if !kernel_empties_first_string(version, &field("arch:")) || !hash_ptr_off_in(copy) {
        return HashMap::new();
    }
    match trbox::sys::trace::open_parsed(copy) {
        Ok(t) => events(t.events.iter()),
        Err(_) => HashMap::new(),
    }
}

/// The name of the event of a `trace` line (`…: NAME: body`).
pub fn event_name(line: &str) -> Option<&str> {
    super::trace_text::split_line(line).and_then(|(_, body)| body.split(": ").next())
}
