//! What every applet shares: busybox-style dispatch, the common options
//! (`-T`, `-B`, `-v`), the option parser, and errors that end in the exit codes
//! (0 ok, 1 usage, 2 runtime).

// Man pages and shell completions: the option declarations rendered for
// the host's man(1) and shells, as --help renders them for a terminal.
#[cfg(feature = "host")]
mod manpage;

use argh::{ArgsInfo, CommandInfoWithArgs, FlagInfo, FlagInfoKind, FromArgs, Optionality};
use std::fmt;
use std::time::Duration;

/// One entry per applet that exists. Only these are listed and installed.
pub(crate) struct Applet {
    pub(crate) name: &'static str,
    pub(crate) summary: &'static str,
    /// Its arguments, without its name.
    pub(crate) main: fn(&[String]) -> Result<(), Error>,
    /// Its options, as declared (for the letter table's test).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) options: fn() -> CommandInfoWithArgs,
}

pub(crate) const EXIT_OK: u8 = 0;
pub(crate) const EXIT_USAGE: u8 = 1;
pub(crate) const EXIT_RUNTIME: u8 = 2;
pub(crate) const EXIT_NOT_FOUND: u8 = 127;

/// A failure to report on one line (plus an optional hint line) and the exit
/// code that goes with it.
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) code: u8,
    pub(crate) msg: String,
    pub(crate) hint: Option<String>,
}

