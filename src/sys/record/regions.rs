//! The data area of a trace.dat being recorded, on a filesystem that can
//! move extents (`FALLOC_FL_INSERT_RANGE` and `FALLOC_FL_COLLAPSE_RANGE`):
//! one region per CPU, each CPU's pages written in order at the start of
//! its own region, so that they are already contiguous as version 6 wants
//! them. A region that fills grows in place: an inserted range (a hole)
//! shifts the regions after it up, by the CPU's pages so far (16 pages at
//! least, 8 MiB at most); the last region grows at the file's end. At the
//! end the collapse closes what is left of the holes. Both move extents,
//! not data (a full disk needs no room for them); no page passes through
//! user space but once, mapped, to be counted.
//!
//! The file is a readable trace.dat all along: the flyrecord table names
//! each CPU's pages written so far (`Regions::publish`, at each wake-up),
//! and the holes are only the room each CPU has left (its last step of
//! growth at most), so a recording killed outright (SIGKILL) leaves a file
//! of about its data's size that `tr-cat FILE` and `trace-cmd report` read:
//! the pages of the last wake-up and the final stats and saved_cmdlines
//! aside.
//!
//! Elsewhere the recorder keeps `pool::Pool`: FAT and exFAT (an SD card's
//! usual filesystems) fill a hole with zeros, tmpfs and btrfs move no
//! extents (copying a region up needs free space, which a recording stopped
//! by a full disk does not leave), and f2fs moves them at a cost (below,
//! `Regions::new`). A pool file killed mid-run is finished by the run's
//! guard (`super::super::guard`).
//!
//! The `regions` feature (in `full` and the host build; +1,680 bytes of
//! the aarch64 board build when first measured): without it `Regions` has
//! no values and the recorder keeps the pool.

use super::pool::CpuData;
use crate::abi::Endian;
use std::fs::File;
use std::io;
#[cfg(feature = "regions")]
use std::os::unix::fs::FileExt;
#[cfg(feature = "regions")]
use std::os::unix::io::AsRawFd;

/// f2fs's statfs `f_type` (include/uapi/linux/magic.h).
#[cfg(feature = "regions")]
const F2FS_SUPER_MAGIC: u32 = 0xF2F5_2010;

/// A region's first room, and its largest step of growth, in bytes.
#[cfg(feature = "regions")]
const FIRST: u64 = 64 << 10;
#[cfg(feature = "regions")]
const MAX_STEP: u64 = 8 << 20;

#[cfg(feature = "regions")]
pub(crate) struct Regions {
    page_size: u64,
    /// Where each CPU index's region starts (page-aligned, in CPU order).
    start: Vec<u64>,
    /// Pages each region has room for (the last one: no limit).
    room: Vec<u64>,
    /// Pages written per CPU index.
    pages: Vec<u64>,
    /// Per CPU index: what its pages counted so far hold (`pages`: how
    /// many were counted).
    counted: Vec<CpuData>,
    /// The flyrecord table's offset in the file, and the file's byte order.
    table: (u64, Endian),
}

