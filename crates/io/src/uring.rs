//! The io_uring engine, plain or with SQPOLL.
//!
//! Files and buffers are registered once, so a request costs the kernel no
//! file-table lookup and no page pinning. Plain mode, [`SubmitMode::Batch`],
//! queues requests in the submission ring and enters the kernel once per
//! batch, submitting and waiting in the same `io_uring_enter`;
//! [`SubmitMode::Eager`] (the default) sends a request at once when others
//! are already in flight, which on the disks measured here gave lower
//! latency than holding it for the batch (docs/io-engine.md). SQPOLL mode has a kernel thread
//! poll the submission ring: the app enters the kernel only to wake that
//! thread when it has gone to sleep (the ring's NEED_WAKEUP flag) and to
//! sleep itself until completions arrive — never to spin on the ring.

use std::fs::File;
use std::os::fd::AsRawFd;

use crate::engine::{
    Access, Completion, EngineConfig, EngineKind, EngineStats, FileId, IoEngine, Op, Request, Slot,
    SqpollPolicy, SubmitMode, SPARE_CORE_CPUS,
};
use crate::error::{SetupError, SubmitError, WaitError};
use crate::sys::ring::{PushError, RingOp, SlotRing, SqpollSetup};

/// io_uring engine with registered files and buffers.
pub struct UringEngine {
    config: EngineConfig,
    ring: SlotRing,
    /// Registered files by index; `None` where one was removed.
    files: Vec<Option<(File, Access)>>,
    pending: Vec<Option<Request>>,
    stats: EngineStats,
    sqpoll_active: bool,
}

/// Whether this thread may run on enough CPUs to give a poller one.
fn spare_core() -> bool {
    crate::sys::allowed_cpus().is_ok_and(|c| c.len() >= SPARE_CORE_CPUS)
}

impl std::fmt::Debug for UringEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringEngine")
            .field("kind", &self.config.kind)
            .field("depth", &self.config.depth)
            .field("in_flight", &self.ring.in_flight())
            .finish()
    }
}

impl UringEngine {
    /// Sets up the ring; `config.kind` must be `Uring` or `UringSqpoll`.
    pub fn new(config: &EngineConfig) -> Result<UringEngine, SetupError> {
        config.check()?;
        let sqpoll = match config.kind {
            EngineKind::UringSqpoll
                if config.sqpoll_policy == SqpollPolicy::Always || spare_core() =>
            {
                Some(SqpollSetup {
                    idle_ms: config.sqpoll_idle_ms,
                    cpu: config.sqpoll_cpu,
                    spin_us: config.sqpoll_spin_us,
                    plain_above: config.sqpoll_plain_above,
                })
            }
            EngineKind::UringSqpoll => None,
            EngineKind::Uring => None,
            EngineKind::Psync => {
                return Err(SetupError::Config(
                    "UringEngine needs kind uring or uring-sqpoll".into(),
                ))
            }
        };
        let ring = SlotRing::new(
            config.depth,
            config.buf_size,
            config.max_files,
            sqpoll,
            config.submit == SubmitMode::Eager,
        )
        .map_err(|source| match (sqpoll, source.raw_os_error()) {
            (Some(_), Some(libc::EPERM)) => SetupError::SqpollUnavailable { source },
            _ => SetupError::UringUnavailable { source },
        })?;
        Ok(UringEngine {
            sqpoll_active: sqpoll.is_some(),
            config: config.clone(),
            ring,
            files: Vec::new(),
            pending: vec![None; config.depth],
            stats: EngineStats::default(),
        })
    }
}

impl IoEngine for UringEngine {
    fn kind(&self) -> EngineKind {
        self.config.kind
    }

    fn depth(&self) -> usize {
        self.config.depth
    }

    fn buf_size(&self) -> usize {
        self.config.buf_size
    }

    fn add_file(&mut self, file: File, access: Access) -> Result<FileId, SetupError> {
        let index = self
            .files
            .iter()
            .position(Option::is_none)
            .unwrap_or(self.files.len()) as u32;
        if index >= self.config.max_files {
            return Err(SetupError::TooManyFiles {
                capacity: self.config.max_files,
            });
        }
        self.ring
            .set_file(index, file.as_raw_fd())
            .map_err(|source| SetupError::Register { source })?;
        if let Some(free) = self.files.get_mut(index as usize) {
            *free = Some((file, access));
        } else {
            self.files.push(Some((file, access)));
        }
        Ok(FileId(index))
    }

    fn remove_file(&mut self, id: FileId) -> Result<(), SubmitError> {
        if !matches!(self.files.get(id.0 as usize), Some(Some(_))) {
            return Err(SubmitError::UnknownFile { id: id.0 });
        }
        if self.pending.iter().flatten().any(|r| r.file == id) {
            return Err(SubmitError::FileBusy { id: id.0 });
        }
        self.ring
            .set_file(id.0, -1)
            .map_err(|e| SubmitError::Kernel {
                message: e.to_string(),
            })?;
        self.files[id.0 as usize] = None;
        Ok(())
    }

    fn buf(&self, slot: Slot) -> Option<&[u8]> {
        self.ring.buf(slot.0)
    }

    fn buf_mut(&mut self, slot: Slot) -> Option<&mut [u8]> {
        self.ring.buf_mut(slot.0)
    }

    fn submit(&mut self, req: Request) -> Result<(), SubmitError> {
        self.config.check_request(&req)?;
        let (_, access) = self
            .files
            .get(req.file.0 as usize)
            .and_then(Option::as_ref)
            .ok_or(SubmitError::UnknownFile { id: req.file.0 })?;
        if req.op == Op::Write && *access == Access::ReadOnly {
            return Err(SubmitError::ReadOnly { id: req.file.0 });
        }
        let op = match req.op {
            Op::Read => RingOp::Read,
            Op::Write => RingOp::Write,
        };
        self.ring
            .push(op, req.slot.0, req.file.0, req.offset, req.len)
            .map_err(|e| match e {
                PushError::NoSuchSlot => SubmitError::NoSuchSlot {
                    slot: req.slot.0,
                    depth: self.config.depth,
                },
                PushError::SlotBusy => SubmitError::SlotBusy { slot: req.slot.0 },
                PushError::TooLong => SubmitError::TooLong {
                    len: req.len,
                    buf_size: self.config.buf_size,
                },
                PushError::Io(e) => SubmitError::Kernel {
                    message: e.to_string(),
                },
            })?;
        self.pending[req.slot.0] = Some(req);
        self.stats.submitted += 1;
        Ok(())
    }

    fn wait(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), WaitError> {
        self.ring
            .wait(min)
            .map_err(|source| WaitError::Enter { source })?;
        let pending = &mut self.pending;
        let stats = &mut self.stats;
        self.ring.reap(|slot, res| {
            if let Some(req) = pending.get_mut(slot).and_then(Option::take) {
                stats.completed += 1;
                let result = if res < 0 { Err(-res) } else { Ok(res as usize) };
                out.push(Completion { req, result });
            }
        });
        let c = self.ring.counters();
        self.stats.syscalls = c.enters;
        self.stats.sqpoll_wakeups = c.wakeups;
        self.stats.sqpoll_spun = c.spun;
        self.stats.sqpoll_plain = c.plain;
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.ring.in_flight()
    }

    fn sqpoll_active(&self) -> bool {
        self.sqpoll_active
    }

    fn stats(&self) -> EngineStats {
        let c = self.ring.counters();
        EngineStats {
            syscalls: c.enters,
            sqpoll_wakeups: c.wakeups,
            sqpoll_spun: c.spun,
            sqpoll_plain: c.plain,
            ..self.stats
        }
    }
}
