//! The applet pages in `docs/applets/` quote each applet's own `--help`
//! (the way uutils' `uudoc` writes its per-utility pages from the option
//! declarations), so the docs cannot drift from the binary: the text between
//! the page's `<!-- help -->` and `<!-- /help -->` markers must be exactly
//! what `trbox APPLET --help` prints, in a ```text block.
//!
//! `make docs` (or `TRBOX_BLESS=1` with this test) rewrites the blocks from
//! the binary just built.

use super::common;
use common::*;
use std::path::PathBuf;

const BEGIN: &str = "<!-- help -->\n";
const END: &str = "<!-- /help -->\n";

/// The block a page holds for `help`, markers included.
fn block(help: &str) -> String {
    format!("{BEGIN}```text\n{help}```\n{END}")
}

fn page(applet: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/applets").join(format!("{applet}.md"))
}

#[test]
fn applet_pages_quote_their_help() {
    let bless = std::env::var_os("TRBOX_BLESS").is_some_and(|v| v == "1");
    let o = run(&["--list"]);
    assert!(o.status.success(), "trbox --list: {}", stderr(&o));
    let mut stale = Vec::new();
    for name in stdout(&o).lines() {
        let o = applet(name, &["--help"]);
        assert_eq!(o.status.code(), Some(0), "{name} --help: {}", stderr(&o));
        let want = block(&stdout(&o));
        let path = page(name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (every applet has a page in docs/applets/)", path.display()));
        let (Some(b), Some(e)) = (text.find(BEGIN), text.find(END)) else {
            panic!("{}: no {BEGIN:?} … {END:?} markers around the help block", path.display());
        };
        assert!(b < e, "{}: the help markers are out of order", path.display());
        let have = &text[b..e + END.len()];
        if have == want {
            continue;
        }
        if bless {
            let new = format!("{}{want}{}", &text[..b], &text[e + END.len()..]);
            std::fs::write(&path, new).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            eprintln!("{}: help block rewritten", path.display());
        } else {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "the help block of {} differs from the binary's --help; regenerate with `make docs` \
         (TRBOX_BLESS=1 cargo test --release --lib applets_tests::docs::)",
        stale.join(", ")
    );
}

/// docs/man/NAME.1 and completions/ hold what the host build's `trbox --man
/// NAME` and `trbox --completions SHELL` print (written from the option
/// declarations, as `--help` is); `make docs` rewrites them.
#[test]
fn man_pages_and_completions_are_the_binarys() {
    let bless = std::env::var_os("TRBOX_BLESS").is_some_and(|v| v == "1");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let o = run(&["--list"]);
    let mut files: Vec<(PathBuf, Vec<&str>)> = Vec::new();
    let names: Vec<String> = std::iter::once("trbox".to_string()).chain(stdout(&o).lines().map(String::from)).collect();
    for n in &names {
        files.push((root.join("docs/man").join(format!("{n}.1")), vec!["--man", n]));
    }
    for (file, shell) in [("trbox.bash", "bash"), ("_trbox", "zsh"), ("trbox.fish", "fish")] {
        files.push((root.join("completions").join(file), vec!["--completions", shell]));
    }
    let mut stale = Vec::new();
    for (path, args) in files {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "trbox {args:?}: {}", stderr(&o));
        let want = stdout(&o);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(&want) {
            continue;
        }
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            eprintln!("{}: rewritten", path.display());
        } else {
            stale.push(path.display().to_string());
        }
    }
    assert!(stale.is_empty(), "{} differ from the binary's; regenerate with `make docs`", stale.join(", "));
    for (args, want) in [(&["--man", "nosuch"][..], "no applet 'nosuch'"), (&["--completions", "csh"], "no shell")] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(stderr(&o).contains(want), "{}", stderr(&o));
    }
}
