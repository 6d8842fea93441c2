//! Opening a trace session ([`crate::trace::Trace`]): from the live tracefs,
//! a copy of a tracefs tree (`events/`, `header_page`, `kallsyms`,
//! `printk_formats`, `saved_cmdlines`, `uname`…) or a trace.dat file. The
//! parsing is the core's; this only reads the files.

use super::error::{describe, Error};
use super::kallsyms::LazyKallsyms;
use super::raw::RawPages;
use super::tracefs::Tracefs;
use crate::abi::Endian;
use crate::format::HeaderPage;
use crate::page::{guess_endian, PageLayout};
use crate::printk::PrintkFormats;
use crate::problems::ProblemKind;
use crate::trace::{KernelProfile, Trace};
use crate::tracedat::TraceDat;
use std::path::{Path, PathBuf};

/// A session read from files: symbols are parsed on first use.
pub(crate) type Opened = Trace<LazyKallsyms>;

/// A tracefs tree given as a directory (a copy, or the live one), or a
/// trace.dat file.
pub fn open(path: &Path) -> Result<Opened, Error> {
    if path.is_dir() {
        open_tree(&Tracefs::at(path)?)
    } else {
        open_dat(path).map(|(t, _)| t)
    }
}

/// Like [`open`], with the symbols read and parsed now.
#[cfg(test)]
pub(crate) fn open_parsed(path: &Path) -> Result<Trace, Error> {
    Ok(open(path)?.map_symbols(LazyKallsyms::into_table))
}

/// The session of a tracefs tree: the live one, or a copy (whose pages may
/// come from a big-endian board, and whose kernel is the one in its
/// `uname` or `version` file, never this machine's). The clock is that of
/// `t`'s instance; the rest is the top level's.
pub(crate) fn open_tree(t: &Tracefs) -> Result<Opened, Error> {
    let (header, endian) = tree_header(t)?;
    open_tree_with(t, header, endian, None)
}

/// `events/header_page` of the top level.
pub(crate) fn header_page(t: &Tracefs) -> Result<HeaderPage, Error> {
    let p = t.top().join("events/header_page");
    let text = super::read_text(&p).map_err(|e| Error::io(&p, e))?;
    HeaderPage::parse(&text).map_err(|e| Error::Format {
        path: p,
        line: e.line,
        what: crate::format::FormatError { line: 0, ..e }.to_string(),
    })
}

/// What the raw pages of a tree need, and nothing more (header_page and the
/// byte order): enough to start reading them before the rest is opened
/// ([`open_tree_with`]).
pub(crate) fn tree_header(t: &Tracefs) -> Result<(crate::format::HeaderPage, Endian), Error> {
    let header = header_page(t)?;
    let endian = detect_endian(t, &PageLayout::from(&header))?;
    Ok((header, endian))
}

/// [`open_tree`] with the header and byte order [`tree_header`] found.
/// `systems`: only these event systems' formats, and ftrace's (a reader of a
/// few events of its own spares reading some 1,500 format files).
pub(crate) fn open_tree_with(
    t: &Tracefs,
    header: crate::format::HeaderPage,
    endian: Endian,
    systems: Option<&[&str]>,
) -> Result<Opened, Error> {
    open_tree_texts(t, header, endian, systems, None).map(|(trace, _)| trace)
}

/// The texts of a tree that writers of other formats keep as they are
/// (Perfetto's thread names, its system info): read once, with the session.
#[derive(Default)]
pub(crate) struct TreeTexts {
    /// `saved_cmdlines` (empty when missing).
    pub(crate) saved_cmdlines: String,
    /// A copy's `uname` (or `version`) file; `None` live, where the session
    /// asks uname(2).
    pub(crate) uname: Option<String>,
}