/// `fallocate(mode)` on `[off, off + len)`.
#[cfg(feature = "regions")]
fn falloc(file: &File, mode: i32, off: u64, len: u64) -> io::Result<()> {
    // SAFETY: a valid fd; the kernel checks the range.
    match unsafe { libc::fallocate(file.as_raw_fd(), mode, off as _, len as _) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

#[cfg(feature = "regions")]
impl Regions {
    /// Regions for `cpus` CPU indexes after `base` in `file` (its length is
    /// `base`), if its filesystem inserts and collapses a page-sized range
    /// there (tried on a hole after the header); `table`: where the
    /// flyrecord table is and the file's byte order.
    pub(crate) fn new(file: &File, base: u64, page_size: usize, cpus: usize, table: (u64, Endian)) -> Option<Regions> {
        let ps = page_size as u64;
        // f2fs inserts and collapses, but moves block addresses one by one
        // (`f2fs_insert_range`, `__exchange_data_block`): on the aarch64
        // board its regions cost 1.1× trace-cmd's CPU per MB against the
        // pool's 0.7× (docs/performance.md). The pool is kill-safe too
        // (the run's guard finishes its file).
        // SAFETY: a valid fd and a statfs to fill.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } == 0 && st.f_type as u32 == F2FS_SUPER_MAGIC {
            return None;
        }
        file.set_len(base + 2 * ps).ok()?;
        let moves = falloc(file, libc::FALLOC_FL_COLLAPSE_RANGE, base, ps)
            .and_then(|_| falloc(file, libc::FALLOC_FL_INSERT_RANGE, base, ps))
            .is_ok();
        file.set_len(base).ok()?;
        if !moves {
            return None;
        }
        let first = (FIRST / ps).max(1);
        Some(Regions {
            page_size: ps,
            start: (0..cpus as u64).map(|c| base + c * first * ps).collect(),
            room: vec![first; cpus],
            pages: vec![0; cpus],
            counted: vec![CpuData::default(); cpus],
            table,
        })
    }

    /// Where CPU index `cpu`'s next page goes, and how many fit there in a
    /// row: its region grows first when it is full (`count` sees the pages
    /// the growth takes out of the page cache).
    pub(crate) fn next(
        &mut self,
        file: &File,
        cpu: usize,
        count: &mut dyn FnMut(&[u8], &mut CpuData),
    ) -> io::Result<(u64, u64)> {
        let (Some(&at), Some(&n)) = (self.start.get(cpu), self.pages.get(cpu)) else {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        let last = cpu + 1 == self.start.len();
        if !last && self.room[cpu] == n {
            self.grow(file, cpu, count)?;
        }
        let room = if last { u64::MAX } else { self.room[cpu] - n };
        Ok((at + n * self.page_size, room))
    }

    /// Room for more pages in CPU index `cpu`'s region (not the last): a
    /// hole inserted at the next region's start, the regions after it
    /// shifted up. The table names none of their pages meanwhile: a kill
    /// between the two must not leave it pointing at the old places.
    fn grow(&mut self, file: &File, cpu: usize, count: &mut dyn FnMut(&[u8], &mut CpuData)) -> io::Result<()> {
        let ps = self.page_size;
        let step = (self.pages[cpu] * ps).clamp(FIRST, MAX_STEP) / ps * ps;
        let at = self.start[cpu + 1];
        if self.end() > at {
            // The insert writes back and drops the page cache from `at` on:
            // count those pages while they are in it.
            self.count(file, cpu + 1.., count)?;
            self.publish(file, Some(cpu))?;
            falloc(file, libc::FALLOC_FL_INSERT_RANGE, at, step)?;
        }
        self.start[cpu + 1..].iter_mut().for_each(|s| *s += step);
        self.room[cpu] += step / ps;
        self.publish(file, None)
    }

    /// The end of the pages written.
    fn end(&self) -> u64 {
        let ends = self.start.iter().zip(&self.pages).map(|(s, n)| if *n > 0 { s + n * self.page_size } else { 0 });
        ends.max().unwrap_or(0)
    }

    /// `n` more pages of CPU index `cpu` are written.
    pub(crate) fn wrote(&mut self, cpu: usize, n: u64) {
        if let Some(p) = self.pages.get_mut(cpu) {
            *p += n;
        }
    }

    /// Pages kept so far.
    pub(crate) fn pages(&self) -> u64 {
        self.pages.iter().sum()
    }

    /// Write the flyrecord table of the pages written so far (the CPU
    /// indexes after `hide_after`: none of theirs).
    pub(crate) fn publish(&self, file: &File, hide_after: Option<usize>) -> io::Result<()> {
        let ps = self.page_size;
        let t: Vec<(u64, u64)> = (0..self.start.len())
            .map(|c| match hide_after {
                Some(h) if c > h => (self.start[c], 0),
                _ => (self.start[c], self.pages[c] * ps),
            })
            .collect();
        file.write_all_at(&crate::tracedat::encode_flyrecord_table(self.table.1, &t), self.table.0)
    }

    /// Count the pages of the CPU indexes in `cpus` not counted yet.
    fn count(
        &mut self,
        file: &File,
        cpus: std::ops::RangeFrom<usize>,
        page: &mut dyn FnMut(&[u8], &mut CpuData),
    ) -> io::Result<()> {
        let ps = self.page_size;
        for c in cpus.start..self.start.len() {
            let d = &mut self.counted[c];
            let from = self.start[c] + d.pages * ps;
            let n = self.pages[c] - d.pages;
            each_page(file, from, n * ps, ps as usize, &mut |b| page(b, d))?;
            d.pages += n;
        }
        Ok(())
    }

    /// Count each CPU's pages (`page(bytes, data)` sees each once), then
    /// close the holes: every CPU's pages follow the previous CPU's.
    /// Returns each CPU's place in the file and the end of the data.
    pub(crate) fn finish(
        mut self,
        file: &File,
        mut page: impl FnMut(&[u8], &mut CpuData),
    ) -> io::Result<(Vec<CpuData>, u64)> {
        let ps = self.page_size;
        // Before any collapse: that drops the page cache from its offset
        // on, and the pages would be read from the disk.
        self.count(file, 0.., &mut page)?;
        // From the last hole to the first: what follows a hole is the
        // pages of the CPUs after it, already moved down.
        let mut tail = 0;
        for c in (0..self.pages.len().saturating_sub(1)).rev() {
            tail += self.pages[c + 1] * ps;
            let (hole, next) = (self.start[c] + self.pages[c] * ps, self.start[c + 1]);
            if tail > 0 && next > hole {
                self.publish(file, Some(c))?;
                if falloc(file, libc::FALLOC_FL_COLLAPSE_RANGE, hole, next - hole).is_err() {
                    move_down(file, next, hole, tail)?;
                }
            }
            self.start[c + 1..].iter_mut().for_each(|s| *s -= next - hole);
            self.publish(file, None)?;
        }
        let at = self.start.last().zip(self.pages.last()).map_or(0, |(s, n)| s + n * ps);
        let out = self.counted.into_iter().zip(&self.start).map(|(d, &offset)| CpuData { offset, ..d }).collect();
        Ok((out, at))
    }
}

#[cfg(feature = "regions")]
/// `len` bytes of `file` at `off`, one page at a time to `f`, mapped in
/// windows of 1 MiB (or a page): the pages are in the page cache already,
/// but a mapped page counts in the recorder's RSS while it is mapped.
fn each_page(file: &File, mut off: u64, mut len: u64, ps: usize, f: &mut dyn FnMut(&[u8])) -> io::Result<()> {
    while len > 0 {
        let n = len.min(ps.max(1 << 20) as u64) as usize / ps * ps;
        // SAFETY: a read-only shared mapping of our own file's written
        // part (off is page-aligned), unmapped below; nobody truncates it.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                n,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                file.as_raw_fd(),
                off as _,
            );
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            std::slice::from_raw_parts(p as *const u8, n).chunks(ps).for_each(&mut *f);
            libc::munmap(p, n);
        }
        off += n as u64;
        len -= n as u64;
    }
    Ok(())
}

