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
            let Ok(text) = super::read_text(&path) else { continue };
            match EventFormat::parse(&text, &sys_name, long_size) {
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
    let text = super::read_text(&p).map_err(|e| Error::io(&p, e))?;
    HeaderPage::parse(&text).map_err(|e| Error::Format { path: p, line: e.line, what: format!("{:?}", e.kind) })
}

/// Symbols, read and parsed on first use only (a board's /proc/kallsyms can
/// be megabytes; most event streams never need it).
pub struct LazyKallsyms {
    path: Option<std::path::PathBuf>,
    /// The text itself (from a trace.dat), instead of a path.
    text: Option<Vec<u8>>,
    table: std::sync::OnceLock<Option<crate::kallsyms::Kallsyms>>,
}

impl LazyKallsyms {
    /// A copy of a tracefs tree takes symbols from its own `kallsyms` file
    /// (never from this machine); the live tracefs from /proc/kallsyms.
    pub fn for_tree(t: &Tracefs) -> Self {
        let path = if t.is_live() {
            Some("/proc/kallsyms".into())
        } else {
            Some(t.top().join("kallsyms")).filter(|p| p.is_file())
        };
        LazyKallsyms { path, text: None, table: std::sync::OnceLock::new() }
    }

    /// Symbols from a kallsyms text held in memory (a trace.dat's).
    pub fn from_text(text: Vec<u8>) -> Self {
        LazyKallsyms { path: None, text: Some(text), table: std::sync::OnceLock::new() }
    }

    /// The table, read now if it was not yet.
    pub fn table(&self) -> Option<&crate::kallsyms::Kallsyms> {
        self.get()
    }

    fn get(&self) -> Option<&crate::kallsyms::Kallsyms> {
        self.table
            .get_or_init(|| {
                if let Some(t) = &self.text {
                    return Some(crate::kallsyms::Kallsyms::parse(&String::from_utf8_lossy(t)));
                }
                let text = std::fs::read_to_string(self.path.as_ref()?).ok()?;
                Some(crate::kallsyms::Kallsyms::parse(&text))
            })
            .as_ref()
    }
}

impl crate::printfmt::SymbolLookup for LazyKallsyms {
    fn lookup(&self, addr: u64) -> Option<crate::printfmt::Sym<'_>> {
        self.get()?.lookup(addr)
    }
    fn kretprobe_trampoline(&self) -> Option<crate::printfmt::KretprobeTrampoline> {
        crate::printfmt::SymbolLookup::kretprobe_trampoline(self.get()?)
    }
}

/// The byte order of a copied tree's raw pages: the one under which a page
/// header makes sense (live data is always native).
pub fn guess_endian(layout: &crate::page::PageLayout, page: &[u8]) -> Option<crate::format::Endian> {
    use crate::format::Endian;
    use crate::page::Page;
    let ok = |e| Page::parse(page, layout, e).map(|p| p.len > 0).unwrap_or(false);
    match (ok(Endian::Little), ok(Endian::Big)) {
        (true, false) => Some(Endian::Little),
        (false, true) => Some(Endian::Big),
        _ => None,
    }
}
