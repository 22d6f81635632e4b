//! Counters for `/metrics` (Prometheus text format): requests, bytes
//! streamed, streams started, request latency, library size.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency histogram, seconds.
const BUCKETS: [f64; 10] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

#[derive(Default)]
pub struct Metrics {
    requests: AtomicU64,
    errors: AtomicU64,
    streams: AtomicU64,
    bytes: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
    latency_sum_us: AtomicU64,
}

impl Metrics {
    /// One Subsonic or streaming request answered after `took`.
    pub fn request(&self, took: Duration, failed: bool) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let secs = took.as_secs_f64();
        for (b, le) in self.buckets.iter().zip(BUCKETS) {
            if secs <= le {
                b.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_sum_us
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    /// A stream started that will send `bytes`.
    pub fn stream(&self, bytes: u64) {
        self.streams.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The text exposition, with the library's size.
    pub fn render(&self, entries: usize, songs: usize, albums: usize, artists: usize) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut s = String::new();
        let _ = writeln!(s, "# HELP spindle_http_requests_total Subsonic and streaming requests answered.\n# TYPE spindle_http_requests_total counter\nspindle_http_requests_total {}", g(&self.requests));
        let _ = writeln!(s, "# HELP spindle_http_request_errors_total Requests answered with an error.\n# TYPE spindle_http_request_errors_total counter\nspindle_http_request_errors_total {}", g(&self.errors));
        let _ = writeln!(s, "# HELP spindle_streams_total Audio streams started.\n# TYPE spindle_streams_total counter\nspindle_streams_total {}", g(&self.streams));
        let _ = writeln!(s, "# HELP spindle_stream_bytes_total Bytes of audio streams started (ranges counted by length).\n# TYPE spindle_stream_bytes_total counter\nspindle_stream_bytes_total {}", g(&self.bytes));
        let _ = writeln!(s, "# HELP spindle_request_duration_seconds Time to answer a request (to the first byte of a stream).\n# TYPE spindle_request_duration_seconds histogram");
        for (b, le) in self.buckets.iter().zip(BUCKETS) {
            let _ = writeln!(
                s,
                "spindle_request_duration_seconds_bucket{{le=\"{le}\"}} {}",
                g(b)
            );
        }
        let n = g(&self.requests);
        let _ = writeln!(
            s,
            "spindle_request_duration_seconds_bucket{{le=\"+Inf\"}} {n}"
        );
        let _ = writeln!(
            s,
            "spindle_request_duration_seconds_sum {}",
            g(&self.latency_sum_us) as f64 / 1e6
        );
        let _ = writeln!(s, "spindle_request_duration_seconds_count {n}");
        let _ = writeln!(s, "# HELP spindle_library_entries Entries in the library.\n# TYPE spindle_library_entries gauge\nspindle_library_entries {entries}");
        let _ = writeln!(s, "# HELP spindle_library_songs Playable songs under the music folders.\n# TYPE spindle_library_songs gauge\nspindle_library_songs {songs}");
        let _ = writeln!(
            s,
            "# TYPE spindle_library_albums gauge\nspindle_library_albums {albums}"
        );
        let _ = writeln!(
            s,
            "# TYPE spindle_library_artists gauge\nspindle_library_artists {artists}"
        );
        s
    }
}