#[cfg(feature = "regions")]
/// Copy `len` bytes from `src` down to `dst` (< `src`) in the same file, in
/// the kernel, in steps no longer than the distance (copy_file_range
/// refuses overlapping ranges): where a collapse failed after all.
fn move_down(file: &File, mut src: u64, mut dst: u64, mut len: u64) -> io::Result<()> {
    let step = (src - dst).min(1 << 30);
    let fd = file.as_raw_fd();
    while len > 0 {
        let (mut s, mut d) = (src as libc::loff_t, dst as libc::loff_t);
        // SAFETY: valid fd and offsets the call updates.
        let n = unsafe { libc::copy_file_range(fd, &mut s, fd, &mut d, len.min(step) as usize, 0) };
        if n <= 0 {
            return Err(if n == 0 { io::Error::from_raw_os_error(libc::EIO) } else { io::Error::last_os_error() });
        }
        (src, dst, len) = (src + n as u64, dst + n as u64, len - n as u64);
    }
    Ok(())
}

/// A build without `regions` (minimal): the type has no values, so the
/// recorder's region branches compile to nothing.
#[cfg(not(feature = "regions"))]
pub(crate) enum Regions {}

#[cfg(not(feature = "regions"))]
impl Regions {
    pub(crate) fn new(_: &File, _: u64, _: usize, _: usize, _: (u64, Endian)) -> Option<Regions> {
        None
    }

    pub(crate) fn next(
        &mut self,
        _: &File,
        _: usize,
        _: &mut dyn FnMut(&[u8], &mut CpuData),
    ) -> io::Result<(u64, u64)> {
        match *self {}
    }

    pub(crate) fn publish(&self, _: &File, _: Option<usize>) -> io::Result<()> {
        match *self {}
    }

    pub(crate) fn wrote(&mut self, _: usize, _: u64) {
        match *self {}
    }

    pub(crate) fn pages(&self) -> u64 {
        match *self {}
    }

    pub(crate) fn finish(self, _: &File, _: impl FnMut(&[u8], &mut CpuData)) -> io::Result<(Vec<CpuData>, u64)> {
        match self {}
    }
}

