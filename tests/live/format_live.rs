//! Parse every format file of this machine's tracefs (read-only; skipped
//! when no tracefs is readable).

use super::common;
use std::path::Path;
use trbox::format::{EventFormat, EventTable, FieldKind, HeaderEvent, HeaderPage};

/// Read a tracefs text file. `events/header_page` returns EOF after a short
/// first read (the kernel regenerates it per read), so read with one big
/// buffer first, as `read_to_string` starts with a 32-byte probe.
fn read_text(p: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(p)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
        let n = f.read(&mut buf[len..])?;
        if n == 0 {
            break;
        }
        len += n;
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[test]
fn every_live_format_parses() {
    let Some(root) = common::live_tracefs() else { return };
    // Read only, but other tests' dynamic events come and go meanwhile.
    let _lock = common::TracefsLock::take();
    let hp = read_text(&root.join("events/header_page")).expect("events/header_page");
    let hp = HeaderPage::parse(&hp).expect("header_page");
    assert!(hp.subbuf_size() >= 4096);
    let he = HeaderEvent::parse(&read_text(&root.join("events/header_event")).unwrap());
    assert!(!he.old_format);
    let mut table = EventTable::new();
    let mut n = 0;
    for sys in std::fs::read_dir(root.join("events")).unwrap().flatten() {
        if !sys.path().is_dir() {
            continue;
        }
        let sysname = sys.file_name().to_string_lossy().into_owned();
        for ev in std::fs::read_dir(sys.path()).unwrap().flatten() {
            let path = ev.path().join("format");
            if !path.is_file() {
                continue;
            }
            let text = read_text(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let e = EventFormat::parse(&text, &sysname, hp.long_size())
                .unwrap_or_else(|err| panic!("{}: {err}", ev.path().display()));
            assert!(!e.common.is_empty(), "{}", ev.path().display());
            assert!(e.common.iter().all(|f| f.is_common()), "{}", ev.path().display());
            assert!(e.fields.iter().all(|f| !f.is_common()), "{}", ev.path().display());
            for f in e.all_fields() {
                if let FieldKind::Array { elem_size, count } = f.kind {
                    assert_eq!(elem_size * count, f.size, "{}: {}", ev.path().display(), f.name);
                }
            }
            let id = e.id;
            assert!(table.insert(e).is_none(), "duplicate id {id}");
            n += 1;
        }
    }
    // sched_switch: every kernel with tracepoints has it (its comm arrays
    // are TASK_COMM_LEN, 16, on every version).
    assert!(n > 0, "no format file under {}/events", root.display());
    let sw = table.by_name("sched:sched_switch").unwrap();
    assert_eq!(table.get(sw.id).unwrap().name, "sched_switch");
    assert_eq!(sw.field("prev_comm").unwrap().kind, FieldKind::Array { elem_size: 1, count: 16 });
    eprintln!("{n} formats parsed");
}