// Not inlined: a call per error site (a text's address and length)
// instead of each site's own copy of the allocation and copy of the text.
impl Error {
    #[inline(never)]
    pub(crate) fn usage(msg: impl Into<String>) -> Self {
        Error { code: EXIT_USAGE, msg: msg.into(), hint: None }
    }
    #[inline(never)]
    pub(crate) fn runtime(msg: impl Into<String>) -> Self {
        Error { code: EXIT_RUNTIME, msg: msg.into(), hint: None }
    }
    #[inline(never)]
    pub(crate) fn hint(mut self, h: impl Into<String>) -> Self {
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

// Options every applet takes, declared once here and split off the
// applet's own before either is parsed (see `parse`).
#[derive(FromArgs, ArgsInfo, Debug, Default, Clone)]
#[argh(help_triggers("-h", "--help"))]
/// Common options.
pub(crate) struct Common {
    /// tracefs root (default: from /proc/self/mountinfo, or env
    /// TRBOX_TRACEFS); may be a copy of a tracefs tree
    #[argh(option, short = 'T', arg_name = "DIR")]
    pub(crate) tracefs: Option<String>,
    /// work in instances/NAME (made if missing and removed again); a
    /// trace.dat: read only its buffer NAME, '' for the top one
    #[argh(option, short = 'B', arg_name = "NAME", from_str_fn(instance_name))]
    pub(crate) instance: Option<String>,
    /// more log (repeat for more); RUST_LOG=trbox::MODULE=LEVEL filters too
    #[argh(switch, short = 'v')]
    pub(crate) verbose: u8,
    /// read the trace as of kernel release VER (e.g. 4.19): the text rules
    /// of that version, whatever uname or the file say (-v tells)
    #[argh(option, arg_name = "VER", from_str_fn(kernel_release))]
    pub(crate) kernel: Option<String>,
    /// wait for another trbox run to finish instead of failing
    #[argh(switch)]
    pub(crate) wait: bool,
}

fn instance_name(v: &str) -> Result<String, String> {
    // -B '' is the top-level buffer (a trace.dat's unnamed one).
    match Some(v).filter(|v| !v.is_empty()).and_then(trbox::sys::instance_name_problem) {
        Some(why) => Err(format!("not a plain instance name (a directory in <tracefs>/instances): {why}")),
        None => Ok(v.to_string()),
    }
}

fn kernel_release(v: &str) -> Result<String, String> {
    match trbox::kernel::version_in(v) {
        Some(_) => Ok(v.to_string()),
        None => Err("not a kernel release: give MAJOR.MINOR[...], e.g. 4.19 or 6.1.0-40-arm64".into()),
    }
}

/// What `args` (an applet's arguments, without its name and without
/// `-- CMD`) hold: its common options and its own, parsed by argh from their
/// one declaration. Before argh sees them, the getopt forms people type from
/// habit are written out the way argh reads them: `--buffer=8` and `-b8`
/// become `--buffer 8` and `-b 8`, and a group `-vck` becomes `-v -c -k` (a
/// letter that takes a value ends a group: `-nt1` is `-n -t 1`). An option
/// that takes one value and is given twice is an error, not the last one.
pub(crate) fn parse<A: FromArgs + ArgsInfo>(name: &'static str, args: &[String]) -> Result<(Common, A), Error> {
    let own = A::get_args_info();
    let Some((mine, theirs)) = split(name, own.flags, args)? else {
        return Err(help(name, &own));
    };
    let mine: Vec<&str> = mine.iter().map(String::as_str).collect();
    let a = A::from_args(&[name], &mine).map_err(|e| argh_error(name, e))?;
    Ok((common(name, &theirs)?, a))
}

/// An applet's words and the common options' words, for argh.
type Words = (Vec<String>, Vec<String>);

/// The words of `args` written out for argh: the applet's own (options,
/// then `--` and the operands) and the common options. None for --help.
fn split(name: &str, own: &'static [FlagInfo<'static>], args: &[String]) -> Result<Option<Words>, Error> {
    let common = Common::get_args_info();
    let usage = |msg: String| Error::usage(msg).hint(format!("try '{name} --help'"));
    let (mut mine, mut theirs, mut operands) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen: Vec<&str> = Vec::new();
    let mut tokens = args.iter().map(String::as_str);
    let mut pending: Vec<String> = Vec::new();
    while let Some(tok) = pending.pop().or_else(|| tokens.next().map(String::from)) {
        if tok == "-h" || tok == "--help" {
            return Ok(None);
        }
        let (flag, attached) = match flag_of(&tok, own, common.flags) {
            Some(f) => f,
            // What argh will call unknown, unless a feature left out of
            // this build brings it.
            None if tok.len() > 1 && tok.starts_with('-') => {
                if let Some(g) = crate::applets::config::gated_option(name, &tok) {
                    return Err(left_out(&g.name(), g.feature));
                }
                mine.push(tok);
                continue;
            }
            // An operand, `-` (standard input) among them: after the
            // options, behind a `--`, for argh to take `-` as one.
            None => {
                operands.push(tok);
                continue;
            }
        };
        let (info, is_common) = flag;
        let out = if is_common { &mut theirs } else { &mut mine };
        out.push(info.long.to_string());
        match (&info.kind, attached) {
            (FlagInfoKind::Switch, None) => {}
            (FlagInfoKind::Switch, Some(Attached::Value(_))) => {
                return Err(usage(format!("option {} takes no value", info.long)))
            }
            // The rest of a group: more letters.
            (FlagInfoKind::Switch, Some(Attached::Group(rest))) => pending.push(format!("-{rest}")),
            (FlagInfoKind::Option { .. }, Some(Attached::Value(v) | Attached::Group(v))) => out.push(v),
            (FlagInfoKind::Option { .. }, None) => match tokens.next() {
                // Whatever follows is the value, even `-1`.
                Some(v) => out.push(v.to_string()),
                None => return Err(usage(format!("option {} needs a value", info.long))),
            },
        }
        if matches!(info.kind, FlagInfoKind::Option { .. }) && !matches!(info.optionality, Optionality::Repeating) {
            if seen.contains(&info.long) {
                return Err(usage(format!("option {} was given twice; it takes one value", info.long)));
            }
            seen.push(info.long);
        }
    }
    mine.push("--".into());
    mine.extend(operands);
    Ok(Some((mine, theirs)))
}

/// argh's complaint as one line, with the hint.
fn argh_error(name: &str, e: argh::EarlyExit) -> Error {
    Error::usage(e.output.split_whitespace().collect::<Vec<_>>().join(" ")).hint(format!("try '{name} --help'"))
}

/// The common options, parsed, and the log level set (`--kernel` goes to
/// each read's options: RawOpts::kernel).
fn common(name: &str, theirs: &[String]) -> Result<Common, Error> {
    let theirs: Vec<&str> = theirs.iter().map(String::as_str).collect();
    let mut c = Common::from_args(&[name], &theirs).map_err(|e| argh_error(name, e))?;
    if c.tracefs.is_none() {
        c.tracefs = std::env::var("TRBOX_TRACEFS").ok().filter(|s| !s.is_empty());
    }
    init_log(c.verbose);
    Ok(c)
}

/// What follows an option's letter or name in the same word.
enum Attached {
    /// `--buffer=8`
    Value(String),
    /// `-b8`, or `-ck`'s `k`: a value or more letters, by the option.
    Group(String),
}

type Flag = (&'static FlagInfo<'static>, bool);

/// The declared option `tok` starts with (from the applet's flags or, marked
/// `true`, the common ones), and what is attached to it.
fn flag_of(
    tok: &str,
    own: &'static [FlagInfo<'static>],
    common: &'static [FlagInfo<'static>],
) -> Option<(Flag, Option<Attached>)> {
    let all = || own.iter().map(|f| (f, false)).chain(common.iter().map(|f| (f, true)));
    if let Some(long) = tok.strip_prefix("--").filter(|l| !l.is_empty()) {
        let (l, v) = long.split_once('=').map_or((long, None), |(l, v)| (l, Some(v)));
        let f = all().find(|(f, _)| f.long.strip_prefix("--") == Some(l))?;
        return Some((f, v.map(|v| Attached::Value(v.to_string()))));
    }
    let letters = tok.strip_prefix('-').filter(|l| !l.is_empty())?;
    let c = letters.chars().next()?;
    let f = all().find(|(f, _)| f.short == Some(c))?;
    let rest = &letters[c.len_utf8()..];
    Some((f, (!rest.is_empty()).then(|| Attached::Group(rest.to_string()))))
}

