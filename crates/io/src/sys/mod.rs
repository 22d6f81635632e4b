//! **The only module of this crate with `unsafe` code.**
//!
//! Everything outside `sys` is `#![deny(unsafe_code)]`. What lives here is
//! the minimum that cannot be written safely, each wrapped in a safe type
//! whose invariants this module alone upholds:
//!
//! - [`AlignedBuf`]: a zeroed heap buffer aligned to [`ALIGN`] bytes, as
//!   `O_DIRECT` demands (a `Vec<u8>` is only 1-byte aligned).
//! - [`ring::SlotRing`]: an io_uring with one registered buffer per slot. It
//!   owns both the ring and the buffers and tracks which slots the kernel is
//!   writing into, so no Rust reference to a buffer can exist while the
//!   kernel owns it, and no buffer is freed while a request is in flight.
//! - [`cpu_time`], which calls `getrusage(RUSAGE_SELF)`,
//!   [`allowed_cpus`] / [`pin_current_thread`], which call
//!   `sched_getaffinity` / `sched_setaffinity`, and
//!   [`raise_nofile_limit`], which calls `getrlimit` / `setrlimit`.
#![allow(
    unsafe_code,
    reason = "the crate's one unsafe module: each block says why it is sound"
)]

pub(crate) mod ring;

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::time::Duration;

/// The alignment of every buffer: the largest logical block size Linux uses
/// for `O_DIRECT` (4096 bytes), and the page size on x86-64 and arm64.
pub const ALIGN: usize = 4096;

/// A zero-initialised heap buffer whose address is a multiple of [`ALIGN`].
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
}

impl AlignedBuf {
    /// A buffer of `len` bytes (at least one byte of memory is allocated).
    ///
    /// # Panics
    /// If `len` rounded up to [`ALIGN`] overflows `isize`, which no caller
    /// reaches: buffer sizes are checked against [`crate::MAX_BUF_SIZE`].
    pub fn new(len: usize) -> AlignedBuf {
        let cap = len.max(1).next_multiple_of(ALIGN);
        #[allow(
            clippy::expect_used,
            reason = "every caller passes a size checked against MAX_BUF_SIZE (64 MiB), \
                      far below isize::MAX; see # Panics"
        )]
        let layout = Layout::from_size_align(cap, ALIGN).expect("buffer size fits in isize");
        // SAFETY: `layout` has a non-zero size (cap >= ALIGN) and a valid
        // power-of-two alignment, as `alloc_zeroed` requires.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len, layout }
    }

    /// The buffer's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes, shared.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` points to an allocation of `layout.size() >= len`
        // bytes that we own, all initialised (alloc_zeroed); the returned
        // borrow is tied to `&self`, so no `&mut` to it can exist meanwhile.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, exclusively.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The start address, for handing to the kernel.
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed(self.layout)` and is freed
        // exactly once, here.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: an AlignedBuf owns its allocation exclusively (like a Box<[u8]>);
// moving it to another thread moves that ownership, and shared access only
// hands out `&[u8]`, which is Sync.
unsafe impl Send for AlignedBuf {}
// SAFETY: see above; `&AlignedBuf` only gives `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .finish()
    }
}

/// User plus system CPU time of the whole process so far, all threads
/// included (also io_uring's SQPOLL thread, which the kernel creates inside
/// the process's thread group).
pub fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a `struct rusage` into the pointer we pass,
    // which points to writable memory of exactly that type.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        // RUSAGE_SELF with a valid pointer cannot fail; report zero if it did.
        return Duration::ZERO;
    }
    // SAFETY: getrusage returned 0, so it filled the struct (and it was
    // zero-initialised before, so every byte is initialised either way).
    let usage = unsafe { usage.assume_init() };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> std::io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: we pass the size of the set we own and a pointer to it; pid 0
    // means the calling thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's capacity.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Restricts the calling thread to `cpus` (ignoring numbers beyond the
/// kernel's set size).
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: as in `allowed_cpus`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's capacity.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: we pass a pointer to the set we own and its exact size; pid 0
    // means the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Raises this process's soft limit on open files to its hard limit and
/// returns the limit now in force: every stream holds a socket and a file,
/// and thousands of listeners need thousands of both. Children inherit it.
pub fn raise_nofile_limit() -> std::io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `struct rlimit` into the pointer we pass,
    // which points to a struct of exactly that type that we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: setrlimit only reads the struct we pass, which is
        // initialised; raising the soft limit up to the hard one is always
        // permitted.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(lim.rlim_cur)
}

