//! Measured device latency and the choice among copies.
//!
//! Each device keeps an EWMA of Spindle's own time to first byte, its
//! reads in flight, and — for a local folder on a block device — the
//! `await` of that device from `/proc/diskstats` (milliseconds per
//! completed IO over the last sampling interval, as iostat computes it).
//! A read picks among the copies at random with weight ∝ 1/latency²,
//! where latency is the estimate times (1 + reads in flight): a fast
//! device takes most reads but is never flooded, because its own queue
//! raises its estimate. `%util` is measured only to show and to compare
//! against (a 95%-busy SSD still answers faster than a 10%-busy disk); it
//! never decides.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::Rng;

/// Smoothing of the time-to-first-byte EWMA (weight of a new sample).
pub const EWMA_ALPHA: f64 = 0.2;

/// How long an EWMA without new samples still decides.
pub const FRESH: Duration = Duration::from_secs(30);

/// Share of reads sent to a copy chosen uniformly, so that every
/// device's EWMA stays fresh.
pub const EXPLORE: f64 = 0.02;

/// Live numbers of one device.
#[derive(Debug, Default)]
pub struct DeviceStats {
    /// EWMA of time to first byte (µs) and when the last sample came.
    ewma_us: Mutex<Option<(f64, Instant)>>,
    pub in_flight: AtomicUsize,
    pub reads: AtomicU64,
    pub bytes_read: AtomicU64,
    pub errors: AtomicU64,
    down_until: Mutex<Option<Instant>>,
    disk: Mutex<DiskSample>,
}

#[derive(Debug, Default)]
struct DiskSample {
    /// The block device, `MAJ:MIN`, if the folder is on one.
    dev: Option<(u32, u32)>,
    last: Option<(Instant, DiskCounters)>,
    await_ms: Option<f64>,
    util: Option<f64>,
    busy_last: Option<(Instant, Duration)>,
}

/// The counters of one `/proc/diskstats` line that await and util need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiskCounters {
    pub reads: u64,
    pub read_ms: u64,
    pub ios: u64,
    pub io_ms: u64,
    pub busy_ms: u64,
}

impl DeviceStats {
    /// Stats for a device whose folder is `local` (to find its block
    /// device), or `None` for a remote one.
    pub fn new(local: Option<&Path>) -> DeviceStats {
        let s = DeviceStats::default();
        s.lock_disk().dev = local.and_then(block_device_of);
        s
    }

    fn lock_disk(&self) -> std::sync::MutexGuard<'_, DiskSample> {
        self.disk.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a time to first byte.
    pub fn record_ttfb(&self, d: Duration) {
        let us = d.as_secs_f64() * 1e6;
        let mut e = self.ewma_us.lock().unwrap_or_else(|e| e.into_inner());
        let v = match *e {
            None => us,
            Some((old, _)) => old + EWMA_ALPHA * (us - old),
        };
        *e = Some((v, Instant::now()));
    }

