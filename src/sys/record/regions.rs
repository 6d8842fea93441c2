//! The data area of a trace.dat being recorded, on a filesystem that can
//! close a hole by moving extents: one region per CPU, far apart
//! (terabytes), each CPU's pages written in order at the start of its own
//! region, so that they are already contiguous as version 6 wants them.
//! The unwritten rest of each region is a hole and takes no disk space. At
//! the end `FALLOC_FL_COLLAPSE_RANGE` closes the holes between the regions
//! (ext4, xfs, f2fs: the extents move, not the data, and a full disk needs
//! no room for it); no page passes through user space but once, mapped, to
//! be counted.
//!
//! Elsewhere the recorder keeps `pool::Pool`: FAT and exFAT (an SD
//! card's usual filesystems) fill a hole with zeros, tmpfs and btrfs cannot
//! collapse (copying a region down needs free space, which a recording
//! stopped by a full disk does not leave).
//!
//! Host builds only (`host`; +1,680 bytes of the aarch64 board build when
//! measured): on a board `Regions` has no values and the recorder keeps
//! the pool.
//!
//! A recording killed outright (SIGKILL, power loss) leaves a file whose
//! length reaches into the last region it wrote: holes, not disk space,
//! and no more readable than the pool's file would be (its flyrecord table
//! is written at the end).

use super::pool::CpuData;
use std::fs::File;
use std::io;
#[cfg(feature = "host")]
use std::os::unix::io::AsRawFd;

#[cfg(feature = "host")]
pub(crate) struct Regions {
    /// Where CPU index 0's region starts (page-aligned).
    base: u64,
    /// Bytes per region (whole pages).
    size: u64,
    page_size: u64,
    /// Pages written per CPU index.
    pages: Vec<u64>,
}

#[cfg(feature = "host")]
impl Regions {
    /// Regions for `cpus` CPU indexes after `base` in `file` (its length is
    /// `base`), if its filesystem collapses a page-sized range (tried on a
    /// hole after the header, before anything large is asked of it): as
    /// large as the filesystem's largest file allows (tried by setting the
    /// length; at most 8 TiB for all, at least 1 GiB each).
    pub(crate) fn new(file: &File, base: u64, page_size: usize, cpus: usize) -> Option<Regions> {
        let ps = page_size as u64;
        file.set_len(base + 2 * ps).ok()?;
        // SAFETY: a valid fd; the range is a hole before the file's end.
        let collapses =
            unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_COLLAPSE_RANGE, base as _, ps as _) } == 0;
        file.set_len(base).ok()?;
        if !collapses {
            return None;
        }
        let mut size = ((1u64 << 43) / cpus.max(1) as u64) / ps * ps;
        while size >= 1 << 30 {
            if file.set_len(base + size * cpus as u64).is_ok() {
                file.set_len(base).ok()?;
                return Some(Regions { base, size, page_size: ps, pages: vec![0; cpus] });
            }
            size = size / 2 / ps * ps;
        }
        None
    }

    fn start(&self, cpu: usize) -> u64 {
        self.base + cpu as u64 * self.size
    }

    /// Where CPU index `cpu`'s next page goes, and how many pages fit.
    pub(crate) fn next(&self, cpu: usize) -> (u64, u64) {
        let n = self.pages.get(cpu).copied().unwrap_or(u64::MAX);
        let room = (self.size / self.page_size).saturating_sub(n);
        (self.start(cpu).saturating_add(n.saturating_mul(self.page_size)), room)
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

    /// Count each CPU's pages (`page(bytes, data)` sees each once), then
    /// close the holes: every CPU's pages follow the previous CPU's.
    /// Returns each CPU's place in the file and the end of the data.
    pub(crate) fn finish(
        self,
        file: &File,
        mut page: impl FnMut(&[u8], &mut CpuData),
    ) -> io::Result<(Vec<CpuData>, u64)> {
        let ps = self.page_size;
        let mut out = Vec::with_capacity(self.pages.len());
        let mut at = self.base;
        for (c, &n) in self.pages.iter().enumerate() {
            // Before any collapse: that drops the page cache from its
            // offset on, and the pages would be read from the disk.
            let mut d = CpuData { offset: at, pages: n, ..Default::default() };
            each_page(file, self.start(c), n * ps, ps as usize, &mut |b| page(b, &mut d))?;
            at += n * ps;
            out.push(d);
        }
        // From the last hole to the first: what follows a hole is the
        // pages of the CPUs after it, already moved down.
        let mut tail = 0;
        for c in (0..self.pages.len().saturating_sub(1)).rev() {
            tail += self.pages[c + 1] * ps;
            let (hole, next) = (self.start(c) + self.pages[c] * ps, self.start(c + 1));
            if tail == 0 {
                continue;
            }
            // SAFETY: a valid fd; the range lies before the end of the file
            // (the CPU after it has pages).
            let collapsed = unsafe {
                libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_COLLAPSE_RANGE, hole as _, (next - hole) as _)
            } == 0;
            if !collapsed {
                move_down(file, next, hole, tail)?;
            }
        }
        Ok((out, at))
    }
}

