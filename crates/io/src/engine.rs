//! The engine interface: slots, requests, completions, and how an engine is
//! chosen (io_uring when it is there and allowed, psync otherwise).

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::{SetupError, SubmitError, WaitError};
use crate::sys::ALIGN;

/// The largest buffer per slot the engines accept (64 MiB).
pub const MAX_BUF_SIZE: usize = 64 << 20;
/// The largest depth the engines accept (io_uring's registered-buffer
/// index is a u16; 4096 in flight is far beyond any disk's queue).
pub const MAX_DEPTH: usize = 4096;
/// Environment variable that switches io_uring off for every engine chosen
/// with [`UringPolicy::from_env`]: `SPINDLE_IO_URING=0` (or `off`, `no`).
pub const URING_ENV: &str = "SPINDLE_IO_URING";

/// Which engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// `pread`/`pwrite`, one request at a time per thread.
    Psync,
    /// io_uring: one thread keeps `depth` requests in flight, one
    /// `io_uring_enter` per batch.
    Uring,
    /// io_uring with a kernel thread polling the submission ring.
    UringSqpoll,
}

impl EngineKind {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Psync => "psync",
            EngineKind::Uring => "uring",
            EngineKind::UringSqpoll => "uring-sqpoll",
        }
    }

    /// Parses `psync`, `uring` or `uring-sqpoll`.
    pub fn parse(s: &str) -> Result<EngineKind, String> {
        match s {
            "psync" => Ok(EngineKind::Psync),
            "uring" | "io_uring" => Ok(EngineKind::Uring),
            "uring-sqpoll" | "sqpoll" => Ok(EngineKind::UringSqpoll),
            _ => Err(format!(
                "unknown engine '{s}'; expected psync, uring or uring-sqpoll"
            )),
        }
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether io_uring may be used.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum UringPolicy {
    /// Use io_uring when asked for and available.
    #[default]
    Allow,
    /// Never use io_uring; the reason goes into errors and reports.
    Deny(String),
}

impl UringPolicy {
    /// `Deny` when the environment variable [`URING_ENV`] is `0`, `off`,
    /// `no` or `false`; `Allow` otherwise.
    pub fn from_env() -> UringPolicy {
        match std::env::var(URING_ENV) {
            Ok(v)
                if matches!(
                    v.to_ascii_lowercase().as_str(),
                    "0" | "off" | "no" | "false"
                ) =>
            {
                UringPolicy::Deny(format!("{URING_ENV}={v}"))
            }
            _ => UringPolicy::Allow,
        }
    }
}

/// When a plain io_uring engine hands queued requests to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubmitMode {
    /// At once when other requests are in flight (one `io_uring_enter` per
    /// request, as fio's default `iodepth_batch_submit=1`); a lone request is
    /// submitted together with the wait for it.
    #[default]
    Eager,
    /// Only in [`IoEngine::wait`]: one `io_uring_enter` per batch.
    Batch,
}

/// Whether an SQPOLL engine really runs a polling kernel thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SqpollPolicy {
    /// Only when a core is spare for it: at least [`SPARE_CORE_CPUS`] CPUs
    /// allowed to the thread that builds the engine. Otherwise the engine
    /// submits as plain io_uring does (see [`IoEngine::sqpoll_active`]): a
    /// poller that must share a core with the application and the disk's
    /// interrupts costs more than the system calls it saves.
    #[default]
    IfSpareCore,
    /// Always poll, spare core or not (what `iobench` measures).
    Always,
}

/// CPUs needed before [`SqpollPolicy::IfSpareCore`] polls: one for the
/// application, one for the poller, one for everything else.
pub const SPARE_CORE_CPUS: usize = 3;

/// How to build an engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The engine to build.
    pub kind: EngineKind,
    /// Slots, i.e. the most requests in flight at once.
    pub depth: usize,
    /// Bytes per slot buffer: the longest request.
    pub buf_size: usize,
    /// Whether files are opened with `O_DIRECT`; requests are then checked
    /// for alignment to [`EngineConfig::align`] before they are sent.
    pub direct: bool,
    /// Alignment required with `direct` (4096 covers every Linux device).
    pub align: usize,
    /// How many files can be registered at once.
    pub max_files: u32,
    /// SQPOLL: milliseconds the kernel thread spins idle before sleeping.
    pub sqpoll_idle_ms: u32,
    /// SQPOLL: the CPU to pin the kernel thread to, if any.
    pub sqpoll_cpu: Option<u32>,
    /// SQPOLL: microseconds a wait for completions first watches the
    /// completion ring (which the kernel thread fills without a system
    /// call) before it sleeps in the kernel; 0 sleeps at once.
    pub sqpoll_spin_us: u32,
    /// SQPOLL: with this many requests in flight, new ones are sent by a
    /// second, plain ring and the poller is left to sleep, until fewer than
    /// half as many are in flight (0: always the poller). Deep queues do not
    /// need the saved system call and the poller takes a core from the
    /// completions (docs/io-engine.md).
    pub sqpoll_plain_above: u32,
    /// SQPOLL: whether to poll without a spare core.
    pub sqpoll_policy: SqpollPolicy,
    /// Whether io_uring may be used at all.
    pub uring: UringPolicy,
    /// Plain io_uring: when requests go to the kernel.
    pub submit: SubmitMode,
}