#[cfg(all(test, feature = "regions"))]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    /// Three CPUs, one without pages, one growing its region twice with
    /// pages of the CPU after it on disk: the flyrecord table names every
    /// page written at each wake-up (what a kill leaves), the file is never
    /// longer than the data and the room still unwritten; at the end each
    /// CPU's pages are contiguous, in CPU order, counted once, and the file
    /// ends at the data's end. On the temporary directory's filesystem
    /// (here ext4), and none on tmpfs (it moves no extents).
    #[test]
    fn grows_and_closes_the_regions() {
        grows_and_closes_in(&std::env::temp_dir());
        if let Ok(f) = std::fs::File::create("/dev/shm/trbox-regions-tmpfs") {
            assert!(Regions::new(&f, 0, 4096, 2, (0, Endian::NATIVE)).is_none());
            let _ = std::fs::remove_file("/dev/shm/trbox-regions-tmpfs");
        }
    }

    /// Each CPU's pages as the flyrecord table at offset 0 names them
    /// (the first two bytes of each: CPU index, page number).
    fn published(f: &File, ps: usize, cpus: usize) -> Vec<Vec<(u8, u8)>> {
        let mut t = vec![0u8; 16 * cpus];
        f.read_exact_at(&mut t, 0).unwrap();
        let word = |i: usize| u64::from_ne_bytes(t[i * 8..i * 8 + 8].try_into().unwrap());
        (0..cpus)
            .map(|c| {
                let mut b = vec![0u8; word(2 * c + 1) as usize];
                f.read_exact_at(&mut b, word(2 * c)).unwrap();
                b.chunks(ps).map(|p| (p[0], p[1])).collect()
            })
            .collect()
    }

    fn grows_and_closes_in(dir: &std::path::Path) {
        let p = dir.join(format!("trbox-regions-{}", std::process::id()));
        let Ok(f) = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p) else {
            return;
        };
        let ps = 4096;
        f.set_len(ps as u64).unwrap();
        let Some(mut r) = Regions::new(&f, ps as u64, ps, 3, (0, Endian::NATIVE)) else {
            let _ = std::fs::remove_file(&p);
            return; // not a filesystem that moves extents
        };
        let first = (FIRST / ps as u64) as usize;
        let mut want: Vec<Vec<(u8, u8)>> = vec![vec![]; 3];
        let mut counted = 0;
        let mut put = |r: &mut Regions, cpu: usize, n: usize| {
            for _ in 0..n {
                let (at, room) = r
                    .next(&f, cpu, &mut |_, d| {
                        counted += 1;
                        d.records += 1;
                    })
                    .unwrap();
                assert!(room > 0);
                let tag = (cpu as u8, want[cpu].len() as u8);
                let mut page = vec![0u8; ps];
                (page[0], page[1]) = tag;
                f.write_all_at(&page, at).unwrap();
                r.wrote(cpu, 1);
                want[cpu].push(tag);
            }
            r.publish(&f, None).unwrap();
            assert_eq!(published(&f, ps, 3), want);
            let data = want.iter().map(Vec::len).sum::<usize>() as u64 * ps as u64;
            // Room unwritten: each CPU's last step at most.
            let room: u64 = want.iter().map(|w| (w.len() as u64 * ps as u64).clamp(FIRST, MAX_STEP)).sum();
            assert!(f.metadata().unwrap().len() <= ps as u64 + data + room);
        };
        put(&mut r, 0, 2);
        put(&mut r, 2, 3);
        // CPU 0 outgrows its first room, then its second, with CPU 2's
        // pages after it; CPU 1 never writes.
        put(&mut r, 0, first);
        put(&mut r, 2, 1);
        put(&mut r, 0, first + 3);
        put(&mut r, 2, 1);
        let mut seen = vec![];
        let (cpus, end) = r
            .finish(&f, |b, d| {
                seen.push((b[0], b[1]));
                d.records += 1;
            })
            .unwrap();
        f.set_len(end).unwrap();
        let all: Vec<(u8, u8)> = want.concat();
        let n = all.len() as u64;
        assert_eq!(counted + seen.len(), all.len(), "each page counted once");
        assert_eq!(end, (1 + n) * ps as u64);
        let n0 = want[0].len() as u64;
        assert_eq!(
            cpus.iter().map(|c| (c.offset / ps as u64, c.pages, c.records)).collect::<Vec<_>>(),
            [(1, n0, n0), (1 + n0, 0, 0), (1 + n0, 5, 5)]
        );
        let mut back = vec![0u8; n as usize * ps];
        f.read_exact_at(&mut back, ps as u64).unwrap();
        assert_eq!(back.chunks(ps).map(|c| (c[0], c[1])).collect::<Vec<_>>(), all);
        assert_eq!(published(&f, ps, 3), want, "the table after the collapses");
        assert_eq!(f.metadata().unwrap().len(), end);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn moves_down_in_steps() {
        let p = std::env::temp_dir().join(format!("trbox-movedown-{}", std::process::id()));
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        f.write_all_at(&data, 3).unwrap();
        // Overlapping: 3 bytes down, in steps of 3.
        move_down(&f, 3, 0, data.len() as u64).unwrap();
        let mut got = vec![0u8; data.len()];
        f.read_exact_at(&mut got, 0).unwrap();
        assert_eq!(got, data);
        let _ = std::fs::remove_file(&p);
    }
}