#[cfg(feature = "host")]
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

#[cfg(feature = "host")]
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

/// A board build: no regions (the type has no values, so the recorder's
/// region branches compile to nothing).
#[cfg(not(feature = "host"))]
pub(crate) enum Regions {}

#[cfg(not(feature = "host"))]
impl Regions {
    pub(crate) fn new(_: &File, _: u64, _: usize, _: usize) -> Option<Regions> {
        None
    }

    pub(crate) fn next(&self, _: usize) -> (u64, u64) {
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

#[cfg(all(test, feature = "host"))]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    /// Three CPUs, one without pages: each CPU's pages end up contiguous,
    /// in CPU order, counted once, and the file ends at the data's end;
    /// on the temporary directory's filesystem (here ext4), and none on
    /// tmpfs (no collapse).
    #[test]
    fn closes_the_holes() {
        closes_the_holes_in(&std::env::temp_dir());
        if let Ok(f) = std::fs::File::create("/dev/shm/trbox-regions-tmpfs") {
            assert!(Regions::new(&f, 0, 4096, 2).is_none());
            let _ = std::fs::remove_file("/dev/shm/trbox-regions-tmpfs");
        }
    }

    fn closes_the_holes_in(dir: &std::path::Path) {
        let p = dir.join(format!("trbox-regions-{}", std::process::id()));
        let Ok(f) = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p) else {
            return;
        };
        let ps = 4096;
        f.set_len(ps as u64).unwrap();
        let Some(mut r) = Regions::new(&f, ps as u64, ps, 3) else {
            let _ = std::fs::remove_file(&p);
            return; // not a filesystem with sparse files
        };
        let put = |r: &mut Regions, cpu: usize, tag: u8| {
            let (at, room) = r.next(cpu);
            assert!(room > 0);
            f.write_all_at(&vec![tag; ps], at).unwrap();
            r.wrote(cpu, 1);
        };
        for (cpu, tag) in [(0, 1), (2, 5), (0, 2), (2, 6), (2, 7)] {
            put(&mut r, cpu, tag);
        }
        let mut seen = vec![];
        let (cpus, end) = r
            .finish(&f, |b, d| {
                seen.push(b[0]);
                d.records += 1;
            })
            .unwrap();
        f.set_len(end).unwrap();
        assert_eq!(seen, [1, 2, 5, 6, 7]);
        assert_eq!(end, 6 * ps as u64);
        assert_eq!(
            cpus.iter().map(|c| (c.offset / ps as u64, c.pages, c.records)).collect::<Vec<_>>(),
            [(1, 2, 2), (3, 0, 0), (3, 3, 3)]
        );
        let mut all = vec![0u8; 5 * ps];
        f.read_exact_at(&mut all, ps as u64).unwrap();
        let tags: Vec<u8> = all.chunks(ps).map(|c| c[0]).collect();
        assert_eq!(tags, [1, 2, 5, 6, 7]);
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
