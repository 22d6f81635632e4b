//! An io_uring whose buffers are owned by the ring wrapper, one per slot.
//!
//! The invariant this type keeps, and that makes its safe methods sound: a
//! slot's buffer is *in flight* from the moment its request is pushed until
//! its completion is reaped. While in flight, [`SlotRing::buf`] and
//! [`SlotRing::buf_mut`] return `None` (the kernel may be writing into it),
//! and `Drop` waits for every in-flight request before the buffers are freed.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, types, IoUring};

use super::AlignedBuf;

/// SQPOLL settings: how long the kernel thread spins without work before it
/// sleeps and sets NEED_WAKEUP, and an optional CPU to pin it to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SqpollSetup {
    pub idle_ms: u32,
    pub cpu: Option<u32>,
    /// How long [`SlotRing::wait`] watches the completion ring before it
    /// sleeps in the kernel, microseconds.
    pub spin_us: u32,
    /// With this many requests in flight, new ones go to a second, plain
    /// ring instead (0: never); see [`SlotRing`].
    pub plain_above: u32,
}

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RingOp {
    Read,
    Write,
}

/// Why a push was refused.
#[derive(Debug)]
pub(crate) enum PushError {
    /// The slot number is out of range.
    NoSuchSlot,
    /// The slot's buffer is already in flight.
    SlotBusy,
    /// The request is longer than the slot's buffer.
    TooLong,
    /// Flushing a full submission queue failed.
    Io(io::Error),
}

/// Counters of the calls into the kernel.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RingCounters {
    /// `io_uring_enter` calls made.
    pub enters: u64,
    /// Of those, the ones made only because the SQPOLL thread had gone to
    /// sleep (NEED_WAKEUP was set).
    pub wakeups: u64,
    /// SQPOLL waits that saw their completions while watching the ring,
    /// without entering the kernel.
    pub spun: u64,
    /// SQPOLL: requests sent by the plain ring because enough were in
    /// flight already.
    pub plain: u64,
}

/// SQPOLL waits watch the completion ring only with at most this many
/// reads in flight. Measured on the 2-core test machine (docs/io-engine.md):
/// watching raised IOPS by half at depths 1 and 2 and by 5-15% at 8 and
/// 16, and cost 15% at 32 (with more in flight, one sleep serves many
/// completions, and a spinning application takes the CPU the interrupts
/// need).
const SPIN_MAX_IN_FLIGHT: usize = 16;

/// An SQPOLL ring may hand deep queues to a second, plain ring.
///
/// SQPOLL saves the system call per submission, which is what counts at a
/// low queue depth. With many reads in flight one `io_uring_enter` serves
/// many of them, while the poller keeps a core busy that the application
/// and the disk's completions need: on the 2-core test machine SQPOLL fell
/// to 0.87-0.88x of plain io_uring at depths 16-128 (fio's SQPOLL the
/// same). So once `plain_above` requests are in flight, new ones go to
/// the plain ring, and the poller, given nothing, goes to sleep; when a
/// wait finds fewer than half that in flight, they go back to the poller.
struct Plain {
    ring: IoUring,
    /// Requests pushed to this ring and not yet reaped (each is submitted
    /// as it is pushed).
    n_in_flight: usize,
    /// Switch to this ring at this many in flight, back below half.
    above: usize,
    /// Whether new requests go here now.
    active: bool,
}

pub(crate) struct SlotRing {
    // Field order matters for drop: the rings (and with them the kernel's
    // registration of the buffers) go before the buffers.
    ring: IoUring,
    plain: Option<Plain>,
    bufs: Vec<AlignedBuf>,
    in_flight: Vec<bool>,
    n_in_flight: usize,
    unsubmitted: usize,
    sqpoll: bool,
    /// SQPOLL only: see [`SqpollSetup::spin_us`].
    spin: std::time::Duration,
    eager: bool,
    counters: RingCounters,
}