    /// The EWMA of time to first byte, milliseconds.
    pub fn ewma_ms(&self) -> Option<f64> {
        self.ewma_us
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|(us, _)| us / 1000.0)
    }

    /// `await` of the block device over the last interval, milliseconds.
    pub fn await_ms(&self) -> Option<f64> {
        self.lock_disk().await_ms
    }

    /// `%util` of the block device over the last interval, 0..=1 (shown,
    /// never used to choose).
    pub fn util(&self) -> Option<f64> {
        self.lock_disk().util
    }

    /// The block device as `MAJ:MIN`.
    pub fn block_device(&self) -> Option<(u32, u32)> {
        self.lock_disk().dev
    }

    /// Takes a diskstats sample (from the text of `/proc/diskstats`) and
    /// updates await and util.
    pub fn sample_disk(&self, diskstats: &str, now: Instant) {
        let mut d = self.lock_disk();
        let Some(dev) = d.dev else {
            return;
        };
        let Some(c) = counters_of(diskstats, dev) else {
            return;
        };
        if let Some((t0, c0)) = d.last {
            let reads = c.reads.saturating_sub(c0.reads);
            let read_ms = c.read_ms.saturating_sub(c0.read_ms);
            let ios = c.ios.saturating_sub(c0.ios);
            let ms = c.io_ms.saturating_sub(c0.io_ms);
            let el = now.duration_since(t0).as_secs_f64() * 1000.0;
            // Reads are what Spindle asks of the device: the read await
            // (iostat's r_await) when there were reads, else the await of
            // all IO. No IO in the interval: keep the last await (a quiet
            // device is not a fast one) but util is 0.
            if reads > 0 {
                d.await_ms = Some(read_ms as f64 / reads as f64);
            } else if ios > 0 {
                d.await_ms = Some(ms as f64 / ios as f64);
            }
            if el > 0.0 {
                d.util = Some((c.busy_ms.saturating_sub(c0.busy_ms) as f64 / el).min(1.0));
            }
        }
        d.last = Some((now, c));
    }

    /// Updates `%util` from a back end's own busy-time counter.
    pub fn sample_busy(&self, busy: Duration, now: Instant) {
        let mut d = self.lock_disk();
        if let Some((t0, b0)) = d.busy_last {
            let el = now.duration_since(t0).as_secs_f64();
            if el > 0.0 {
                d.util = Some((busy.saturating_sub(b0).as_secs_f64() / el).min(1.0));
            }
        }
        d.busy_last = Some((now, busy));
    }

    /// Marks the device failed: skipped until `retry_after` has passed.
    pub fn mark_failed(&self, retry_after: Duration) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        *self.down_until.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Instant::now() + retry_after);
    }

    /// Whether the device is skipped after a failure.
    pub fn is_failed(&self) -> bool {
        self.down_until
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|t| t > Instant::now())
    }

    /// Clears a failure (a read succeeded).
    pub fn mark_ok(&self) {
        *self.down_until.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Whether Spindle has never timed a read of this device and none is
    /// under way: the next read goes to it once, to measure it (a new hot
    /// folder, a device added since start), rather than judging it by the
    /// disk's await alone, which says nothing of what the page cache holds.
    pub fn unmeasured(&self) -> bool {
        self.ewma_us
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
            && self.in_flight.load(Ordering::Relaxed) == 0
    }

    /// The EWMA, if its last sample is younger than [`FRESH`].
    pub fn fresh_ewma_ms(&self) -> Option<f64> {
        self.ewma_us
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .filter(|(_, t)| t.elapsed() < FRESH)
            .map(|(us, _)| us / 1000.0)
    }

    /// The latency estimate used to choose, milliseconds: Spindle's own
    /// time to first byte (the EWMA) while it is fresh; else the device's
    /// await from diskstats; else the stale EWMA; else `prior_ms`. Times
    /// (1 + reads in flight).
    ///
    /// Own reads come first because they are what a listener waits for
    /// (a hot copy in the page cache answers in microseconds even while
    /// the disk's queue is long with someone else's writes); await judges
    /// a device Spindle has not read from lately.
    pub fn estimate_ms(&self, prior_ms: f64) -> f64 {
        let base = self
            .fresh_ewma_ms()
            .or_else(|| self.await_ms())
            .or_else(|| self.ewma_ms())
            .unwrap_or(prior_ms);
        base.max(0.01) * (1.0 + self.in_flight.load(Ordering::Relaxed) as f64)
    }
}

/// The block device of the file system holding `path`, as (major, minor),
/// if `/sys/dev/block/MAJ:MIN` exists for it (not for tmpfs or overlay).
pub fn block_device_of(path: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let major = (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff)) as u32;
    let minor = (((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff)) as u32;
    Path::new(&format!("/sys/dev/block/{major}:{minor}"))
        .exists()
        .then_some((major, minor))
}

/// The counters of device `dev` in the text of `/proc/diskstats`.
pub fn counters_of(diskstats: &str, dev: (u32, u32)) -> Option<DiskCounters> {
    for line in diskstats.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 14 {
            continue;
        }
        let num = |i: usize| f[i].parse::<u64>().unwrap_or(0);
        if num(0) as u32 == dev.0 && num(1) as u32 == dev.1 {
            // 3 reads, 6 ms reading, 7 writes, 10 ms writing,
            // 12 ms doing IO (see the kernel's iostats documentation).
            return Some(DiskCounters {
                reads: num(3),
                read_ms: num(6),
                ios: num(3) + num(7),
                io_ms: num(6) + num(10),
                busy_ms: num(12),
            });
        }
    }
    None
}

/// How reads choose among copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Weighted random, weight ∝ 1/estimate² (Spindle's).
    Latency,
    /// The copy whose device shows the lowest `%util` (MogileFS's
    /// default; kept for the benchmark).
    Util,
}

/// Picks one of `scores` (latency estimates, ms) at random with weight
/// ∝ 1/score². Returns an index into `scores`; `None` if it is empty.
pub fn pick_weighted<R: Rng>(scores: &[f64], rng: &mut R) -> Option<usize> {
    if scores.is_empty() {
        return None;
    }
    let w: Vec<f64> = scores.iter().map(|s| 1.0 / (s.max(1e-3).powi(2))).collect();
    let total: f64 = w.iter().sum();
    let mut x = rng.gen::<f64>() * total;
    for (i, wi) in w.iter().enumerate() {
        if x < *wi {
            return Some(i);
        }
        x -= wi;
    }
    Some(w.len() - 1)
}

