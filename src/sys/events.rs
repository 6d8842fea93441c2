//! Loading what the decoder needs from a tracefs tree (live or a copy):
//! header_page, every event format, saved_cmdlines, the clock, and — only
//! when asked — kallsyms and printk_formats.

use super::error::Error;
use super::tracefs::Tracefs;
use crate::format::{EventFormat, EventTable, HeaderPage};

/// Every `events/SYS/EVENT/format` below the top level, parsed. Formats that
/// do not parse are skipped with a debug log (their records fall back to a
/// generic line).
pub fn load_events(t: &Tracefs, long_size: u32) -> Result<EventTable, Error> {
    let mut table = EventTable::new();
    let top = t.top();
    let events = top.join("events");
    let systems = std::fs::read_dir(&events).map_err(|e| Error::io(&events, e))?;
    for sys in systems.flatten() {
        let Ok(ft) = sys.file_type() else { continue };
        if !ft.is_dir() {
            continue;
        }
        let sys_name = sys.file_name().to_string_lossy().into_owned();
        let Ok(evs) = std::fs::read_dir(sys.path()) else { continue };
        for ev in evs.flatten() {
            let path = ev.path().join("format");
            let Ok(text) = std::fs::read(&path) else { continue };
            match EventFormat::parse(&String::from_utf8_lossy(&text), &sys_name, long_size) {
                Ok(f) => {
                    table.insert(f);
                }
                Err(e) => log::debug!("{}: {e:?}", path.display()),
            }
        }
    }
    Ok(table)
}

/// `events/header_page` of the top level.
pub fn header_page(t: &Tracefs) -> Result<HeaderPage, Error> {
    let p = t.top().join("events/header_page");
    let text = std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
    HeaderPage::parse(&text).map_err(|e| Error::Format { path: p, line: e.line, what: format!("{:?}", e.kind) })
}