/// [`open_tree_with`], and the texts it read that a writer of another
/// format wants verbatim; `kernel`: read as of this release (`--kernel`),
/// whatever the tree says.
pub(crate) fn open_tree_texts(
    t: &Tracefs,
    header: crate::format::HeaderPage,
    endian: Endian,
    systems: Option<&[&str]>,
    kernel: Option<&str>,
) -> Result<(Opened, TreeTexts), Error> {
    let mut trace = Trace::new(header, endian, LazyKallsyms::for_tree(t));
    add_formats(t, &mut trace, systems)?;
    let saved_cmdlines = t.read_top_opt("saved_cmdlines")?.unwrap_or_default();
    trace.set_cmdlines(&saved_cmdlines);
    if let Some(w) = trace.cmdlines.too_large() {
        log::warn!("{}: {w}", t.top().display());
    }
    trace.printk = PrintkFormats::parse(&t.read_top_opt("printk_formats")?.unwrap_or_default());
    let clock = t.read_opt("trace_clock")?.unwrap_or_default();
    trace.clock = crate::ctl::selected(&clock).unwrap_or("local").to_string();
    trace.cpus = t.cpus().map_or(0, |c| c.len() as u32);
    let mut uname = None;
    trace.kernel = if t.is_live() {
        KernelProfile::from_text(super::uname().as_ref().map(|u| u[2].as_str()), "uname(2)".into())
    } else {
        let top = t.top().display();
        match ["uname", "version"].iter().find_map(|f| Some((*f, t.read_top_opt(f).ok().flatten()?))) {
            Some((f, text)) => {
                let k = KernelProfile::from_text(Some(&text), format!("from {top}/{f}"));
                uname = Some(text);
                k
            }
            None => trace.inferred_kernel(&format!("the formats in {top} (no uname or version file)")),
        }
    };
    Ok((noted(trace, kernel), TreeTexts { saved_cmdlines, uname }))
}

/// Say (under -v) which kernel the session is of, and what that means; a
/// `--kernel` release replaces what was found.
fn noted(mut trace: Opened, kernel: Option<&str>) -> Opened {
    if let Some(k) = kernel {
        let found = trace.kernel.to_string();
        let found = found.split_once(" (").map_or(found.as_str(), |(v, _)| v);
        trace.kernel = KernelProfile::from_text(Some(k), format!("from --kernel {k}, in place of {found}"));
    }
    log::info!("{}", trace.kernel);
    trace.symbols.set_kernel(trace.kernel.version);
    trace
}

/// The session of a trace.dat file, and the file's sections (its buffers
/// and their pages).
pub(crate) fn open_dat(path: &Path) -> Result<(Opened, TraceDat), Error> {
    let mut td = read_dat(path)?;
    Ok((dat_session(&mut td, path, None)?, td))
}

/// A trace.dat file's sections, its warnings logged.
pub(crate) fn read_dat(path: &Path) -> Result<TraceDat, Error> {
    read_dat_from(&mut dat_file(path)?, path)
}

/// [`read_dat`] of a file already open (a stream rebuilt in memory);
/// `path` names it in messages.
pub(crate) fn read_dat_from(f: &mut std::fs::File, path: &Path) -> Result<TraceDat, Error> {
    let td = TraceDat::read(f)
        .map_err(|e| Error::TraceDat { path: path.into(), what: format!("not a readable trace.dat: {e}") })?;
    for w in &td.problems {
        log::warn!("{}: {w}", path.display());
    }
    Ok(td)
}

/// The session `td` (read from `path`) describes; its symbols text moves
/// into the session. `kernel`: read as of this release (`--kernel`),
/// whatever the file's UNAME option or formats say.
pub(crate) fn dat_session(td: &mut TraceDat, path: &Path, kernel: Option<&str>) -> Result<Opened, Error> {
    let mut syms = LazyKallsyms::from_text(std::mem::take(&mut td.kallsyms));
    let p = path.display();
    // What trace-cmd 3.4 added (options 23 to 25), and what is skipped.
    if !td.btf.is_empty() {
        log::info!(
            "{p}: BTF of the recording kernel ({} bytes, option 23): used for the enum values, struct \
             sizes and typedefs print fmts name; function arguments (func-args) are not decoded",
            td.btf.len()
        );
    }
    // (feature boot: without it, a previous boot's addresses are looked up
    // as they are.)
    match td.options.last_boot.as_ref().filter(|_| cfg!(feature = "boot")) {
        Some(info) => {
            let modules = String::from_utf8_lossy(&td.modules);
            match crate::lastboot::LastBoot::parse(info, &modules) {
                Some(lb) => {
                    log::info!(
                        "{p}: records of a previous boot (LAST_BOOT_INFO, option 24): addresses moved to \
                         this boot's ({} modules moved, from MODULES_FILE, option 25)",
                        lb.modules()
                    );
                    for s in &lb.skipped {
                        log::info!("{p}: LAST_BOOT_INFO: skipped {s}");
                    }
                    if !lb.gone.is_empty() {
                        log::info!("{p}: LAST_BOOT_INFO: modules not loaded now: {}", lb.gone.join(" "));
                    }
                    syms = syms.with_last_boot(lb);
                }
                None => log::info!("{p}: LAST_BOOT_INFO (option 24): the buffer is of this boot, nothing moves"),
            }
        }
        None if !td.modules.is_empty() => {
            log::info!("{p}: MODULES_FILE (option 25) without LAST_BOOT_INFO: not used")
        }
        None => {}
    }
    for (id, size) in &td.options.other {
        log::info!("{p}: option {id} ({size} bytes) skipped: trbox does not use it");
    }
    let trace = Trace::from_dat(td, &path.to_string_lossy(), syms)
        .map_err(|e| Error::TraceDat { path: path.into(), what: format!("header_page: {e}") })?;
    // The file's own problems were told as it was read (read_dat_from);
    // those of the session it describes (a format that does not parse, a
    // table larger than a kernel's) are told here.
    for p in trace.problems.iter().skip(td.problems.iter().count()) {
        log::warn!("{}: {p}", path.display());
    }
    Ok(noted(trace, kernel))
}

