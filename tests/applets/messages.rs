//! A message names only options that exist (issue 39: tr-lat's usage
//! errors still named `-c` and `-i` after they became `--cpus` and
//! `--irq-us`). Every string literal of the applets' sources (their errors,
//! hints, notes, help notes and examples; not comments, not test modules)
//! is scanned for `-x` and `--name` words, and each is checked against the
//! options the applet declares (its `--help`, plus the common ones; the
//! shared files against every applet's and trbox's own). Within a string,
//! words after another applet's name are that applet's, and words after a
//! command of another program (`chrt -f`, `mount -t`) are its own. The
//! checker tests itself on made-up sources, as tests/core/module_cycles.rs
//! does.

use super::common::*;
use super::options::{applets, declared, parse_help, Opt};
use std::path::Path;

/// Which applet a source file of applets/ speaks for; `None`: shared by
/// all of them (and `trbox` itself).
const FILES: &[(&str, Option<&str>)] = &[
    ("tr_on.rs", Some("tr-on")),
    ("tr_event.rs", Some("tr-event")),
    ("tr_cat/mod.rs", Some("tr-cat")),
    ("tr_cat/record.rs", Some("tr-cat")),
    ("tr_cat/host.rs", Some("tr-cat")),
    ("tr_cat/listen.rs", Some("tr-cat")),
    ("tr_graph.rs", Some("tr-graph")),
    ("tr_stack.rs", Some("tr-stack")),
    ("tr_lat/mod.rs", Some("tr-lat")),
    ("tr_lat/args.rs", Some("tr-lat")),
    ("tr_lat/setup.rs", Some("tr-lat")),
    ("tr_lat/actions.rs", Some("tr-lat")),
    ("tr_lat/max.rs", Some("tr-lat")),
    ("tr_lat/measure.rs", Some("tr-lat")),
    ("tr_lat/screen.rs", Some("tr-lat")),
    ("main.rs", None),
    ("mod.rs", None),
    ("cli/mod.rs", None),
    ("cli/manpage.rs", None),
    ("command.rs", None),
    ("session.rs", None),
    ("progress.rs", None),
    ("config.rs", None),
];

/// Other programs whose options messages quote (`chrt -f 50 CMD`, the
/// completion scripts' `compgen -W`): their words are theirs until `;`,
/// `)` or `,`.
const FOREIGN: &[&str] =
    &["chrt", "mount", "trace-cmd", "rtla", "ps", "taskset", "compgen", "complete", "sudo", "bootconfig"];

/// String literals that are no message: (file, the literal, why).
const NOT_MESSAGES: &[(&str, &str, &str)] =
    &[("tr_lat/actions.rs", "-c", "sh's -c, for --on-threshold shell,command=CMD")];

/// The string literals of Rust source `src` (escapes resolved roughly:
/// `\n`, `\t`, `\"`, `\\`, line continuations), outside comments and
/// outside items marked `#[cfg(test)]`.
pub fn strings(src: &str) -> Vec<String> {
    let b = src.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    let mut depth = 0usize;
    // The brace depth at which a #[cfg(test)] item started, and whether
    // its block has opened yet.
    let mut skip: Option<(usize, bool)> = None;
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if rest.starts_with("#[cfg(test)]") {
            skip.get_or_insert((depth, false));
            i += "#[cfg(test)]".len();
        } else if let Some(n) = char_literal(rest) {
            i += n;
        } else if let Some((s, n)) = raw_string(src, i) {
            if skip.is_none() {
                out.push(s);
            }
            i += n;
        } else if b[i] == b'"' {
            let (s, n) = string(rest);
            if skip.is_none() {
                out.push(s);
            }
            i += n;
        } else {
            match b[i] {
                b'{' => {
                    if let Some((d, opened)) = skip.as_mut() {
                        if *d == depth {
                            *opened = true;
                        }
                    }
                    depth += 1;
                }
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if skip.is_some_and(|(d, opened)| opened && d == depth) {
                        skip = None;
                    }
                }
                // An item without a block (`#[cfg(test)] use x;`).
                b';' if skip.is_some_and(|(d, opened)| !opened && d == depth) => skip = None,
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// The length of a char literal at the start of `s` (`'x'`, `'\''`,
/// `'\u{1b}'`); None for a lifetime or anything else.
fn char_literal(s: &str) -> Option<usize> {
    let rest = s.strip_prefix('\'')?;
    let body = if rest.starts_with('\\') {
        &rest[..rest.get(2..)?.find('\'')? + 2]
    } else {
        let c = rest.chars().next()?;
        &rest[..c.len_utf8()]
    };
    rest[body.len()..].starts_with('\'').then_some(body.len() + 2)
}

/// A raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at byte `i`.
fn raw_string(src: &str, i: usize) -> Option<(String, usize)> {
    if i > 0 && src.as_bytes()[i - 1].is_ascii_alphanumeric() {
        return None;
    }
    let rest = &src[i..];
    let after_b = rest.strip_prefix('b').unwrap_or(rest);
    let r = after_b.strip_prefix('r')?;
    let hashes = r.len() - r.trim_start_matches('#').len();
    let body = r[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = body.find(&close)?;
    let n = rest.len() - body.len() + end + close.len();
    Some((body[..end].to_string(), n))
}

/// The string at the start of `s` (a `"`) and its length in the source.
fn string(s: &str) -> (String, usize) {
    let mut out = String::new();
    let mut it = s.char_indices().skip(1).peekable();
    while let Some((i, c)) = it.next() {
        match c {
            '"' => return (out, i + 1),
            '\\' => match it.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, '\n')) => {
                    while it.peek().is_some_and(|(_, c)| c.is_whitespace()) {
                        it.next();
                    }
                }
                Some((_, c)) => out.push(c),
                None => break,
            },
            c => out.push(c),
        }
    }
    (out, s.len())
}

