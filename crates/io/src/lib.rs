//! Spindle's IO engine and the `iobench` queue-depth sweep.
//!
//! This crate owns how Spindle drives a disk: positioned reads and writes of
//! aligned blocks, `O_DIRECT` or through the page cache, kept at a chosen
//! queue depth. Engines implement [`IoEngine`]:
//!
//! - [`UringEngine`]: io_uring with registered files and buffers, plain
//!   (one `io_uring_enter` per batch) or SQPOLL (a kernel thread polls the
//!   submission ring; the app enters the kernel only when NEED_WAKEUP says
//!   the thread sleeps, and to wait for completions — never spinning).
//! - [`PsyncEngine`]: `pread`/`pwrite`, the fallback where io_uring is
//!   unavailable (old kernel, seccomp) or switched off (`SPINDLE_IO_URING=0`).
//!
//! [`bench`](mod@bench) measures IOPS and latency against depth, beside fio if asked.
//!
//! [`beneath`] is the one checked way to open a file under a music folder
//! ([`MusicRoot`]): symlinks that lead out of the folder, `..` and anything
//! but a regular file are refused.
//!
//! It is *not* async (no tokio: callers block in [`IoEngine::wait`] or run it
//! on a thread of their own), and it does not know about files' meaning —
//! the tiers and the server decide what to read.
//!
//! All `unsafe` code is in the private `sys` module.
//!
//! ```
//! use spindle_io::{open_with_fallback, Access, EngineConfig, EngineKind, Op, Request, Slot};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let path = std::env::temp_dir().join(format!("spindle-io-doc-{}", std::process::id()));
//! std::fs::write(&path, vec![7u8; 8192])?;
//! let (mut engine, _fallback) = open_with_fallback(&EngineConfig::new(EngineKind::Uring, 2))?;
//! let file = engine.add_file(std::fs::File::open(&path)?, Access::ReadOnly)?;
//! for (slot, offset) in [(0, 0), (1, 4096)] {
//!     engine.submit(Request { file, op: Op::Read, offset, len: 4096, slot: Slot(slot) })?;
//! }
//! let mut done = Vec::new();
//! while done.len() < 2 {
//!     engine.wait(1, &mut done)?;
//! }
//! assert!(done.iter().all(|c| c.is_full()));
//! assert_eq!(engine.buf(Slot(1)).unwrap()[0], 7);
//! # std::fs::remove_file(&path)?;
//! # Ok(()) }
//! ```
#![deny(unsafe_code)]

pub mod bench;
pub mod beneath;
pub mod engine;
pub mod error;
pub mod psync;
mod sys;
pub mod units;
pub mod uring;

pub use beneath::{MusicRoot, OpenRefused, COVER_CAP, SIDECAR_CAP};
pub use engine::{
    open, open_file, open_with_fallback, Access, Completion, EngineConfig, EngineKind, EngineStats,
    FileId, IoEngine, Op, Request, Slot, SqpollPolicy, SubmitMode, UringPolicy,
    DEFAULT_SQPOLL_PLAIN_ABOVE, DEFAULT_SQPOLL_SPIN_US, MAX_BUF_SIZE, MAX_DEPTH, SPARE_CORE_CPUS,
    URING_ENV,
};
pub use error::{BenchError, SetupError, SubmitError, WaitError};
pub use psync::PsyncEngine;
pub use sys::{
    allowed_cpus, evict_cached, pin_current_thread, raise_nofile_limit, range_cached, read_cached,
    send_file, send_slices, set_notsent_lowat, AlignedBuf, ALIGN,
};
pub use uring::UringEngine;
