//! `bench scan`: Spindle's first scan and no-change rescan against
//! `beet import -A -C` over the same generated MP3 files, in one run, with
//! ratios and Spindle's peak memory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use spindle_media::scan::Quiet;
use spindle_media::ScanOptions;
use spindle_store::Db;

use crate::error::{BenchError, Context};
use crate::proc;

/// What to run: the options of `spindle bench scan`.
#[derive(Debug, Clone, clap::Args)]
pub struct ScanBenchOptions {
    /// Number of files to generate.
    #[arg(long, default_value_t = 10_000)]
    pub files: usize,
    /// The beet executable (default: .venv/bin/beet, else beet on PATH).
    #[arg(long, env = "SPINDLE_BEET")]
    pub beet: Option<PathBuf>,
}

/// What it measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanBenchReport {
    pub files: usize,
    pub first_secs: f64,
    pub rescan_secs: f64,
    pub beets_secs: f64,
    /// This process's peak RSS, MiB (NaN where unknown).
    pub peak_rss_mib: f64,
}

impl ScanBenchReport {
    /// The Markdown table.
    pub fn render(&self) -> String {
        let n = self.files as f64;
        format!(
            "| files | Spindle first scan | Spindle no-change rescan | beet import -A -C | beets / Spindle | Spindle peak RSS |\n\
             |---|---|---|---|---|---|\n\
             | {} | {:.2} s ({:.0} files/s) | {:.3} s | {:.1} s ({:.0} files/s) | {:.1}× | {:.0} MiB |\n",
            self.files,
            self.first_secs,
            n / self.first_secs,
            self.rescan_secs,
            self.beets_secs,
            n / self.beets_secs,
            self.beets_secs / self.first_secs,
            self.peak_rss_mib
        )
    }
}

/// Generates the files into a temporary folder (removed afterwards),
/// scans them twice with Spindle and once with beets. `log` gets a line
/// before the long steps.
pub fn run_scan_bench(
    opts: &ScanBenchOptions,
    log: &mut dyn FnMut(&str),
) -> Result<ScanBenchReport, BenchError> {
    let tmp = std::env::temp_dir().join(format!("spindle-bench-scan-{}", std::process::id()));
    let result = run_in(opts, &tmp, log);
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

fn run_in(
    opts: &ScanBenchOptions,
    tmp: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<ScanBenchReport, BenchError> {
    let music = tmp.join("music");
    std::fs::create_dir_all(&music)?;
    log(&format!("generating {} tagged MP3 files…", opts.files));
    spindle_media::bench::generate_mp3s(&music, opts.files).at("generating files")?;
    let data = tmp.join("spindle-data");
    let scan_once = || -> Result<(spindle_media::ScanReport, f64), BenchError> {
        let t = Instant::now();
        let db = Db::open(&data)?;
        let report = spindle_media::scan(
            &db,
            std::slice::from_ref(&music),
            &ScanOptions::default(),
            &mut Quiet,
        )
        .at("scanning")?;
        db.close()?;
        Ok((report, t.elapsed().as_secs_f64()))
    };
    let (first, first_secs) = scan_once()?;
    let (again, rescan_secs) = scan_once()?;
    let peak_rss_mib = proc::peak_rss_mib().unwrap_or(f64::NAN);
    if first.added as usize != opts.files || again.unchanged as usize != opts.files {
        return Err(BenchError::Check(format!(
            "scan miscounted: {first:?} {again:?}"
        )));
    }

    let beet = opts.beet.clone().unwrap_or_else(|| {
        let v = PathBuf::from(".venv/bin/beet");
        if v.exists() {
            v
        } else {
            PathBuf::from("beet")
        }
    });
    let t = Instant::now();
    let out = Command::new(&beet)
        .env("HOME", tmp)
        .env("BEETSDIR", tmp)
        .arg("-l")
        .arg(tmp.join("beets.db"))
        .arg("-d")
        .arg(tmp.join("beets-dir"))
        .args(["import", "-A", "-C", "-q"])
        .arg(&music)
        .output()
        .at_with(|| format!("running {}", beet.display()))?;
    let beets_secs = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(BenchError::Peer(format!(
            "beet failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(ScanBenchReport {
        files: opts.files,
        first_secs,
        rescan_secs,
        beets_secs,
        peak_rss_mib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_the_columns_and_ratios() {
        let r = ScanBenchReport {
            files: 1000,
            first_secs: 0.5,
            rescan_secs: 0.0125,
            beets_secs: 20.0,
            peak_rss_mib: 31.6,
        };
        assert_eq!(
            r.render().lines().nth(2),
            Some(
                "| 1000 | 0.50 s (2000 files/s) | 0.013 s | 20.0 s (50 files/s) | 40.0× | 32 MiB |"
            )
        );
    }
}
