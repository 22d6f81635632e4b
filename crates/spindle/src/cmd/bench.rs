//! `spindle bench …`: comparison benchmarks (placeholder).

use clap::Subcommand;

/// Benchmarks that run Spindle and a peer in one run and print ratios.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The library store and query engine against SQLite (XMMS2's medialib
    /// schema and a tuned layout), on a generated library.
    Library(LibraryArgs),
    /// Scanning files against `beet import -A -C` over the same files.
    Scan(super::bench_scan::ScanArgs),
}

#[derive(Debug, clap::Args)]
pub struct LibraryArgs {
    /// Number of entries to generate.
    #[arg(long, default_value_t = 10_000)]
    pub entries: usize,
}

pub fn run(cmd: &BenchCommand, _data_dir: &std::path::Path) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Library(_) => anyhow::bail!("the library benchmark is not built yet"),
        BenchCommand::Scan(args) => super::bench_scan::run(args),
    }
}