/// How long an SQPOLL wait watches the completion ring before sleeping:
/// longer than nearly every read of the test machine's virtual disk takes
/// at depth 8 (p99 ~250 µs), so that a completion is seen without the
/// sleep and wake-up. At 100 µs, 6 % of the waits at depth 8 slept and
/// SQPOLL read at 0.84x fio's (which never sleeps); at 1 ms, 0.98x
/// (docs/io-engine.md). SQPOLL engines poll only with a spare core, so
/// the watch takes no CPU the rest of the machine needs.
pub const DEFAULT_SQPOLL_SPIN_US: u32 = 1000;

/// [`EngineConfig::sqpoll_plain_above`]'s default. On the 2-core test
/// machine, with the engines interleaved within each depth and waits that
/// watch the completion ring for 1 ms, SQPOLL read at 1.29x, 1.15x and
/// 1.06x of plain io_uring at depths 4, 8 and 16 and at 0.82x at 32
/// (where waits no longer watch the ring: they do with at most 16 in
/// flight), so from 24 reads in flight the plain ring sends them.
pub const DEFAULT_SQPOLL_PLAIN_ABOVE: u32 = 24;

impl EngineConfig {
    /// A config with defaults: 4 KiB buffers, buffered IO, 64 files,
    /// SQPOLL idle 2 ms, io_uring allowed unless [`URING_ENV`] says no.
    pub fn new(kind: EngineKind, depth: usize) -> EngineConfig {
        EngineConfig {
            kind,
            depth,
            buf_size: 4096,
            direct: false,
            align: ALIGN,
            max_files: 64,
            sqpoll_idle_ms: 2,
            sqpoll_cpu: None,
            sqpoll_spin_us: DEFAULT_SQPOLL_SPIN_US,
            sqpoll_plain_above: DEFAULT_SQPOLL_PLAIN_ABOVE,
            sqpoll_policy: SqpollPolicy::default(),
            uring: UringPolicy::from_env(),
            submit: SubmitMode::default(),
        }
    }

    pub(crate) fn check(&self) -> Result<(), SetupError> {
        if self.depth == 0 || self.depth > MAX_DEPTH {
            return Err(SetupError::Config(format!(
                "depth must be between 1 and {MAX_DEPTH}; got {}",
                self.depth
            )));
        }
        if self.buf_size == 0 || self.buf_size > MAX_BUF_SIZE {
            return Err(SetupError::Config(format!(
                "buffer size must be between 1 and {MAX_BUF_SIZE} bytes; got {}",
                self.buf_size
            )));
        }
        if !self.align.is_power_of_two() || self.align > ALIGN {
            return Err(SetupError::Config(format!(
                "alignment must be a power of two up to {ALIGN}; got {}",
                self.align
            )));
        }
        if self.max_files == 0 {
            return Err(SetupError::Config("max_files must be at least 1".into()));
        }
        Ok(())
    }

    /// Checks a request against this config (alignment, length).
    pub(crate) fn check_request(&self, req: &Request) -> Result<(), SubmitError> {
        if req.len == 0 {
            return Err(SubmitError::Empty);
        }
        if req.len > self.buf_size {
            return Err(SubmitError::TooLong {
                len: req.len,
                buf_size: self.buf_size,
            });
        }
        if req.slot.0 >= self.depth {
            return Err(SubmitError::NoSuchSlot {
                slot: req.slot.0,
                depth: self.depth,
            });
        }
        if self.direct
            && (!req.offset.is_multiple_of(self.align as u64)
                || !req.len.is_multiple_of(self.align))
        {
            return Err(SubmitError::Misaligned {
                align: self.align,
                offset: req.offset,
                len: req.len,
            });
        }
        Ok(())
    }
}

/// One of an engine's buffers, `0..depth`. A slot is either idle (its
/// buffer can be read and written) or in flight (the kernel owns it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot(pub usize);

/// A file registered with an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId(pub(crate) u32);

impl FileId {
    /// The id as a number (its index in the engine's file table).
    pub fn index(self) -> u32 {
        self.0
    }
}

/// Whether a registered file accepts writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
        }
    }
}

/// A positioned read into, or write from, the first `len` bytes of a slot's
/// buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub file: FileId,
    pub op: Op,
    pub offset: u64,
    pub len: usize,
    pub slot: Slot,
}

/// A finished request. Its slot is idle again, and for a read its buffer
/// holds the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The request as it was submitted.
    pub req: Request,
    /// Bytes transferred (fewer than `req.len` at the end of a file), or the
    /// error number.
    pub result: Result<usize, i32>,
}

impl Completion {
    /// The result as an `io::Result`.
    pub fn bytes(&self) -> std::io::Result<usize> {
        self.result.map_err(std::io::Error::from_raw_os_error)
    }

    /// Whether all `req.len` bytes were transferred.
    pub fn is_full(&self) -> bool {
        self.result == Ok(self.req.len)
    }
}

