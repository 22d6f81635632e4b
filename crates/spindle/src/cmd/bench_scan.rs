//! `spindle bench scan --files N`: Spindle's first scan and no-change
//! rescan against `beet import -A -C` over the same generated files (the
//! harness is `spindle_bench::scan`).

use std::path::PathBuf;

use spindle_bench::{run_scan_bench, ScanBenchOptions};

#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Number of files to generate.
    #[arg(long, default_value_t = 10_000)]
    pub files: usize,
    /// The beet executable (default: .venv/bin/beet, else beet on PATH).
    #[arg(long, env = "SPINDLE_BEET")]
    pub beet: Option<PathBuf>,
}

pub fn run(args: &ScanArgs) -> anyhow::Result<()> {
    let opts = ScanBenchOptions {
        files: args.files,
        beet: args.beet.clone(),
    };
    let report = run_scan_bench(&opts, &mut |line| println!("{line}"))?;
    print!("{}", report.render());
    Ok(())
}
