//! ELF files, for two readers. Uprobes: the kernel wants `PATH:OFFSET` (an
//! offset in the file), people know function names, and a board has no
//! objdump. ELF32/ELF64, both byte orders, `.symtab` and `.dynsym` (with
//! GNU symbol versions), executables (ET_EXEC) and PIE/shared objects
//! (ET_DYN): a symbol's address is turned into a file offset through the
//! PT_LOAD segment that maps it ([`Elf`]). Kernel variables: `/proc/kcore`
//! is an ELF core (ET_CORE) whose PT_LOAD segments map kernel addresses to
//! file offsets (`Header`, `Header::loads`, `segment_offset`); the
//! std layer reads only the header, the program header table and the bytes
//! asked for.
//!
//! Works on byte slices (the std layer maps the file, so only the pages
//! touched here are read); every offset and size in the file is checked, no
//! input can make it panic.

use crate::abi::Endian;
use crate::names::closest;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

const PT_LOAD: u64 = 1;
const SHT_SYMTAB: u64 = 2;
const SHT_DYNSYM: u64 = 11;
const SHT_GNU_VERDEF: u64 = 0x6fff_fffd;
const SHT_GNU_VERSYM: u64 = 0x6fff_ffff;
const STT_FUNC: u8 = 2;
const STT_GNU_IFUNC: u8 = 10;
const EM_ARM: u16 = 40;

/// Why a symbol could not be turned into a file offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// No `\x7fELF` magic.
    NotElf,
    /// An ELF class, byte order or version this reader does not know.
    Unsupported(&'static str),
    /// A header or table points outside the file (truncated or damaged).
    Truncated(&'static str),
    /// Not an executable or shared object (`e_type` given): a `.o` or a core.
    NotExecutable(u16),
    /// `SYMBOL[+OFF]` could not be read.
    BadSpec(&'static str),
    /// The symbol table has no function of that name; `near` are the closest
    /// function names.
    NotFound {
        /// The name that was looked up.
        symbol: String,
        /// Function names close to it (for a "did you mean" hint).
        near: Vec<String>,
    },
    /// No `.symtab` (stripped) and the symbol is not among the `exported`
    /// functions of `.dynsym`.
    Stripped {
        /// The name that was looked up.
        symbol: String,
        /// How many functions `.dynsym` exports.
        exported: usize,
        /// Exported names close to it.
        near: Vec<String>,
    },
    /// The name is given to several functions at different places.
    Ambiguous {
        /// The name that was looked up.
        symbol: String,
        /// The file offsets of each function of that name.
        offsets: Vec<u64>,
    },
    /// An indirect function (STT_GNU_IFUNC, like glibc's `memcpy`): its
    /// address is a resolver run once at load time, not the code called.
    Ifunc {
        /// The name that was looked up.
        symbol: String,
    },
    /// The address is in no PT_LOAD segment's file contents.
    NotMapped {
        /// The name that was looked up.
        symbol: String,
        /// Its `st_value`, a virtual address.
        vaddr: u64,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotElf => f.write_str("not an ELF file"),
            Error::Unsupported(w) => write!(f, "unsupported ELF file ({w})"),
            Error::Truncated(w) => write!(f, "truncated or damaged ELF file (its {w} lies outside the file)"),
            Error::NotExecutable(1) => f.write_str("an object file (ELF ET_REL), not an executable or shared library"),
            Error::NotExecutable(4) => f.write_str("a core dump, not an executable or shared library"),
            Error::NotExecutable(t) => write!(f, "ELF type {t}, not an executable or shared library"),
            Error::BadSpec(w) => write!(f, "bad probe place ({w})"),
            Error::NotFound { symbol, .. } => write!(f, "no function '{symbol}' in its symbol table"),
            Error::Stripped { exported: 0, .. } => {
                f.write_str("stripped binary: no symbol table (.symtab) and no exported functions (.dynsym)")
            }
            Error::Stripped { symbol, exported, .. } => write!(
                f,
                "stripped binary: no symbol table (.symtab), and '{symbol}' is not one of its {exported} exported functions (.dynsym)"
            ),
            Error::Ambiguous { symbol, offsets } => {
                write!(f, "'{symbol}' names {} different functions, at file offsets", offsets.len())?;
                for o in offsets {
                    write!(f, " 0x{o:x}")?;
                }
                Ok(())
            }
            Error::Ifunc { symbol } => write!(
                f,
                "'{symbol}' is an indirect function (IFUNC): its address is the resolver that picks an implementation at load time"
            ),
            Error::NotMapped { symbol, vaddr } => {
                write!(f, "'{symbol}' (address 0x{vaddr:x}) is in no loadable segment of the file")
            }
        }
    }
}

impl Error {
    /// What to do about it, for a person.
    pub(crate) fn hint(&self) -> Option<String> {
        let by_offset = "probe by file offset instead (PATH:0xOFFSET)";
        match self {
            Error::NotFound { near, .. } if !near.is_empty() => {
                Some(alloc::format!("did you mean: {}", near.join(", ")))
            }
            Error::NotFound { .. } => {
                Some("check the name (a C++ name must be given mangled, as the symbol table has it)".into())
            }
            Error::Stripped { near, .. } if !near.is_empty() => Some(alloc::format!(
                "did you mean: {}? Or use an unstripped copy of the same build (offsets are the same), or {by_offset}",
                near.join(", ")
            )),
            Error::Stripped { .. } => {
                Some(alloc::format!("use an unstripped copy of the same build (offsets are the same), or {by_offset}"))
            }
            Error::Ambiguous { .. } => Some(alloc::format!("pick one: {by_offset}")),
            Error::Ifunc { .. } => Some(
                "probe the implementation it picks (e.g. __memcpy_avx_unaligned_erms for memcpy), or the caller".into(),
            ),
            _ => None,
        }
    }
}

/// Which symbol table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    /// `.symtab`: every symbol, gone once the file is stripped.
    Symtab,
    /// `.dynsym`: the exported symbols, kept by `strip`.
    Dynsym,
}