/// Picks the lowest of `utils`, ties broken at random.
pub fn pick_lowest<R: Rng>(utils: &[f64], rng: &mut R) -> Option<usize> {
    let min = utils.iter().copied().fold(f64::INFINITY, f64::min);
    let ties: Vec<usize> = (0..utils.len()).filter(|&i| utils[i] <= min).collect();
    if ties.is_empty() {
        return None;
    }
    Some(ties[rng.gen_range(0..ties.len())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn weighted_choice_follows_inverse_square_latency() {
        let seed: u64 = rand::random();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        // 1 ms vs 2 ms vs 4 ms: weights 1, 1/4, 1/16 → 16/21, 4/21, 1/21.
        let scores = [1.0, 2.0, 4.0];
        let mut n = [0u32; 3];
        let draws = 210_000;
        for _ in 0..draws {
            n[pick_weighted(&scores, &mut rng).unwrap()] += 1;
        }
        let want = [16.0 / 21.0, 4.0 / 21.0, 1.0 / 21.0];
        for i in 0..3 {
            let got = f64::from(n[i]) / f64::from(draws);
            assert!(
                (got - want[i]).abs() < 0.01,
                "seed {seed}: device {i} took {got:.4}, want {:.4}",
                want[i]
            );
        }
        // The slowest still gets some reads, so its EWMA stays current.
        assert!(n[2] > 0);
        assert_eq!(pick_weighted(&[], &mut rng), None);
        assert_eq!(pick_weighted(&[7.0], &mut rng), Some(0));
    }

    #[test]
    fn reads_in_flight_raise_the_estimate() {
        let s = DeviceStats::new(None);
        assert_eq!(s.estimate_ms(5.0), 5.0);
        s.record_ttfb(Duration::from_millis(2));
        assert!((s.estimate_ms(5.0) - 2.0).abs() < 1e-9);
        s.record_ttfb(Duration::from_millis(12));
        // 2 + 0.2 × (12 − 2) = 4.
        assert!((s.ewma_ms().unwrap() - 4.0).abs() < 1e-9);
        s.in_flight.store(3, Ordering::Relaxed);
        assert!((s.estimate_ms(5.0) - 16.0).abs() < 1e-9);
    }

    #[test]
    fn a_device_is_unmeasured_until_its_first_read_is_timed() {
        let s = DeviceStats::new(None);
        assert!(s.unmeasured());
        s.in_flight.store(1, Ordering::Relaxed);
        assert!(!s.unmeasured(), "one probe at a time");
        s.in_flight.store(0, Ordering::Relaxed);
        s.record_ttfb(Duration::from_micros(80));
        assert!(!s.unmeasured());
    }

    #[test]
    fn own_reads_decide_while_fresh_and_await_stands_in_after() {
        let s = DeviceStats::new(None);
        s.lock_disk().await_ms = Some(400.0);
        // Never read by Spindle: the disk's await.
        assert_eq!(s.estimate_ms(5.0), 400.0);
        s.record_ttfb(Duration::from_micros(300));
        assert!((s.estimate_ms(5.0) - 0.3).abs() < 1e-9);
        // Not read for longer than FRESH: await again.
        if let Some(old) = Instant::now().checked_sub(FRESH + Duration::from_secs(1)) {
            s.ewma_us.lock().unwrap().as_mut().unwrap().1 = old;
            assert_eq!(s.estimate_ms(5.0), 400.0);
        }
    }

    #[test]
    fn diskstats_give_await_and_util() {
        let line = |ios_r: u64, ms_r: u64, busy: u64| {
            format!(
                "   8       0 sda {ios_r} 0 0 {ms_r} 10 0 0 20 0 {busy} 0 0 0 0 0 0 0\n 259 0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11\n"
            )
        };
        let s = DeviceStats::new(None);
        s.lock_disk().dev = Some((8, 0));
        let t0 = Instant::now();
        s.sample_disk(&line(100, 500, 1000), t0);
        assert_eq!(s.await_ms(), None);
        s.sample_disk(&line(150, 1000, 1500), t0 + Duration::from_secs(1));
        // 50 more reads took 500 ms: await 10 ms; 500 ms busy of 1000.
        assert_eq!(s.await_ms(), Some(10.0));
        assert!((s.util().unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(
            counters_of(&line(1, 2, 3), (259, 0)),
            Some(DiskCounters {
                reads: 1,
                read_ms: 4,
                ios: 1 + 5,
                io_ms: 4 + 8,
                busy_ms: 10
            })
        );
        assert_eq!(counters_of("garbage\n", (8, 0)), None);
    }

    #[test]
    fn a_folder_on_a_block_device_is_found() {
        // The root file system of a machine or container may be an
        // overlay without a block device; the answer must then be None,
        // and otherwise name a device the kernel lists.
        if let Some((maj, min)) = block_device_of(Path::new("/")) {
            assert!(Path::new(&format!("/sys/dev/block/{maj}:{min}")).exists());
        }
    }

    #[test]
    fn lowest_util_breaks_ties_at_random() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        assert_eq!(pick_lowest(&[0.9, 0.1, 0.5], &mut rng), Some(1));
        let mut seen = [false; 2];
        for _ in 0..100 {
            seen[pick_lowest(&[0.2, 0.2], &mut rng).unwrap()] = true;
        }
        assert_eq!(seen, [true, true]);
    }
}
