//! `spindle bench covers`: a large JPEG cover to a small one through the
//! server's cover pipeline, cold and from the disk cache, beside a
//! whole-image decode (the harness is `spindle_bench::covers`).

use std::path::PathBuf;

use spindle_bench::{run_covers, CoversOptions};

#[derive(Debug, clap::Args)]
pub struct CoversArgs {
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
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print the report as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &CoversArgs) -> anyhow::Result<()> {
    let mut opts = CoversOptions::new(args.dir.clone().unwrap_or_else(std::env::temp_dir));
    (opts.rounds, opts.source, opts.size) = (args.rounds, args.source, args.size);
    let report = run_covers(&opts)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render());
    }
    Ok(())
}