/// The trace.dat file at `path`, opened for reading (once for its sections,
/// once more for each CPU's pages).
///
/// A trace.dat that `tr-cat -o` is still recording into its pool (no table
/// until the end), or that a killed recording's guard is finishing, is
/// locked (flock): the read waits for the lock, saying so.
pub(crate) fn dat_file(path: &Path) -> Result<std::fs::File, Error> {
    let f = std::fs::File::open(path).map_err(|e| Error::TraceDat { path: path.into(), what: describe(&e) })?;
    use std::os::unix::io::AsRawFd;
    let fd = f.as_raw_fd();
    // SAFETY: a valid fd.
    if unsafe { libc::flock(fd, libc::LOCK_SH | libc::LOCK_NB) } != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
    {
        log::warn!("{}: a recording is writing it; waiting for its end (Ctrl-C to leave)", path.display());
        // SAFETY: a valid fd.
        if unsafe { libc::flock(fd, libc::LOCK_SH) } != 0 {
            return Err(Error::TraceDat { path: path.into(), what: describe(&std::io::Error::last_os_error()) });
        }
    }
    // Not held while reading: a new recording over the file must not think
    // a reader is its writer.
    // SAFETY: a valid fd.
    unsafe { libc::flock(fd, libc::LOCK_UN) };
    Ok(f)
}

/// Every `events/SYS/EVENT/format` below the top level. Formats that do not
/// parse are skipped with a warning, and counted in the session's
/// problems (their records print as `type: N`).
fn add_formats(t: &Tracefs, trace: &mut Opened, only: Option<&[&str]>) -> Result<(), Error> {
    let events = t.top().join("events");
    let systems = std::fs::read_dir(&events).map_err(|e| Error::io(&events, e))?;
    for sys in systems.flatten() {
        let Ok(ft) = sys.file_type() else { continue };
        if !ft.is_dir() {
            continue;
        }
        let sys_name = sys.file_name().to_string_lossy().into_owned();
        if only.is_some_and(|s| sys_name != "ftrace" && !s.contains(&sys_name.as_str())) {
            continue;
        }
        let Ok(evs) = std::fs::read_dir(sys.path()) else { continue };
        for ev in evs.flatten() {
            let path = ev.path().join("format");
            let Ok(text) = super::read_text(&path) else { continue };
            if let Err(e) = trace.add_format(&sys_name, &text) {
                let p = format!("{}: {e}", path.display());
                log::warn!("{p}");
                trace.problems.add(ProblemKind::BadFormat, p);
            }
        }
    }
    Ok(())
}

