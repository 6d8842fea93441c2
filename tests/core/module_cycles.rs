//! The developers' guide: no two modules import each other. Every file
//! module of the library (`src/`) and of the binary (`applets/`) is read,
//! each `crate::`, `super::` and `self::` path (and each path through a
//! child module the file declares) is resolved to the module it names, and
//! the import graph must have no cycle. A module and its own submodules
//! (`printfmt` and `printfmt::compile`) are one unit and may use each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`printfmt::compile`; "" for the crate root) → source text.
fn modules(dir: &Path, root_file: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().map_or(true, |x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(dir).unwrap().with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            if parts.last().is_some_and(|l| l == "mod") {
                parts.pop();
            }
            if parts.len() == 1 && parts[0] == root_file {
                parts.clear();
            }
            m.insert(parts.join("::"), std::fs::read_to_string(&p).unwrap());
        }
    }
    m
}

/// The text without comments (line comments; block comments are not used
/// for code here) and without string literals' contents.
fn code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let c: Vec<char> = line.chars().collect();
        let mut i = 0;
        let mut in_str = false;
        while i < c.len() {
            if in_str {
                match c[i] {
                    '\\' => i += 1,
                    '"' => {
                        in_str = false;
                        out.push('"');
                    }
                    _ => {}
                }
            } else if c[i] == '/' && c.get(i + 1) == Some(&'/') {
                break;
            } else if c[i] == '\'' && c.get(i + 1) == Some(&'"') && c.get(i + 2) == Some(&'\'') {
                // A quote as a char literal is no string.
                out.push_str("'\"'");
                i += 2;
            } else {
                in_str = c[i] == '"';
                out.push(c[i]);
            }
            i += 1;
        }
        out.push('\n');
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path of the code: `a::b::{c, d::e}` gives `a::b::c` and
/// `a::b::d::e` (only what a resolver needs: the leading segments).
fn paths(code: &str) -> Vec<Vec<String>> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let (next, found) = path_at(&b, i, Vec::new());
        out.extend(found.into_iter().filter(|p| p.len() > 1));
        i = next.max(i + 1);
    }
    out
}

/// The path(s) starting at `i`, with `prefix` before them.
fn path_at(b: &[char], mut i: usize, mut prefix: Vec<String>) -> (usize, Vec<Vec<String>>) {
    loop {
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if i == start {
            return (i, vec![prefix]);
        }
        prefix.push(b[start..i].iter().collect());
        if !(i + 1 < b.len() && b[i] == ':' && b[i + 1] == ':') {
            return (i, vec![prefix]);
        }
        i += 2;
        if i < b.len() && b[i] == '{' {
            i += 1;
            let mut all = Vec::new();
            loop {
                while i < b.len() && (b[i].is_whitespace() || b[i] == ',') {
                    i += 1;
                }
                if i >= b.len() || b[i] == '}' {
                    return (i + 1, all);
                }
                let (next, found) = path_at(b, i, prefix.clone());
                all.extend(found);
                // Skip `as x`, `*` and anything else up to the next item.
                i = next;
                while i < b.len() && b[i] != ',' && b[i] != '}' {
                    i += 1;
                }
            }
        }
    }
}

/// The module a path names, from module `at` (None: another crate, a
/// local name, a type).
fn resolve(mods: &BTreeMap<String, String>, at: &str, children: &BTreeSet<String>, path: &[String]) -> Option<String> {
    let mut base: Vec<String> = if at.is_empty() { Vec::new() } else { at.split("::").map(String::from).collect() };
    let mut rest = path;
    match path.first()?.as_str() {
        "crate" => {
            base.clear();
            rest = &path[1..];
        }
        "super" | "self" => {
            while let Some(s) = rest.first() {
                match s.as_str() {
                    "super" => {
                        base.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        first if children.contains(first) => {}
        _ => return None,
    }
    // The longest prefix that is a module.
    let mut best = None;
    let mut cur = base.clone();
    if mods.contains_key(&cur.join("::")) {
        best = Some(cur.join("::"));
    }
    for s in rest {
        cur.push(s.clone());
        if mods.contains_key(&cur.join("::")) {
            best = Some(cur.join("::"));
        } else {
            break;
        }
    }
    best
}

fn within(a: &str, b: &str) -> bool {
    b.is_empty() || a == b || a.starts_with(&format!("{b}::"))
}

/// Import edges between modules that are not one inside the other.
fn graph(dir: &Path, root_file: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(dir, root_file);
    let mut g = BTreeMap::new();
    for (m, text) in &mods {
        let code = code(text);
        let children: BTreeSet<String> = mods
            .keys()
            .filter_map(|k| {
                let rest = if m.is_empty() { k.as_str() } else { k.strip_prefix(&format!("{m}::"))? };
                (!rest.is_empty() && !rest.contains("::")).then(|| rest.to_string())
            })
            .collect();
        let mut to = BTreeSet::new();
        for p in paths(&code) {
            if let Some(t) = resolve(&mods, m, &children, &p) {
                if !within(&t, m) && !within(m, &t) {
                    to.insert(t);
                }
            }
        }
        g.insert(m.clone(), to);
    }
    g
}

/// The cycles of the graph (each strongly connected group of more than one
/// module), named with one import path around each.
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(n) = stack.pop() {
            for t in g.get(&n).into_iter().flatten() {
                if seen.insert(t.clone()) {
                    stack.push(t.clone());
                }
            }
        }
        seen
    };
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for m in g.keys() {
        if done.contains(m) {
            continue;
        }
        let fwd = reach(m);
        if !fwd.contains(m) {
            continue;
        }
        let group: Vec<&String> = fwd.iter().filter(|n| reach(n).contains(m)).collect();
        done.extend(group.iter().map(|s| s.to_string()));
        let edges: Vec<String> = group
            .iter()
            .flat_map(|a| g[*a].iter().filter(|b| group.contains(b)).map(move |b| format!("{a} → {b}")))
            .collect();
        out.push(edges.join(", "));
    }
    out
}

fn check(dir: &str, root: &str) {
    let g = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), root);
    assert!(g.len() > 5, "{dir}: too few modules found");
    let c = cycles(&g);
    assert!(c.is_empty(), "{dir}: modules that import each other: {c:#?}");
}

#[test]
fn library_modules_import_no_cycle() {
    check("src", "lib");
}

#[test]
fn applet_modules_import_no_cycle() {
    check("applets", "main");
}

#[test]
fn the_checker_sees_a_cycle() {
    let code = "use super::b::{X, c::Y};\nfn f() { crate::d::g(); } // crate::e::h\nlet s = \"crate::f\";";
    let p = paths(code);
    let want = [vec!["super", "b", "X"], vec!["super", "b", "c", "Y"], vec!["crate", "d", "g"]];
    for w in want {
        assert!(p.iter().any(|x| *x == w), "{w:?} in {p:?}");
    }
    let c = self::code(code);
    assert!(!c.contains("crate::e") && !c.contains("crate::f"), "{c}");
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    g.insert("d".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(cycles(&g), vec!["a → b, b → c, c → a".to_string()]);
}