impl SlotRing {
    /// A ring with `slots` registered buffers of `buf_size` bytes and a
    /// sparse table of `files` registered files. `eager`: see [`Self::push`].
    pub fn new(
        slots: usize,
        buf_size: usize,
        files: u32,
        sqpoll: Option<SqpollSetup>,
        eager: bool,
    ) -> io::Result<SlotRing> {
        let entries = slots.max(1).next_power_of_two() as u32;
        let build = |coop: bool, sqpoll: Option<SqpollSetup>| {
            let mut b = IoUring::builder();
            b.setup_cqsize(entries * 2);
            match sqpoll {
                Some(s) => {
                    b.setup_sqpoll(s.idle_ms);
                    if let Some(cpu) = s.cpu {
                        b.setup_sqpoll_cpu(cpu);
                    }
                }
                // Cooperative task running: the kernel does not interrupt
                // the app to post completions; they are run when we enter.
                None if coop => {
                    b.setup_coop_taskrun();
                }
                None => {}
            }
            b.build(entries)
        };
        // COOP_TASKRUN needs Linux 5.19; older kernels say EINVAL.
        let plain_ring = || match build(true, None) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => build(false, None),
            other => other,
        };
        let ring = match sqpoll {
            Some(_) => build(false, sqpoll)?,
            None => plain_ring()?,
        };
        let plain = match sqpoll {
            Some(s) if s.plain_above > 0 => Some(Plain {
                ring: plain_ring()?,
                n_in_flight: 0,
                above: s.plain_above as usize,
                active: false,
            }),
            _ => None,
        };
        let mut bufs: Vec<AlignedBuf> = (0..slots).map(|_| AlignedBuf::new(buf_size)).collect();
        let iovecs: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: each iovec describes the whole of one AlignedBuf in `bufs`.
        // Those heap allocations never move and are owned by the SlotRing we
        // return, which drops both rings (ending the registrations) before
        // the buffers, and first waits for every request that uses them.
        unsafe { ring.submitter().register_buffers(&iovecs)? };
        ring.submitter().register_files_sparse(files)?;
        if let Some(p) = &plain {
            // SAFETY: as above; the same buffers, registered with the second
            // ring, which is also dropped before them.
            unsafe { p.ring.submitter().register_buffers(&iovecs)? };
            p.ring.submitter().register_files_sparse(files)?;
        }
        Ok(SlotRing {
            ring,
            plain,
            in_flight: vec![false; slots],
            bufs,
            n_in_flight: 0,
            unsubmitted: 0,
            sqpoll: sqpoll.is_some(),
            spin: std::time::Duration::from_micros(sqpoll.map_or(0, |s| u64::from(s.spin_us))),
            eager,
            counters: RingCounters::default(),
        })
    }

    /// Puts `fd` in the registered-file table at `index` (-1 empties it).
    pub fn set_file(&mut self, index: u32, fd: RawFd) -> io::Result<()> {
        self.ring.submitter().register_files_update(index, &[fd])?;
        if let Some(p) = &self.plain {
            p.ring.submitter().register_files_update(index, &[fd])?;
        }
        Ok(())
    }

    pub fn counters(&self) -> RingCounters {
        self.counters
    }

    pub fn in_flight(&self) -> usize {
        self.n_in_flight
    }

    /// The slot's buffer, or `None` while the kernel owns it.
    pub fn buf(&self, slot: usize) -> Option<&[u8]> {
        match self.in_flight.get(slot) {
            Some(false) => Some(self.bufs[slot].as_slice()),
            _ => None,
        }
    }

    /// The slot's buffer, or `None` while the kernel owns it.
    pub fn buf_mut(&mut self, slot: usize) -> Option<&mut [u8]> {
        match self.in_flight.get(slot) {
            Some(false) => Some(self.bufs[slot].as_mut_slice()),
            _ => None,
        }
    }

    /// Queues a read into (or write from) the first `len` bytes of the slot's
    /// buffer, at `offset` of the registered file `file`. The request reaches
    /// the kernel at the next [`Self::flush`] or [`Self::wait`]; at once when
    /// `eager` and other requests are in flight; with SQPOLL, as soon as the
    /// kernel thread looks.
    pub fn push(
        &mut self,
        op: RingOp,
        slot: usize,
        file: u32,
        offset: u64,
        len: usize,
    ) -> Result<(), PushError> {
        match self.in_flight.get(slot) {
            None => return Err(PushError::NoSuchSlot),
            Some(true) => return Err(PushError::SlotBusy),
            Some(false) => {}
        }
        if len > self.bufs[slot].len() || slot > u16::MAX as usize {
            return Err(PushError::TooLong);
        }
        let ptr = self.bufs[slot].as_mut_ptr();
        let entry = match op {
            RingOp::Read => {
                opcode::ReadFixed::new(types::Fixed(file), ptr, len as u32, slot as u16)
                    .offset(offset)
                    .build()
            }
            RingOp::Write => {
                opcode::WriteFixed::new(types::Fixed(file), ptr, len as u32, slot as u16)
                    .offset(offset)
                    .build()
            }
        }
        .user_data(slot as u64);
        if let Some(p) = &mut self.plain {
            // Deep enough: switch now. Back to the poller is decided in
            // `wait`, where the count still includes completions not yet
            // reaped: right after a large reap the queue only looks shallow.
            if self.n_in_flight >= p.above {
                p.active = true;
            }
            if p.active {
                loop {
                    // SAFETY: as below, for the plain ring, where the same
                    // buffers and files are registered under the same indexes.
                    let pushed = unsafe { p.ring.submission().push(&entry) };
                    match pushed {
                        Ok(()) => break,
                        Err(_) => {
                            p.ring.submitter().submit().map_err(PushError::Io)?;
                        }
                    }
                }
                self.in_flight[slot] = true;
                self.n_in_flight += 1;
                p.n_in_flight += 1;
                self.counters.plain += 1;
                // As plain eager mode: others are in flight, so send it now.
                self.counters.enters += 1;
                retry_eintr(|| p.ring.submitter().submit()).map_err(PushError::Io)?;
                return Ok(());
            }
        }
        loop {
            // SAFETY: the entry points at `len <= buffer length` bytes of
            // bufs[slot], registered under index `slot`. We mark the slot in
            // flight right below, so from here until its completion is reaped
            // no reference to that buffer is handed out and Drop waits for the
            // request before freeing it. A bad file index fails the request
            // with EBADF; it cannot touch memory.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            match pushed {
                Ok(()) => break,
                // The submission queue is full: hand it to the kernel first.
                Err(_) => self.flush().map_err(PushError::Io)?,
            }
        }
        self.in_flight[slot] = true;
        self.n_in_flight += 1;
        self.unsubmitted += 1;
        // SQPOLL: publish at once (a system call only if the poller
        // sleeps). Plain, eager: when other requests are already at the
        // device, send this one now instead of holding it until the next
        // wait; a lone request waits, so submitting and waiting share one
        // io_uring_enter.
        if self.sqpoll || (self.eager && self.n_in_flight > 1) {
            self.flush().map_err(PushError::Io)?;
        }
        Ok(())
    }

    /// Hands queued requests to the kernel. With SQPOLL this is a system
    /// call only when the kernel thread has gone to sleep (NEED_WAKEUP): the
    /// doorbell is rung only when the other side says it must be.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.unsubmitted == 0 {
            return Ok(());
        }
        if self.sqpoll {
            if self.ring.submission().need_wakeup() {
                self.counters.wakeups += 1;
                self.counters.enters += 1;
                retry_eintr(|| self.ring.submitter().submit())?;
            }
        } else {
            self.counters.enters += 1;
            retry_eintr(|| self.ring.submitter().submit())?;
        }
        self.unsubmitted = 0;
        Ok(())
    }

    /// Submits what is queued and blocks (in the kernel, not spinning) until
    /// at least `min` completions are ready to reap, or fewer if fewer are in
    /// flight.
    pub fn wait(&mut self, min: usize) -> io::Result<()> {
        let min = min.min(self.n_in_flight);
        if let Some(p) = &mut self.plain {
            if self.n_in_flight >= p.above {
                p.active = true;
            } else if self.n_in_flight < p.above / 2 {
                p.active = false;
            }
        }
        loop {
            let plain_ready = self.plain.as_mut().map_or(0, |p| p.ring.completion().len());
            let ready = self.ring.completion().len() + plain_ready;
            if ready >= min {
                return self.flush();
            }
            // Requests in the plain ring not yet completed: wait there (with
            // many in flight, one of them completes soon; what the poller
            // completes meanwhile is reaped with it).
            let Some(p) = self.plain.as_mut().filter(|p| p.n_in_flight > plain_ready) else {
                break;
            };
            let want = (min - ready).min(p.n_in_flight - plain_ready);
            self.counters.enters += 1;
            match retry_eintr(|| p.ring.submitter().submit_and_wait(want)) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        // What is left to wait for is in the SQPOLL (or only) ring.
        let plain_ready = self.plain.as_mut().map_or(0, |p| p.ring.completion().len());
        let min = min - plain_ready;
        let ready = self.ring.completion().len();
        if ready >= min {
            return self.flush();
        }
        let polled = self.n_in_flight - self.plain.as_ref().map_or(0, |p| p.n_in_flight);
        if self.sqpoll && !self.spin.is_zero() && polled <= SPIN_MAX_IN_FLIGHT {
            // With SQPOLL the kernel thread posts completions without a
            // system call from us, so a completion due within the spin is
            // seen here, without the sleep and wake-up of io_uring_enter.
            // Bounded: past `spin` we sleep in the kernel as usual, so a
            // machine without a spare core loses at most that per wait.
            // Only up to SPIN_MAX_IN_FLIGHT reads in flight.
            self.flush()?;
            let start = std::time::Instant::now();
            while start.elapsed() < self.spin {
                if self.ring.completion().len() >= min {
                    self.counters.spun += 1;
                    return Ok(());
                }
                std::hint::spin_loop();
            }
        }
        let ready = self.ring.completion().len();
        if ready >= min {
            return self.flush();
        }
        let want = min - ready;
        if self.sqpoll && self.ring.submission().need_wakeup() {
            self.counters.wakeups += 1;
        }
        self.counters.enters += 1;
        match retry_eintr(|| self.ring.submitter().submit_and_wait(want)) {
            Ok(_) => {}
            // EBUSY: the completion queue is full; the caller reaps and waits
            // again.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => return Err(e),
        }
        self.unsubmitted = 0;
        Ok(())
    }

    /// Takes every ready completion, marking its slot idle, and calls
    /// `f(slot, result)` for each (`result` is bytes done or `-errno`).
    pub fn reap(&mut self, mut f: impl FnMut(usize, i32)) {
        for cqe in self.ring.completion() {
            let slot = cqe.user_data() as usize;
            if let Some(flag) = self.in_flight.get_mut(slot) {
                if *flag {
                    *flag = false;
                    self.n_in_flight -= 1;
                }
            }
            f(slot, cqe.result());
        }
        if let Some(p) = &mut self.plain {
            for cqe in p.ring.completion() {
                let slot = cqe.user_data() as usize;
                if let Some(flag) = self.in_flight.get_mut(slot) {
                    if *flag {
                        *flag = false;
                        self.n_in_flight -= 1;
                        p.n_in_flight -= 1;
                    }
                }
                f(slot, cqe.result());
            }
        }
    }
}

impl Drop for SlotRing {
    fn drop(&mut self) {
        while self.n_in_flight > 0 {
            if let Err(_e) = self.wait(1) {
                // We cannot prove the kernel is done with the buffers, so we
                // leak them rather than free memory it may still write.
                std::mem::forget(std::mem::take(&mut self.bufs));
                return;
            }
            self.reap(|_, _| {});
        }
    }
}

fn retry_eintr<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}
