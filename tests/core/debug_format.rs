//! No message a person reads is formatted with `Debug` (`{:?}`, `{x:#?}`):
//! board builds have `-Zfmt-debug=none`, where such a placeholder prints
//! nothing, so the message would lose what it names. Every string literal
//! of src/ and applets/ is checked, except in `#[cfg(test)]` items and in
//! `assert!`-family macros, whose messages only a developer reads.

/// Byte ranges of `src`'s `#[cfg(test)]` items (a module, a function…;
/// also `#[cfg(all(test, …))]`), found on `code`, its code-only text (the
/// same length).
pub fn test_items(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("#[cfg(") {
        let cond = &code[at + "#[cfg(".len()..];
        if !cond.starts_with("test)]") && !cond.starts_with("all(test,") {
            continue;
        }
        let Some(open) = code[at..].find(['{', ';']).map(|n| at + n) else { continue };
        if code.as_bytes()[open] == b';' {
            out.push((at, open));
            continue;
        }
        let end = super::fixed_sleeps::block_end(code, open);
        out.push((at, end));
    }
    out
}

/// The `Debug` placeholders of `src` outside tests: (line, text).
fn debug_formats(src: &str) -> Vec<(usize, String)> {
    let code = super::fixed_sleeps::code_only(src);
    let tests = test_items(&code);
    let lines: Vec<&str> = src.lines().collect();
    let mut found = Vec::new();
    for (at, _) in src.match_indices("?}") {
        // In a literal: code_only blanked it.
        if code.as_bytes()[at] != b' ' || tests.iter().any(|&(s, e)| s <= at && at < e) {
            continue;
        }
        // `{NAME:SPEC?}`: from the brace before, a colon and no space.
        let Some(open) = src[..at].rfind('{') else { continue };
        let inner = &src[open + 1..at];
        if !inner.contains(':') || inner.contains(char::is_whitespace) || inner.contains('"') {
            continue;
        }
        let line = src[..at].matches('\n').count();
        let text = lines.get(line).unwrap_or(&"").trim();
        // A comment's example (a `//` outside quotes before it), or an
        // assertion's message.
        let before = &src[src[..at].rfind('\n').map_or(0, |n| n + 1)..at];
        let comment = before.find("//").is_some_and(|c| before[..c].matches('"').count() % 2 == 0);
        if comment || super::fixed_sleeps::code_only(text).contains("assert") {
            continue;
        }
        found.push((line + 1, text.to_string()));
    }
    found
}

#[test]
fn no_message_is_formatted_with_debug() {
    let (files, bad) = super::fixed_sleeps::findings(&["src", "applets"], debug_formats);
    assert!(files > 60, "{files} files");
    assert!(
        bad.is_empty(),
        "a Debug placeholder ({{:?}}) where a person reads the text: board builds (-Zfmt-debug=none) print \
         nothing for it; use Display or write the value out:\n{}",
        bad.join("\n")
    );
}

/// The checker on what it must find and what it must let be.
#[test]
fn the_checker_finds_debug_formats_only() {
    let src = r#"
fn a(e: E) -> String {
    eprintln!("tr-cat: {e:?}");
    let s = format!("{:?} and {}", e, 1);
    let t = format!("{x:#?}");
    // e.g. "{e:?}" in a comment
    debug_assert!(ok, "{e:?}");
    let m = "a ? } b {c} ?}";
    let c = '}';
    f(); // not "{e:?}"
    format!("{e}")
}
#[cfg(test)]
mod tests {
    fn b() { println!("{:?}", 1); }
}
#[cfg(test)]
fn c() { println!("{:?}", 1); }
fn d() { eprintln!("{:?}", 2); }
"#;
    let found: Vec<usize> = debug_formats(src).into_iter().map(|(l, _)| l).collect();
    assert_eq!(found, [3, 4, 5, 19], "{:?}", debug_formats(src));
}