/// The byte order of the pages: native when live; for a copy (which may
/// come from a big-endian board), the first page that tells.
fn detect_endian(t: &Tracefs, layout: &PageLayout) -> Result<Endian, Error> {
    if t.is_live() {
        return Ok(Endian::NATIVE);
    }
    // A copy without per_cpu/ has no pages to read in any order.
    for cpu in t.cpus().unwrap_or_default() {
        let p = t.path(&format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let Ok(mut src) = RawPages::open(&p, layout.subbuf_size(), false) else { continue };
        while let Some(page) = src.next_page()? {
            if let Some(e) = guess_endian(layout, page) {
                return Ok(e);
            }
        }
    }
    Ok(Endian::NATIVE)
}

/// What the print-fmt compiler may ask beyond the format files: the kernel
/// version, and — only for formats that name them, so most runs never pay
/// for it — enum values, struct sizes and typedefs from BTF, and kernel
/// variables of the live system (`sys::kvars`). A copy of a tree uses only
/// its own `btf/` directory, never this machine's; a trace.dat only the BTF
/// it carries (trace-cmd 3.4's BTF_FILE), if any.
pub(crate) struct KernelFacts {
    version: Option<(u32, u32)>,
    top: Option<PathBuf>,
    live: bool,
    /// A trace.dat's BTF, parsed on first use.
    btf: Vec<u8>,
    consts: std::sync::OnceLock<Option<crate::btf::BtfInfo>>,
    funcs: std::sync::OnceLock<Option<crate::btf::FuncArgs>>,
}

impl KernelFacts {
    /// For the kernel `version` of a session opened from the tree at `top`
    /// (live or not; `None`: a trace.dat).
    pub(crate) fn new(version: Option<(u32, u32)>, top: Option<PathBuf>, live: bool) -> Self {
        KernelFacts { version, top, live, btf: Vec::new(), consts: Default::default(), funcs: Default::default() }
    }

    /// For a trace.dat that carries the recording kernel's BTF (`raw`;
    /// empty: none).
    pub(crate) fn with_btf(mut self, raw: Vec<u8>) -> Self {
        self.btf = raw;
        self
    }

    /// The functions' parameters (funcgraph-args), read on first use from
    /// the kernel's BTF: a trace.dat's own, else /sys/kernel/btf/vmlinux
    /// live, `TOP/btf/vmlinux` in a copy.
    fn funcs(&self) -> Option<&crate::btf::FuncArgs> {
        self.funcs
            .get_or_init(|| {
                let parse = |raw: &[u8], from: &str| match crate::btf::FuncArgs::parse(raw, &|_| true) {
                    Ok(f) => Some(f),
                    Err(e) => {
                        log::warn!("{from}: {e}");
                        None
                    }
                };
                if !self.btf.is_empty() {
                    return parse(&self.btf, "the trace.dat's BTF");
                }
                let path = if self.live {
                    PathBuf::from("/sys/kernel/btf/vmlinux")
                } else {
                    self.top.as_deref()?.join("btf/vmlinux")
                };
                let raw = std::fs::read(&path).ok()?;
                parse(&raw, &path.display().to_string())
            })
            .as_ref()
    }

    fn consts(&self) -> Option<&crate::btf::BtfInfo> {
        self.consts
            .get_or_init(|| {
                if !self.btf.is_empty() {
                    return match crate::btf::Btf::parse(&self.btf) {
                        Ok(b) => Some(crate::btf::BtfInfo::from_btf(b)),
                        Err(e) => {
                            log::warn!("the trace.dat's BTF: {e}");
                            None
                        }
                    };
                }
                super::kvars::load_for_tree(self.top.as_deref()?, self.live)
            })
            .as_ref()
    }
}

impl crate::printfmt::KernelInfo for KernelFacts {
    fn kernel_version(&self) -> Option<(u32, u32)> {
        self.version
    }
    fn enum_value(&self, name: &str) -> Option<i64> {
        crate::printfmt::FromConsts { consts: self.consts()?, version: None }.enum_value(name)
    }
    fn variable(&self, name: &str) -> Option<u64> {
        crate::printfmt::FromConsts { consts: self.consts()?, version: None }.variable(name)
    }
    fn sizeof_struct(&self, name: &str) -> Option<u32> {
        crate::printfmt::FromConsts { consts: self.consts()?, version: None }.sizeof_struct(name)
    }
    fn typedef(&self, name: &str) -> Option<(u32, bool)> {
        crate::printfmt::FromConsts { consts: self.consts()?, version: None }.typedef(name)
    }
    fn func_args(&self) -> Option<&crate::btf::FuncArgs> {
        self.funcs()
    }
}