/// What an engine has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct EngineStats {
    pub submitted: u64,
    pub completed: u64,
    /// System calls that entered the kernel to submit or wait
    /// (`io_uring_enter`, or `pread`/`pwrite` for psync).
    pub syscalls: u64,
    /// SQPOLL: the system calls made only to wake the sleeping kernel thread.
    pub sqpoll_wakeups: u64,
    /// SQPOLL: waits that saw their completions while watching the
    /// completion ring, without entering the kernel.
    pub sqpoll_spun: u64,
    /// SQPOLL: requests sent by the plain ring because many were in flight
    /// (see [`EngineConfig::sqpoll_plain_above`]).
    pub sqpoll_plain: u64,
}

/// An IO engine: a fixed set of buffer slots, registered files, positioned
/// requests in, completions out. Synchronous: [`IoEngine::wait`] blocks the
/// calling thread in the kernel until completions are ready.
///
/// The loop a caller runs: fill an idle slot's buffer (writes), `submit`
/// requests for idle slots, `wait(1, ..)`, use the buffers of the completed
/// slots (reads), submit again.
pub trait IoEngine: Send {
    /// Which engine this is.
    fn kind(&self) -> EngineKind;
    /// The number of slots (the most requests in flight).
    fn depth(&self) -> usize;
    /// The size of each slot's buffer.
    fn buf_size(&self) -> usize;
    /// Registers an open file; requests name it by the returned id.
    fn add_file(&mut self, file: File, access: Access) -> Result<FileId, SetupError>;
    /// Unregisters a file and closes it; its id may be handed out again by
    /// a later `add_file`. Refused while a request on it is in flight.
    fn remove_file(&mut self, id: FileId) -> Result<(), SubmitError>;
    /// An idle slot's buffer; `None` while in flight (or out of range).
    fn buf(&self, slot: Slot) -> Option<&[u8]>;
    /// An idle slot's buffer, to fill before a write.
    fn buf_mut(&mut self, slot: Slot) -> Option<&mut [u8]>;
    /// Queues a request; it may reach the kernel only at the next `wait`
    /// (one system call per batch), or at once with SQPOLL.
    fn submit(&mut self, req: Request) -> Result<(), SubmitError>;
    /// Blocks until at least `min` requests have completed (fewer if fewer
    /// are in flight) and appends every ready completion to `out`.
    fn wait(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), WaitError>;
    /// Requests submitted and not yet returned by `wait`.
    fn in_flight(&self) -> usize;
    /// Counters.
    fn stats(&self) -> EngineStats;
    /// Whether a kernel thread polls the submission ring (an SQPOLL engine
    /// under [`SqpollPolicy::IfSpareCore`] without a spare core does not).
    fn sqpoll_active(&self) -> bool {
        false
    }
}

/// Builds the engine `config.kind` asks for. io_uring kinds fail with
/// [`SetupError::UringDisabled`] or [`SetupError::UringUnavailable`] when
/// they cannot be had; see [`open_with_fallback`].
pub fn open(config: &EngineConfig) -> Result<Box<dyn IoEngine>, SetupError> {
    config.check()?;
    match config.kind {
        EngineKind::Psync => Ok(Box::new(crate::psync::PsyncEngine::new(config)?)),
        EngineKind::Uring | EngineKind::UringSqpoll => {
            if let UringPolicy::Deny(reason) = &config.uring {
                return Err(SetupError::UringDisabled {
                    reason: reason.clone(),
                });
            }
            Ok(Box::new(crate::uring::UringEngine::new(config)?))
        }
    }
}

/// Like [`open`], but when an io_uring engine is disabled or unavailable it
/// returns a psync engine of the same depth and the reason it fell back.
pub fn open_with_fallback(
    config: &EngineConfig,
) -> Result<(Box<dyn IoEngine>, Option<SetupError>), SetupError> {
    match open(config) {
        Ok(engine) => Ok((engine, None)),
        Err(
            e @ (SetupError::UringDisabled { .. }
            | SetupError::UringUnavailable { .. }
            | SetupError::SqpollUnavailable { .. }),
        ) => {
            let psync = EngineConfig {
                kind: EngineKind::Psync,
                ..config.clone()
            };
            Ok((open(&psync)?, Some(e)))
        }
        Err(e) => Err(e),
    }
}

/// Opens a file for an engine: read-only or read-write, with `O_DIRECT` when
/// `direct`. Errors say what to do, e.g. when the filesystem refuses
/// `O_DIRECT` (tmpfs does).
pub fn open_file(path: &Path, access: Access, direct: bool) -> Result<File, SetupError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).write(access == Access::ReadWrite);
    if direct {
        opts.custom_flags(libc::O_DIRECT);
    }
    opts.open(path).map_err(|source| {
        let hint = if direct && source.raw_os_error() == Some(libc::EINVAL) {
            "; this filesystem does not support O_DIRECT (tmpfs does not): run without --direct or use another directory"
        } else {
            ""
        };
        SetupError::Open {
            path: path.to_path_buf(),
            source,
            hint,
        }
    })
}
