//! The fallback engine: `pread`/`pwrite`, executed inside `submit`.
//!
//! A psync engine never has more than one request at the disk: `submit`
//! performs the call and queues its completion, and `wait` hands the queued
//! completions out. Depth for psync comes from threads — one engine per
//! thread — which is how fio's `psync` engine reaches depth N too
//! (`numjobs=N`). Its slots let the same caller loop drive either engine.

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::engine::{
    Access, Completion, EngineConfig, EngineKind, EngineStats, FileId, IoEngine, Op, Request, Slot,
};
use crate::error::{SetupError, SubmitError, WaitError};
use crate::sys::AlignedBuf;

/// `pread`/`pwrite` engine.
#[derive(Debug)]
pub struct PsyncEngine {
    config: EngineConfig,
    bufs: Vec<AlignedBuf>,
    busy: Vec<bool>,
    /// Files by id; `None` where one was removed.
    files: Vec<Option<(File, Access)>>,
    done: VecDeque<Completion>,
    stats: EngineStats,
}

impl PsyncEngine {
    /// A psync engine with `config.depth` slots.
    pub fn new(config: &EngineConfig) -> Result<PsyncEngine, SetupError> {
        config.check()?;
        Ok(PsyncEngine {
            config: EngineConfig {
                kind: EngineKind::Psync,
                ..config.clone()
            },
            bufs: (0..config.depth)
                .map(|_| AlignedBuf::new(config.buf_size))
                .collect(),
            busy: vec![false; config.depth],
            files: Vec::new(),
            done: VecDeque::new(),
            stats: EngineStats::default(),
        })
    }
}

impl IoEngine for PsyncEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Psync
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
            .unwrap_or(self.files.len());
        if index >= self.config.max_files as usize {
            return Err(SetupError::TooManyFiles {
                capacity: self.config.max_files,
            });
        }
        if let Some(free) = self.files.get_mut(index) {
            *free = Some((file, access));
        } else {
            self.files.push(Some((file, access)));
        }
        Ok(FileId(index as u32))
    }

    fn remove_file(&mut self, id: FileId) -> Result<(), SubmitError> {
        match self.files.get_mut(id.0 as usize) {
            // psync requests finish inside `submit`: none is ever in flight.
            Some(f @ Some(_)) => {
                *f = None;
                Ok(())
            }
            _ => Err(SubmitError::UnknownFile { id: id.0 }),
        }
    }

    fn buf(&self, slot: Slot) -> Option<&[u8]> {
        match self.busy.get(slot.0) {
            Some(false) => Some(self.bufs[slot.0].as_slice()),
            _ => None,
        }
    }

    fn buf_mut(&mut self, slot: Slot) -> Option<&mut [u8]> {
        match self.busy.get(slot.0) {
            Some(false) => Some(self.bufs[slot.0].as_mut_slice()),
            _ => None,
        }
    }

    fn submit(&mut self, req: Request) -> Result<(), SubmitError> {
        self.config.check_request(&req)?;
        let (file, access) = self
            .files
            .get(req.file.0 as usize)
            .and_then(Option::as_ref)
            .ok_or(SubmitError::UnknownFile { id: req.file.0 })?;
        if req.op == Op::Write && *access == Access::ReadOnly {
            return Err(SubmitError::ReadOnly { id: req.file.0 });
        }
        if self.busy[req.slot.0] {
            return Err(SubmitError::SlotBusy { slot: req.slot.0 });
        }
        let buf = &mut self.bufs[req.slot.0];
        let result = match req.op {
            Op::Read => read_full(file, &mut buf.as_mut_slice()[..req.len], req.offset),
            Op::Write => write_full(file, &buf.as_slice()[..req.len], req.offset),
        };
        self.stats.submitted += 1;
        self.stats.syscalls += 1;
        self.busy[req.slot.0] = true;
        self.done.push_back(Completion { req, result });
        Ok(())
    }

    fn wait(&mut self, _min: usize, out: &mut Vec<Completion>) -> Result<(), WaitError> {
        // Every submitted request already ran; nothing to block on.
        for c in self.done.drain(..) {
            self.busy[c.req.slot.0] = false;
            self.stats.completed += 1;
            out.push(c);
        }
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.done.len()
    }

    fn stats(&self) -> EngineStats {
        self.stats
    }
}

/// One `pread`, retried on EINTR. A short count (end of file) is returned
/// as is, as io_uring does.
fn read_full(file: &File, buf: &mut [u8], offset: u64) -> Result<usize, i32> {
    loop {
        match file.read_at(buf, offset) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.raw_os_error().unwrap_or(libc::EIO)),
        }
    }
}

fn write_full(file: &File, buf: &[u8], offset: u64) -> Result<usize, i32> {
    loop {
        match file.write_at(buf, offset) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.raw_os_error().unwrap_or(libc::EIO)),
        }
    }
}
