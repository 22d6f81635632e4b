//! `spindle bench transcode`: transcodes through `stream` against the
//! same ffmpeg command run directly (the harness is
//! `spindle_bench::transcode`).

use std::path::PathBuf;

use anyhow::Context;
use spindle_bench::{run_transcode, TranscodeOptions};
use spindle_server::transcode::Format;

#[derive(Debug, clap::Args)]
pub struct TranscodeArgs {
    /// Files in the corpus (each transcoded once per side).
    #[arg(long, default_value_t = 16)]
    pub tracks: usize,
    /// Seconds of audio per file.
    #[arg(long, default_value_t = 60)]
    pub seconds: u32,
    /// Output format: mp3, opus, aac, m4a, ogg, flac.
    #[arg(long, default_value = "opus")]
    pub format: String,
    /// Output bitrate, kbit/s.
    #[arg(long, default_value_t = 128)]
    pub bitrate: u32,
    /// Encodes at once (default: the number of cores).
    #[arg(long)]
    pub parallel: Option<usize>,
    /// Requests of each time-to-first-byte measurement.
    #[arg(long, default_value_t = 8)]
    pub ttfb_rounds: usize,
    /// The ffmpeg binary.
    #[arg(long, default_value = "ffmpeg")]
    pub ffmpeg: PathBuf,
    /// Where to make the corpus (default: the system's temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print the report as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &TranscodeArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding the spindle binary")?;
    let mut o = TranscodeOptions::new(exe, args.dir.clone().unwrap_or_else(std::env::temp_dir));
    o.format = Format::parse(&args.format)?
        .ok_or_else(|| anyhow::anyhow!("--format raw: name a format to transcode to"))?;
    (o.tracks, o.secs, o.bitrate) = (args.tracks, args.seconds, args.bitrate);
    (o.ttfb_rounds, o.ffmpeg) = (args.ttfb_rounds, args.ffmpeg.clone());
    if let Some(p) = args.parallel {
        o.parallel = p;
    }
    let report = run_transcode(&o, &mut |line| eprintln!("== {line}"))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render());
    }
    Ok(())
}
