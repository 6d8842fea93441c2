//! One trace session: everything a reader of a trace needs besides the
//! ring-buffer pages themselves — the page layout and byte order
//! (`events/header_page`), the event formats, `saved_cmdlines`,
//! `printk_formats`, the symbols (`kallsyms`), the trace clock and the
//! traced kernel's profile (its version and what that version means for
//! the text).
//!
//! Sans-IO: a [`Trace`] is assembled from texts already read (a tracefs
//! tree, a copy of one, or a trace.dat: `sys::trace` opens them). The
//! symbols are a type parameter so that a reader may parse them only when
//! a record needs them (a board's kallsyms is megabytes).

use alloc::format;
use alloc::string::{String, ToString};

use crate::abi::{Abi, Endian};
use crate::format::{EventFormat, EventTable, FormatError, HeaderPage};
use crate::kallsyms::Kallsyms;
pub(crate) use crate::kernel::KernelProfile;
use crate::page::PageLayout;
use crate::printfmt::KernelInfo;
use crate::printk::PrintkFormats;
use crate::problems::{ProblemKind, Problems};
use crate::render::{clock_in_ns, Cmdlines};
use crate::tracedat::TraceDat;

impl KernelInfo for KernelProfile {
    fn kernel_version(&self) -> Option<(u32, u32)> {
        self.version
    }
}

/// What every reader of one trace needs. `S` is where symbols come from:
/// a parsed [`Kallsyms`], or a reader that parses on first use.
pub struct Trace<S = Kallsyms> {
    /// `events/header_page`: the sub-buffer header and the kernel's long size.
    pub(crate) header: HeaderPage,
    /// Where a page's header, data and records are (from `header`).
    pub layout: PageLayout,
    /// The byte order of the pages and records.
    pub(crate) endian: Endian,
    /// The event formats, by id and by name.
    pub(crate) events: EventTable,
    /// The comms of pids (`saved_cmdlines`).
    pub(crate) cmdlines: Cmdlines,
    /// The strings `%s` arguments of bprint events point to (`printk_formats`).
    pub(crate) printk: PrintkFormats,
    /// The kernel's symbols (`kallsyms`).
    pub(crate) symbols: S,
    /// The trace clock's name (`local`, `mono`, `counter`…).
    pub(crate) clock: String,
    /// The traced kernel's version, and the text rules that go with it.
    pub(crate) kernel: KernelProfile,
    /// CPUs of the traced machine.
    pub(crate) cpus: u32,
    /// What was read past in the inputs: formats that did not parse
    /// (their records fall back to a generic line), a trace.dat's
    /// sections left out or cut.
    pub(crate) problems: Problems,
}

impl<S> Trace<S> {
    /// A session of `header`'s layout in byte order `endian`, with its
    /// symbols from `symbols`, no event, comm or string yet, the `local`
    /// clock and an unknown kernel.
    pub(crate) fn new(header: HeaderPage, endian: Endian, symbols: S) -> Self {
        Trace {
            layout: PageLayout::from(&header),
            header,
            endian,
            events: EventTable::new(),
            cmdlines: Cmdlines::default(),
            printk: PrintkFormats::default(),
            symbols,
            clock: "local".to_string(),
            kernel: KernelProfile::default(),
            cpus: 0,
            problems: Problems::new(),
        }
    }

