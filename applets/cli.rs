//! What every applet shares: busybox-style dispatch, the common options
//! (`-T`, `-B`, `-v`), the option parser, and errors that end in the exit codes
//! (0 ok, 1 usage, 2 runtime).

use crate::APPLETS;
use std::fmt;
use std::time::Duration;

pub const EXIT_OK: u8 = 0;
pub const EXIT_USAGE: u8 = 1;
pub const EXIT_RUNTIME: u8 = 2;
pub const EXIT_NOT_FOUND: u8 = 127;

/// A failure to report on one line (plus an optional hint line) and the exit
/// code that goes with it.
#[derive(Debug)]
pub struct Error {
    pub code: u8,
    pub msg: String,
    pub hint: Option<String>,
}

impl Error {
    pub fn usage(msg: impl Into<String>) -> Self {
        Error { code: EXIT_USAGE, msg: msg.into(), hint: None }
    }
    pub fn runtime(msg: impl Into<String>) -> Self {
        Error { code: EXIT_RUNTIME, msg: msg.into(), hint: None }
    }
    pub fn hint(mut self, h: impl Into<String>) -> Self {
        self.hint = Some(h.into());
        self
    }
}

impl From<trbox::sys::Error> for Error {
    fn from(e: trbox::sys::Error) -> Self {
        let hint = e.hint().map(String::from);
        let code = if e.is_usage() { EXIT_USAGE } else { EXIT_RUNTIME };
        Error { code, msg: e.to_string(), hint }
    }
}

/// Options every applet takes. Parsed before the applet's own options so each
/// applet does not have to repeat them.
#[derive(Debug, Default, Clone)]
pub struct Common {
    /// `-T DIR` / `--tracefs DIR`, else env TRBOX_TRACEFS.
    pub tracefs: Option<String>,
    /// `-B NAME` / `--instance NAME`.
    pub instance: Option<String>,
    /// Number of `-v`.
    pub verbose: u8,
    /// `--kernel VER`: the traced kernel's release, in place of the one a
    /// reader finds (uname, a trace.dat's UNAME option, or inferred).
    pub kernel: Option<String>,
}

pub const COMMON_HELP: &str = "\
Common options:
  -T, --tracefs DIR  tracefs root (default: from /proc/self/mountinfo;
                     env TRBOX_TRACEFS); may be a copy of a tracefs tree
  -B, --instance NAME
                     work in instances/NAME (a trace.dat: read only
                     its buffer NAME, '' for the top one)
  -v                 more log (repeat for more; RUST_LOG works too)
  --kernel VER       read the trace as of kernel release VER (e.g. 4.19):
                     the text rules of that version, whatever uname, the
                     file's UNAME option or its formats say (-v tells)
";

/// Split the common options off `args` (the applet's arguments, without its
/// name). Everything after `--` is left alone: it belongs to a command.
pub fn split_common(args: &[String]) -> Result<(Common, Vec<String>), Error> {
    let mut c = Common::default();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            rest.extend_from_slice(&args[i..]);
            break;
        }
        let mut value_of = |long: &str, short: &str| -> Result<Option<String>, Error> {
            if a == long || a == short {
                i += 1;
                return args.get(i).cloned().map(Some).ok_or_else(|| Error::usage(format!("option {a} needs a value")));
            }
            if let Some(v) = a.strip_prefix(long).and_then(|v| v.strip_prefix('=')) {
                return Ok(Some(v.to_string()));
            }
            if let Some(v) = a.strip_prefix(short).filter(|v| !v.is_empty() && !a.starts_with("--")) {
                return Ok(Some(v.to_string()));
            }
            Ok(None)
        };
        if let Some(v) = value_of("--tracefs", "-T")? {
            c.tracefs = Some(v);
        } else if let Some(v) = value_of("--instance", "-B")? {
            // -B '' is the top-level buffer (a trace.dat's unnamed one).
            if let Some(why) = Some(v.as_str()).filter(|v| !v.is_empty()).and_then(trbox::sys::instance_name_problem) {
                return Err(Error::usage(format!("-B '{}': not a plain instance name: {why}", v.escape_default()))
                    .hint("an instance is a directory directly in <tracefs>/instances, e.g. -B mytrace"));
            }
            c.instance = Some(v);
        } else if let Some(v) = value_of("--kernel", "--kernel")? {
            if trbox::ctl::kernel_version(&v).is_none() {
                return Err(Error::usage(format!("--kernel '{v}': not a kernel release"))
                    .hint("give MAJOR.MINOR[…], e.g. --kernel 4.19 or --kernel 6.1.0-40-arm64"));
            }
            c.kernel = Some(v);
        } else if a.len() > 1 && a.starts_with('-') && !a.starts_with("--") && a[1..].bytes().all(|b| b == b'v') {
            c.verbose = c.verbose.saturating_add((a.len() - 1) as u8);
        } else {
            rest.push(a.clone());
        }
        i += 1;
    }
    if c.tracefs.is_none() {
        c.tracefs = std::env::var("TRBOX_TRACEFS").ok().filter(|s| !s.is_empty());
    }
    Ok((c, rest))
}

