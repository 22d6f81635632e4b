//! `spindle bench scan --files N`: Spindle's first scan and no-change
//! rescan against `beet import -A -C` over the same generated files, in
//! one run, with ratios and Spindle's peak memory.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::Context;
use spindle_media::scan::Quiet;
use spindle_media::ScanOptions;
use spindle_store::Db;

#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Number of files to generate.
    #[arg(long, default_value_t = 10_000)]
    pub files: usize,
    /// The beet executable (default: .venv/bin/beet, else beet on PATH).
    #[arg(long, env = "SPINDLE_BEET")]
    pub beet: Option<PathBuf>,
}

fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

pub fn run(args: &ScanArgs) -> anyhow::Result<()> {
    let tmp = std::env::temp_dir().join(format!("spindle-bench-scan-{}", std::process::id()));
    let music = tmp.join("music");
    std::fs::create_dir_all(&music)?;
    let result = (|| -> anyhow::Result<()> {
        println!("generating {} tagged MP3 files…", args.files);
        spindle_media::bench::generate_mp3s(&music, args.files).context("generating files")?;
        let data = tmp.join("spindle-data");
        let t = Instant::now();
        let db = Db::open(&data)?;
        let first = spindle_media::scan(
            &db,
            std::slice::from_ref(&music),
            &ScanOptions::default(),
            &mut Quiet,
        )?;
        db.close()?;
        let first_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let db = Db::open(&data)?;
        let again = spindle_media::scan(
            &db,
            std::slice::from_ref(&music),
            &ScanOptions::default(),
            &mut Quiet,
        )?;
        db.close()?;
        let rescan_s = t.elapsed().as_secs_f64();
        let mem = peak_rss_mib().unwrap_or(f64::NAN);
        anyhow::ensure!(
            first.added as usize == args.files && again.unchanged as usize == args.files,
            "scan miscounted: {first:?} {again:?}"
        );

        let beet = args.beet.clone().unwrap_or_else(|| {
            let v = PathBuf::from(".venv/bin/beet");
            if v.exists() {
                v
            } else {
                PathBuf::from("beet")
            }
        });
        let t = Instant::now();
        let out = Command::new(&beet)
            .env("HOME", &tmp)
            .env("BEETSDIR", &tmp)
            .arg("-l")
            .arg(tmp.join("beets.db"))
            .arg("-d")
            .arg(tmp.join("beets-dir"))
            .args(["import", "-A", "-C", "-q"])
            .arg(&music)
            .output()
            .with_context(|| format!("running {}", beet.display()))?;
        let beets_s = t.elapsed().as_secs_f64();
        anyhow::ensure!(
            out.status.success(),
            "beet failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );

        println!("| files | Spindle first scan | Spindle no-change rescan | beet import -A -C | beets / Spindle | Spindle peak RSS |");
        println!("|---|---|---|---|---|---|");
        println!(
            "| {} | {:.2} s ({:.0} files/s) | {:.3} s | {:.1} s ({:.0} files/s) | {:.1}× | {:.0} MiB |",
            args.files, first_s, args.files as f64 / first_s, rescan_s, beets_s,
            args.files as f64 / beets_s, beets_s / first_s, mem
        );
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result
}
