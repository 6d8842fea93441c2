//! A persistent ring buffer's previous boot (issue 30): the instance
//! boot_mapped of the aarch64 7.2 and 6.12 boards after a crash and a warm
//! reboot (cross/qemu/lastboot.sh), copied with its `last_boot_info`
//! (tests/data/lastboot/BOARD: the kernel's `trace`, the raw pages, the
//! formats, kallsyms cut to what the trace names). qemu did not move the
//! kernel (nokaslr: delta 0), so the tests also move it: every kallsyms
//! address shifted as KASLR would, and the previous boot's addresses must
//! move by the delta `last_boot_info` gives before the lookup.

use crate::common::*;
use std::path::{Path, PathBuf};

const BOARDS: [&str; 2] = ["aarch64-7.2", "aarch64-6.12"];

fn board(b: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lastboot").join(b)
}

/// The kernel's own text of the buffer, its '#' header left out.
fn kernel_lines(d: &Path) -> Vec<String> {
    let t = std::fs::read_to_string(d.join("trace")).unwrap();
    t.lines().filter(|l| !l.starts_with('#')).map(String::from).collect()
}

/// trbox's decoding of the raw pages (`tr-cat --raw -T DIR`), its '#'
/// header left out.
fn raw_lines(d: &Path) -> Vec<String> {
    let o = run(&["tr-cat", "--raw", "-T", d.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).lines().filter(|l| !l.starts_with('#')).map(String::from).collect()
}

#[test]
fn the_previous_boots_pages_read_as_the_kernel_printed_them() {
    for b in BOARDS {
        let k = kernel_lines(&board(b));
        assert!(k.iter().any(|l| l.ends_with("__handle_sysrq <-write_sysrq_trigger")), "{b}");
        assert!(k.iter().any(|l| *l == " => el0_svc"), "{b}: a stack trace");
        assert_eq!(raw_lines(&board(b)), k, "{b}");
    }
}

#[test]
fn addresses_of_the_previous_boot_move_by_the_delta_last_boot_info_gives() {
    // This boot's kernel 0x1234_5000 bytes higher (a KASLR move).
    const D: u64 = 0x1234_5000;
    for b in BOARDS {
        let tmp = TempDir::new("lastboot");
        copy_tree(&board(b), tmp.path());
        let ks = std::fs::read_to_string(board(b).join("kallsyms")).unwrap();
        let moved: String = ks
            .lines()
            .map(|l| {
                let (a, rest) = l.split_once(' ').unwrap();
                format!("{:016x} {rest}\n", u64::from_str_radix(a, 16).unwrap() + D)
            })
            .collect();
        std::fs::write(tmp.path().join("kallsyms"), moved).unwrap();
        // 7.2 names the previous boot's _text (unchanged: the pages are
        // that boot's); 6.12 states the delta.
        if b.ends_with("6.12") {
            std::fs::write(tmp.path().join("last_boot_info"), format!("text delta:\t{D}\ndata delta:\t{D}\n")).unwrap();
        }
        let k = kernel_lines(&board(b));
        assert_eq!(raw_lines(tmp.path()), k, "{b}: moved by {D:#x}");
        // Without last_boot_info the old addresses name other symbols.
        std::fs::remove_file(tmp.path().join("last_boot_info")).unwrap();
        let wrong = raw_lines(tmp.path());
        assert!(!wrong.iter().any(|l| l.ends_with("__handle_sysrq <-write_sysrq_trigger")), "{b}");
    }
}
