//! A persistent ring buffer's previous boot (issue 30): the instance
//! boot_mapped of the aarch64 7.2 and 6.12 boards after a crash and a warm
//! reboot (cross/qemu/lastboot.sh), copied with its `last_boot_info`
//! (tests/data/lastboot/BOARD: the kernel's `trace`, the raw pages, the
//! formats, kallsyms cut to what the trace names). qemu did not move the
//! kernel (nokaslr: delta 0), so the tests also move it: every kallsyms
//! address shifted as KASLR would, and the previous boot's addresses must
//! move by the delta `last_boot_info` gives before the lookup, and the
//! events print as the kernel then prints them: by their fields
//! (`print_event_fields()`; cross/qemu/lastboot.sh checks the same against
//! the kernel's own text on boards booted with KASLR).

use super::common::*;
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

/// The kernel's text of the same records once its kernel has moved
/// (`print_trace_fmt()` calls `print_event_fields()`): every event but
/// ftrace's own by its fields, `0x%x (%d)` for the 4-byte pids, `%.*s` for
/// the file name; on 6.12 the syscall events too (`__syscall_nr` is
/// arm64's `__NR_write`, 64; a `const char *` is `(0x%px)`, the kernel
/// failing to read it), on 7.2 (6.19 on) those as they were.
fn moved_lines(k: &[String], b: &str) -> Vec<String> {
    let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
    k.iter()
        .map(|l| {
            if let Some((pre, rest)) = l.split_once("sched_process_exec: filename=") {
                let (f, rest) = rest.split_once(" pid=").unwrap();
                let (p, o) = rest.split_once(" old_pid=").unwrap();
                let (p, o): (u64, u64) = (p.parse().unwrap(), o.parse().unwrap());
                format!("{pre}sched_process_exec: filename={f} pid={p:#x} ({p}) old_pid={o:#x} ({o})")
            } else if let (Some((pre, rest)), true) = (l.split_once("sys_write(fd: "), b.ends_with("6.12")) {
                let v: Vec<&str> = rest.trim_end_matches(')').split(", ").collect();
                let (fd, buf, n) = (hex(v[0]), hex(v[1].trim_start_matches("buf: ")), hex(v[2].trim_start_matches("count: ")));
                format!("{pre}sys_enter_write: __syscall_nr=0x40 (64) fd={fd:#x} ({fd}) buf=(0x{buf:016x}) count={n:#x} ({n})")
            } else {
                l.clone()
            }
        })
        .collect()
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
        let got = raw_lines(tmp.path());
        // Functions and stacks by the moved addresses, the events by their
        // fields.
        assert_eq!(got, moved_lines(&k, b), "{b}: moved by {D:#x}");
        assert!(got.iter().any(|l| l.ends_with("__handle_sysrq <-write_sysrq_trigger")), "{b}");
        assert!(got.iter().any(|l| l.contains("sched_process_exec: filename=/bin/sh pid=0x")), "{b}");
        assert_eq!(
            got.iter().any(|l| l.contains("sys_enter_write: __syscall_nr=0x40 (64) fd=0x1 (1) buf=(0x")),
            b.ends_with("6.12"),
            "{b}"
        );
        // Without last_boot_info the old addresses name other symbols, and
        // the events keep their print fmt.
        std::fs::remove_file(tmp.path().join("last_boot_info")).unwrap();
        let wrong = raw_lines(tmp.path());
        assert!(!wrong.iter().any(|l| l.ends_with("__handle_sysrq <-write_sysrq_trigger")), "{b}");
        assert!(wrong.iter().any(|l| l.contains("sched_process_exec: filename=/bin/sh pid=1")), "{b}");
    }
}

#[test]
fn a_last_boot_info_of_a_kernel_that_did_not_move_keeps_the_print_fmt() {
    // 6.12 with zero deltas (traced since, or nokaslr): the print fmt.
    let tmp = TempDir::new("lastboot");
    copy_tree(&board("aarch64-6.12"), tmp.path());
    assert_eq!(std::fs::read_to_string(tmp.path().join("last_boot_info")).unwrap(), "text delta:\t0\ndata delta:\t0\n");
    assert_eq!(raw_lines(tmp.path()), kernel_lines(&board("aarch64-6.12")));
    // A data delta alone is a move (6.12's print_trace_fmt()).
    std::fs::write(tmp.path().join("last_boot_info"), "text delta:\t0\ndata delta:\t4096\n").unwrap();
    assert_eq!(raw_lines(tmp.path()), moved_lines(&kernel_lines(&board("aarch64-6.12")), "aarch64-6.12"));
}
