//! The read path: which devices may hold a track, which copy to read
//! (by measured latency, or `%util` for the benchmark), opening it within
//! the stall timeout, and [`TierStream`], which fails over to another copy
//! mid-way at the byte it reached — or hands a local copy's file to the
//! server to send by `sendfile` ([`TierStream::local_file`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{lock, Device, Tiers, TrackRef};
use crate::config::DeviceState;
use crate::device::{DeviceError, DeviceKind, Opened, Reader};
use crate::latency::{pick_lowest, pick_weighted, Choice, EXPLORE};

/// Why a track could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    #[error("{key}: no device holds a copy")]
    NoCopy { key: String },
    #[error("{key}: every copy failed: {}", errors.join("; "))]
    AllFailed { key: String, errors: Vec<String> },
}

/// Why a [`TierStream`] stopped before its end (the `source` of the
/// [`std::io::Error`] it returns).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    #[error("{key}: every copy failed at byte {at}: {}", errors.join("; "))]
    AllFailed {
        key: String,
        at: u64,
        errors: Vec<String>,
    },
}

/// The read path's state: how to choose, its random source, its counts.
pub(super) struct Reads {
    picker: Mutex<Picker>,
    pub(super) opens: AtomicU64,
    pub(super) hot_hits: AtomicU64,
    pub(super) bytes_sent: AtomicU64,
    pub(super) bytes_from_hot: AtomicU64,
    pub(super) failovers: AtomicU64,
}

struct Picker {
    choice: Choice,
    rng: SmallRng,
}

impl Default for Reads {
    fn default() -> Reads {
        Reads {
            picker: Mutex::new(Picker {
                choice: Choice::Latency,
                rng: SmallRng::from_entropy(),
            }),
            opens: AtomicU64::new(0),
            hot_hits: AtomicU64::new(0),
            bytes_sent: AtomicU64::new(0),
            bytes_from_hot: AtomicU64::new(0),
            failovers: AtomicU64::new(0),
        }
    }
}

impl Reads {
    pub(super) fn choice(&self) -> Choice {
        lock(&self.picker).choice
    }
}

impl Device {
    /// The time to first byte assumed before any read was timed.
    fn prior_ms(&self) -> f64 {
        match self.backend.kind() {
            DeviceKind::Hot => 1.0,
            DeviceKind::S3 => 20.0,
            DeviceKind::Folder => 5.0,
        }
    }

    fn estimate_ms(&self) -> f64 {
        self.stats.estimate_ms(self.prior_ms())
    }
}

impl Tiers {
    /// How reads choose (the benchmark switches it).
    pub fn set_choice(&self, c: Choice) {
        lock(&self.reads.picker).choice = c;
    }

    /// The devices that may hold `t`, usable ones only (all of them if
    /// every one is marked failed: a stale mark is better than no read).
    pub(super) fn candidates(&self, t: &TrackRef) -> Vec<usize> {
        let mut c = Vec::new();
        if self
            .hot
            .as_ref()
            .is_some_and(|h| h.contains(&t.key).is_some())
        {
            c.push(0);
        }
        if let Some(i) = t.folder.and_then(|f| self.music_device(f)) {
            c.push(i);
        }
        for (name, _) in self.index.devices_of(&t.key) {
            if let Some(i) = self.device_by_name(&name) {
                if !c.contains(&i) {
                    c.push(i);
                }
            }
        }
        c.retain(|&i| self.devices[i].state != DeviceState::Down);
        let usable: Vec<usize> = c
            .iter()
            .copied()
            .filter(|&i| !self.devices[i].stats.is_failed() && self.devices[i].backend.reachable())
            .collect();
        if usable.is_empty() {
            c
        } else {
            usable
        }
    }

    /// One of `cands`: by latency (a copy on a device never timed is read
    /// once to measure it; a few reads explore at random), or by the
    /// lowest `%util`.
    pub(super) fn choose(&self, cands: &[usize]) -> Option<usize> {
        let mut guard = lock(&self.reads.picker);
        let Picker { choice, rng } = &mut *guard;
        let i = match choice {
            Choice::Latency if cands.len() > 1 && rng.gen_bool(EXPLORE) => {
                rng.gen_range(0..cands.len())
            }
            Choice::Latency => {
                let unmeasured = (cands.len() > 1)
                    .then(|| {
                        cands
                            .iter()
                            .position(|&i| self.devices[i].stats.unmeasured())
                    })
                    .flatten();
                match unmeasured {
                    Some(k) => k,
                    None => {
                        let scores: Vec<f64> = cands
                            .iter()
                            .map(|&i| self.devices[i].estimate_ms())
                            .collect();
                        pick_weighted(&scores, rng)?
                    }
                }
            }
            Choice::Util => {
                let utils: Vec<f64> = cands
                    .iter()
                    .map(|&i| self.devices[i].stats.util().unwrap_or(0.0))
                    .collect();
                pick_lowest(&utils, rng)?
            }
        };
        Some(cands[i])
    }

