//! The symbols of a trace session ([`LazyKallsyms`]): a tracefs tree's
//! kallsyms (/proc/kallsyms live, the `kallsyms` file of a copy) or a
//! trace.dat's, read only when a record needs a symbol. `sys::trace`
//! assembles a session with them.

use super::tracefs::Tracefs;

/// This boot's `_text` and `_stext`.
type TextStext = (Option<u64>, Option<u64>);

/// The live /proc/kallsyms, read by [`read_live_ahead`] before a function
/// tracer went live; the next live session's table takes it (and frees it).
static LIVE_AHEAD: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

const LIVE: &str = "/proc/kallsyms";

/// Read /proc/kallsyms now, before the run sets a function tracer (function,
/// function_graph) on every kernel function: read later, when the first
/// record is shown, each of the millions of kernel calls that read makes
/// goes through the tracer's hooks (16-21 s of system time in one tr-graph
/// run on a TCG board, where switching function_graph on and off took
/// 2.6 s) and the window records them too. The next live session's
/// symbols (`LazyKallsyms::for_tree`) are parsed from this text.
pub(crate) fn read_live_ahead() {
    if let (Ok(text), Ok(mut ahead)) = (std::fs::read_to_string(LIVE), LIVE_AHEAD.lock()) {
        *ahead = Some(text);
    }
}

/// The text [`read_live_ahead`] read, taken (once), or the file read now.
fn read_symbols(p: &std::path::Path) -> Option<String> {
    let ahead = (p == std::path::Path::new(LIVE)).then(|| LIVE_AHEAD.lock().ok()?.take()).flatten();
    ahead.or_else(|| std::fs::read_to_string(p).ok())
}

/// Symbols, read and parsed on first use only (a board's /proc/kallsyms can
/// be megabytes; most event streams never need it).
pub struct LazyKallsyms {
    path: Option<std::path::PathBuf>,
    /// The text itself (from a trace.dat), instead of a path.
    text: Option<Vec<u8>>,
    table: std::sync::OnceLock<Option<crate::kallsyms::Kallsyms>>,
    /// The traced kernel's version, for what its lookups resolve
    /// ([`crate::kallsyms::Kallsyms::set_kernel`]).
    version: Option<(u32, u32)>,
    /// `in_gate_area_no_mm()`'s page: known of the running kernel only.
    gate: Option<(u64, u64)>,
    /// Records of a previous boot: their addresses move to this boot's
    /// before the lookup, with the current `_text` and `_stext` (found
    /// once).
    last_boot: Option<(crate::lastboot::LastBoot, std::sync::OnceLock<TextStext>)>,
    /// The CPUs the table is read on ([`LazyKallsyms::read_on`]).
    #[cfg(feature = "slices")]
    cpus: std::sync::atomic::AtomicUsize,
}

impl LazyKallsyms {
    /// A copy of a tracefs tree takes symbols from its own `kallsyms` file
    /// (never from this machine); the live tracefs from /proc/kallsyms.
    pub(crate) fn for_tree(t: &Tracefs) -> Self {
        let path = if t.is_live() { Some(LIVE.into()) } else { Some(t.top().join("kallsyms")).filter(|p| p.is_file()) };
        let gate = if t.is_live() { gate_area() } else { None };
        let syms = LazyKallsyms { path, text: None, gate, ..LazyKallsyms::from_text(Vec::new()) };
        // A persistent buffer's previous boot: its addresses move first.
        match last_boot(t) {
            Some(lb) => syms.with_last_boot(lb),
            None => syms,
        }
    }

    /// Symbols from a kallsyms text held in memory (a trace.dat's).
    pub(crate) fn from_text(text: Vec<u8>) -> Self {
        LazyKallsyms {
            path: None,
            text: Some(text),
            table: std::sync::OnceLock::new(),
            version: None,
            gate: None,
            last_boot: None,
            #[cfg(feature = "slices")]
            cpus: std::sync::atomic::AtomicUsize::new(1),
        }
    }

