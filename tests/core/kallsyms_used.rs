//! The console form's symbols (`tr-cat -o - --console` sends only the
//! kallsyms lines its pages name, [`trbox::kallsyms::UsedSymbols`]) on the
//! real trees of the qemu boards (tests/fixtures/BOARD/SCENARIO): for every
//! word of every page, the cut table names it as the whole table does
//! (symbol, offset, size, module), and so do the lookups by name the
//! readers make; the cut table is the whole one's lines, in order.

use super::common;

use std::path::{Path, PathBuf};

use trbox::abi::{Abi, Endian};
use trbox::kallsyms::{Kallsyms, UsedSymbols};

/// The fixture trees with a kallsyms.
fn trees() -> Vec<PathBuf> {
    common::fixture_trees().into_iter().filter(|d| d.join("kallsyms").is_file()).collect()
}

/// Each CPU's trace_pipe_raw of a tree, whole.
fn pages(dir: &Path) -> Vec<Vec<u8>> {
    std::fs::read_dir(dir.join("per_cpu"))
        .unwrap()
        .flatten()
        .filter_map(|c| std::fs::read(c.path().join("trace_pipe_raw")).ok())
        .collect()
}

#[test]
fn used_symbols_name_every_word_of_the_fixtures_as_the_whole_table() {
    let trees = trees();
    if trees.is_empty() {
        common::skip("no tests/fixtures");
        return;
    }
    let (mut words, mut kept, mut all) = (0u64, 0usize, 0usize);
    for dir in &trees {
        let name = dir.display().to_string();
        let trace = trbox::sys::trace::open(dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        let sb = trace.layout.subbuf_size();
        // All the boards are little endian (tests/fixtures/README.md).
        let abi = Abi::new(Endian::Little, trace.long_size());
        let text = std::fs::read_to_string(dir.join("kallsyms")).unwrap();
        let mut u = UsedSymbols::new();
        u.table_piece(text.as_bytes());
        u.table_done();
        let cpus = pages(dir);
        for raw in &cpus {
            for page in raw.chunks(sb) {
                u.scan(page, abi);
            }
        }
        let mut cut = Vec::new();
        u.filter_piece(text.as_bytes(), &mut cut);
        u.filter_done(&mut cut);
        let cut = String::from_utf8(cut).unwrap();
        // The whole table's lines, in its order.
        let mut lines = text.lines();
        for l in cut.lines() {
            assert!(lines.any(|w| w == l), "{name}: {l:?} not in the table's order");
        }
        let (whole, part) = (Kallsyms::parse(text.as_bytes()), Kallsyms::parse(cut.as_bytes()));
        for n in ["_text", "_stext", "_end", "_etext", "__irqentry_text_start", "__irqentry_text_end"] {
            assert_eq!(whole.address_of(n), part.address_of(n), "{name}: {n}");
        }
        use trbox::printfmt::SymbolLookup;
        assert_eq!(whole.kretprobe_trampoline(), part.kretprobe_trampoline(), "{name}");
        for raw in &cpus {
            for page in raw.chunks(sb) {
                for at in (0..page.len()).step_by(4) {
                    let Some(v) = abi.endian.uint(page, at, abi.long_size as usize) else { break };
                    words += 1;
                    assert_eq!(whole.lookup(v), part.lookup(v), "{name}: {v:#x}");
                    assert_eq!(whole.in_image(v), part.in_image(v), "{name}: {v:#x}");
                }
            }
        }
        kept += part.len();
        all += whole.len();
    }
    assert!(words > 100_000 && kept < all, "{words} words; {kept} of {all} symbols kept");
}