/// A symbol as the file has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Symbol<'a> {
    /// Name as stored (a `.symtab` name may carry `@VER` / `@@VER`).
    pub(crate) name: &'a str,
    /// GNU version of a `.dynsym` entry and whether it is the default one
    /// (`name@@VER`) rather than a hidden one (`name@VER`).
    pub(crate) version: Option<(&'a str, bool)>,
    pub(crate) value: u64,
    pub(crate) size: u64,
    /// STT_* type.
    pub(crate) kind: u8,
    /// STB_* binding (0 local, 1 global, 2 weak…).
    pub(crate) bind: u8,
    pub(crate) shndx: u16,
}

impl Symbol<'_> {
    /// A function (or an IFUNC resolver) defined in this file.
    pub(crate) fn is_function(&self) -> bool {
        matches!(self.kind, STT_FUNC | STT_GNU_IFUNC) && self.shndx != 0 && self.value != 0
    }
}

/// Where a probe goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Location {
    /// Offset in the file: what `uprobe_events` wants after `PATH:`.
    pub(crate) offset: u64,
    /// The address in the file's own address space.
    pub(crate) vaddr: u64,
    /// The table the symbol came from (None for a raw offset).
    pub(crate) table: Option<Table>,
}

#[derive(Clone, Copy)]
struct Section {
    kind: u64,
    offset: u64,
    size: u64,
    link: u64,
    entsize: u64,
}

/// A PT_LOAD segment: `filesz` bytes at `offset` in the file are mapped at
/// address `vaddr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) offset: u64,
    pub(crate) vaddr: u64,
    pub(crate) filesz: u64,
}

/// File offset of `len` bytes at address `vaddr`, if one segment's file
/// contents hold them all.
pub(crate) fn segment_offset(segments: &[Segment], vaddr: u64, len: u64) -> Option<u64> {
    segments.iter().find_map(|s| {
        let d = vaddr.checked_sub(s.vaddr)?;
        (d.checked_add(len)? <= s.filesz).then(|| s.offset.checked_add(d)).flatten()
    })
}

/// The ELF header (any `e_type`: executables, shared objects, cores): byte
/// order, class and where the tables are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) endian: Endian,
    pub(crate) is64: bool,
    /// `e_type`: 1 relocatable, 2 executable, 3 shared object / PIE, 4 core.
    pub(crate) kind: u16,
    /// `e_machine` (3 x86, 40 ARM, 62 x86_64, 183 AArch64…).
    pub(crate) machine: u16,
    pub(crate) phoff: u64,
    pub(crate) phentsize: u16,
    pub(crate) phnum: u16,
    pub(crate) shoff: u64,
    pub(crate) shentsize: u16,
    pub(crate) shnum: u16,
}

/// Size of the ELF header (ELF64; an ELF32 header is 52 bytes): what
/// [`Header::parse`] needs at most.
pub(crate) const HEADER_LEN: usize = 64;

impl Header {
    /// `e_ident`, `e_type` and `e_machine`.
    fn ident(data: &[u8]) -> Result<(Endian, bool, u16, u16), Error> {
        if data.get(..4) != Some(b"\x7fELF".as_slice()) {
            return Err(Error::NotElf);
        }
        let is64 = match data.get(4) {
            Some(1) => false,
            Some(2) => true,
            _ => return Err(Error::Unsupported("class is neither ELF32 nor ELF64")),
        };
        let e = match data.get(5) {
            Some(1) => Endian::Little,
            Some(2) => Endian::Big,
            _ => return Err(Error::Unsupported("byte order is neither little nor big endian")),
        };
        let hdr = Error::Truncated("header");
        let kind = e.uint(data, 16, 2).ok_or(hdr.clone())? as u16;
        let machine = e.uint(data, 18, 2).ok_or(hdr)? as u16;
        Ok((e, is64, kind, machine))
    }

    /// The header at the start of `data` (at least [`HEADER_LEN`] bytes, or
    /// the whole file when it is shorter).
    pub(crate) fn parse(data: &[u8]) -> Result<Header, Error> {
        let (e, is64, kind, machine) = Self::ident(data)?;
        let hdr = Error::Truncated("header");
        let u16_at = |o: usize| e.uint(data, o, 2).map(|v| v as u16).ok_or(hdr.clone());
        let word =
            |o32: usize, o64: usize| if is64 { e.uint(data, o64, 8) } else { e.uint(data, o32, 4) }.ok_or(hdr.clone());
        let (phoff, shoff) = (word(28, 32)?, word(32, 40)?);
        let b = if is64 { 54 } else { 42 };
        let (phentsize, phnum, shentsize, shnum) = (u16_at(b)?, u16_at(b + 2)?, u16_at(b + 4)?, u16_at(b + 6)?);
        Ok(Header { endian: e, is64, kind, machine, phoff, phentsize, phnum, shoff, shentsize, shnum })
    }

    /// A 4-byte (ELF32) or 8-byte (ELF64) field of a header entry.
    #[inline]
    pub(crate) fn word(&self, b: &[u8], o32: usize, o64: usize) -> Option<u64> {
        if self.is64 {
            self.endian.uint(b, o64, 8)
        } else {
            self.endian.uint(b, o32, 4)
        }
    }

    /// Where the program header table is: (file offset, length in bytes);
    /// `None` when the file has none.
    pub(crate) fn program_table(&self) -> Result<Option<(u64, u64)>, Error> {
        if self.phoff == 0 || self.phnum == 0 {
            return Ok(None);
        }
        let min = if self.is64 { 56 } else { 32 };
        if self.phentsize < min {
            return Err(Error::Truncated("program header table"));
        }
        // PN_XNUM: the real count is kept in section 0.
        if self.phnum == 0xffff {
            return Err(Error::Unsupported("more than 65534 program headers"));
        }
        Ok(Some((self.phoff, u64::from(self.phentsize) * u64::from(self.phnum))))
    }

