//! Format-file, header_page and header_event parsers on arbitrary text; the
//! parsed fields are then used to read an arbitrary record.

use crate::abi::Endian;
use crate::format::{parse_field_line, EventFormat, EventTable, HeaderEvent, HeaderPage};
use alloc::string::String;

/// One input of the `format` target.
pub fn format(data: &[u8]) {
    // First byte: long size and endian; the rest: text, then (after a NUL)
    // a record to read with the parsed fields.
    let Some((&sel, rest)) = data.split_first() else { return };
    let long = if sel & 1 == 0 { 8 } else { 4 };
    let e = if sel & 2 == 0 { Endian::Little } else { Endian::Big };
    let (text, rec) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let text = String::from_utf8_lossy(text);
    if let Ok(h) = HeaderPage::parse(&text) {
        assert!(h.commit_size == 4 || h.commit_size == 8);
        let _ = h.subbuf_size();
    }
    let _ = HeaderEvent::parse(&text);
    for line in text.lines() {
        let _ = parse_field_line(line, long);
    }
    if let Ok(ev) = EventFormat::parse(&text, "fuzz", long) {
        for f in ev.all_fields() {
            let _ = f.bytes(rec, e);
            let _ = f.int(rec, e);
        }
        let _ = ev.min_record_size();
        let mut t = EventTable::new();
        let id = ev.id;
        t.insert(ev.clone());
        assert!(t.get(id).is_some());
        t.insert(ev);
        assert_eq!(t.iter().count(), 1);
        let _ = t.event_of(rec, e);
    }
}
