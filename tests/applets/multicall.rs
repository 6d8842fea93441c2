//! Multicall conventions (busybox style: applet by argv[0] or `trbox APPLET`,
//! `--list`, `--install`, exit codes 0/1/2/127) and bad input, on the real binary.

use super::common;
use common::*;
use std::os::unix::fs::symlink;

fn no_panic(o: &std::process::Output) {
    let e = stderr(o);
    assert!(!e.contains("panicked") && !e.contains("RUST_BACKTRACE"), "panic output: {e}");
}

#[test]
fn banner_and_list() {
    let o = run(&[]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(s.starts_with("trbox "), "{s}");
    assert!(s.contains("tr-on"), "{s}");
    let o = run(&["--list"]);
    assert_eq!(o.status.code(), Some(0));
    let names: Vec<String> = stdout(&o).lines().map(String::from).collect();
    assert!(names.contains(&"tr-on".to_string()), "{names:?}");
    assert!(names.contains(&"tr-lat".to_string()), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("tr-")), "{names:?}");
}

#[test]
fn unknown_applet_is_127() {
    let o = run(&["tr-nosuch"]);
    assert_eq!(o.status.code(), Some(127));
    assert_eq!(stderr(&o), "tr-nosuch: applet not found\n");
    // The same through a link with an unknown name.
    let d = TempDir::new("mc");
    let link = d.path().join("frobnicate");
    symlink(trbox(), &link).unwrap();
    let o = cmd(&link, &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(127));
    assert_eq!(stderr(&o), "frobnicate: applet not found\n");
}

const APPLETS: [&str; 6] = ["tr-on", "tr-event", "tr-cat", "tr-graph", "tr-stack", "tr-lat"];

#[test]
fn help_goes_to_stdout_with_exit_0() {
    for a in APPLETS {
        for args in [&[a, "--help"][..], &[a, "-T", "/x", "-h"][..], &[a, "-k", "--help", "--nope"]] {
            let o = run(args);
            assert_eq!(o.status.code(), Some(0), "{args:?}");
            let s = stdout(&o);
            assert!(s.starts_with(&format!("Usage: {a} [OPTIONS]")), "{s}");
            // The applet's options, the common ones, each with its value.
            assert!(s.contains("\nOptions:\n") && s.contains("\n  -t, --time S "), "{s}");
            assert!(s.contains("\nCommon options:\n  -T, --tracefs DIR "), "{s}");
            assert!(stderr(&o).is_empty());
            assert!(s.lines().all(|l| l.len() <= 80), "help wider than 80 columns:\n{s}");
        }
    }
}

#[test]
fn usage_errors_are_one_line_and_exit_1() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/x86_64/events");
    let cases: &[(&[&str], &str)] = &[
        (&["tr-on", "--bogus"], "Unrecognized argument: --bogus"),
        (&["tr-on", "-T"], "option --tracefs needs a value"),
        (&["tr-on", "--off=1"], "option --off takes no value"),
        (&["tr-cat", "-T", fixture, "-P", "1", "--pid=2"], "option --pid was given twice; it takes one value"),
        (&["tr-cat", "--raw", "-t", "x"], "Error parsing option '--time' with value 'x'"),
        (&["tr-lat", "timerlat", "--priority", "q:1"], "give f:PRIO, r:PRIO or o:NICE"),
        (&["tr-graph", "-B", "../x"], "not a plain instance name"),
        (&["tr-event", "-vx"], "Unrecognized argument: -x"),
        (&["--install"], "use one of --list, --install [-s] DIR, --version"),
    ];
    for (args, msg) in cases {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        no_panic(&o);
        let e = stderr(&o);
        let lines: Vec<&str> = e.lines().collect();
        assert!(lines.len() == 2 && lines[0].contains(msg), "{args:?}: {e}");
        assert!(lines[1].contains("hint: try '"), "{e}");
        assert!(stdout(&o).is_empty());
    }
}