    /// The PT_LOAD entries of the program header `table` (the bytes
    /// [`program_table`](Self::program_table) names).
    pub(crate) fn loads(&self, table: &[u8]) -> Result<Vec<Segment>, Error> {
        let mut segments = Vec::new();
        for h in table.chunks_exact(usize::from(self.phentsize.max(1))) {
            if self.endian.uint(h, 0, 4) != Some(PT_LOAD) {
                continue;
            }
            let s = (|| {
                Some(Segment {
                    offset: self.word(h, 4, 8)?,
                    vaddr: self.word(h, 8, 16)?,
                    filesz: self.word(h, 16, 32)?,
                })
            })();
            segments.push(s.ok_or(Error::Truncated("program header table"))?);
        }
        Ok(segments)
    }
}

/// A parsed ELF executable or shared object over the whole file's bytes.
pub(crate) struct Elf<'a> {
    data: &'a [u8],
    e: Endian,
    is64: bool,
    /// `e_type`: 2 executable, 3 shared object / PIE.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) kind: u16,
    /// `e_machine` (3 x86, 40 ARM, 62 x86_64, 183 AArch64…).
    pub(crate) machine: u16,
    sections: Vec<Section>,
    segments: Vec<Segment>,
}

fn usize_of(v: u64) -> Option<usize> {
    usize::try_from(v).ok()
}

/// `data[off .. off + len]`, checked.
fn range(data: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let start = usize_of(off)?;
    data.get(start..start.checked_add(usize_of(len)?)?)
}

/// The NUL-terminated string at `off` of a string table.
fn cstr(strtab: &[u8], off: u64) -> Option<&str> {
    let s = strtab.get(usize_of(off)?..)?;
    let end = s.iter().position(|&b| b == 0)?;
    core::str::from_utf8(s.get(..end)?).ok()
}

impl<'a> Elf<'a> {
    /// Reads the ELF header, program headers and symbol tables of a
    /// 32- or 64-bit file of either byte order; an executable or shared
    /// object only (a uprobe's offset is a file offset in one).
    pub(crate) fn parse(data: &'a [u8]) -> Result<Self, Error> {
        // The type first: a core or an object file is named as such even
        // when the rest of its header is cut short.
        let kind = Header::ident(data)?.2;
        if !matches!(kind, 2 | 3) {
            return Err(Error::NotExecutable(kind));
        }
        let h = Header::parse(data)?;
        let (e, is64, shoff, shentsize) = (h.endian, h.is64, h.shoff, u64::from(h.shentsize));
        let mut shnum = u64::from(h.shnum);
        let mut elf = Elf { data, e, is64, kind, machine: h.machine, sections: Vec::new(), segments: Vec::new() };

        let sh_min = if is64 { 64 } else { 40 };
        if shoff != 0 {
            if shentsize < sh_min {
                return Err(Error::Truncated("section header table"));
            }
            // More than 0xff00 sections: the count is in section 0's size.
            if shnum == 0 {
                let s0 = range(data, shoff, shentsize).ok_or(Error::Truncated("section header table"))?;
                shnum = elf.word(s0, 20, 32).unwrap_or(0);
            }
            let table = shentsize.checked_mul(shnum).and_then(|n| range(data, shoff, n));
            let table = table.ok_or(Error::Truncated("section header table"))?;
            for h in table.chunks_exact(shentsize as usize) {
                let s = (|| {
                    Some(Section {
                        kind: e.uint(h, 4, 4)?,
                        offset: elf.word(h, 16, 24)?,
                        size: elf.word(h, 20, 32)?,
                        link: e.uint(h, if is64 { 40 } else { 24 }, 4)?,
                        entsize: elf.word(h, 36, 56)?,
                    })
                })();
                elf.sections.push(s.ok_or(Error::Truncated("section header table"))?);
            }
        }
        if let Some((off, len)) = h.program_table()? {
            let table = range(data, off, len).ok_or(Error::Truncated("program header table"))?;
            elf.segments = h.loads(table)?;
        }
        Ok(elf)
    }

    /// A 4-byte (ELF32) or 8-byte (ELF64) field of a header entry.
    fn word(&self, b: &[u8], o32: usize, o64: usize) -> Option<u64> {
        if self.is64 {
            self.e.uint(b, o64, 8)
        } else {
            self.e.uint(b, o32, 4)
        }
    }

    fn section(&self, kind: u64) -> Option<&Section> {
        self.sections.iter().find(|s| s.kind == kind)
    }

    /// Has it a `.symtab` (not stripped)?
    pub(crate) fn has_symtab(&self) -> bool {
        self.section(SHT_SYMTAB).is_some()
    }

    /// The symbols of a table (empty when the file has none); entries that
    /// point outside the file are skipped.
    pub(crate) fn symbols(&self, table: Table) -> Result<impl Iterator<Item = Symbol<'a>> + '_, Error> {
        let kind = if table == Table::Symtab { SHT_SYMTAB } else { SHT_DYNSYM };
        let min = if self.is64 { 24 } else { 16 };
        let (syms, strtab, entsize) = match self.section(kind) {
            Some(s) => {
                let syms = range(self.data, s.offset, s.size).ok_or(Error::Truncated("symbol table"))?;
                let strtab = usize_of(s.link).and_then(|l| self.sections.get(l));
                let strtab =
                    strtab.and_then(|t| range(self.data, t.offset, t.size)).ok_or(Error::Truncated("string table"))?;
                let entsize = usize_of(s.entsize).filter(|&n| n >= min).unwrap_or(min);
                (syms, strtab, entsize)
            }
            None => (&[][..], &[][..], min),
        };
        let versions = if table == Table::Dynsym { self.versions() } else { Versions::default() };
        Ok(syms.chunks_exact(entsize).enumerate().filter_map(move |(i, s)| {
            let (name, value, size, info, shndx) = if self.is64 {
                (
                    self.e.uint(s, 0, 4)?,
                    self.e.uint(s, 8, 8)?,
                    self.e.uint(s, 16, 8)?,
                    *s.get(4)?,
                    self.e.uint(s, 6, 2)?,
                )
            } else {
                (
                    self.e.uint(s, 0, 4)?,
                    self.e.uint(s, 4, 4)?,
                    self.e.uint(s, 8, 4)?,
                    *s.get(12)?,
                    self.e.uint(s, 14, 2)?,
                )
            };
            Some(Symbol {
                name: cstr(strtab, name)?,
                version: versions.of(i, self.e),
                value,
                size,
                kind: info & 0xf,
                bind: info >> 4,
                shndx: shndx as u16,
            })
        }))
    }

