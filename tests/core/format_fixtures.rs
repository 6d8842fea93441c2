//! Every format file of the qemu board trees (tests/fixtures: arm64, armv7,
//! x86_64 6.1 kernels, ftrace-internal events included) parses, arrays are
//! consistent, and element sizes follow the kernel's long size.

use super::common;
use std::path::Path;
use trbox::format::{EventFormat, FieldKind, HeaderPage};

fn walk(dir: &Path, sys: &str, long: u32, out: &mut Vec<EventFormat>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.join("format").is_file() {
            let text = std::fs::read_to_string(p.join("format")).unwrap();
            out.push(EventFormat::parse(&text, sys, long).unwrap_or_else(|err| panic!("{}: {err}", p.display())));
        } else if p.is_dir() && sys.is_empty() {
            walk(&p, &e.file_name().to_string_lossy(), long, out);
        }
    }
}

#[test]
fn board_formats() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut trees = 0;
    for arch in ["aarch64", "armv7", "x86_64"] {
        for sc in std::fs::read_dir(root.join(arch)).into_iter().flatten().flatten() {
            let dir = sc.path();
            let Ok(hp) = std::fs::read_to_string(dir.join("events/header_page")) else { continue };
            let hp = HeaderPage::parse(&hp).unwrap();
            let long = hp.long_size();
            assert_eq!(long, if arch == "armv7" { 4 } else { 8 });
            assert_eq!(hp.data_offset, 8 + long);
            let mut evs = Vec::new();
            walk(&dir.join("events"), "", long, &mut evs);
            assert!(!evs.is_empty());
            for ev in &evs {
                assert!(
                    ev.common.iter().any(|f| f.name == "common_type" && f.offset == 0 && f.size == 2),
                    "{}",
                    ev.name
                );
                for f in ev.all_fields() {
                    if let FieldKind::Array { elem_size, count } = f.kind {
                        assert_eq!(elem_size * count, f.size, "{arch} {}: {}", ev.name, f.name);
                    }
                }
                match ev.name.as_str() {
                    "kernel_stack" | "user_stack" => {
                        let c = ev.field("caller").unwrap();
                        assert_eq!(c.kind, FieldKind::Array { elem_size: long, count: 8 }, "{arch} {}", ev.name);
                    }
                    "function" => {
                        assert_eq!(ev.field("ip").unwrap().size, long);
                        assert_eq!(ev.field("parent_ip").unwrap().size, long);
                    }
                    "funcgraph_entry" | "funcgraph_exit" => {
                        assert_eq!(ev.field("func").unwrap().size, long, "{arch} {}", ev.name);
                        assert!(ev.field("depth").is_some());
                    }
                    "print" => {
                        assert!(matches!(ev.field("buf").unwrap().kind, FieldKind::Array { elem_size: 1, .. }));
                    }
                    _ => {}
                }
            }
            trees += 1;
        }
    }
    if trees == 0 {
        common::skip("no tests/fixtures");
    }
}