/// The getopt forms people type give what the spelled-out form gives:
/// `--opt=value`, a value attached to its letter, grouped letters (the
/// common -v among them), `-` as an operand.
#[test]
fn getopt_forms_read_as_spelled_out() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/x86_64/events");
    let same = |a: &[&str], b: &[&str]| {
        let (x, y) = (run(a), run(b));
        assert_eq!(x.status.code(), Some(0), "{a:?}: {}", stderr(&x));
        assert!(!stdout(&x).is_empty(), "{a:?}");
        assert_eq!((stdout(&x), x.status.code()), (stdout(&y), y.status.code()), "{a:?} vs {b:?}");
    };
    let t = format!("--tracefs={fixture}");
    let t_attached = format!("-T{fixture}");
    same(&["tr-cat", "--raw", &t, "--cpus=1"], &["tr-cat", "--raw", "-T", fixture, "--cpus", "1"]);
    same(
        &["tr-cat", "--raw", &t_attached, "-j1", "-esched:*"],
        &["tr-cat", "--raw", "-T", fixture, "-j", "1", "-e", "sched:*"],
    );
    same(&["tr-event", "-T", fixture, "-L", "sched:*"], &["tr-event", "-T", fixture, "--list", "sched:*"]);
    same(&["tr-lat", "wakeup", "-rT", fixture, "--json"], &["tr-lat", "wakeup", "-r", "-T", fixture, "--json"]);
}

