//! The library has no side effects on the process it runs in (issue 40):
//! outside its tests, src/ installs no signal handler and writes nothing
//! to standard output or error by itself. The applets do those things
//! (applets/): they install the handlers and pass the stop in
//! (`sys::stop::Stop`), choose where the text goes (`sys::read::Out`) and
//! print the notes the library returns (`Printed::empty`).

/// What a library must leave to its caller.
const SIDE_EFFECTS: &[&str] = &["signals::install", "println!", "eprintln!", "io::stdout()", "io::stderr()"];

/// The side effects in `src` outside its tests and comments: (line, text).
fn side_effects(src: &str) -> Vec<(usize, String)> {
    let code = super::fixed_sleeps::code_only(src);
    let tests = super::debug_format::test_items(&code);
    let lines: Vec<&str> = src.lines().collect();
    let mut found = Vec::new();
    for pat in SIDE_EFFECTS {
        for (at, _) in code.match_indices(pat) {
            // `std::println!` is one too; `_println!` or `xio::stdout()` is not.
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                || tests.iter().any(|&(s, e)| s <= at && at < e)
            {
                continue;
            }
            let line = code[..at].matches('\n').count();
            found.push((line + 1, lines.get(line).unwrap_or(&"").trim().to_string()));
        }
    }
    found.sort();
    found
}

#[test]
fn the_library_installs_no_handler_and_prints_nothing() {
    let (files, bad) = super::fixed_sleeps::findings(&["src"], side_effects);
    assert!(files > 60, "{files} files");
    assert!(
        bad.is_empty(),
        "the library does this to the process it runs in; leave it to the applets (a Stop passed in, an Out \
         passed in, a note returned):\n{}",
        bad.join("\n")
    );
}

/// The checker on what it must find and what it must let be.
#[test]
fn the_checker_finds_calls_and_lets_tests_and_comments_be() {
    let src = r#"
//! println!("in a doc comment");
fn run() {
    let wake = signals::install()?;
    eprintln!("{n}");
    let _ = std::io::stdout().write_all(b"x");
    let s = "println!";
    my_println!("a macro of its own");
}

#[cfg(test)]
mod tests {
    fn t() {
        println!("a test may");
    }
}

#[cfg(all(test, feature = "zlib"))]
mod more {
    fn t() {
        std::println!("so may this one");
    }
}
"#;
    let found: Vec<usize> = side_effects(src).into_iter().map(|(l, _)| l).collect();
    assert_eq!(found, [4, 5, 6]);
}