/// `--help`: the applet's text, rendered from its declaration (the
/// common options' too) for an 80-column console, to stdout; the run ends
/// with status 0.
fn help(name: &str, own: &CommandInfoWithArgs) -> Error {
    match print(&help_text(name, own, &Common::get_args_info())) {
        Ok(()) => Error { code: EXIT_OK, msg: String::new(), hint: None },
        Err(e) => e,
    }
}

/// Where an option's description starts.
const HELP_COLUMN: usize = 22;

pub(crate) fn help_text(name: &str, own: &CommandInfoWithArgs, common: &CommandInfoWithArgs) -> String {
    let mut usage = format!("Usage: {name} [OPTIONS]");
    for p in own.positionals.iter().filter(|p| !p.hidden) {
        let dots = if matches!(p.optionality, Optionality::Repeating | Optionality::Greedy) { "..." } else { "" };
        match p.optionality {
            Optionality::Required => usage.push_str(&format!(" {}{dots}", p.name)),
            _ => usage.push_str(&format!(" [{}{dots}]", p.name)),
        }
    }
    usage.push_str(" [-- CMD [ARGS...]]");
    let mut out = format!("{usage}\n\n{}\n", wrap(own.description, 80));
    let positionals: Vec<_> = own.positionals.iter().filter(|p| !p.hidden).collect();
    if !positionals.is_empty() {
        out.push_str("\nArguments:\n");
        for p in positionals {
            row(&mut out, &format!("  {}", p.name), p.description);
        }
    }
    out.push_str("\nOptions:\n");
    flag_rows(&mut out, own.flags);
    row(&mut out, "  -- CMD [ARGS...]", "run CMD with tracing on for it only; end with its exit status");
    row(&mut out, "  -h, --help", "this text");
    out.push_str("\nCommon options:\n");
    flag_rows(&mut out, common.flags);
    if own.examples.is_empty() && !cfg!(feature = "host") {
        // A board build leaves its examples to the docs.
        out.push_str(&format!("\nExamples: docs/applets/{name}.md\n"));
    }
    if !own.examples.is_empty() {
        out.push_str("\nExamples:\n");
        for e in own.examples {
            out.push_str(&format!("  {}\n", e.replace("{command_name}", name)));
        }
    }
    for n in own.notes {
        out.push_str(&format!("\n{}\n", wrap(n, 80)));
    }
    out
}

