//! `spindle iobench`: IOPS and latency against queue depth, per IO engine,
//! optionally beside fio. The sweep and its command line live in
//! `spindle_io::bench`; this file runs it and prints the results.

use std::path::Path;

use anyhow::Context;
use spindle_io::bench;

/// Arguments of `spindle iobench`.
pub use spindle_io::bench::IobenchArgs;

pub fn run(args: &IobenchArgs) -> anyhow::Result<()> {
    let cfg = args.config()?;
    let json_stdout = args.json.as_deref() == Some(Path::new("-"));
    let report = bench::run(&cfg, &mut |p| eprintln!("iobench: {p}"))?;
    let text = bench::report::text(&report);
    if json_stdout {
        eprintln!("{text}");
    } else {
        println!("{text}");
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report).context("serialising the report")?;
        if json_stdout {
            println!("{json}");
        } else {
            std::fs::write(path, json + "\n")
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!("iobench: wrote {}", path.display());
        }
    }
    if !args.no_chart {
        let (svg, png) = bench::chart::write(&report, &args.chart)?;
        eprintln!("iobench: wrote {} and {}", svg.display(), png.display());
    }
    Ok(())
}
