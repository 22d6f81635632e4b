//! The pace a live transcode's client must keep to hold its encode slot.
//!
//! An encode runs at the pace its client reads (ffmpeg waits when the
//! client does), so a client that stops reading, or reads a byte now and
//! then, would hold a slot for as long as it likes. Progress is the bytes
//! the client actually took (the body handed to the connection,
//! [`Progress`]); over every window of `stall_timeout` (20 s by default,
//! [`super::config::STALL_TIMEOUT_SECS`]) it must take at least a quarter
//! of the output's bitrate ([`PACE_DIVISOR`]), else — when another request
//! waits for a slot — the encode is stopped, its slot freed and the
//! connection aborted. A paused player keeps its encode while nobody
//! waits; a player that reads at the pace of playback keeps four times
//! the minimum.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The client must take at least the bitrate divided by this: 4.
pub const PACE_DIVISOR: u64 = 4;
/// The bitrate judged from when the output's is not fixed (lossless,
/// the source's): 128 kbit/s.
pub const PACE_FALLBACK_KBPS: u32 = 128;

/// What the body and the pump share: the bytes taken, and whether the
/// pump cut the transcode off (the body then ends with an error).
#[derive(Debug, Default)]
pub struct Progress {
    taken: AtomicU64,
    cut: AtomicBool,
}

impl Progress {
    pub fn took(&self, n: u64) {
        self.taken.fetch_add(n, Ordering::Relaxed);
    }

    pub fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    pub fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
    }

    pub fn is_cut(&self) -> bool {
        self.cut.load(Ordering::Relaxed)
    }
}

/// The judge of one client's pace: samples of the bytes taken, the
/// oldest at least a window old.
#[derive(Debug)]
pub struct Pace {
    window: Duration,
    /// Bytes to take per window.
    min_bytes: u64,
    samples: VecDeque<(Instant, u64)>,
}

impl Pace {
    /// A client of an output of `kbps` (0: not fixed), starting `now`,
    /// judged over `window`.
    pub fn new(window: Duration, kbps: u32, now: Instant) -> Pace {
        let kbps = if kbps == 0 { PACE_FALLBACK_KBPS } else { kbps };
        let per_sec = u64::from(kbps) * 1000 / 8 / PACE_DIVISOR;
        Pace {
            window,
            min_bytes: (per_sec as f64 * window.as_secs_f64()) as u64,
            samples: VecDeque::from([(now, 0)]),
        }
    }

    /// How often to call [`Pace::too_slow`]: a quarter of the window.
    pub fn tick(&self) -> Duration {
        (self.window / 4).max(Duration::from_millis(10))
    }

    /// The bytes the client must take per window.
    pub fn min_bytes(&self) -> u64 {
        self.min_bytes
    }

    /// Records that the client has taken `taken` bytes by `now`; true
    /// when it took less than its due over the last window.
    pub fn too_slow(&mut self, now: Instant, taken: u64) -> bool {
        self.samples.push_back((now, taken));
        // Keep one sample at least a window old: the base to judge from.
        while self
            .samples
            .get(1)
            .is_some_and(|(t, _)| now.duration_since(*t) >= self.window)
        {
            self.samples.pop_front();
        }
        match self.samples.front() {
            Some((t, base)) if now.duration_since(*t) >= self.window => {
                taken.saturating_sub(*base) < self.min_bytes
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Duration = Duration::from_secs(20);

    #[test]
    fn the_due_is_a_quarter_of_the_bitrate_over_the_window() {
        let p = Pace::new(W, 128, Instant::now());
        assert_eq!(p.min_bytes(), 16_000 / 4 * 20);
        assert_eq!(Pace::new(W, 0, Instant::now()).min_bytes(), p.min_bytes());
        assert_eq!(p.tick(), Duration::from_secs(5));
    }

    #[test]
    fn a_client_that_reads_at_playback_pace_keeps_its_slot() {
        let t0 = Instant::now();
        let mut p = Pace::new(W, 128, t0);
        for s in 1..=120u64 {
            assert!(
                !p.too_slow(t0 + Duration::from_secs(s), s * 16_000),
                "at {s} s"
            );
        }
    }

    #[test]
    fn a_client_that_stops_reading_loses_it_within_a_window() {
        let t0 = Instant::now();
        let mut p = Pace::new(W, 128, t0);
        // Reads ahead 4 MB at once, then nothing.
        let mut cut = None;
        for s in 1..=60u64 {
            if p.too_slow(t0 + Duration::from_secs(s), 4 << 20) {
                cut = Some(s);
                break;
            }
        }
        assert_eq!(
            cut,
            Some(21),
            "cut once a whole window passed without progress"
        );
    }

    #[test]
    fn a_byte_now_and_then_does_not_keep_a_slot() {
        let t0 = Instant::now();
        let mut p = Pace::new(W, 128, t0);
        let mut cut = None;
        for s in 1..=60u64 {
            if p.too_slow(t0 + Duration::from_secs(s), 65_536 + s) {
                cut = Some(s);
                break;
            }
        }
        assert_eq!(cut, Some(20));
    }
}
