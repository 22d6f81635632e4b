//! `spindle iobench` without the rest of the binary: the same CLI glue file
//! the `spindle` binary uses (`crates/spindle/src/cmd/iobench.rs`), compiled
//! into an example, so the sweep can be run and tested on its own:
//!
//! ```text
//! cargo run --release -p spindle-io --example iobench -- /some/dir --size 256M --direct --fio
//! ```

#[path = "../../spindle/src/cmd/iobench.rs"]
mod iobench;

use clap::Parser;

/// Measure the disk: IOPS and latency against queue depth per IO engine.
#[derive(Debug, Parser)]
#[command(name = "iobench")]
struct Cli {
    #[command(flatten)]
    args: iobench::IobenchArgs,
}

fn main() -> anyhow::Result<()> {
    iobench::run(&Cli::parse().args)
}