/// Reads up to `len` bytes at `offset` into the spare capacity of `buf`
/// (appending them) only if they are in the page cache:
/// `preadv2(RWF_NOWAIT)`. `Ok(None)` when reading would block on the disk
/// (or the kernel or filesystem does not offer `RWF_NOWAIT`); the count may
/// be short when only part of the range is cached.
pub fn read_cached(
    file: &std::fs::File,
    buf: &mut Vec<u8>,
    len: usize,
    offset: u64,
) -> std::io::Result<Option<usize>> {
    use std::os::fd::AsRawFd;
    buf.reserve(len);
    let spare = buf.spare_capacity_mut();
    let len = len.min(spare.len());
    let iov = libc::iovec {
        iov_base: spare.as_mut_ptr().cast(),
        iov_len: len,
    };
    let Ok(off) = libc::off_t::try_from(offset) else {
        return Ok(None);
    };
    // SAFETY: the iovec points at `len` bytes of `buf`'s spare capacity,
    // which we own exclusively for the duration of the call; the kernel
    // writes at most `len` bytes there.
    let n = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, off, libc::RWF_NOWAIT) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL) => Ok(None),
            _ => Err(e),
        };
    }
    let n = n as usize;
    // SAFETY: the kernel initialised the first `n` (<= len) bytes of the
    // spare capacity, which directly follow the vector's current length.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(Some(n))
}