/// docs/options.md's table: every letter, what it means and where, from
/// the declarations (a test keeps the file equal to it).
#[cfg(test)]
pub(crate) fn letter_table(applets: &[Applet]) -> String {
    let mut rows: Vec<(char, String, String)> = Vec::new();
    let common = Common::get_args_info();
    let all = applets.iter().map(|a| (a.name, (a.options)())).chain([("every applet", common)]);
    for (name, info) in all {
        for f in info.flags.iter().filter(|f| f.long != "--help") {
            let Some(c) = f.short else { continue };
            let value = match f.kind {
                FlagInfoKind::Option { arg_name } => format!(" {arg_name}"),
                FlagInfoKind::Switch => String::new(),
            };
            match rows.iter_mut().find(|r| r.0 == c) {
                Some(r) => r.2.push_str(&format!(", {name}")),
                None => rows.push((c, format!("{}{value}", f.long), name.to_string())),
            }
        }
    }
    rows.sort_by_key(|r| (r.0.to_ascii_lowercase(), r.0.is_ascii_lowercase()));
    let mut out = String::from("| letter | option | in |\n|---|---|---|\n");
    for (c, long, r#in) in rows {
        out.push_str(&format!("| -{c} | {long} | {in} |\n"));
    }
    out
}

/// One row of a help text: `left`, then `text` wrapped in its column.
fn row(out: &mut String, left: &str, text: &str) {
    let text = wrap(text, 80 - HELP_COLUMN);
    let mut lines = text.lines();
    if left.len() < HELP_COLUMN {
        out.push_str(&format!("{left:<HELP_COLUMN$}{}\n", lines.next().unwrap_or_default()));
    } else {
        out.push_str(&format!("{left}\n"));
    }
    for l in lines {
        out.push_str(&format!("{:HELP_COLUMN$}{l}\n", ""));
    }
}

/// A row per option shown: `-b, --buffer KB   description`.
fn flag_rows(out: &mut String, flags: &[FlagInfo]) {
    for f in flags.iter().filter(|f| !f.hidden && f.long != "--help") {
        let short = f.short.map(|c| format!("-{c}, ")).unwrap_or_default();
        let value = match f.kind {
            FlagInfoKind::Option { arg_name } => format!(" {arg_name}"),
            FlagInfoKind::Switch => String::new(),
        };
        row(out, &format!("  {short}{}{value}", f.long), f.description);
    }
}