/// One option of an applet: its letter (`' '`: none), its long name, and
/// whether it takes a value.
pub type Opt = (char, &'static str, bool);

/// An applet's options, read one at a time the way getopt_long does
/// (`-b 8`, `-b8`, `--buffer 8`, `--buffer=8`, `-ck`; options and operands
/// in any order). A hand loop instead of argh: the derive cost about 12 KiB
/// on aarch64 for six applets, this about 1.
pub struct Parser<'a> {
    name: &'static str,
    help: &'static [&'static str],
    opts: &'static [Opt],
    args: std::slice::Iter<'a, String>,
    /// Letters left of a group (`-ck`: `k` after `c`).
    group: &'a str,
    /// The current option's or operand's text, or its attached value.
    value: Option<&'a str>,
    /// The current option, as the user wrote it (for messages).
    spelled: String,
}

impl<'a> Parser<'a> {
    /// `help` (its pieces one after the other) is printed for
    /// `--help`/`-h`, followed by the common options.
    pub fn new(name: &'static str, help: &'static [&'static str], opts: &'static [Opt], args: &'a [String]) -> Self {
        Parser { name, help, opts, args: args.iter(), group: "", value: None, spelled: String::new() }
    }

    fn unknown(&self, what: &str) -> Error {
        Error::usage(format!("unknown option '{what}'")).hint(format!("try '{} --help'", self.name))
    }

    /// The long name of the next option, `""` for an operand (read it with
    /// [`Parser::value`]), `None` at the end.
    pub fn next(&mut self) -> Result<Option<&'static str>, Error> {
        let (letters, long) = if !self.group.is_empty() {
            (self.group, None)
        } else {
            let Some(a) = self.args.next() else { return Ok(None) };
            match a.strip_prefix("--") {
                Some(l) if !l.is_empty() => ("", Some(l)),
                _ => match a.strip_prefix('-') {
                    Some(g) if !g.is_empty() => (g, None),
                    // An operand, `-` (standard input) among them.
                    _ => {
                        self.value = Some(a);
                        return Ok(Some(""));
                    }
                },
            }
        };
        self.value = None;
        let opt = if let Some(l) = long {
            let (l, v) = l.split_once('=').map_or((l, None), |(l, v)| (l, Some(v)));
            self.value = v;
            self.spelled = format!("--{l}");
            if l == "help" {
                return Err(self.help());
            }
            self.opts.iter().find(|o| o.1 == l).ok_or_else(|| self.unknown(&self.spelled))?
        } else {
            let c = letters.chars().next().unwrap_or(' ');
            self.group = &letters[c.len_utf8()..];
            self.spelled = format!("-{c}");
            if c == 'h' {
                return Err(self.help());
            }
            let o = self.opts.iter().find(|o| o.0 == c && c != ' ').ok_or_else(|| self.unknown(&self.spelled))?;
            if o.2 && !self.group.is_empty() {
                self.value = Some(std::mem::take(&mut self.group));
            }
            o
        };
        if opt.2 && self.value.is_none() {
            self.value = Some(self.args.next().ok_or_else(|| {
                Error::usage(format!("option {} needs a value", self.spelled))
                    .hint(format!("try '{} --help'", self.name))
            })?);
        } else if !opt.2 && self.value.is_some() && long.is_some() {
            return Err(Error::usage(format!("option {} takes no value", self.spelled)));
        }
        Ok(Some(opt.1))
    }

    fn help(&self) -> Error {
        // The text keeps its columns as tabs (`OPTION\tdescription`,
        // `\tmore description`): 1.5 KiB of spaces less in the binary.
        let mut out = String::new();
        for line in self.help.iter().flat_map(|h| h.lines()) {
            match line.split_once('\t') {
                Some((left, right)) => out.push_str(&format!("  {left:19}{right}\n")),
                None => out.push_str(&format!("{line}\n")),
            }
        }
        out.push('\n');
        out.push_str(COMMON_HELP);
        match print(&out) {
            Ok(()) => Error { code: EXIT_OK, msg: String::new(), hint: None },
            Err(e) => e,
        }
    }

