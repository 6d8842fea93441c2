//! The developers' guide: no two modules import each other. Every file
//! module of the library (`src/`) and of the binary (`applets/`) is read,
//! each `crate::`, `super::` and `self::` path (and each path through a
//! child module the file declares) is resolved to the module it names, and
//! the import graph must have no cycle. A module and its own submodules
//! (`printfmt` and `printfmt::compile`) are one unit and may use each other;
//! the crate root (lib.rs, main.rs) is not: it is a module of its own, whose
//! children are checked against it too. The binary's root dispatches to
//! the applets, so none of its children may import from it (`crate::X` of
//! an item defined in main.rs): the applet table goes down as an argument.

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
    paths_in_mods(code).into_iter().map(|(_, p)| p).collect()
}

/// [`paths`], each with the number of inline modules (`mod tests { … }`)
/// around it: that many `super::` stay inside the file's module.
fn paths_in_mods(code: &str) -> Vec<(usize, Vec<String>)> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    // Per open brace: whether it opens an inline module.
    let mut braces: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            '{' => {
                let before: String = b[i.saturating_sub(80)..i].iter().collect();
                let words: Vec<&str> = before.split_whitespace().rev().take(2).collect();
                braces.push(matches!(words.as_slice(), [name, "mod"] if name.chars().all(is_ident)));
            }
            '}' => {
                braces.pop();
            }
            _ => {}
        }
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let (next, found) = path_at(&b, i, Vec::new());
        let depth = braces.iter().filter(|m| **m).count();
        out.extend(found.into_iter().filter(|p| p.len() > 1).map(|p| (depth, p)));
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

/// The module a path names, from module `at`, `inline` inline modules
/// deep in its file (None: another crate, a local name, a type).
fn resolve(
    mods: &BTreeMap<String, String>,
    at: &str,
    inline: usize,
    children: &BTreeSet<String>,
    path: &[String],
) -> Option<String> {
    let mut base: Vec<String> = if at.is_empty() { Vec::new() } else { at.split("::").map(String::from).collect() };
    let mut rest = path;
    let mut inline = inline;
    match path.first()?.as_str() {
        "crate" => {
            base.clear();
            rest = &path[1..];
        }
        "super" | "self" => {
            while let Some(s) = rest.first() {
                match s.as_str() {
                    // Out of an inline module: still the file's module.
                    "super" if inline > 0 => inline -= 1,
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

/// Whether module `a` is `b` or inside it; the crate root ("") is a
/// module of its own here, not the unit of all the others.
fn within(a: &str, b: &str) -> bool {
    a == b || (!b.is_empty() && a.starts_with(&format!("{b}::")))
}

/// Import edges between modules that are not one inside the other.
fn graph(dir: &Path, root_file: &str, mount: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(dir, root_file);
    let mut g = BTreeMap::new();
    // A tree mounted below the crate's root (applets/ is the library's
    // `applets` module) names its own root `crate::MOUNT::`.
    let own_root = format!("crate::{mount}::");
    for (m, text) in &mods {
        let code = if mount.is_empty() { code(text) } else { code(text).replace(&own_root, "crate::") };
        let children: BTreeSet<String> = mods
            .keys()
            .filter_map(|k| {
                let rest = if m.is_empty() { k.as_str() } else { k.strip_prefix(&format!("{m}::"))? };
                (!rest.is_empty() && !rest.contains("::")).then(|| rest.to_string())
            })
            .collect();
        // A module reaches what its submodules import: `printfmt` declares
        // `printfmt::vsprintf`, so `kallsyms → printfmt` and `printfmt::vsprintf
        // → kallsyms` are a cycle (they were not seen as one: session 15).
        let mut to: BTreeSet<String> =
            children.iter().map(|c| if m.is_empty() { c.clone() } else { format!("{m}::{c}") }).collect();
        if m.is_empty() {
            // The root declares every top module: that says nothing.
            to.clear();
        }
        for (inline, p) in paths_in_mods(&code) {
            if let Some(t) = resolve(&mods, m, inline, &children, &p) {
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

fn check(dir: &str, root: &str, mount: &str) -> BTreeMap<String, BTreeSet<String>> {
    let g = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), root, mount);
    assert!(g.len() > 5, "{dir}: too few modules found");
    let c = cycles(&g);
    assert!(c.is_empty(), "{dir}: modules that import each other: {c:#?}");
    g
}

/// The modules that import from the crate root.
fn root_importers(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<&String> {
    g.iter().filter(|(m, to)| !m.is_empty() && to.contains("")).map(|(m, _)| m).collect()
}

#[test]
fn library_modules_import_no_cycle() {
    check("src", "lib", "");
}

#[test]
fn applet_modules_import_no_cycle() {
    let g = check("applets", "mod", "applets");
    assert!(g[""].len() > 5, "mod.rs: too few applet modules seen from the root");
    let back = root_importers(&g);
    assert!(back.is_empty(), "applets/ modules that import from mod.rs (a back-edge to the root): {back:?}");
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
    // The root is a module of its own: a child's `crate::X` of the root's
    // item is an edge back to it, and makes a cycle with the root's use of
    // that child.
    assert!(!within("cli", "") && within("", "") && within("a::b", "a"));
    let mods = BTreeMap::from([(String::new(), String::new()), ("cli".to_string(), String::new())]);
    let kids = BTreeSet::new();
    let to_root = resolve(&mods, "cli", 0, &kids, &["crate".to_string(), "APPLETS".to_string()]);
    assert_eq!(to_root.as_deref(), Some(""));
    // `use super::build::Ev` in `mod tests { … }` of cli.rs is cli itself.
    let p = paths_in_mods("mod tests {\n    use super::build::Ev;\n}\nuse super::X;");
    assert_eq!(p.iter().map(|(d, _)| *d).collect::<Vec<_>>(), [1, 0]);
    assert_eq!(resolve(&mods, "cli", 1, &kids, &p[0].1).as_deref(), Some("cli"));
    assert_eq!(resolve(&mods, "cli", 0, &kids, &p[1].1).as_deref(), Some(""));
    let mut g = BTreeMap::new();
    g.insert(String::new(), BTreeSet::from(["cli".to_string()]));
    g.insert("cli".to_string(), BTreeSet::from([String::new()]));
    assert_eq!(cycles(&g), vec![" → cli, cli → ".to_string()]);
    assert_eq!(root_importers(&g), vec!["cli"]);
}