/// Wrap lines longer than `width` at spaces, keeping their indentation, so
/// help text fits a serial console.
pub(crate) fn wrap(text: &str, width: usize) -> String {
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

/// `-v` sets the level (warnings by default), `RUST_LOG` the level per
/// module (`RUST_LOG=trbox::tracedat=trace`); lines are `LEVEL: message`.
fn init_log(verbose: u8) {
    let level = match verbose {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        2 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    };
    let _ = env_logger::Builder::new()
        .filter_level(level)
        .parse_env("RUST_LOG")
        .format(|out, r| {
            use std::io::Write;
            writeln!(out, "{}: {}", r.level(), r.args())
        })
        .try_init();
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

// `trbox` itself, without an applet.
#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help"))]
/// ftrace for embedded boards
struct Top {
    /// print the applets' names, one per line
    #[argh(switch)]
    list: bool,
    /// make a link to this binary named trbox and one named after each
    /// applet in DIR (hard links; symlinks with -s); existing names are left
    #[argh(switch)]
    install: bool,
    /// with --install: symbolic links
    #[argh(switch, short = 's')]
    symlink: bool,
    /// print trbox's version
    #[argh(switch, short = 'V')]
    version: bool,
    /// host build: print the man page of applet NAME (or trbox) in roff
    #[cfg(feature = "host")]
    #[argh(option, arg_name = "NAME")]
    man: Option<String>,
    /// host build: print the completion script for SHELL (bash, zsh, fish)
    #[cfg(feature = "host")]
    #[argh(option, arg_name = "SHELL")]
    completions: Option<String>,
    /// with --install: the directory for the links
    #[argh(positional, arg_name = "DIR")]
    dir: Option<String>,
}

/// trbox's own options, as declared.
#[cfg(any(test, feature = "host"))]
pub(crate) fn top_info() -> CommandInfoWithArgs {
    Top::get_args_info()
}

fn banner(applets: &[Applet]) -> String {
    let info = Top::get_args_info();
    let mut s = format!(
        "trbox {} - {}\n\nUsage: trbox APPLET [ARGS...], or APPLET [ARGS...] through a link\n\
         \x20      trbox [OPTIONS] [DIR]\n\nOptions:\n",
        env!("CARGO_PKG_VERSION"),
        info.description
    );
    flag_rows(&mut s, info.flags);
    row(&mut s, "  -h, --help", "this text");
    s.push_str("\nApplets:\n");
    for a in applets {
        s.push_str(&format!("  {:<10} {}\n", a.name, a.summary));
    }
    s
}

fn top(applets: &[Applet], args: &[String]) -> Result<(), Error> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    if let Some(g) = args.iter().find_map(|a| crate::applets::config::gated_option("trbox", a)) {
        return Err(left_out(&g.name(), g.feature));
    }
    let t = match Top::from_args(&["trbox"], &args) {
        Ok(t) => t,
        Err(e) if e.status.is_ok() => return print(&banner(applets)),
        Err(e) => {
            return Err(
                Error::usage(e.output.split_whitespace().collect::<Vec<_>>().join(" ")).hint("try 'trbox --help'")
            )
        }
    };
    #[cfg(feature = "host")]
    if let Some(n) = &t.man {
        return print(&manpage::man(applets, n)?);
    }
    #[cfg(feature = "host")]
    if let Some(sh) = &t.completions {
        return print(&manpage::completions(applets, sh)?);
    }
    match (t.list, t.install, t.version, &t.dir) {
        (true, false, false, None) => print(&applets.iter().map(|a| format!("{}\n", a.name)).collect::<String>()),
        (false, true, false, Some(dir)) => install(applets, dir, t.symlink),
        (false, false, true, None) => print(&crate::applets::config::version()),
        (false, false, false, None) if !t.symlink => print(&banner(applets)),
        _ => Err(Error::usage("use one of --list, --install [-s] DIR, --version").hint("try 'trbox --help'")),
    }
}

/// Print a whole text (help, a status report, a list): a reader that
/// closed the pipe (`| head -1`) ends it quietly, as for every other
/// output (sys::read::Out); any other failure to write is the applet's error.
/// (`print!` panics on a closed pipe.)
pub(crate) fn print(text: &str) -> Result<(), Error> {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::runtime(format!("cannot write output: {e}")))
        }
        _ => Ok(()),
    }
}