/// Sends up to `len` bytes of `file` at `offset` to the socket `sock` by
/// `sendfile(2)`: from the page cache to the socket with no copy through
/// user memory. The file's own position is not used or moved. Returns the
/// bytes sent (0 at the end of the file); a non-blocking socket that is
/// full gives `WouldBlock`.
pub fn send_file(
    sock: std::os::fd::BorrowedFd<'_>,
    file: &std::fs::File,
    offset: u64,
    len: usize,
) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    let mut off = libc::off_t::try_from(offset)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: both descriptors are open for the call (borrowed, and owned
    // by `file`); `off` is a local the kernel reads and updates.
    let n = unsafe { libc::sendfile(sock.as_raw_fd(), file.as_raw_fd(), &mut off, len) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Writes `bufs` to the socket `sock` in one `sendmsg(2)`, without
/// SIGPIPE; with `more`, as `MSG_MORE` (more data follows at once, so the
/// kernel may hold these bytes to fill a segment). Returns the bytes
/// written; a non-blocking socket that is full gives `WouldBlock`.
pub fn send_slices(
    sock: std::os::fd::BorrowedFd<'_>,
    bufs: &[std::io::IoSlice<'_>],
    more: bool,
) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    let bufs = &bufs[..bufs.len().min(1024)];
    // SAFETY: msghdr is a C struct of integers and raw pointers, for which
    // all-zero bytes are a valid value: no address, no control data.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = bufs.len() as _;
    // SAFETY: `msg` has no address and no control data, and its iovecs are
    // `bufs` (IoSlice is ABI-compatible with iovec on Unix), valid and
    // unchanged for the duration of the call; the kernel only reads them.
    let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, flags) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Caps the bytes a TCP socket keeps queued but not yet sent
/// (`TCP_NOTSENT_LOWAT`): writes stop, and the socket stops polling
/// writable, while more than `bytes` wait for the peer's window. What is in
/// flight is not limited, so a fast peer is not slowed; a slow one no
/// longer makes the kernel hold megabytes of a file for it.
pub fn set_notsent_lowat(sock: std::os::fd::BorrowedFd<'_>, bytes: u32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt reads an int of the given size from a local that
    // lives for the call; the descriptor is borrowed, hence open.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Asks the kernel to drop `file`'s clean pages from the page cache
/// (`posix_fadvise(DONTNEED)`), so the next reads go to the device. Dirty
/// or mapped pages stay; it is advice.
pub fn evict_cached(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: posix_fadvise only advises the kernel about the pages of a
    // descriptor `file` keeps open; it touches no memory of ours.
    let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(std::io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// `cachestat(2)`'s number: Linux 6.5 gave it the same number on every
/// architecture (the unified table past 424), and libc does not name it
/// for all of them yet.
const SYS_CACHESTAT: libc::c_long = 451;

/// Whether the kernel lacks `cachestat` (learnt on the first call).
static NO_CACHESTAT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether every page of `len` bytes at `offset` of `file` is in the page
/// cache, by `cachestat(2)` (Linux 6.5+): one system call that reads no
/// data. `None` when the kernel cannot say (older kernels, other errors),
/// so callers treat the range as uncached. A "yes" is a snapshot: the
/// pages may be evicted a moment later, and a read then waits for the disk.
pub fn range_cached(file: &std::fs::File, offset: u64, len: u64) -> Option<bool> {
    use std::os::fd::AsRawFd;
    use std::sync::atomic::Ordering;
    if len == 0 {
        return Some(true);
    }
    if NO_CACHESTAT.load(Ordering::Relaxed) {
        return None;
    }
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    let page = 4096u64;
    let first = offset / page;
    let last = offset.checked_add(len - 1)? / page;
    let range = Range {
        off: first * page,
        len: (last - first + 1) * page,
    };
    let mut stat = Stat::default();
    // SAFETY: cachestat(fd, *const cachestat_range, *mut cachestat, flags)
    // reads `range` and writes one `struct cachestat`, whose layout `Stat`
    // matches (five u64s); both live on this stack frame for the call.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const Range,
            &mut stat as *mut Stat,
            0u32,
        )
    };
    if r != 0 {
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            NO_CACHESTAT.store(true, Ordering::Relaxed);
        }
        return None;
    }
    let pages = last - first + 1;
    Some(stat.nr_cache >= pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notsent_lowat_is_set_on_a_tcp_socket_and_refused_elsewhere() {
        use std::os::fd::{AsFd, AsRawFd};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let sock = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        set_notsent_lowat(sock.as_fd(), 96 * 1024).unwrap();
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into the local `v`.
        let r = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_NOTSENT_LOWAT,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(r, 0);
        assert_eq!(v, 96 * 1024);
        // A file is not a socket: an error, not a silent no-op.
        let f = std::fs::File::open("/proc/self/stat").unwrap();
        assert!(set_notsent_lowat(f.as_fd(), 1).is_err());
    }

    #[test]
    fn range_cached_sees_written_pages_and_not_dropped_ones() {
        use std::io::Write;
        let path =
            std::env::temp_dir().join(format!("spindle-io-cachestat-{}", std::process::id()));
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&vec![7u8; 256 * 1024]).unwrap();
        f.sync_all().unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let Some(all) = range_cached(&f, 0, 256 * 1024) else {
            eprintln!("cachestat is not available on this kernel; nothing to check");
            return;
        };
        // Just written: in the page cache.
        assert!(all);
        assert_eq!(range_cached(&f, 100, 5000), Some(true));
        // Past the end of the file nothing is cached.
        assert_eq!(range_cached(&f, 1 << 20, 4096), Some(false));
        // Dropped from the cache (clean pages go at once on DONTNEED).
        evict_cached(&f).unwrap();
        assert_eq!(range_cached(&f, 0, 256 * 1024), Some(false));
        assert_eq!(range_cached(&f, 0, 0), Some(true));
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn aligned_buf_is_aligned_zeroed_and_writable() {
        for len in [1, 512, 4096, 4097, 65536] {
            let mut buf = AlignedBuf::new(len);
            assert_eq!(buf.as_slice().as_ptr() as usize % ALIGN, 0);
            assert_eq!(buf.len(), len);
            assert!(buf.as_slice().iter().all(|&b| b == 0));
            buf.as_mut_slice().fill(0xA5);
            assert!(buf.as_slice().iter().all(|&b| b == 0xA5));
        }
    }

    #[test]
    fn pinning_restricts_and_restores_the_thread() {
        std::thread::spawn(|| {
            let all = allowed_cpus().unwrap();
            assert!(!all.is_empty());
            pin_current_thread(&all[..1]).unwrap();
            assert_eq!(allowed_cpus().unwrap(), &all[..1]);
            pin_current_thread(&all).unwrap();
            assert_eq!(allowed_cpus().unwrap(), all);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_open_files_limit_is_raised_to_the_hard_limit() {
        let now = super::raise_nofile_limit().unwrap();
        assert!(now > 0);
        // A second call finds it raised already and says the same.
        assert_eq!(super::raise_nofile_limit().unwrap(), now);
    }

    #[test]
    fn cpu_time_grows_with_work() {
        let before = cpu_time();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(cpu_time() > before);
    }
}
