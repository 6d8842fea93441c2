//! Tiny C programs built by the tests (uprobe targets): a noinline
//! `trbox_probe_me(int)` called with the first argument, as PIE, non-PIE
//! and stripped binaries.

use std::path::{Path, PathBuf};
use std::process::Command;

pub const FUNC: &str = "trbox_probe_me";

const SOURCE: &str = r#"
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) int trbox_probe_me(int x) { __asm__ volatile(""); return x * 3 + 1; }
static __attribute__((noinline)) int trbox_local_helper(int x) { __asm__ volatile(""); return x - 1; }
int main(int argc, char **argv) {
    int v = argc > 1 ? atoi(argv[1]) : 7;
    printf("%d\n", trbox_probe_me(trbox_local_helper(v) + 1));
    return 0;
}
"#;

/// The built programs.
pub struct Progs {
    pub pie: PathBuf,
    pub nopie: PathBuf,
    pub stripped: PathBuf,
}

/// Does `tool` run here?
pub fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
}

/// Compile `src` with `cc` and `flags` into `out`; false (with the reason
/// printed) when the compiler fails.
pub fn cc(cc: &str, src: &str, flags: &[&str], out: &Path) -> bool {
    let c = out.with_extension("c");
    std::fs::write(&c, src).unwrap();
    let o = Command::new(cc).args(flags).arg("-o").arg(out).arg(&c).output();
    match o {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            super::skip(&format!("part: {cc} {flags:?} failed: {}", String::from_utf8_lossy(&o.stderr)));
            false
        }
        Err(e) => {
            super::skip_tool(cc, &format!("part: no {cc}: {e}"));
            false
        }
    }
}

/// Build the test programs into `dir`; None (reason printed) without gcc.
pub fn build(dir: &Path) -> Option<Progs> {
    if !have("gcc") || !have("strip") {
        super::skip_tool("gcc", "no gcc/strip to build the uprobe test programs");
        return None;
    }
    let p = Progs { pie: dir.join("pie"), nopie: dir.join("nopie"), stripped: dir.join("stripped") };
    if !cc("gcc", SOURCE, &["-O1", "-fPIE", "-pie"], &p.pie)
        || !cc("gcc", SOURCE, &["-O1", "-fno-pie", "-no-pie"], &p.nopie)
    {
        return None;
    }
    let ok =
        Command::new("strip").arg("-o").arg(&p.stripped).arg(&p.pie).status().map(|s| s.success()).unwrap_or(false);
    ok.then_some(p)
}

/// The file offset objdump -dF gives for `func` in `bin`.
pub fn objdump_offset(bin: &Path, func: &str) -> Option<u64> {
    let o = Command::new("objdump").arg("-dF").arg(bin).output().ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    let tag = format!("<{func}> (File Offset: 0x");
    let line = text.lines().find(|l| !l.starts_with(' ') && l.contains(&tag))?;
    let hex = line.split(&tag).nth(1)?.trim_end_matches("):");
    u64::from_str_radix(hex, 16).ok()
}