/// `pub struct Args { ... }` with `--boot` and `--persist` (host build)
/// added at its end: the options of the applets that can trace from boot
/// (tr-on, tr-event, tr-graph), declared here once.
macro_rules! with_boot_options {
    ($(#[$attr:meta])* pub(crate) struct $name:ident { $($fields:tt)* }) => {
        $(#[$attr])*
        pub(crate) struct $name {
            $($fields)*
            /// host build: print the kernel command line and bootconfig for these
            /// settings, to trace from boot
            #[cfg(feature = "host")]
            #[argh(switch)]
            boot: bool,
            /// host build, with --boot -B NAME: keep that instance's buffer in MB
            /// of memory that survives a warm reboot (6.12+; docs/postmortem.md)
            #[cfg(feature = "host")]
            #[argh(option, arg_name = "MB")]
            persist: Option<u64>,
        }
    };
}
pub(crate) use with_boot_options;

/// Whether `--boot` asks for the settings to be printed (not applied);
/// `--persist MB` goes with `--boot -B NAME` (a buffer kept across a warm
/// reboot is an instance's).
#[cfg(feature = "host")]
pub(crate) fn boot_wanted(boot: bool, common: &Common, persist: Option<u64>) -> Result<bool, Error> {
    match persist {
        Some(_) if !boot => Err(Error::usage("--persist goes with --boot")),
        Some(_) if common.instance.is_none() => Err(Error::usage("--persist keeps an instance's buffer: give -B NAME")
            .hint("e.g. --boot -B boot_mapped --persist 12")),
        Some(0) => Err(Error::usage("--persist needs a size in MB above 0")),
        _ => Ok(boot),
    }
}

/// `--boot` (tr-on, tr-event, tr-graph): the kernel command line on one
/// line, the bootconfig, then one `#` line for each setting a form cannot
/// carry (`none`: those with no boot-time form at all).
#[cfg(feature = "host")]
pub(crate) fn print_boot(b: &trbox::boot::Boot, none: &[&str]) -> Result<(), Error> {
    let mut o = String::from("# kernel command line:\n");
    for p in [
        &b.cmdline,
        "\n# bootconfig (5.6+: bootconfig -a FILE initrd; boot with bootconfig):\n",
        &b.bootconfig,
        &b.notes,
    ] {
        o.push_str(p);
    }
    for n in none {
        for p in ["# ", n, "\n"] {
            o.push_str(p);
        }
    }
    print(&o)
}

/// Run `argv` with the applet it names (by argv[0]'s basename, or
/// argv[1] after `trbox`) and return the process exit code.
pub(crate) fn dispatch(applets: &'static [Applet], argv: &[String]) -> u8 {
    let name = argv.first().map(|s| basename(s)).unwrap_or("trbox");
    let (applet, args) = if applets.iter().any(|a| a.name == name) {
        (name, argv.get(1..).unwrap_or_default())
    } else if name.starts_with("trbox") {
        match argv.get(1) {
            Some(a) if !a.starts_with('-') => (basename(a), &argv[2..]),
            _ => return report("trbox", top(applets, argv.get(1..).unwrap_or_default())),
        }
    } else {
        (name, argv.get(1..).unwrap_or_default())
    };
    let Some(app) = applets.iter().find(|a| a.name == applet) else {
        if crate::applets::config::APPLETS.contains(&applet) {
            eprintln!("{applet} is not in this trbox (configuration {})", crate::applets::config::NAME);
            return EXIT_RUNTIME;
        }
        eprintln!("{applet}: applet not found");
        return EXIT_NOT_FOUND;
    };
    let _ = APPLET.set(app.name);
    report(app.name, (app.main)(args))
}

/// The applet running, for messages that are not its final error.
static APPLET: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Print an error the way a person on a serial console wants it, and map it
/// to the exit code.
pub(crate) fn report(name: &str, r: Result<(), Error>) -> u8 {
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
pub(crate) fn note(e: &Error) {
    say(applet_name(), e);
}

/// The applet that runs (as messages name it).
pub(crate) fn applet_name() -> &'static str {
    APPLET.get().copied().unwrap_or("trbox")
}

/// Stdout is a terminal that can be cleared (TERM is set and not `dumb`):
/// where a table may be drawn again in place.
pub(crate) fn is_tty() -> bool {
    terminal(1)
}

/// Descriptor `fd` is a terminal that can be cleared (TERM is set and not
/// `dumb`).
pub(crate) fn terminal(fd: i32) -> bool {
    // SAFETY: isatty only looks at the descriptor.
    let tty = unsafe { libc::isatty(fd) } == 1;
    tty && std::env::var_os("TERM").is_some_and(|t| t != "dumb")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

/// `trbox --install [-s] DIR`: one link per applet, to /proc/self/exe.
fn install(applets: &[Applet], dir: &str, symlink: bool) -> Result<(), Error> {
    let exe = std::fs::read_link("/proc/self/exe")
        .map_err(|e| Error::runtime(format!("cannot read /proc/self/exe: {e}")).hint("is /proc mounted?"))?;
    // trbox itself too: `trbox --list` and the banner work from DIR.
    for name in std::iter::once("trbox").chain(applets.iter().map(|a| a.name)) {
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

/// `what` of `applet` (an option, a mode) comes with `feature`, which this
/// build left out: the one line that says so, exit 2.
pub(crate) fn left_out(what: &str, feature: &str) -> Error {
    Error::runtime(format!(
        "{what} is not in this trbox (configuration {}, without {feature})",
        crate::applets::config::NAME
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[derive(FromArgs, ArgsInfo, Debug, PartialEq)]
    /// An applet for the tests.
    struct X {
        /// size
        #[argh(option, short = 'b')]
        buffer: Option<i64>,
        /// children
        #[argh(switch, short = 'c')]
        children: bool,
        /// keep
        #[argh(switch, short = 'k')]
        keep: bool,
        /// json
        #[argh(switch)]
        json: bool,
        /// events
        #[argh(option, short = 'e')]
        event: Vec<String>,
        /// time
        #[argh(option, short = 't')]
        time: Option<Seconds>,
        /// files
        #[argh(positional)]
        file: Vec<String>,
    }

    fn parse_x(a: &[&str]) -> Result<(Common, X), Error> {
        parse("tr-x", &v(a))
    }

    #[test]
    fn options_read_as_getopt_long_does() {
        for form in [&["-b", "8"][..], &["-b8"], &["--buffer", "8"], &["--buffer=8"]] {
            assert_eq!(parse_x(form).unwrap().1.buffer, Some(8), "{form:?}");
        }
        // Groups of letters, a value ending a group, operands anywhere, `-`,
        // a value that looks like an option, common options in groups.
        let (c, x) = parse_x(&["-ck", "x", "-vkb16", "--json", "-", "-e", "-1", "-vt0.5", "-e=a"]).unwrap();
        assert_eq!((x.children, x.keep, x.json, x.buffer), (true, true, true, Some(16)));
        assert_eq!(x.file, v(&["x", "-"]));
        assert_eq!(x.event, v(&["-1", "=a"]));
        assert_eq!(x.time, Some(Seconds(Duration::from_millis(500))));
        assert_eq!(c.verbose, 2);
        let err = |a: &[&str]| parse_x(a).unwrap_err();
        assert_eq!(err(&["-x"]).msg, "Unrecognized argument: -x");
        assert_eq!(err(&["--nope"]).msg, "Unrecognized argument: --nope");
        assert_eq!(err(&["-b"]).msg, "option --buffer needs a value");
        assert_eq!(err(&["--json=1"]).msg, "option --json takes no value");
        assert_eq!(err(&["-b", "1", "--buffer=2"]).msg, "option --buffer was given twice; it takes one value");
        assert_eq!(
            err(&["-b", "x8"]).msg,
            "Error parsing option '--buffer' with value 'x8': invalid digit found in string"
        );
        for e in [err(&["-x"]), err(&["-b"]), err(&["-t", "1e3"])] {
            assert_eq!((e.code, e.hint.as_deref()), (EXIT_USAGE, Some("try 'tr-x --help'")));
        }
        // --help and -h end the run with 0 (the text went to stdout).
        assert_eq!(err(&["-k", "--help"]).code, EXIT_OK);
        assert_eq!(err(&["-h"]).code, EXIT_OK);
    }

    #[test]
    fn common_options_are_split_off() {
        let (c, x) = parse_x(&["-T", "/x", "-vv", "--instance=foo", "-b", "8", "--wait", "--kernel", "4.19"]).unwrap();
        assert_eq!(c.tracefs.as_deref(), Some("/x"));
        assert_eq!(c.instance.as_deref(), Some("foo"));
        assert_eq!((c.verbose, c.wait, c.kernel.as_deref()), (2, true, Some("4.19")));
        assert_eq!(x.buffer, Some(8));
        let (c, _) = parse_x(&["-T/y"]).unwrap();
        assert_eq!(c.tracefs.as_deref(), Some("/y"));
        assert_eq!(parse_x(&["-T"]).unwrap_err().msg, "option --tracefs needs a value");
        assert!(parse_x(&["--kernel", "x"]).unwrap_err().msg.contains("not a kernel release"));
    }

    #[test]
    fn instance_names_must_be_plain() {
        for bad in [".", "..", "../..", "a/b", "/x", ".hidden", "-k", "a\nb", "a\0b"] {
            let e = parse_x(&["-B", bad]).unwrap_err();
            assert_eq!(e.code, EXIT_USAGE, "{bad:?}");
            assert!(e.msg.contains("not a plain instance name"), "{bad:?}: {}", e.msg);
        }
        let e = parse_x(&["--instance=.."]).unwrap_err();
        assert!(e.msg.ends_with("not a plain instance name (a directory in <tracefs>/instances): it starts with '.'"));
        // '' is the top-level buffer (a trace.dat's unnamed one).
        for good in ["", "foo", "trbox-1", "a.b", "x_y", "my trace"] {
            assert_eq!(parse_x(&["-B", good]).unwrap().0.instance.as_deref(), Some(good));
        }
    }

    /// The message names the configuration and the feature.
    #[test]
    fn left_out_says_what_and_why() {
        let e = left_out("-N/--net", "net");
        assert_eq!(e.code, EXIT_RUNTIME);
        assert_eq!(
            e.msg,
            format!("-N/--net is not in this trbox (configuration {}, without net)", crate::applets::config::NAME)
        );
        assert!(e.hint.is_none());
    }
}

/// A CPU list option (`--cpus 0-1,3`), in the kernel's cpulist grammar
/// for every applet (`trbox::ctl::cpu_list`); shown as the kernel prints
/// one (`0-1,3`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Cpus(pub Vec<u32>);

impl std::str::FromStr for Cpus {
    type Err = String;
    fn from_str(v: &str) -> Result<Self, String> {
        match trbox::ctl::cpu_list(v) {
            Ok(c) if !c.is_empty() => Ok(Cpus(c)),
            Ok(_) => Err("no CPU in it: give a CPU list such as 0-1,3".into()),
            Err(r) => Err(format!("'{r}' is not part of a CPU list (such as 0-3,5 or 0-7:2/4)")),
        }
    }
}

impl fmt::Display for Cpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&trbox::ctl::cpu_list_text(&self.0))
    }
}

/// `-t SECONDS` (`2`, `0.5`, `1.25`): parsed by hand, because std's float
/// parser brings ~12 KiB of tables into the board binary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Seconds(pub Duration);

impl std::str::FromStr for Seconds {
    type Err = String;
    fn from_str(v: &str) -> Result<Self, String> {
        Seconds::parse(v)
    }
}

impl Seconds {
    pub(crate) fn parse(v: &str) -> Result<Self, String> {
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