    /// The current option's value, or the operand.
    pub fn value(&self) -> String {
        self.value.unwrap_or_default().to_string()
    }

    /// The value as a number (or anything `FromStr`).
    pub fn num<T: std::str::FromStr>(&self) -> Result<T, Error> {
        let v = self.value.unwrap_or_default();
        v.parse().map_err(|_| Error::usage(format!("{}: '{v}' is not a valid number", self.spelled)))
    }

    /// The value as `-t`'s seconds.
    pub fn seconds(&self) -> Result<Seconds, Error> {
        Seconds::parse(self.value.unwrap_or_default()).map_err(|e| Error::usage(format!("{}: {e}", self.spelled)))
    }

    /// An operand the applet has no place for.
    pub fn extra(&self) -> Error {
        Error::usage(format!("unexpected argument '{}'", self.value.unwrap_or_default()))
            .hint(format!("try '{} --help'", self.name))
    }
}

/// Wrap lines longer than `width` at spaces, keeping their indentation, so
/// help text fits a serial console.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.len() <= width {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let mut cur = String::from(&line[..indent]);
        for word in line.split_whitespace() {
            if cur.len() > indent && cur.len() + 1 + word.len() > width {
                out.push_str(&cur);
                out.push('\n');
                cur = " ".repeat(indent);
            }
            if cur.len() > indent {
                cur.push(' ');
            }
            cur.push_str(word);
        }
        out.push_str(&cur);
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out
}

/// A few lines instead of env_logger (which costs tens of KiB on a board):
/// `LEVEL: message` on stderr; `-v` raises the level, `RUST_LOG` sets it
/// (`debug`, or `trbox=debug`: the last level named wins).
struct Logger;

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::max_level()
    }

    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            eprintln!("{}: {}", r.level(), r.args());
        }
    }

    fn flush(&self) {}
}

fn init_log(verbose: u8) {
    let from_env = std::env::var("RUST_LOG").ok().and_then(|v| {
        v.split(',').filter_map(|d| d.rsplit('=').next()?.trim().parse::<log::LevelFilter>().ok()).next_back()
    });
    let level = from_env.unwrap_or(match verbose {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        2 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    });
    static LOGGER: Logger = Logger;
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

fn banner() -> String {
    let mut s = format!(
        "trbox {} - ftrace for embedded boards\n\n\
         Usage: trbox APPLET [ARGS...]   or   APPLET [ARGS...] (via a link)\n\
        \x20      trbox --list\n\
        \x20      trbox --install [-s] DIR   (links named trbox and after each applet)\n\
        \x20      trbox --version\n\nApplets:\n",
        env!("CARGO_PKG_VERSION")
    );
    for a in APPLETS {
        s.push_str(&format!("  {:<10} {}\n", a.name, a.summary));
    }
    s
}

/// Print a whole text (help, a status report, a list): a reader that
/// closed the pipe (`| head -1`) ends it quietly, as for every other
/// output (sys::read::Out); any other failure to write is the applet's error.
/// (`print!` panics on a closed pipe.)
pub fn print(text: &str) -> Result<(), Error> {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::runtime(format!("cannot write output: {e}")))
        }
        _ => Ok(()),
    }
}

/// Run `argv` and return the process exit code.
pub fn dispatch(argv: &[String]) -> u8 {
    let name = argv.first().map(|s| basename(s)).unwrap_or("trbox");
    let (applet, args) = if APPLETS.iter().any(|a| a.name == name) {
        (name, &argv[1.min(argv.len())..])
    } else if name == "trbox" || name.starts_with("trbox") {
        match argv.get(1).map(String::as_str) {
            None | Some("--help") | Some("-h") => {
                return report("trbox", print(&banner()));
            }
            Some("--list") => {
                let names: String = APPLETS.iter().map(|a| format!("{}\n", a.name)).collect();
                return report("trbox", print(&names));
            }
            Some("--install") => return report("trbox", install(&argv[2..])),
            Some("--version") | Some("-V") => {
                return report("trbox", print(&format!("trbox {}\n", env!("CARGO_PKG_VERSION"))));
            }
            Some(a) => (basename(a), &argv[2..]),
        }
    } else {
        (name, &argv[1..])
    };
    let Some(app) = APPLETS.iter().find(|a| a.name == applet) else {
        eprintln!("{applet}: applet not found");
        return EXIT_NOT_FOUND;
    };
    let _ = APPLET.set(app.name);
    let res = split_common(args).and_then(|(common, rest)| {
        init_log(common.verbose);
        if let Some(k) = &common.kernel {
            trbox::sys::trace::set_kernel(k);
        }
        (app.main)(&common, &rest)
    });
    report(app.name, res)
}

