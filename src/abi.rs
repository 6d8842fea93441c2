//! The traced kernel's ABI as the decoder sees it: its byte order
//! ([`Endian`], not this machine's) and `sizeof(long)` ([`Abi`]). Every
//! reader of kernel data (pages, formats, trace.dat, ELF, BTF) reads its
//! integers through these.

/// Byte order of the kernel that wrote the data (not of this machine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Endian {
    /// Least significant byte first.
    #[default]
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// The byte order of the machine this code runs on.
    pub(crate) const NATIVE: Endian = if cfg!(target_endian = "big") { Endian::Big } else { Endian::Little };

    /// Read an unsigned integer of 1, 2, 4 or 8 bytes at `off`; `None` when
    /// out of bounds or for another size.
    // Host builds inline it at every call (the size-tuned build calls it,
    // several times a line); board builds keep one copy.
    #[cfg_attr(feature = "host", inline(always))]
    #[cfg_attr(not(feature = "host"), inline)]
    pub(crate) fn uint(self, b: &[u8], off: usize, size: usize) -> Option<u64> {
        let s = b.get(off..off.checked_add(size)?)?;
        // Hot path of every field read: fixed-size loads, not a byte loop.
        let le = self == Endian::Little;
        Some(match size {
            1 => u64::from(*s.first()?),
            2 => {
                let a: [u8; 2] = s.try_into().ok()?;
                u64::from(if le { u16::from_le_bytes(a) } else { u16::from_be_bytes(a) })
            }
            4 => {
                let a: [u8; 4] = s.try_into().ok()?;
                u64::from(if le { u32::from_le_bytes(a) } else { u32::from_be_bytes(a) })
            }
            8 => {
                let a: [u8; 8] = s.try_into().ok()?;
                if le {
                    u64::from_le_bytes(a)
                } else {
                    u64::from_be_bytes(a)
                }
            }
            _ => return None,
        })
    }

    /// The 4 bytes at `off` of `b` as a u32 (`None` past the end).
    #[cfg_attr(feature = "host", inline(always))]
    #[cfg_attr(not(feature = "host"), inline)]
    pub(crate) fn u32(self, b: &[u8], off: usize) -> Option<u32> {
        let a: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
        Some(self.u32_of(a))
    }

    /// The 8 bytes at `off` of `b` as a u64 (`None` past the end).
    #[inline]
    pub(crate) fn u64(self, b: &[u8], off: usize) -> Option<u64> {
        let a: [u8; 8] = b.get(off..off.checked_add(8)?)?.try_into().ok()?;
        Some(self.u64_of(a))
    }

    /// Two bytes in this byte order as a number.
    #[inline(always)]
    pub(crate) fn u16_of(self, a: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(a),
            Endian::Big => u16::from_be_bytes(a),
        }
    }

    /// Four bytes in this byte order as a number.
    #[inline(always)]
    pub(crate) fn u32_of(self, a: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        }
    }

    /// Eight bytes in this byte order as a number.
    #[inline(always)]
    pub(crate) fn u64_of(self, a: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        }
    }

    /// Big endian when `big`.
    #[inline]
    pub(crate) const fn big_if(big: bool) -> Endian {
        if big {
            Endian::Big
        } else {
            Endian::Little
        }
    }
}

/// The traced kernel's ABI as the decoder sees it: byte order and
/// `sizeof(long)` (4 or 8, from `events/header_page`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abi {
    /// The byte order.
    pub(crate) endian: Endian,
    /// 4 or 8: make one with [`Abi::new`], which keeps it so, and readers
    /// need not check again.
    pub(crate) long_size: u32,
}

impl Abi {
    /// `long_size` is 4 or 8 (the two the kernel has; anything else is 8).
    pub const fn new(endian: Endian, long_size: u32) -> Abi {
        Abi { endian, long_size: if long_size == 4 { 4 } else { 8 } }
    }

    /// The bits of an `unsigned long`.
    #[inline]
    pub(crate) const fn long_mask(self) -> u64 {
        if self.long_size == 4 {
            0xffff_ffff
        } else {
            u64::MAX
        }
    }
}