    /// Read the table, when a record first needs it, on up to `n` CPUs: a
    /// reader working on `n` waits for it otherwise (each worker that
    /// prints a symbol), 6 ms of a 5 MB table on one CPU of this machine.
    #[cfg(feature = "slices")]
    pub(crate) fn read_on(&self, n: usize) {
        self.cpus.store(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// The CPUs the table is read on.
    fn cpus(&self) -> usize {
        #[cfg(feature = "slices")]
        return self.cpus.load(std::sync::atomic::Ordering::Relaxed);
        #[cfg(not(feature = "slices"))]
        1
    }

    /// Look addresses up as kernel `version` does (the session's, once
    /// known).
    pub(crate) fn set_kernel(&mut self, version: Option<(u32, u32)>) {
        self.version = version;
        if let Some(Some(t)) = self.table.get_mut() {
            t.set_kernel(version);
        }
    }

    /// Look addresses of a previous boot up (a persistent buffer's records,
    /// trace.dat option 24) after moving them to this boot's.
    pub(crate) fn with_last_boot(mut self, lb: crate::lastboot::LastBoot) -> Self {
        self.last_boot = Some((lb, std::sync::OnceLock::new()));
        self
    }

    /// The table, read now if it was not yet.
    pub(crate) fn table(&self) -> Option<&crate::kallsyms::Kallsyms> {
        self.get()
    }

    /// The table (empty when there are no symbols), read now if it was not.
    #[cfg(test)]
    pub(crate) fn into_table(self) -> crate::kallsyms::Kallsyms {
        self.get();
        self.table.into_inner().flatten().unwrap_or_default()
    }

    fn get(&self) -> Option<&crate::kallsyms::Kallsyms> {
        self.table
            .get_or_init(|| {
                let mut k = match (&self.path, &self.text) {
                    (Some(p), _) => parse(read_symbols(p)?.as_bytes(), self.cpus()),
                    (None, Some(t)) => parse(t, self.cpus()),
                    (None, None) => return None,
                };
                k.set_kernel(self.version);
                if let Some((s, e)) = self.gate {
                    k.set_gate_area(s, e);
                }
                Some(k)
            })
            .as_ref()
    }
}

impl crate::printfmt::SymbolLookup for LazyKallsyms {
    fn lookup(&self, addr: u64) -> Option<crate::printfmt::Sym<'_>> {
        let addr = match self.last_boot() {
            Some(v) => v.moved.adjust(addr, v.text),
            None => addr,
        };
        self.get()?.lookup(addr)
    }
    fn last_boot(&self) -> Option<crate::printfmt::vsprintf::LastBootView<'_>> {
        let (moved, at) = self.last_boot.as_ref()?;
        let table = self.get()?;
        let &(text, stext) = at.get_or_init(|| (table.address_of("_text"), table.address_of("_stext")));
        Some(crate::printfmt::vsprintf::LastBootView { moved, syms: table, text, stext })
    }
    fn kretprobe_trampoline(&self) -> Option<crate::printfmt::KretprobeTrampoline> {
        crate::printfmt::SymbolLookup::kretprobe_trampoline(self.get()?)
    }
}

/// The table of `text`, read in parts on up to `cpus` CPUs when it is big
/// enough (a part per MB at most).
#[cfg(feature = "slices")]
fn parse(text: &[u8], cpus: usize) -> crate::kallsyms::Kallsyms {
    use crate::kallsyms::{Kallsyms, Part};
    let n = cpus.min(text.len() >> 20).max(1);
    // Parts of whole lines: each cut just after a newline.
    let mut cuts = vec![0];
    for i in 1..n {
        let at = text.len() / n * i;
        let Some(nl) = text.get(at..).and_then(|t| t.iter().position(|&c| c == b'\n')) else { break };
        cuts.push(at + nl + 1);
    }
    cuts.push(text.len());
    let ranges: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).filter(|(a, b)| a < b).collect();
    let parts = super::thread::map(ranges, n, &|(a, b)| Kallsyms::part(text.get(a..b).unwrap_or_default()));
    parts.into_iter().reduce(Part::join).map_or_else(Kallsyms::default, Part::finish)
}

#[cfg(not(feature = "slices"))]
fn parse(text: &[u8], _: usize) -> crate::kallsyms::Kallsyms {
    crate::kallsyms::Kallsyms::parse(text)
}

/// The running kernel's `in_gate_area_no_mm()` page, from /proc/self/maps:
/// x86_64's `[vsyscall]` (none with vsyscall=none), a 32-bit arm kernel's
/// `[vectors]` (CONFIG_KUSER_HELPERS; an arm64 kernel has none, though it
/// maps `[vectors]` into 32-bit tasks). Other architectures have none.
#[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
fn gate_area() -> Option<(u64, u64)> {
    if cfg!(target_arch = "arm") && !super::uname()?[4].starts_with("arm") {
        return None;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let l = maps.lines().find(|l| l.ends_with("[vsyscall]") || l.ends_with("[vectors]"))?;
    let (s, e) = l.split_whitespace().next()?.split_once('-')?;
    Some((u64::from_str_radix(s, 16).ok()?, u64::from_str_radix(e, 16).ok()?))
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "arm")))]
fn gate_area() -> Option<(u64, u64)> {
    None
}

/// The current boot's `/proc/modules` (a copy's `modules` file): where the
/// modules of a previous boot are now.
pub(crate) fn modules_text(t: &Tracefs) -> String {
    let p = if t.is_live() { "/proc/modules".into() } else { t.top().join("modules") };
    std::fs::read_to_string(p).unwrap_or_default()
}

/// What the `last_boot_info` of the buffer `t` works in says, when the
/// buffer holds a previous boot's records (a persistent instance, 6.12+).
pub(crate) fn last_boot(t: &Tracefs) -> Option<crate::lastboot::LastBoot> {
    // The persistent ring buffer's previous boot (feature boot): without
    // it, addresses are looked up as they are.
    if !cfg!(feature = "boot") {
        return None;
    }
    let info = t.read_opt("last_boot_info").ok()??;
    crate::lastboot::LastBoot::parse(&info, &modules_text(t))
}
