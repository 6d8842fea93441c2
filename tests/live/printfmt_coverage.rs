//! Compile every event's print fmt of this machine's tracefs (read-only)
//! and report how many compile fully and why the rest fall back; every
//! format file must parse. `cargo test --release --lib
//! live_tests::printfmt_coverage -- --nocapture` prints the table.

use super::common;
use std::collections::BTreeMap;

use trbox::format::{EventFormat, HeaderPage};
use trbox::printfmt::Program;

#[test]
fn coverage_of_local_formats() {
    let Some(root) = common::live_tracefs() else { return };
    // Read only, but dynamic events of other tests come and go meanwhile.
    let _lock = common::TracefsLock::take();
    let hp = String::from_utf8(common::read_whole(&root.join("events/header_page"))).unwrap();
    let long = HeaderPage::parse(&hp).expect("header_page").long_size();
    let mut total = 0;
    let mut ok = 0;
    let mut partial: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut parse_err = Vec::new();
    let mut reasons: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for sys in std::fs::read_dir(root.join("events")).unwrap().flatten().filter(|s| s.path().is_dir()) {
        for ev in std::fs::read_dir(sys.path()).unwrap().flatten() {
            let path = ev.path().join("format");
            if !path.is_file() {
                continue;
            }
            let text = String::from_utf8(common::read_whole(&path)).unwrap();
            let system = sys.file_name().to_string_lossy().into_owned();
            let f = match EventFormat::parse(&text, &system, long) {
                Ok(f) => f,
                Err(e) => {
                    parse_err.push(format!("{}: {e}", path.display()));
                    continue;
                }
            };
            total += 1;
            let p = Program::compile(&f, long);
            match p.fallback_reason() {
                None if !p.unknown_parts().is_empty() => {
                    let mut u = p.unknown_parts().to_vec();
                    u.dedup();
                    partial.entry(u.join(",")).or_default().push(format!("{}:{}", f.system, f.name));
                }
                None => ok += 1,
                Some(e) => {
                    if std::env::var_os("PRINTFMT_VERBOSE").is_some() {
                        println!("{}:{}: {e} at `{}`", f.system, f.name, p.fallback_context().unwrap_or(""));
                    }
                    reasons.entry(e.to_string()).or_default().push(format!("{}:{}", f.system, f.name))
                }
            }
        }
    }
    println!("print fmts: {total} parsed ({} format files failed to parse)", parse_err.len());
    let npartial: usize = partial.values().map(|v| v.len()).sum();
    let nfallback = total - ok - npartial;
    println!("compiled fully: {ok} ({:.1}%), partly (some argument or symbolic name unknown): {npartial}, fall back to name=value: {nfallback}", 100.0 * ok as f64 / total.max(1) as f64);
    for (r, evs) in &partial {
        let mut list = evs.clone();
        list.sort();
        let shown: Vec<&str> = list.iter().take(6).map(|s| s.as_str()).collect();
        println!(
            "  {:5}  partly, unknown {r}: {}{}",
            evs.len(),
            shown.join(" "),
            if evs.len() > 6 { " …" } else { "" }
        );
    }
    for (r, evs) in &reasons {
        let mut list = evs.clone();
        list.sort();
        let shown: Vec<&str> = list.iter().take(6).map(|s| s.as_str()).collect();
        println!("  {:5}  {r}: {}{}", evs.len(), shown.join(" "), if evs.len() > 6 { " …" } else { "" });
    }
    assert!(parse_err.is_empty(), "format files that do not parse:\n{}", parse_err.join("\n"));
    assert!(total > 0, "no format file under {}/events", root.display());
    assert!((ok + npartial) * 10 >= total * 9, "less than 90% of print fmts compile");
}