    /// `.gnu.version` (one index per `.dynsym` entry) and the names of the
    /// versions this file defines (`.gnu.version_d`). Missing or damaged
    /// tables mean no versions.
    fn versions(&self) -> Versions<'a> {
        let mut v = Versions::default();
        let Some(sym) = self.section(SHT_GNU_VERSYM) else { return v };
        let Some(def) = self.section(SHT_GNU_VERDEF) else { return v };
        let strtab =
            usize_of(def.link).and_then(|l| self.sections.get(l)).and_then(|t| range(self.data, t.offset, t.size));
        let (Some(versym), Some(verdef), Some(strtab)) =
            (range(self.data, sym.offset, sym.size), range(self.data, def.offset, def.size), strtab)
        else {
            return v;
        };
        v.versym = versym;
        // Verdef entries form a chain through vd_next; each names its
        // version in its first Verdaux. The chain is bounded by the table.
        let mut at = 0usize;
        for _ in 0..verdef.len() / 20 + 1 {
            let e = self.e;
            let Some(ndx) = e.uint(verdef, at + 4, 2) else { break };
            let aux = e.uint(verdef, at + 12, 4).and_then(usize_of);
            let name = aux.and_then(|a| e.uint(verdef, at.checked_add(a)?, 4)).and_then(|n| cstr(strtab, n));
            if let Some(name) = name {
                v.names.push((ndx as u16, name));
            }
            match e.uint(verdef, at + 16, 4).and_then(usize_of) {
                Some(0) | None => break,
                Some(next) => match at.checked_add(next) {
                    Some(n) => at = n,
                    None => break,
                },
            }
        }
        v
    }

    /// Address → file offset through the PT_LOAD segment holding it.
    pub(crate) fn file_offset(&self, vaddr: u64) -> Option<u64> {
        segment_offset(&self.segments, vaddr, 1)
    }

    /// `SYMBOL[+OFF]` (OFF decimal or 0x hex; SYMBOL may carry `@VER` or
    /// `@@VER`), or a bare number taken as a file offset, → where the
    /// uprobe goes. Functions only; `.symtab` first, then `.dynsym`.
    pub(crate) fn resolve(&self, spec: &str) -> Result<Location, Error> {
        let spec = spec.trim();
        if spec.starts_with(|c: char| c.is_ascii_digit()) {
            let offset = parse_num(spec).ok_or(Error::BadSpec("an offset must be a decimal or 0x hex number"))?;
            return Ok(Location { offset, vaddr: offset, table: None });
        }
        let (symbol, add) = match spec.split_once('+') {
            Some((s, o)) => {
                (s.trim(), parse_num(o.trim()).ok_or(Error::BadSpec("the +OFFSET must be a decimal or 0x hex number"))?)
            }
            None => (spec, 0),
        };
        if symbol.is_empty() {
            return Err(Error::BadSpec("no symbol name"));
        }
        let mut found = None;
        for table in [Table::Symtab, Table::Dynsym] {
            if let Some(v) = self.lookup(table, symbol)? {
                found = Some((table, v));
                break;
            }
        }
        let Some((table, vaddr)) = found else {
            return Err(self.not_found(symbol));
        };
        let vaddr = vaddr.checked_add(add).ok_or(Error::BadSpec("offset too large"))?;
        let offset = self.file_offset(vaddr).ok_or_else(|| Error::NotMapped { symbol: symbol.into(), vaddr })?;
        Ok(Location { offset, vaddr, table: Some(table) })
    }

    /// The address of the function `wanted` in one table: `None` when it is
    /// not there, an error when the name is given to several places.
    fn lookup(&self, table: Table, wanted: &str) -> Result<Option<u64>, Error> {
        let (w_base, w_ver) = split_version(wanted);
        let mut cands: Vec<Cand> = Vec::new();
        for s in self.symbols(table)?.filter(Symbol::is_function) {
            let (base, ver) = match s.version {
                Some(v) => (s.name, Some(v)),
                None => split_version(s.name),
            };
            if base != w_base {
                continue;
            }
            if let (Some((wv, _)), Some((v, _))) = (w_ver, ver) {
                if wv != v {
                    continue;
                }
            }
            // Thumb functions have bit 0 set in their address.
            let addr = if self.machine == EM_ARM { s.value & !1 } else { s.value };
            let default = ver.map_or(true, |(_, d)| d);
            cands.push(Cand { addr, default, global: s.bind != 0, ifunc: s.kind == STT_GNU_IFUNC });
        }
        cands.sort_unstable_by_key(|c| c.addr);
        cands.dedup_by_key(|c| c.addr);
        // Several: the default version (what the dynamic linker binds to),
        // then global over file-local.
        type Pick = fn(&&Cand) -> bool;
        let picks: [Pick; 3] = [|_| true, |c| c.default, |c| c.default && c.global];
        for pick in picks {
            if let [one] = cands.iter().filter(pick).collect::<Vec<_>>()[..] {
                if one.ifunc {
                    return Err(Error::Ifunc { symbol: wanted.into() });
                }
                return Ok(Some(one.addr));
            }
        }
        if cands.is_empty() {
            return Ok(None);
        }
        let offsets = cands.iter().map(|c| self.file_offset(c.addr).unwrap_or(c.addr)).collect();
        Err(Error::Ambiguous { symbol: wanted.into(), offsets })
    }

    fn not_found(&self, symbol: &str) -> Error {
        let names = |t| -> Vec<&'a str> {
            match self.symbols(t) {
                Ok(it) => it.filter(Symbol::is_function).map(|s| s.name).collect(),
                Err(_) => Vec::new(),
            }
        };
        let mut all = names(Table::Symtab);
        let stripped = all.is_empty() && !self.has_symtab();
        let dynsym = names(Table::Dynsym);
        let exported = dynsym.len();
        all.extend(dynsym);
        all.sort_unstable();
        all.dedup();
        let base = split_version(symbol).0;
        let near: Vec<String> = closest(base, all.iter().copied(), 3).into_iter().map(ToString::to_string).collect();
        if stripped {
            Error::Stripped { symbol: symbol.into(), exported, near }
        } else {
            Error::NotFound { symbol: symbol.into(), near }
        }
    }
}