/// The option words of a message (`-x` and `--name`, not `-1`, `--`,
/// `x86-tsc`), each with the command it belongs to: the applet named
/// before it in the message, a program of [`FOREIGN`], or none.
fn option_words(msg: &str, applets: &[String]) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let mut owner: Option<String> = None;
    let mut foreign = false;
    let mut word = String::new();
    let mut flush = |word: &mut String, owner: &mut Option<String>, foreign: &mut bool| {
        let w = std::mem::take(word);
        let w = w.trim_matches(|c: char| matches!(c, '\'' | '"' | '`' | '(' | '[' | '.' | ':' | '/' | '|' | '=' | '{'));
        let w = w.split(['=', '[', '/', ':', '\'', '"', ')', ']', '|', '.']).next().unwrap_or("");
        if let Some(a) = applets.iter().find(|a| *a == w) {
            (*owner, *foreign) = (Some(a.clone()), false);
        } else if FOREIGN.contains(&w) {
            *foreign = true;
        } else if !*foreign && is_option(w) {
            out.push((owner.clone(), w.to_string()));
        }
    };
    for c in msg.chars() {
        if c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')') {
            flush(&mut word, &mut owner, &mut foreign);
            if matches!(c, ';' | ')' | ',') {
                foreign = false;
            }
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut owner, &mut foreign);
    out
}

/// `-x` (a letter) or `--name` (a lowercase name).
fn is_option(w: &str) -> bool {
    match w.strip_prefix("--") {
        Some(l) => {
            l.starts_with(|c: char| c.is_ascii_lowercase()) && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        }
        None => {
            let mut c = w.chars();
            c.next() == Some('-') && c.next().is_some_and(|l| l.is_ascii_alphabetic()) && c.next().is_none()
        }
    }
}

/// The options of one command: (name, its words: `-x` and `--name`).
type Known = Vec<(String, Vec<String>)>;

fn words(opts: &[Opt]) -> Vec<String> {
    opts.iter().flat_map(|o| o.short.map(|c| format!("-{c}")).into_iter().chain([o.long.clone()])).collect()
}