#[test]
fn bad_tracefs_dirs_are_runtime_errors() {
    let o = run(&["tr-on", "-T", "/nonexistent"]);
    assert_eq!(o.status.code(), Some(2));
    no_panic(&o);
    assert!(stderr(&o).starts_with("tr-on: /nonexistent: no such directory\n"), "{}", stderr(&o));
    let d = TempDir::new("nottracefs");
    let o = run(&["tr-on", "-T", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a tracefs tree (no events/ directory)"), "{}", stderr(&o));
    // The environment variable works like -T.
    let o = cmd(&trbox(), &["tr-on"]).env("TRBOX_TRACEFS", "/nonexistent").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent: no such directory"));
}

#[test]
fn install_links_every_applet_and_leaves_existing_ones() {
    let d = TempDir::new("install");
    let dir = d.path().to_str().unwrap();
    // An existing file with an applet's name is left alone.
    std::fs::write(d.path().join("tr-on"), "mine").unwrap();
    let o = run(&["--install", "-s", dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(d.path().join("tr-on")).unwrap(), "mine");
    std::fs::remove_file(d.path().join("tr-on")).unwrap();
    let o = run(&["--install", "-s", dir]);
    assert!(o.status.success());
    let names = stdout(&run(&["--list"]));
    for n in names.lines().chain(["trbox"]) {
        let l = d.path().join(n);
        let target = std::fs::read_link(&l).unwrap_or_else(|_| panic!("{n} is not a symlink"));
        assert_eq!(target, std::fs::canonicalize(trbox()).unwrap());
    }
    // Run through the link; trbox itself is linked too (issue 29).
    let o = cmd(&d.path().join("tr-on"), &["--help"]).output().unwrap();
    assert!(stdout(&o).contains("Usage: tr-on"));
    let o = cmd(&d.path().join("trbox"), &["--version"]).output().unwrap();
    // The version, the configuration and its features (the host build has
    // them all).
    let v = stdout(&o);
    assert!(v.starts_with(&format!("trbox {} (configuration ", env!("CARGO_PKG_VERSION"))), "{v}");
    assert!(v.ends_with(" tr-lat net regions console boot rtla probe zstd zlib host)\n"), "{v}");
    // Hard links (same filesystem as the binary: use the target dir).
    let h = TempDir::new("hard");
    let hd = trbox().parent().unwrap().join(format!("hardlinks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&hd);
    std::fs::create_dir_all(&hd).unwrap();
    let o = run(&["--install", hd.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    use std::os::unix::fs::MetadataExt;
    let a = std::fs::metadata(hd.join("tr-on")).unwrap();
    let b = std::fs::metadata(trbox()).unwrap();
    assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()));
    std::fs::remove_dir_all(&hd).unwrap();
    drop(h);
    // A missing directory is a runtime error with a hint.
    let o = run(&["--install", "-s", "/nonexistent/dir"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot create /nonexistent/dir/trbox"), "{}", stderr(&o));
}

/// --install as root into a directory others can write: a symlink already
/// at an applet's name (dangling or not) is left alone, and nothing is
/// created or written where it points (symlink(2) and link(2) never follow
/// the new name; issue 12 audit).
#[test]
fn install_follows_no_symlink_at_an_applet_name() {
    let d = TempDir::new("install-ln");
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(&victim, bin.join("tr-on")).unwrap();
    std::os::unix::fs::symlink(d.path().join("made"), bin.join("tr-cat")).unwrap();
    for args in [&["--install", "-s", bin.to_str().unwrap()][..], &["--install", bin.to_str().unwrap()]] {
        let o = run(args);
        assert!(o.status.success() || stderr(&o).contains("another filesystem"), "{args:?}: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(!d.path().join("made").exists(), "{args:?} created the dangling link's target");
        assert_eq!(std::fs::read_link(bin.join("tr-on")).unwrap(), victim);
    }
}

#[test]
fn trbox_applet_equals_link() {
    let d = TempDir::new("eq");
    let link = d.path().join("tr-on");
    symlink(trbox(), &link).unwrap();
    let a = run(&["tr-on", "-T", "tests/data/tree-basic"]);
    let b = cmd(&link, &["-T", "tests/data/tree-basic"]).output().unwrap();
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(stdout(&a), stdout(&b));
    // `trbox /path/to/tr-on` dispatches on the basename too.
    let c = run(&[link.to_str().unwrap(), "-T", "tests/data/tree-basic"]);
    assert_eq!(stdout(&a), stdout(&c));
}

/// A pipe whose reader has gone (`| head -1` that already exited): the
/// write end, to be the command's standard output.
pub fn closed_pipe() -> std::process::Stdio {
    use std::os::unix::io::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: valid array; the read end is ours and closed at once.
    unsafe {
        assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
        libc::close(fds[0]);
        std::process::Stdio::from_raw_fd(fds[1])
    }
}

#[test]
fn a_closed_pipe_ends_every_text_quietly() {
    // Issue 26: `trbox tr-cat --help | head -1` panicked ("failed printing
    // to stdout: Broken pipe", exit 134) whenever head had gone before the
    // help was written. A reader that left is an end, not an error.
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/x86_64/events");
    for args in [
        &[][..],
        &["--list"][..],
        &["--version"][..],
        &["tr-cat", "--help"][..],
        &["tr-on", "--help"][..],
        &["tr-lat", "--help"][..],
        &["tr-on", "-T", fixture][..],
        &["tr-event", "-T", fixture, "--format", "sched:sched_switch"][..],
        &["tr-event", "-T", fixture, "--list"][..],
        &["tr-cat", "--raw", "-T", fixture][..],
    ] {
        let o = cmd(&trbox(), args).stdout(closed_pipe()).output().unwrap();
        no_panic(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");
    }
}

/// -v sets the level; RUST_LOG sets it per module (env_logger's syntax).
#[test]
fn rust_log_filters_by_module() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tracedat/v6-inst.dat");
    let log = |env: Option<&str>, v: &[&str]| {
        let mut c = cmd(&trbox(), &[&["tr-cat", file][..], v].concat());
        c.env_remove("RUST_LOG");
        if let Some(e) = env {
            c.env("RUST_LOG", e);
        }
        stderr(&c.output().unwrap())
    };
    let said = "INFO: kernel version 6.18 (from the UNAME option of";
    assert!(log(Some("trbox::sys::trace=info"), &[]).contains(said));
    assert!(log(Some("info"), &[]).contains(said));
    assert!(log(None, &["-v"]).contains(said));
    assert!(!log(Some("trbox::tracedat=trace"), &[]).contains(said));
    assert_eq!(log(None, &[]), "");
}