    /// The length of `t` if a copy's length is known without opening it
    /// (the hot folder, the replica index, a stat of the music folder).
    pub fn known_len(&self, t: &TrackRef) -> Option<u64> {
        if let Some(n) = self.hot.as_ref().and_then(|h| h.contains(&t.key)) {
            return Some(n);
        }
        if let Some((_, n)) = self.index.devices_of(&t.key).first() {
            return Some(*n);
        }
        let d = &self.devices[t.folder.and_then(|f| self.music_device(f))?];
        let path = d.backend.local_path()?.join(&t.key);
        std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len())
    }

    /// Opens `t` at byte `offset` on the best copy; failing copies are
    /// skipped. The stream fails over mid-way (see [`TierStream`]).
    pub async fn open(
        self: &Arc<Self>,
        t: &TrackRef,
        offset: u64,
    ) -> Result<TierStream, OpenError> {
        let mut cands = self.candidates(t);
        if cands.is_empty() {
            return Err(OpenError::NoCopy { key: t.key.clone() });
        }
        self.reads.opens.fetch_add(1, Ordering::Relaxed);
        if cands.first() == Some(&0) && self.hot.is_some() {
            self.reads.hot_hits.fetch_add(1, Ordering::Relaxed);
        }
        let mut errors = Vec::new();
        let mut tries: HashMap<usize, u32> = HashMap::new();
        while let Some(i) = self.choose(&cands) {
            match self.open_on(i, &t.key, offset, None).await {
                Ok((opened, first)) => {
                    let len = opened.len;
                    return Ok(TierStream {
                        tiers: self.clone(),
                        track: t.clone(),
                        device: i,
                        reader: Some(opened.reader),
                        pending: first,
                        pos: offset,
                        end: len,
                        len,
                        cands,
                        tries,
                        failovers: 0,
                    });
                }
                Err(e) => {
                    errors.push(e.to_string());
                    self.count_try(i, &mut tries, &mut cands);
                }
            }
        }
        Err(OpenError::AllFailed {
            key: t.key.clone(),
            errors,
        })
    }

    /// Counts `n` bytes of a track sent from device `i`: its bytes read,
    /// and the bytes sent and sent from the hot folder.
    fn count_sent(&self, i: usize, n: u64) {
        self.devices[i]
            .stats
            .bytes_read
            .fetch_add(n, Ordering::Relaxed);
        self.reads.bytes_sent.fetch_add(n, Ordering::Relaxed);
        if self.hot.is_some() && i == 0 {
            self.reads.bytes_from_hot.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Counts a failed try on device `i` and drops it from `cands` unless
    /// it may be tried again: an S3 device with other endpoints up (up to
    /// three times per stream); anything else once. Returns whether it
    /// stays.
    fn count_try(&self, i: usize, tries: &mut HashMap<usize, u32>, cands: &mut Vec<usize>) -> bool {
        let n = tries.entry(i).or_default();
        *n += 1;
        let d = &self.devices[i];
        let again = d.backend.kind() == DeviceKind::S3 && d.backend.reachable() && *n < 3;
        if !again {
            cands.retain(|&c| c != i);
        }
        again
    }

    /// Opens on device `i` and waits for the first chunk (time to first
    /// byte), within the stall timeout. `want_len`: the length the copy
    /// must have (on failover).
    async fn open_on(
        &self,
        i: usize,
        key: &str,
        offset: u64,
        want_len: Option<u64>,
    ) -> Result<(Opened, Option<Bytes>), DeviceError> {
        let d = &self.devices[i];
        let stall = self.stall_timeout();
        let stalled = || DeviceError::Stalled {
            device: d.name.clone(),
            key: key.to_owned(),
        };
        d.stats.in_flight.fetch_add(1, Ordering::Relaxed);
        let t0 = Instant::now();
        let r = async {
            let mut o = tokio::time::timeout(stall, d.backend.open(key, offset))
                .await
                .map_err(|_| stalled())??;
            if let Some(want) = want_len.filter(|&w| w != o.len) {
                return Err(DeviceError::WrongLength {
                    device: d.name.clone(),
                    key: key.to_owned(),
                    len: o.len,
                    want,
                });
            }
            let first = if offset < o.len {
                tokio::time::timeout(stall, o.reader.next_chunk())
                    .await
                    .map_err(|_| stalled())?
                    .map_err(|source| DeviceError::Io {
                        device: d.name.clone(),
                        key: key.to_owned(),
                        source,
                    })?
            } else {
                None
            };
            Ok((o, first))
        }
        .await;
        d.stats.in_flight.fetch_sub(1, Ordering::Relaxed);
        match &r {
            Ok(_) => {
                d.stats.record_ttfb(t0.elapsed());
                d.stats.reads.fetch_add(1, Ordering::Relaxed);
                d.stats.mark_ok();
            }
            Err(e) if e.is_not_found() => {}
            Err(_) => {
                // Slowness counts too: a device that times out is slow.
                d.stats.record_ttfb(t0.elapsed());
                d.stats.mark_failed(self.retry_after());
            }
        }
        r
    }
}

/// A stream of one track from a byte offset. When the device it reads
/// from errors, ends early or stalls, it opens another copy at the byte
/// it reached and goes on; the reader sees one unbroken byte sequence.
///
/// A copy that is a plain local file (the hot folder, a folder device)
/// may instead be taken out with [`TierStream::local_file`] and sent by
/// the server's `sendfile`; what is sent that way no longer fails over
/// mid-stream (a read error ends the response, and the client's retry
/// with a `Range` lands on another copy).
pub struct TierStream {
    tiers: Arc<Tiers>,
    track: TrackRef,
    device: usize,
    reader: Option<Reader>,
    pending: Option<Bytes>,
    pos: u64,
    end: u64,
    len: u64,
    cands: Vec<usize>,
    tries: HashMap<usize, u32>,
    failovers: u32,
}

impl TierStream {
    /// The track's total length.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device serving now.
    pub fn device(&self) -> &str {
        &self.tiers.devices[self.device].name
    }

    /// How many times this stream moved to another copy.
    pub fn failovers(&self) -> u32 {
        self.failovers
    }

    /// Stops after byte `end` (exclusive), for a `Range` request.
    pub fn limit(mut self, end: u64) -> TierStream {
        self.end = end.min(self.len);
        self
    }

    /// The file of the copy this stream reads, when that copy is a plain
    /// local file ([`crate::device::Reader::local_file`]: the descriptor
    /// the folder's checked open gave) and the stream has not failed over.
    /// Its bytes of the track are at their own offsets, so a caller that
    /// sends `count` bytes from `start` itself drops the stream and
    /// counts them with [`TierStream::meter`]; nothing it sends fails
    /// over to another copy.
    pub fn local_file(&self) -> Option<Arc<std::fs::File>> {
        if self.failovers > 0 {
            return None;
        }
        self.reader.as_ref()?.local_file()
    }

    /// Counts bytes sent from this stream's copy by other means (after
    /// [`TierStream::local_file`]) as the stream counts its own chunks:
    /// in the device's bytes read and the hot folder's share.
    pub fn meter(&self) -> impl Fn(u64) + Send + Sync + 'static {
        let (tiers, device) = (self.tiers.clone(), self.device);
        move |n| tiers.count_sent(device, n)
    }

    fn account(&self, n: usize) {
        self.tiers.count_sent(self.device, n as u64);
    }

    fn cut(&mut self, mut c: Bytes) -> Bytes {
        let left = self.end.saturating_sub(self.pos);
        if c.len() as u64 > left {
            c.truncate(left as usize);
        }
        self.pos += c.len() as u64;
        self.account(c.len());
        c
    }

    /// The next chunk; `None` at the end; an error (its source a
    /// [`StreamError`]) only when no copy is left to fail over to.
    pub async fn next_chunk(&mut self) -> Option<std::io::Result<Bytes>> {
        let stall = self.tiers.stall_timeout();
        loop {
            if self.pos >= self.end {
                return None;
            }
            if let Some(c) = self.pending.take() {
                return Some(Ok(self.cut(c)));
            }
            let why = match self.reader.as_mut() {
                Some(r) => match tokio::time::timeout(stall, r.next_chunk()).await {
                    Ok(Ok(Some(c))) if !c.is_empty() => return Some(Ok(self.cut(c))),
                    Ok(Ok(_)) => "the copy ended early".to_owned(),
                    Ok(Err(e)) => e.to_string(),
                    Err(_) => "no data within the stall timeout".to_owned(),
                },
                None => "no reader".to_owned(),
            };
            if let Err(e) = self.fail_over(&why).await {
                return Some(Err(std::io::Error::other(e)));
            }
        }
    }

    async fn fail_over(&mut self, why: &str) -> Result<(), StreamError> {
        self.reader = None;
        let t = self.tiers.clone();
        let d = &t.devices[self.device];
        if t.count_try(self.device, &mut self.tries, &mut self.cands) {
            d.stats.errors.fetch_add(1, Ordering::Relaxed);
        } else {
            d.stats.mark_failed(t.retry_after());
        }
        let mut errors = vec![format!("{}: {why}", d.name)];
        while let Some(i) = t.choose(&self.cands) {
            match t
                .open_on(i, &self.track.key, self.pos, Some(self.len))
                .await
            {
                Ok((o, first)) => {
                    self.device = i;
                    self.reader = Some(o.reader);
                    self.pending = first;
                    self.failovers += 1;
                    t.reads.failovers.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(e) => {
                    errors.push(e.to_string());
                    t.count_try(i, &mut self.tries, &mut self.cands);
                }
            }
        }
        Err(StreamError::AllFailed {
            key: self.track.key.clone(),
            at: self.pos,
            errors,
        })
    }

    /// The rest of the stream as a `futures` stream (for an HTTP body).
    pub fn into_stream(self) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> + Send {
        futures_util::stream::unfold(self, |mut s| async move {
            let c = s.next_chunk().await?;
            Some((c, s))
        })
    }
}