struct Cand {
    addr: u64,
    /// The default version (or unversioned).
    default: bool,
    /// Global or weak, not file-local.
    global: bool,
    ifunc: bool,
}

#[derive(Default)]
struct Versions<'a> {
    versym: &'a [u8],
    names: Vec<(u16, &'a str)>,
}

impl<'a> Versions<'a> {
    fn of(&self, i: usize, e: Endian) -> Option<(&'a str, bool)> {
        let v = e.uint(self.versym, i.checked_mul(2)?, 2)? as u16;
        let ndx = v & 0x7fff;
        // 0 local, 1 global: unversioned.
        if ndx < 2 {
            return None;
        }
        let name = self.names.iter().find(|(n, _)| *n == ndx)?.1;
        Some((name, v & 0x8000 == 0))
    }
}

/// `name@@VER` → (name, Some((VER, default))); `name@VER` → not default.
fn split_version(s: &str) -> (&str, Option<(&str, bool)>) {
    match s.split_once('@') {
        Some((b, v)) => match v.strip_prefix('@') {
            Some(v) => (b, Some((v, true))),
            None => (b, Some((v, false))),
        },
        None => (s, None),
    }
}

/// A decimal or `0x` hex number.
pub(crate) fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// An ELF core like `/proc/kcore` (for tests): a note and two PT_LOADs;
/// the long at kernel address `KCORE_BASE + 8` (ELF64; `0xc2000008` for
/// ELF32) holds `val`, at file offset 0x2008.
#[cfg(test)]
pub(crate) fn kcore_image(class64: bool, be: bool, val: u64) -> Vec<u8> {
    fn put(v: &mut Vec<u8>, off: usize, n: usize, x: u64, be: bool) {
        if v.len() < off + n {
            v.resize(off + n, 0);
        }
        for i in 0..n {
            let sh = if be { 8 * (n - 1 - i) } else { 8 * i };
            v[off + i] = (x >> sh) as u8;
        }
    }
    let mut v = b"\x7fELF".to_vec();
    v.push(if class64 { 2 } else { 1 });
    v.push(if be { 2 } else { 1 });
    put(&mut v, 16, 2, 4, be); // ET_CORE
    let (phoff, phent) = if class64 { (64u64, 56usize) } else { (52, 32) };
    if class64 {
        put(&mut v, 32, 8, phoff, be);
        put(&mut v, 54, 2, phent as u64, be);
        put(&mut v, 56, 2, 3, be);
    } else {
        put(&mut v, 28, 4, phoff, be);
        put(&mut v, 42, 2, phent as u64, be);
        put(&mut v, 44, 2, 3, be);
    }
    let base: u64 = if class64 { KCORE_BASE } else { 0xc2000000 };
    let segs = [(4u64, 0u64, 0u64, 0u64), (1, 0x1000, base - 0x1000_0000, 0x100), (1, 0x2000, base, 0x1000)];
    for (i, (ty, off, va, sz)) in segs.into_iter().enumerate() {
        let o = phoff as usize + i * phent;
        put(&mut v, o, 4, ty, be);
        if class64 {
            put(&mut v, o + 8, 8, off, be);
            put(&mut v, o + 16, 8, va, be);
            put(&mut v, o + 32, 8, sz, be);
        } else {
            put(&mut v, o + 4, 4, off, be);
            put(&mut v, o + 8, 4, va, be);
            put(&mut v, o + 16, 4, sz, be);
        }
    }
    let n = if class64 { 8 } else { 4 };
    put(&mut v, 0x2000 + 8, n, val, be);
    v.resize(0x3000, 0);
    v
}

