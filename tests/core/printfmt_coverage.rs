//! Compile every event's print fmt found on this machine (read-only) and
//! report how many compile fully and why the rest fall back.
//! `cargo test --test printfmt_coverage -- --nocapture` prints the table.

use std::collections::BTreeMap;
use std::path::Path;

use trbox::format::EventFormat;
use trbox::printfmt::Program;

fn tracefs() -> Option<&'static Path> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"].into_iter().map(Path::new).find(|p| p.join("events").is_dir())
}

#[test]
fn coverage_of_local_formats() {
    let Some(root) = tracefs() else {
        eprintln!("no tracefs: skipped");
        return;
    };
    let mut total = 0;
    let mut ok = 0;
    let mut partial: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut parse_err = 0;
    let mut reasons: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let Ok(systems) = std::fs::read_dir(root.join("events")) else { return };
    for sys in systems.flatten() {
        let Ok(evs) = std::fs::read_dir(sys.path()) else { continue };
        for ev in evs.flatten() {
            let Ok(text) = std::fs::read_to_string(ev.path().join("format")) else { continue };
            let system = sys.file_name().to_string_lossy().into_owned();
            let Ok(f) = EventFormat::parse(&text, &system, 8) else {
                parse_err += 1;
                continue;
            };
            total += 1;
            let p = Program::compile(&f, 8);
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
    println!("print fmts: {total} parsed ({parse_err} format files failed to parse)");
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
    assert!(total == 0 || (ok + npartial) * 10 >= total * 9, "less than 90% of print fmts compile");
}