/// The messages of `files` (path under applets/ → source) that name an
/// option their command does not have; `known`: each applet's options
/// with the common ones, and `trbox`'s own.
pub fn check(files: &[(String, String)], known: &Known) -> Vec<String> {
    let applets: Vec<String> = known.iter().map(|k| k.0.clone()).filter(|a| a != "trbox").collect();
    let of = |name: &str| known.iter().find(|k| k.0 == name).map(|k| k.1.clone()).unwrap_or_default();
    let mut problems = Vec::new();
    for (file, src) in files {
        let Some(&(_, applet)) = FILES.iter().find(|f| f.0 == file) else {
            problems.push(format!("applets/{file}: which applet's messages? add it to FILES"));
            continue;
        };
        // A shared file may name any applet's options, or trbox's.
        let own: Vec<String> = match applet {
            Some(a) => of(a),
            None => known.iter().flat_map(|k| k.1.clone()).collect(),
        };
        for msg in strings(src) {
            for (owner, w) in option_words(&msg, &applets) {
                let ok = match &owner {
                    Some(a) => of(a).contains(&w),
                    None => own.contains(&w),
                };
                if !ok && !NOT_MESSAGES.iter().any(|n| n.0 == file && n.1 == msg) {
                    let whose = owner.as_deref().or(applet).unwrap_or("any applet");
                    problems.push(format!("applets/{file}: {whose} has no option {w}: {:?}", msg.trim()));
                }
            }
        }
    }
    problems
}

#[test]
fn messages_name_only_options_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("applets");
    let mut known: Known = Vec::new();
    let help = ["-h".to_string(), "--help".to_string()];
    for a in applets() {
        let (own, common) = declared(&a);
        known.push((a, [words(&[own, common].concat()), help.to_vec()].concat()));
    }
    let (top, _) = parse_help(&stdout(&run(&["--help"])));
    known.push(("trbox".into(), [words(&top), help.to_vec()].concat()));
    assert!(known.iter().all(|k| !k.1.is_empty()), "{known:?}");
    let mut files = Vec::new();
    // applets/ and its applets' directories (cli/, tr_lat/…).
    let mut dirs = vec![root.clone()];
    dirs.extend(std::fs::read_dir(&root).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    for dir in dirs {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
                files.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    let problems = check(&files, &known);
    assert!(problems.is_empty(), "messages naming options that do not exist:\n{}", problems.join("\n"));
}

/// The checker on made-up sources: what it reads as a message, whose
/// option a word is, and what it leaves alone.
#[test]
fn the_message_checker_finds_options_that_do_not_exist() {
    let src = r####"
// "-z" in a comment is no message
/* nor "-z" here */
fn f() {
    let c = '"'; let q = '\''; let l: &'static str = "";
    e("-c and --cpus, not -p: see tr-graph -d or tr-stack --limit; (chrt -f 50 CMD)");
    e(r#"raw -z"#);
    e("x86-tsc, -1, -- CMD, --flag=VALUE 'noOPT' \"-q\"");
    e("a \
       -y");
}
#[cfg(test)]
mod tests {
    fn t() { e("-z"); }
}
fn g() { e("--after-tests"); }
"####;
    let s = strings(src);
    assert_eq!(
        s,
        [
            "",
            "-c and --cpus, not -p: see tr-graph -d or tr-stack --limit; (chrt -f 50 CMD)",
            "raw -z",
            "x86-tsc, -1, -- CMD, --flag=VALUE 'noOPT' \"-q\"",
            "a -y",
            "--after-tests",
        ]
    );
    let known: Known = vec![
        ("tr-x".into(), vec!["-c".into(), "--cpus".into(), "--flag".into()]),
        ("tr-graph".into(), vec!["-d".into()]),
        ("tr-stack".into(), vec!["--limit".into()]),
        ("trbox".into(), vec!["--list".into()]),
    ];
    let p = check(&[("new.rs".into(), src.into())], &known);
    assert_eq!(p, ["applets/new.rs: which applet's messages? add it to FILES"]);
    // As tr-x's file (FILES maps tr_on.rs to tr-on: rename tr-x to it).
    let known: Known = known.into_iter().map(|(a, w)| (if a == "tr-x" { "tr-on".into() } else { a }, w)).collect();
    let p = check(&[("tr_on.rs".into(), src.into())], &known);
    let words: Vec<&str> =
        p.iter().map(|l| l.split(" has no option ").nth(1).unwrap().split(':').next().unwrap()).collect();
    assert_eq!(words, ["-p", "-z", "-q", "-y", "--after-tests"], "{p:?}");
    assert!(p[0].starts_with("applets/tr_on.rs: tr-on has no option -p: "), "{p:?}");
    // After another applet's name, its options; an unknown one is its.
    let p = check(&[("tr_on.rs".into(), "fn f() { e(\"tr-graph -x\"); }".into())], &known);
    assert_eq!(p, ["applets/tr_on.rs: tr-graph has no option -x: \"tr-graph -x\""]);
}