/// Where [`kcore_image`]'s second PT_LOAD maps (ELF64).
#[cfg(test)]
pub(crate) const KCORE_BASE: u64 = 0xffffffff82000000;

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// A function symbol for [`Image`]: name as stored, address, size,
    /// binding, `.gnu.version` index (0 none; 0x8000 set = hidden; 0x4000
    /// set = an IFUNC, not stored).
    #[derive(Clone)]
    struct S(&'static str, u64, u64, u8, u16);

    /// A synthetic ELF file: header, PT_LOAD segments, and a `.symtab`
    /// and/or `.dynsym` (with versions) holding `syms`.
    struct Image {
        is64: bool,
        big: bool,
        kind: u16,
        machine: u16,
        /// (offset, vaddr, filesz)
        loads: Vec<(u64, u64, u64)>,
        symtab: Option<Vec<S>>,
        dynsym: Option<Vec<S>>,
        /// (index, name) of `.gnu.version_d`
        verdefs: Vec<(u16, &'static str)>,
    }

    struct W {
        b: Vec<u8>,
        big: bool,
    }

    impl W {
        fn n(&mut self, v: u64, size: usize) {
            let bytes = v.to_le_bytes();
            let mut s = bytes[..size].to_vec();
            if self.big {
                s.reverse();
            }
            self.b.extend_from_slice(&s);
        }
        fn at(&mut self, off: usize, v: u64, size: usize) {
            let mut w = W { b: Vec::new(), big: self.big };
            w.n(v, size);
            self.b[off..off + size].copy_from_slice(&w.b);
        }
        fn align(&mut self, a: usize) {
            while self.b.len() % a != 0 {
                self.b.push(0);
            }
        }
    }

    fn strtab(names: impl Iterator<Item = &'static str>) -> (Vec<u8>, Vec<u64>) {
        let mut t = vec![0u8];
        let mut offs = Vec::new();
        for n in names {
            offs.push(t.len() as u64);
            t.extend_from_slice(n.as_bytes());
            t.push(0);
        }
        (t, offs)
    }

    impl Image {
        fn new(is64: bool, big: bool) -> Self {
            Image {
                is64,
                big,
                kind: 3,
                machine: if is64 { 62 } else { 40 },
                loads: vec![(0, 0, 0x1000), (0x1000, 0x11000, 0x2000)],
                symtab: Some(vec![
                    S("main", 0x11100, 0x40, 1, 0),
                    S("helper", 0x11200, 0x10, 0, 0),
                    S("trbox_probe_me", 0x11300, 0x8, 1, 0),
                ]),
                dynsym: None,
                verdefs: Vec::new(),
            }
        }

        fn bytes(&self) -> Vec<u8> {
            let (is64, word) = (self.is64, if self.is64 { 8 } else { 4 });
            let mut w = W { b: Vec::new(), big: self.big };
            let ehsize = if is64 { 64 } else { 52 };
            w.b.extend_from_slice(b"\x7fELF");
            w.b.extend_from_slice(&[if is64 { 2 } else { 1 }, if self.big { 2 } else { 1 }, 1, 0]);
            w.b.resize(16, 0);
            w.n(u64::from(self.kind), 2);
            w.n(u64::from(self.machine), 2);
            w.n(1, 4);
            w.n(0, word); // entry
            w.n(0, word); // phoff, patched
            w.n(0, word); // shoff, patched
            w.n(0, 4);
            w.n(ehsize, 2);
            w.n(if is64 { 56 } else { 32 }, 2);
            w.n(self.loads.len() as u64, 2);
            w.n(if is64 { 64 } else { 40 }, 2);
            w.n(0, 2); // shnum, patched
            w.n(0, 2);
            assert_eq!(w.b.len() as u64, ehsize);
            let phoff = w.b.len();
            for &(off, vaddr, filesz) in &self.loads {
                // p_type, then p_flags comes second (ELF64) or seventh (ELF32).
                let rest = [off, vaddr, vaddr, filesz, filesz];
                w.n(1, 4);
                if is64 {
                    w.n(5, 4);
                    rest.iter().for_each(|&v| w.n(v, 8));
                } else {
                    rest.iter().for_each(|&v| w.n(v, 4));
                    w.n(5, 4);
                }
                w.n(0x1000, word);
            }
            // Sections: (type, offset, size, link, entsize)
            let mut secs: Vec<(u64, u64, u64, u64, u64)> = vec![(0, 0, 0, 0, 0)];
            let symsize = if is64 { 24 } else { 16 };
            let mut dynstr_index = 0;
            for (kind, syms) in [(SHT_SYMTAB, &self.symtab), (SHT_DYNSYM, &self.dynsym)] {
                let Some(syms) = syms else { continue };
                let names: Vec<&'static str> =
                    syms.iter().map(|s| s.0).chain(self.verdefs.iter().map(|v| v.1)).collect();
                let (st, offs) = strtab(names.into_iter());
                w.align(8);
                let str_off = w.b.len() as u64;
                w.b.extend_from_slice(&st);
                secs.push((3, str_off, st.len() as u64, 0, 0));
                let str_index = secs.len() as u64 - 1;
                if kind == SHT_DYNSYM {
                    dynstr_index = str_index;
                }
                w.align(8);
                let sym_off = w.b.len() as u64;
                // Entry 0 is the null symbol.
                w.b.resize(w.b.len() + symsize, 0);
                for (s, name) in syms.iter().zip(&offs) {
                    let kind = if s.4 & 0x4000 != 0 { STT_GNU_IFUNC } else { STT_FUNC };
                    let info = (s.3 << 4) | kind;
                    w.n(*name, 4);
                    if is64 {
                        w.b.extend_from_slice(&[info, 0]);
                        w.n(14, 2);
                        w.n(s.1, 8);
                        w.n(s.2, 8);
                    } else {
                        w.n(s.1, 4);
                        w.n(s.2, 4);
                        w.b.extend_from_slice(&[info, 0]);
                        w.n(14, 2);
                    }
                }
                secs.push((kind, sym_off, (syms.len() + 1) as u64 * symsize as u64, str_index, symsize as u64));
                if kind == SHT_DYNSYM && !self.verdefs.is_empty() {
                    w.align(8);
                    let vs = w.b.len() as u64;
                    w.n(0, 2);
                    for s in syms {
                        w.n(u64::from(s.4 & !0x4000), 2);
                    }
                    secs.push((SHT_GNU_VERSYM, vs, (syms.len() + 1) as u64 * 2, 0, 2));
                    w.align(8);
                    let vd = w.b.len() as u64;
                    let nsyms = syms.len();
                    for (i, &(ndx, _)) in self.verdefs.iter().enumerate() {
                        let last = i + 1 == self.verdefs.len();
                        w.n(1, 2);
                        w.n(0, 2);
                        w.n(u64::from(ndx), 2);
                        w.n(1, 2);
                        w.n(0, 4);
                        w.n(20, 4);
                        w.n(if last { 0 } else { 28 }, 4);
                        w.n(offs[nsyms + i], 4);
                        w.n(0, 4);
                    }
                    secs.push((SHT_GNU_VERDEF, vd, w.b.len() as u64 - vd, dynstr_index, 0));
                }
            }
            w.align(8);
            let shoff = w.b.len();
            for &(kind, off, size, link, entsize) in &secs {
                w.n(0, 4);
                w.n(kind, 4);
                if is64 {
                    w.n(0, 8);
                    w.n(0, 8);
                    w.n(off, 8);
                    w.n(size, 8);
                    w.n(link, 4);
                    w.n(0, 4);
                    w.n(8, 8);
                    w.n(entsize, 8);
                } else {
                    for v in [0, 0, off, size, link, 0, 4, entsize] {
                        w.n(v, 4);
                    }
                }
            }
            let (ph_at, sh_at, shnum_at) = if is64 { (32, 40, 60) } else { (28, 32, 48) };
            w.at(ph_at, phoff as u64, word);
            w.at(sh_at, shoff as u64, word);
            w.at(shnum_at, secs.len() as u64, 2);
            w.b
        }
    }

    fn resolve(img: &Image, spec: &str) -> Result<Location, Error> {
        let b = img.bytes();
        Elf::parse(&b)?.resolve(spec)
    }

    #[test]
    fn every_class_and_byte_order() {
        for is64 in [false, true] {
            for big in [false, true] {
                let img = Image::new(is64, big);
                let l = resolve(&img, "trbox_probe_me").unwrap();
                assert_eq!((l.offset, l.vaddr, l.table), (0x1300, 0x11300, Some(Table::Symtab)), "64 {is64} big {big}");
                assert_eq!(resolve(&img, "main+0x10").unwrap().offset, 0x1110);
                assert_eq!(resolve(&img, "main+16").unwrap().offset, 0x1110);
                assert_eq!(resolve(&img, "0x1234").unwrap().offset, 0x1234);
                let b = img.bytes();
                let elf = Elf::parse(&b).unwrap();
                assert_eq!(elf.symbols(Table::Symtab).unwrap().count(), 4);
                assert!(elf.has_symtab());
            }
        }
    }

    #[test]
    fn executable_and_segments() {
        let mut img = Image::new(true, false);
        img.kind = 2;
        img.loads = vec![(0, 0x400000, 0x1000), (0x1000, 0x401000, 0x1000)];
        img.symtab = Some(vec![S("main", 0x401136, 0x20, 1, 0), S("outside", 0x409000, 4, 1, 0)]);
        assert_eq!(resolve(&img, "main").unwrap().offset, 0x1136);
        assert_eq!(resolve(&img, "outside"), Err(Error::NotMapped { symbol: "outside".into(), vaddr: 0x409000 }));
        img.kind = 1;
        assert_eq!(resolve(&img, "main"), Err(Error::NotExecutable(1)));
    }

    #[test]
    fn thumb_bit_is_cleared_on_arm() {
        let mut img = Image::new(false, false);
        img.symtab = Some(vec![S("t", 0x11401, 4, 1, 0)]);
        assert_eq!(resolve(&img, "t").unwrap().offset, 0x1400);
    }

    #[test]
    fn missing_symbol_suggests_names() {
        let img = Image::new(true, false);
        match resolve(&img, "trbox_probe_m") {
            Err(e @ Error::NotFound { .. }) => {
                assert_eq!(e.to_string(), "no function 'trbox_probe_m' in its symbol table");
                assert_eq!(e.hint().unwrap(), "did you mean: trbox_probe_me");
            }
            r => panic!("{r:?}"),
        }
    }

    #[test]
    fn stripped_binary_uses_dynsym_or_says_so() {
        let mut img = Image::new(true, false);
        img.symtab = None;
        img.dynsym = Some(vec![S("exported_fn", 0x11500, 8, 1, 0)]);
        assert_eq!(resolve(&img, "exported_fn").unwrap().table, Some(Table::Dynsym));
        let e = resolve(&img, "helper").unwrap_err();
        assert!(matches!(&e, Error::Stripped { exported: 1, .. }), "{e:?}");
        assert!(e.to_string().starts_with("stripped binary"), "{e}");
        assert!(e.hint().unwrap().contains("unstripped copy"));
        img.dynsym = None;
        assert!(matches!(resolve(&img, "x"), Err(Error::Stripped { exported: 0, .. })));
    }

    #[test]
    fn versions_and_duplicates() {
        let mut img = Image::new(true, false);
        img.symtab = None;
        img.verdefs = vec![(2, "GLIBC_2.2.5"), (3, "GLIBC_2.14")];
        img.dynsym = Some(vec![
            S("memcpy", 0x11600, 8, 1, 0x8002), // memcpy@GLIBC_2.2.5 (hidden)
            S("memcpy", 0x11700, 8, 1, 3),      // memcpy@@GLIBC_2.14 (default)
            S("plain", 0x11800, 8, 1, 2),
        ]);
        assert_eq!(resolve(&img, "memcpy").unwrap().offset, 0x1700);
        assert_eq!(resolve(&img, "memcpy@GLIBC_2.2.5").unwrap().offset, 0x1600);
        assert_eq!(resolve(&img, "memcpy@@GLIBC_2.14").unwrap().offset, 0x1700);
        assert_eq!(resolve(&img, "plain@@GLIBC_2.2.5").unwrap().offset, 0x1800);
        // glibc: the default memcpy is an IFUNC resolver.
        if let Some(d) = img.dynsym.as_mut() {
            d.push(S("ifn", 0x11900, 8, 1, 3 | 0x4000));
        }
        let e = resolve(&img, "ifn").unwrap_err();
        assert_eq!(e, Error::Ifunc { symbol: "ifn".into() });
        // Names in .symtab may carry the version themselves.
        let mut img = Image::new(false, true);
        img.symtab = Some(vec![S("f@@V2", 0x11100, 4, 1, 0), S("f@V1", 0x11200, 4, 1, 0), S("g", 0x11300, 4, 1, 0)]);
        assert_eq!(resolve(&img, "f").unwrap().offset, 0x1100);
        assert_eq!(resolve(&img, "f@V1").unwrap().offset, 0x1200);
        assert_eq!(resolve(&img, "g@@V9").unwrap().offset, 0x1300);
        // Two file-local functions of one name, one global: the global one.
        img.symtab = Some(vec![S("h", 0x11100, 4, 0, 0), S("h", 0x11200, 4, 1, 0), S("h", 0x11200, 4, 1, 0)]);
        assert_eq!(resolve(&img, "h").unwrap().offset, 0x1200);
        // Two file-local ones: the user must choose.
        img.symtab = Some(vec![S("h", 0x11100, 4, 0, 0), S("h", 0x11200, 4, 0, 0)]);
        let e = resolve(&img, "h").unwrap_err();
        assert_eq!(e, Error::Ambiguous { symbol: "h".into(), offsets: vec![0x1100, 0x1200] });
        assert!(e.to_string().contains("0x1100 0x1200"), "{e}");
    }

    #[test]
    fn bad_input_is_an_error() {
        assert_eq!(Elf::parse(b"").err(), Some(Error::NotElf));
        assert_eq!(Elf::parse(b"#!/bin/sh\n").err(), Some(Error::NotElf));
        assert!(matches!(Elf::parse(b"\x7fELF\x03\x01"), Err(Error::Unsupported(_))));
        assert!(matches!(Elf::parse(b"\x7fELF\x02\x01\x01"), Err(Error::Truncated(_))));
        let img = Image::new(true, false);
        assert!(matches!(resolve(&img, "main+zz"), Err(Error::BadSpec(_))));
        assert!(matches!(resolve(&img, "+4"), Err(Error::BadSpec(_))));
        assert!(matches!(resolve(&img, "0xzz"), Err(Error::BadSpec(_))));
        // Every truncation and every single-byte corruption: no panic.
        for is64 in [false, true] {
            let b = Image::new(is64, !is64).bytes();
            for n in 0..b.len() {
                if let Ok(e) = Elf::parse(&b[..n]) {
                    let _ = e.resolve("main");
                }
                let mut c = b.clone();
                c[n] ^= 0xff;
                if let Ok(e) = Elf::parse(&c) {
                    let _ = e.resolve("trbox_probe_me");
                    let _ = e.resolve("nope");
                }
            }
        }
    }

    #[test]
    fn kcore_layouts() {
        for class64 in [true, false] {
            for be in [false, true] {
                let val = if class64 { 0xffffea0000000000 } else { 0xc1234567 };
                let img = kcore_image(class64, be, val);
                let h = Header::parse(&img).unwrap();
                assert_eq!((h.is64, h.endian == Endian::Big, h.kind, h.phnum), (class64, be, 4, 3));
                assert!(matches!(Elf::parse(&img), Err(Error::NotExecutable(4))), "a core is no uprobe target");
                let (off, len) = h.program_table().unwrap().unwrap();
                let loads = h.loads(&img[off as usize..][..len as usize]).unwrap();
                assert_eq!(loads.len(), 2);
                let base: u64 = if class64 { KCORE_BASE } else { 0xc2000000 };
                let n = if class64 { 8 } else { 4 };
                let off = segment_offset(&loads, base + 8, n).unwrap();
                assert_eq!(off, 0x2008);
                assert_eq!(h.endian.uint(&img, off as usize, n as usize), Some(val));
                assert_eq!(segment_offset(&loads, base + 0x1000 - n / 2, n), None, "runs past the segment");
                assert_eq!(segment_offset(&loads, base + 0x1000 - n, n), Some(0x3000 - n));
                assert_eq!(segment_offset(&loads, base - 8, n), None, "between segments");
            }
        }
        assert!(Header::parse(b"\x7fELF").is_err());
        assert!(Header::parse(b"\x7fELX\x02\x01").is_err());
        let mut bad = kcore_image(true, false, 0);
        bad[4] = 3;
        assert!(Header::parse(&bad).is_err());
        let mut bad = kcore_image(true, false, 0);
        bad[54] = 8; // phentsize too small
        assert!(Header::parse(&bad).unwrap().program_table().is_err());
        let mut bad = kcore_image(true, false, 0);
        bad[56..58].copy_from_slice(&[0xff, 0xff]); // PN_XNUM
        assert!(Header::parse(&bad).unwrap().program_table().is_err());
        // Every prefix of a header and of a table: no panic.
        let img = kcore_image(true, true, 1);
        for n in 0..64 {
            let _ = Header::parse(&img[..n]);
        }
        let h = Header::parse(&img).unwrap();
        for n in 0..200 {
            let _ = h.loads(&img[64..64 + n]);
        }
        assert_eq!(
            segment_offset(&[Segment { vaddr: u64::MAX - 8, offset: u64::MAX, filesz: 8 }], u64::MAX - 4, 4),
            None
        );
        assert_eq!(segment_offset(&[Segment { vaddr: u64::MAX - 8, offset: 0, filesz: 8 }], u64::MAX - 4, 8), None);
    }

    /// The synthetic images (every class and byte order, with versions) as
    /// fuzz seeds, one `NAME HEX` line each, on stdout (the core does no file
    /// I/O): see fuzz/README.md for the command that writes them out.
    #[test]
    #[ignore]
    fn fuzz_seeds() {
        for is64 in [false, true] {
            for big in [false, true] {
                let mut img = Image::new(is64, big);
                img.verdefs = vec![(2, "V1"), (3, "V2")];
                img.dynsym = Some(vec![
                    S("f", 0x11600, 8, 1, 0x8002),
                    S("f", 0x11700, 8, 1, 3),
                    S("ifn", 0x11800, 8, 1, 0x4003),
                ]);
                let mut b = vec![0u8];
                b.extend(img.bytes());
                std::println!("synth-{is64}-{big} {}", b.iter().map(|x| alloc::format!("{x:02x}")).collect::<String>());
            }
        }
    }
}
