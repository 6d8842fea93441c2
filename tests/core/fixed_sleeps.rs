//! No test waits a fixed time for a state it could wait for: every
//! `sleep(` in tests/ is inside a poll loop (a `while`, `loop`, `for` or an
//! iterator's closure that also reads a clock, counts its rounds or waits
//! for a process, so it is bounded), or says on the line above (or its
//! own) why it is not synchronisation (`not synchronisation: …`: a client
//! that drips bytes, load that sleeps to make timer events).

use std::path::{Path, PathBuf};

/// What a poll loop checks its bound with.
const BOUNDS: &[&str] = &["elapsed()", "Instant", "try_wait", "(0.."];

/// The code of `src` with comments, string and char literals blanked (kept
/// the same length, line breaks kept), so braces and `sleep(` are code.
pub fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if rest.starts_with(b"r#\"") || rest.starts_with(b"r\"") {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            let end: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat(b'#').take(hashes)).collect();
            let open = 2 + hashes;
            out.extend(std::iter::repeat(b' ').take(open));
            i += open;
            while i < b.len() && !b[i..].starts_with(&end) {
                out.push(blank(b[i]));
                i += 1;
            }
            out.extend(std::iter::repeat(b' ').take(end.len().min(b.len() - i)));
            i += end.len();
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                let n = if b[i] == b'\\' { 2 } else { 1 };
                for k in 0..n.min(b.len() - i) {
                    out.push(blank(b[i + k]));
                }
                i += n;
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\''
            && (rest.get(2) == Some(&b'\'') || (rest.get(1) == Some(&b'\\') && rest.get(3) == Some(&b'\'')))
        {
            // A char literal ('{', '\n'), not a lifetime.
            let n = if rest[1] == b'\\' { 4 } else { 3 };
            out.extend(std::iter::repeat(b' ').take(n));
            i += n;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// The `sleep(` calls of `src` that are synchronisation: (line, text).
fn fixed_sleeps(src: &str) -> Vec<(usize, String)> {
    let code = code_only(src);
    let lines: Vec<&str> = src.lines().collect();
    let mut found = Vec::new();
    for (at, _) in code.match_indices("sleep(") {
        let line = code[..at].matches('\n').count();
        let said = |l: usize| lines.get(l).is_some_and(|t| t.contains("not synchronisation"));
        if said(line) || (line > 0 && said(line - 1)) {
            continue;
        }
        // The enclosing blocks, innermost first: each opening brace's
        // line, until the function's.
        let mut depth = 0;
        let mut polled = false;
        for (i, c) in code[..at].char_indices().rev() {
            match c {
                '}' => depth += 1,
                '{' if depth > 0 => depth -= 1,
                '{' => {
                    let start = code[..i].rfind('\n').map_or(0, |n| n + 1);
                    let head = code[start..i].trim();
                    let adaptor = [".any(|", ".all(|", ".position(|", ".find(|"].iter().any(|k| head.contains(k));
                    let bounded_for = head.starts_with("for ");
                    let looping = bounded_for
                        || head.starts_with("while ")
                        || head.split_whitespace().last() == Some("loop")
                        || adaptor;
                    // A function's body, or a closure's that is no
                    // iterator's (a thread, a match arm's client): no loop
                    // of ours around it.
                    if head.contains("fn ") || (head.contains('|') && !looping) {
                        break;
                    }
                    if !looping {
                        continue;
                    }
                    // The loop's head and body.
                    let end = block_end(&code, i);
                    polled = bounded_for || BOUNDS.iter().any(|b| code[start..end].contains(b));
                    break;
                }
                _ => {}
            }
        }
        if !polled {
            found.push((line + 1, lines.get(line).unwrap_or(&"").trim().to_string()));
        }
    }
    found
}

/// Where the block whose `{` is at `open` in `code` (code-only text)
/// closes: the index of its `}`, or the end of `code`.
pub fn block_end(code: &str, open: usize) -> usize {
    let mut depth = 0i32;
    code[open..]
        .char_indices()
        .find(|&(_, c)| {
            depth += match c {
                '{' => 1,
                '}' => -1,
                _ => 0,
            };
            depth == 0
        })
        .map_or(code.len(), |(n, _)| open + n)
}

/// The .rs files below `dir`, but for fixtures and data.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() && !matches!(p.file_name().and_then(|n| n.to_str()), Some("fixtures" | "data")) {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// What `check` finds in the Rust files under the package's `dirs`, each
/// as `PATH:LINE: TEXT`, and how many files it read: the scan the
/// source checks of this suite share.
pub fn findings(dirs: &[&str], check: impl Fn(&str) -> Vec<(usize, String)>) -> (usize, Vec<String>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in dirs {
        rust_files(&root.join(d), &mut files);
    }
    files.sort();
    let mut bad = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        for (line, text) in check(&src) {
            bad.push(format!("{}:{line}: {text}", f.strip_prefix(&root).unwrap().display()));
        }
    }
    (files.len(), bad)
}

#[test]
fn no_test_sleeps_a_fixed_time_to_synchronise() {
    let (files, bad) = findings(&["tests"], fixed_sleeps);
    assert!(files > 40, "{files} files");
    assert!(
        bad.is_empty(),
        "a fixed sleep where a test could wait for the state it checks (poll it with a deadline, \
         or say `not synchronisation: why` above it):\n{}",
        bad.join("\n")
    );
}

/// The checker on what it must find and what it must let be.
#[test]
fn the_checker_finds_fixed_sleeps_only() {
    let src = r#"
fn a() {
    spawn();
    std::thread::sleep(Duration::from_millis(300));
    c.signal(sig);
}
fn b() {
    let t = Instant::now();
    while !ready() {
        assert!(t.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(20));
    }
    let ended = (0..300).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        done()
    });
    let f = loop {
        if let Some(f) = file() { break f; }
        assert!(t.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(100));
    };
    // not synchronisation: a client that stays silent.
    std::thread::sleep(Duration::from_secs(8));
    let s = "sleep(1)"; // sleep(2) in a comment
    let c = '{';
}
fn c() {
    while !ready() {
        sleep(Duration::from_millis(20));
    }
    while std::fs::read_to_string(&f).map_or(true, |s| s.trim() != "1") {
        assert!(t.elapsed().as_secs() < 30);
        sleep(Duration::from_millis(20));
    }
    if x {
        thread::sleep(d);
    }
}
"#;
    let found: Vec<usize> = fixed_sleeps(src).into_iter().map(|(l, _)| l).collect();
    // a()'s sleep before a signal; c()'s poll with no bound; c()'s lone one.
    assert_eq!(found, [4, 29, 36], "{:?}", fixed_sleeps(src));
}
