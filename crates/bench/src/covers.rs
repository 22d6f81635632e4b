//! `spindle bench covers`: a large JPEG cover (3000×3000 by default) to a
//! small one (300 px), through the server's cover pipeline
//! ([`spindle_server::cover`]) over a real music folder: the song looked
//! up in the catalog, its folder listed, `cover.jpg` read, decoded at a
//! reduced IDCT scale, resized and encoded — cold (no disk cache) and as
//! a cached hit. Beside it, the same resize done the straightforward way
//! (the whole image decoded by the `image` crate, then resized), the
//! baseline the scaled decode is measured against. The target:
//! under 30 ms cold.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::Instant;

use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::RgbImage;
use spindle_server::cover::{Covers, COVER_CACHE_BUDGET};
use spindle_server::Music;
use spindle_store::Db;

use crate::error::{BenchError, Context};

/// The target for a cold resize of the source to the size, ms.
pub const TARGET_COLD_MS: f64 = 30.0;

/// What to measure: the options of `spindle bench covers`.
#[derive(Debug, Clone, clap::Args)]
pub struct CoversOptions {
    /// Timed rounds of each measurement.
    #[arg(long, default_value_t = 30)]
    pub rounds: usize,
    /// Side of the square source JPEG, pixels.
    #[arg(long, default_value_t = 3000)]
    pub source: u32,
    /// The cover size asked for, pixels.
    #[arg(long, default_value_t = 300)]
    pub size: u32,
    /// Where to make the music folder (default: the system's temp dir).
    #[arg(long, default_value_os_t = std::env::temp_dir(), hide_default_value = true)]
    pub dir: PathBuf,
}

/// Percentiles of one measurement, milliseconds.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Millis {
    pub p50: f64,
    pub p99: f64,
}

impl Millis {
    fn of(mut xs: Vec<f64>) -> Millis {
        xs.sort_by(f64::total_cmp);
        let at = |q: f64| {
            let i = ((xs.len() as f64 - 1.0) * q).round() as usize;
            xs.get(i).copied().unwrap_or(f64::NAN)
        };
        Millis {
            p50: at(0.5),
            p99: at(0.99),
        }
    }
}

/// The figures of one run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CoversReport {
    pub rounds: usize,
    pub source: u32,
    pub size: u32,
    pub source_bytes: u64,
    pub cover_bytes: u64,
    /// The request path with no disk cache: lookup, read, scaled decode,
    /// resize, encode.
    pub cold: Millis,
    /// CPU time of the cold path, all threads, mean per cover (ms): what
    /// the machine's load does not inflate, unlike `cold`.
    pub cold_cpu_ms: f64,
    /// The same request answered from the disk cache.
    pub cached: Millis,
    /// The whole image decoded, then resized and encoded (no lookup):
    /// the baseline.
    pub full_decode: Millis,
}

/// Runs the benchmark; the folder it makes under `o.dir` is removed
/// after.
pub fn run_covers(o: &CoversOptions) -> Result<CoversReport, BenchError> {
    if o.rounds == 0 || o.size == 0 || o.source < 2 {
        return Err(BenchError::Options(
            "bench covers needs --rounds, --size and --source above 0".into(),
        ));
    }
    let base = o
        .dir
        .join(format!("spindle-bench-covers-{}", std::process::id()));
    let out = run_in(o, &base);
    let _ = std::fs::remove_dir_all(&base);
    out
}

fn run_in(o: &CoversOptions, base: &Path) -> Result<CoversReport, BenchError> {
    let music_dir = base.join("music");
    let album = music_dir.join("Bench Artist").join("Bench Album");
    std::fs::create_dir_all(&album).at("making the music folder")?;
    let song = album.join("01 Tone.wav");
    spindle_media::demo::write_wav(&song, 440.0, 0.5).at("writing a WAV")?;
    let jpeg = photo_like_jpeg(o.source)?;
    std::fs::write(album.join("cover.jpg"), &jpeg).at("writing cover.jpg")?;

    let data = base.join("data");
    let root = std::fs::canonicalize(&music_dir).at("resolving the music folder")?;
    let db = Db::open(data.join("lib"))?;
    spindle_media::scan::scan(
        &db,
        std::slice::from_ref(&root),
        &spindle_media::scan::ScanOptions::default(),
        &mut spindle_media::scan::Quiet,
    )
    .at("scanning the music folder")?;
    let music = Music::new(std::slice::from_ref(&root), &data).at("opening the music folder")?;
    let cat = music.catalog(&db);
    let id = cat
        .songs
        .first()
        .map(|s| s.id.to_string())
        .ok_or_else(|| BenchError::Check("the scan found no song".into()))?;
    let size = Some(o.size);

    let cold_covers = Covers::without_cache();
    let once = |covers: &Covers| -> Result<(f64, usize), BenchError> {
        let t = Instant::now();
        let l = covers
            .lookup(&music, &cat, &id, size)
            .at("looking up the cover")?;
        let c = covers.render(&l).at("making the cover")?;
        Ok((t.elapsed().as_secs_f64() * 1e3, c.data.len()))
    };
    let mut cold = Vec::with_capacity(o.rounds);
    let mut cover_bytes = 0;
    once(&cold_covers)?;
    let cpu_before = process_cpu_ns();
    for _ in 0..o.rounds {
        let (ms, n) = once(&cold_covers)?;
        cold.push(ms);
        cover_bytes = n;
    }
    let cold_cpu_ms = cpu_before.zip(process_cpu_ns()).map_or(f64::NAN, |(a, b)| {
        b.saturating_sub(a) as f64 / 1e6 / o.rounds as f64
    });

    let cached_covers = Covers::open(&data.join("covers"), COVER_CACHE_BUDGET);
    once(&cached_covers)?;
    let mut cached = Vec::with_capacity(o.rounds);
    for _ in 0..o.rounds {
        cached.push(once(&cached_covers)?.0);
    }

    let mut full = Vec::with_capacity(o.rounds);
    full_decode_resize(&jpeg, o.size)?;
    for _ in 0..o.rounds {
        let t = Instant::now();
        full_decode_resize(&jpeg, o.size)?;
        full.push(t.elapsed().as_secs_f64() * 1e3);
    }

    Ok(CoversReport {
        rounds: o.rounds,
        source: o.source,
        size: o.size,
        source_bytes: jpeg.len() as u64,
        cover_bytes: cover_bytes as u64,
        cold: Millis::of(cold),
        cold_cpu_ms,
        cached: Millis::of(cached),
        full_decode: Millis::of(full),
    })
}