    /// The session a trace.dat describes, with symbols from `symbols` (the
    /// file's are the text `td.kallsyms`); its problems are the file's, and
    /// the formats that did not parse (`ProblemKind::BadFormat`: `format
    /// I of SYS: why`). The clock is the file's (`trace_clock` option),
    /// `local` when it has none; `name` names the file in
    /// `KernelProfile::source`.
    pub fn from_dat(td: &TraceDat, name: &str, symbols: S) -> Result<Self, FormatError> {
        let mut t = Trace::new(td.header_page()?, td.endian, symbols);
        t.problems = td.problems.clone();
        for (i, (sys, text)) in td.formats().enumerate() {
            let text = String::from_utf8_lossy(text);
            if let Err(e) = t.add_format(sys, &text) {
                let name = text.lines().find_map(|l| l.strip_prefix("name: ")).map(|n| format!(" ({})", n.trim()));
                t.problems.add(ProblemKind::BadFormat, format!("format {i} of {sys}{}: {e}", name.unwrap_or_default()));
            }
        }
        t.set_cmdlines(&String::from_utf8_lossy(&td.saved_cmdlines));
        t.printk = PrintkFormats::parse(&String::from_utf8_lossy(&td.printk_formats));
        if let Some(c) = &td.options.clock {
            t.clock = c.clone();
        }
        t.cpus = td.cpus;
        t.kernel = match &td.options.uname {
            Some(u) => KernelProfile::from_text(Some(u), format!("from the UNAME option of {name}")),
            None => t.inferred_kernel(&format!("the formats in {name} (no UNAME option)")),
        };
        Ok(t)
    }

    /// The kernel as far as this session's formats tell it ([`crate::kernel::infer`]):
    /// for a trace that does not name its kernel; `source` says what was read.
    pub(crate) fn inferred_kernel(&self, source: &str) -> KernelProfile {
        let ftrace = self.events.iter().filter(|e| e.system == "ftrace").map(|e| e.name.as_str());
        let switch = self.events.by_name("sched:sched_switch").map(|e| e.print_fmt.as_str());
        let user_data = self.events.iter().any(crate::kernel::records_user_data);
        KernelProfile::inferred(&crate::kernel::infer(ftrace, switch, user_data), source)
    }

    /// The same session with its symbols turned into others (parsed now…).
    #[cfg(test)]
    pub(crate) fn map_symbols<T>(self, f: impl FnOnce(S) -> T) -> Trace<T> {
        let Trace { header, layout, endian, events, cmdlines, printk, symbols, clock, kernel, cpus, problems } = self;
        Trace { header, layout, endian, events, cmdlines, printk, symbols: f(symbols), clock, kernel, cpus, problems }
    }

    /// The comms of `saved_cmdlines` text; a table larger than a kernel
    /// makes is cut to it, a problem ([`ProblemKind::TooLarge`]).
    pub(crate) fn set_cmdlines(&mut self, text: &str) {
        self.cmdlines = Cmdlines::parse(text);
        if let Some(w) = self.cmdlines.too_large() {
            self.problems.add(ProblemKind::TooLarge, w);
        }
    }

    /// Parse one `events/SYSTEM/EVENT/format` text into the event table.
    pub(crate) fn add_format(&mut self, system: &str, text: &str) -> Result<(), FormatError> {
        self.events.insert(EventFormat::parse(text, system, self.long_size())?);
        Ok(())
    }

    /// The kernel's `sizeof(long)`: 4 or 8.
    pub fn long_size(&self) -> u32 {
        self.header.long_size()
    }

    /// Byte order and long size of the traced kernel.
    pub(crate) fn abi(&self) -> Abi {
        Abi::new(self.endian, self.long_size())
    }

    /// Whether the clock counts nanoseconds (else raw counts).
    pub(crate) fn in_ns(&self) -> bool {
        clock_in_ns(&self.clock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_parses_its_formats_with_the_kernels_long_size() {
        let mut t = Trace::new(HeaderPage::new(4, 4096), Endian::Big, ());
        assert_eq!(t.abi(), Abi { endian: Endian::Big, long_size: 4 });
        let text = "name: f\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:unsigned long ip;\toffset:4;\tsize:4;\tsigned:0;\n\nprint fmt: \"%lx\", REC->ip\n";
        t.add_format("ftrace", text).unwrap();
        assert_eq!(t.events.by_name("ftrace:f").map(|e| e.id), Some(7));
        assert!(t.add_format("ftrace", "garbage").is_err());
        assert!(t.in_ns());
        t.clock = "counter".into();
        assert!(!t.in_ns());
    }
}