/// The applet running, for messages that are not its final error.
static APPLET: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Print an error the way a person on a serial console wants it, and map it
/// to the exit code.
pub fn report(name: &str, r: Result<(), Error>) -> u8 {
    match r {
        Ok(()) => EXIT_OK,
        Err(e) if e.code == EXIT_OK => EXIT_OK,
        // A traced command's own exit status: nothing to say.
        Err(e) if e.msg.is_empty() => e.code,
        Err(e) => {
            say(name, &e);
            e.code
        }
    }
}

fn say(name: &str, e: &Error) {
    eprintln!("{name}: {}", e.msg);
    if let Some(h) = &e.hint {
        eprintln!("{name}: hint: {h}");
    }
}

/// Say `e` on stderr as the final error would be said, and go on (e.g. a
/// window that recorded nothing: not a failure, never silent).
pub fn note(e: &Error) {
    say(APPLET.get().copied().unwrap_or("trbox"), e);
}

/// Stdout is a terminal that can be cleared (TERM is set and not `dumb`):
/// where a table may be drawn again in place.
pub fn is_tty() -> bool {
    // SAFETY: isatty only looks at the descriptor.
    let tty = unsafe { libc::isatty(1) } == 1;
    tty && std::env::var_os("TERM").is_some_and(|t| t != "dumb")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

/// `trbox --install [-s] DIR`: one link per applet, to /proc/self/exe.
fn install(args: &[String]) -> Result<(), Error> {
    let (symlink, dir) = match args {
        [s, d] if s == "-s" => (true, d),
        [d] if !d.starts_with('-') => (false, d),
        _ => return Err(Error::usage("usage: trbox --install [-s] DIR").hint("try 'trbox --help'")),
    };
    let exe = std::fs::read_link("/proc/self/exe")
        .map_err(|e| Error::runtime(format!("cannot read /proc/self/exe: {e}")).hint("is /proc mounted?"))?;
    // trbox itself too: `trbox --list` and the banner work from DIR.
    for name in std::iter::once("trbox").chain(APPLETS.iter().map(|a| a.name)) {
        let link = std::path::Path::new(dir).join(name);
        if link.symlink_metadata().is_ok() {
            continue; // existing links (or files) are left alone
        }
        let r = if symlink { std::os::unix::fs::symlink(&exe, &link) } else { std::fs::hard_link(&exe, &link) };
        r.map_err(|e| {
            let hint = if !symlink && e.raw_os_error() == Some(libc::EXDEV) {
                "DIR is on another filesystem: use -s for symlinks"
            } else {
                "check that DIR exists and is writable"
            };
            Error::runtime(format!("cannot create {}: {e}", link.display())).hint(hint)
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn instance_names_must_be_plain() {
        for bad in [".", "..", "../..", "a/b", "/x", ".hidden", "-k", "a\nb", "a\0b"] {
            let e = split_common(&v(&["-B", bad])).unwrap_err();
            assert_eq!(e.code, EXIT_USAGE, "{bad:?}");
            assert!(e.msg.contains("not a plain instance name"), "{bad:?}: {}", e.msg);
        }
        let e = split_common(&v(&["--instance=.."])).unwrap_err();
        assert_eq!(e.msg, "-B '..': not a plain instance name: it starts with '.'");
        // '' is the top-level buffer (a trace.dat's unnamed one).
        for good in ["", "foo", "trbox-1", "a.b", "x_y", "my trace"] {
            assert_eq!(split_common(&v(&["-B", good])).unwrap().0.instance.as_deref(), Some(good));
        }
    }

    const OPTS: &[Opt] = &[('b', "buffer", true), ('c', "children", false), ('k', "keep", false), (' ', "json", false)];

    /// Every option as (name, value), operands as ("", value).
    fn parse_all(a: &[&str]) -> Result<Vec<(&'static str, String)>, Error> {
        let args = v(a);
        let mut p = Parser::new("tr-x", &["Usage: tr-x\n-b, --buffer KB\tsize\n"], OPTS, &args);
        let mut got = Vec::new();
        while let Some(o) = p.next()? {
            got.push((o, p.value()));
        }
        Ok(got)
    }

    #[test]
    fn options_read_as_getopt_long_does() {
        let want = |v: &[(&'static str, &str)]| v.iter().map(|(o, s)| (*o, s.to_string())).collect::<Vec<_>>();
        for form in [&["-b", "8"][..], &["-b8"], &["--buffer", "8"], &["--buffer=8"]] {
            assert_eq!(parse_all(form).unwrap(), want(&[("buffer", "8")]), "{form:?}");
        }
        // Groups of letters, a value ending a group, operands anywhere, `-`.
        assert_eq!(
            parse_all(&["-ck", "x", "-cb16", "--json", "-", "-b", "-1"]).unwrap(),
            want(&[
                ("children", ""),
                ("keep", ""),
                ("", "x"),
                ("children", ""),
                ("buffer", "16"),
                ("json", ""),
                ("", "-"),
                ("buffer", "-1")
            ])
        );
        let err = |a: &[&str]| parse_all(a).unwrap_err();
        assert_eq!(err(&["-x"]).msg, "unknown option '-x'");
        assert_eq!(err(&["--nope"]).msg, "unknown option '--nope'");
        assert_eq!(err(&["-b"]).msg, "option -b needs a value");
        assert_eq!(err(&["--json=1"]).msg, "option --json takes no value");
        for e in [err(&["-x"]), err(&["-b"])] {
            assert_eq!((e.code, e.hint.as_deref()), (EXIT_USAGE, Some("try 'tr-x --help'")));
        }
        // --help and -h end the run with 0 (the text went to stdout).
        assert_eq!(err(&["-k", "--help"]).code, EXIT_OK);
        assert_eq!(err(&["-h"]).code, EXIT_OK);
    }

    #[test]
    fn values_are_checked() {
        let args = v(&["-b", "x8", "-b", "0.5"]);
        let mut p = Parser::new("tr-x", &[], OPTS, &args);
        p.next().unwrap();
        assert_eq!(p.num::<u64>().unwrap_err().msg, "-b: 'x8' is not a valid number");
        p.next().unwrap();
        assert_eq!(p.seconds().unwrap().0, Duration::from_millis(500));
        assert_eq!(p.next().unwrap(), None);
    }

    #[test]
    fn common_options_are_split_off() {
        let (c, r) = split_common(&v(&["-T", "/x", "-vv", "--instance=foo", "-b", "8", "--", "-T", "y"])).unwrap();
        assert_eq!(c.tracefs.as_deref(), Some("/x"));
        assert_eq!(c.instance.as_deref(), Some("foo"));
        assert_eq!(c.verbose, 2);
        assert_eq!(r, v(&["-b", "8", "--", "-T", "y"]));
        let (c, _) = split_common(&v(&["-T/y", "--tracefs", "/z"])).unwrap();
        assert_eq!(c.tracefs.as_deref(), Some("/z"));
        assert!(split_common(&v(&["-T"])).is_err());
    }
}

/// `-t SECONDS` (`2`, `0.5`, `1.25`): parsed by hand, because std's float
/// parser brings ~12 KiB of tables into the board binary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seconds(pub Duration);

impl Seconds {
    pub fn parse(v: &str) -> Result<Self, String> {
        let bad = || format!("'{v}' is not a number of seconds (e.g. 2 or 0.5)");
        let (int, frac) = v.split_once('.').unwrap_or((v, ""));
        let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
        if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) || frac.len() > 9 {
            return Err(bad());
        }
        let secs: u64 = if int.is_empty() { 0 } else { int.parse().map_err(|_| bad())? };
        // The digits are checked: at most 9 of them, so no overflow.
        let nanos =
            frac.bytes().chain(core::iter::repeat(b'0')).take(9).fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
        Ok(Seconds(Duration::new(secs, nanos)))
    }
}

#[cfg(test)]
mod seconds_tests {
    use super::Seconds;
    use std::time::Duration;

    #[test]
    fn seconds() {
        let ok = |s: &str| Seconds::parse(s).map(|s| s.0);
        assert_eq!(ok("2"), Ok(Duration::from_secs(2)));
        assert_eq!(ok("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(ok(".25"), Ok(Duration::from_millis(250)));
        assert_eq!(ok("3."), Ok(Duration::from_secs(3)));
        assert_eq!(ok("0.000000001"), Ok(Duration::from_nanos(1)));
        for bad in ["", ".", "-1", "1e3", "1.2.3", "0.0000000001", "x", "99999999999999999999"] {
            assert!(ok(bad).is_err(), "{bad}");
        }
    }
}