/// CPU time of every thread of this process so far, in nanoseconds (the
/// first field of each `/proc/self/task/*/schedstat`); `None` off Linux.
fn process_cpu_ns() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let Ok(task) = task else { continue };
        let Ok(s) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        total += s
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(total)
}

/// A square JPEG (quality 90) with smooth shapes and fine grain, so it
/// compresses like a scanned cover rather than like noise or a flat fill.
fn photo_like_jpeg(side: u32) -> Result<Vec<u8>, BenchError> {
    let s = f64::from(side);
    let img = RgbImage::from_fn(side, side, |x, y| {
        let (fx, fy) = (f64::from(x) / s, f64::from(y) / s);
        let grain = ((x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) >> 27) as f64;
        let wave = ((fx * 9.0).sin() * (fy * 7.0).cos() + 1.0) * 80.0;
        let ring = (((fx - 0.5).hypot(fy - 0.4) * 40.0).sin() + 1.0) * 40.0;
        let c = |v: f64| v.clamp(0.0, 255.0) as u8;
        image::Rgb([
            c(wave + grain),
            c(ring + fy * 90.0 + grain),
            c(200.0 - wave * 0.5 + grain),
        ])
    });
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, 90)
        .encode_image(&img)
        .at("encoding the source JPEG")?;
    Ok(out)
}

/// The baseline: decode all of `jpeg`, resize, encode.
fn full_decode_resize(jpeg: &[u8], size: u32) -> Result<Vec<u8>, BenchError> {
    let img = image::ImageReader::with_format(Cursor::new(jpeg), image::ImageFormat::Jpeg)
        .decode()
        .at("decoding the source JPEG")?
        .into_rgb8();
    let (w, h) = img.dimensions();
    let (tw, th) = spindle_server::cover::resize::fit(w, h, size);
    let small = image::imageops::resize(&img, tw, th, FilterType::Triangle);
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, spindle_server::cover::resize::JPEG_QUALITY)
        .encode_image(&small)
        .at("encoding the cover")?;
    Ok(out)
}

impl CoversReport {
    /// The report as Markdown.
    pub fn render(&self) -> String {
        let row = |name: &str, m: Millis| format!("| {name} | {:.2} | {:.2} |\n", m.p50, m.p99);
        let mut s = format!(
            "## Covers: {0}×{0} JPEG ({1} KiB) to {2} px ({3} KiB), {4} rounds\n\n\
             | path | p50 ms | p99 ms |\n|---|---:|---:|\n",
            self.source,
            self.source_bytes / 1024,
            self.size,
            self.cover_bytes / 1024,
            self.rounds
        );
        s.push_str(&row(
            "Spindle, cold (no cache): lookup, read, scaled decode, resize, encode",
            self.cold,
        ));
        s.push_str(&row(
            "Spindle, cached hit: lookup, read from the disk cache",
            self.cached,
        ));
        s.push_str(&row(
            "baseline: whole image decoded, resized, encoded",
            self.full_decode,
        ));
        let ratio = self.full_decode.p50 / self.cold.p50;
        let verdict = if self.cold.p50 < TARGET_COLD_MS {
            "met"
        } else {
            "NOT met"
        };
        s.push_str(&format!(
            "\nCold: p50 {:.2} ms against the target of {TARGET_COLD_MS} ms: {verdict}; \
             {:.2} ms of CPU per cover (all threads); \
             {ratio:.1}× faster than the whole-image decode.\n",
            self.cold.p50, self.cold_cpu_ms
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_run_reports_every_measurement() {
        let dir = tempfile::tempdir().unwrap();
        let o = CoversOptions {
            rounds: 3,
            source: 600,
            size: 64,
            dir: dir.path().to_owned(),
        };
        let r = run_covers(&o).unwrap();
        for m in [r.cold, r.cached, r.full_decode] {
            assert!(m.p50 > 0.0 && m.p99 >= m.p50, "{m:?}");
        }
        assert!(r.cover_bytes > 0 && r.cover_bytes < r.source_bytes);
        assert!(r.render().contains("| Spindle, cached hit"));
        // The folder it made is gone.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
