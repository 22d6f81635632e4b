//! `bench library` at several sizes in one run: a work folder per size
//! (kept, or temporary and removed after), the SQL of the SQLite layouts
//! on request, a report per size.

use std::path::PathBuf;

use crate::error::{BenchError, Context};
use crate::report::LibraryReport;
use crate::run::{run_library, LibraryConfig, Spawn};
use crate::worker::{sql_statements, Side, QUERIES};

/// What [`run_library_sizes`] runs: the options of `spindle bench library`
/// (`json`, how to print the reports, is the caller's).
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct LibrarySizes {
    /// Number of entries to generate.
    #[arg(long, default_value_t = 10_000)]
    pub entries: u32,
    /// Several sizes in one run, e.g. 10000,100000 (overrides --entries).
    #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
    pub sizes: Vec<u32>,
    /// Timed rounds of the seven queries (after one warm-up round).
    #[arg(long, default_value_t = 10)]
    pub rounds: usize,
    /// Seed of the generated library.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Contestants: spindle, tuned, xmms2.
    #[arg(long, value_delimiter = ',', default_value = "spindle,tuned,xmms2", value_parser = parse_side)]
    pub sides: Vec<Side>,
    /// Keep the loaded libraries in DIR (one subdirectory per size with
    /// --sizes) and reuse them on the next run with the same size and seed.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Print the reports as JSON instead of Markdown tables.
    #[arg(long)]
    pub json: bool,
    /// Also print the SQL each SQLite layout runs for the seven queries,
    /// with SQLite's query plans.
    #[arg(long)]
    pub show_sql: bool,
}

impl LibrarySizes {
    /// The sizes to run, in order: `sizes`, or `entries` alone.
    pub fn each_size(&self) -> Vec<u32> {
        if self.sizes.is_empty() {
            vec![self.entries]
        } else {
            self.sizes.clone()
        }
    }
}

/// `--sides`: a contestant's name.
fn parse_side(s: &str) -> Result<Side, String> {
    Side::parse(s.trim()).ok_or_else(|| format!("unknown contestant '{s}' (spindle, tuned, xmms2)"))
}

/// What [`run_library_sizes`] tells as it goes.
#[derive(Debug)]
pub enum SizesEvent<'a> {
    /// A size starts.
    Size(u32),
    /// A line of progress of the current size.
    Log(&'a str),
    /// A SQLite layout's statements: `(query pattern, (SQL, plan))`.
    Sql {
        side: Side,
        statements: Vec<(&'static str, (String, String))>,
    },
    /// A size's report.
    Report(&'a LibraryReport),
}

/// Runs [`run_library`] at each size; the reports in order.
pub fn run_library_sizes(
    o: &LibrarySizes,
    spawn: &mut Spawn<'_>,
    on: &mut dyn FnMut(SizesEvent<'_>),
) -> Result<Vec<LibraryReport>, BenchError> {
    let sizes = o.each_size();
    if sizes.contains(&0) {
        return Err(BenchError::Options("--entries must be at least 1".into()));
    }
    let mut reports = Vec::new();
    for n in sizes {
        let (work, temporary) = work_dir(o, n);
        let mut cfg = LibraryConfig::new(n, work.clone());
        cfg.rounds = o.rounds;
        cfg.seed = o.seed;
        cfg.sides = o.sides.clone();
        on(SizesEvent::Size(n));
        let result = run_library(&cfg, spawn, &mut |line| on(SizesEvent::Log(line)));
        if o.show_sql && result.is_ok() {
            for &side in o.sides.iter().filter(|s| **s != Side::Spindle) {
                let statements = QUERIES
                    .iter()
                    .copied()
                    .zip(sql_statements(&work, side)?)
                    .collect();
                on(SizesEvent::Sql { side, statements });
            }
        }
        // Keep the rows of a disagreement for a look.
        if temporary && !matches!(result, Err(BenchError::Mismatch(_))) {
            let _ = std::fs::remove_dir_all(&work);
        }
        let report = result.at_with(|| format!("bench library at {n} entries"))?;
        on(SizesEvent::Report(&report));
        reports.push(report);
    }
    Ok(reports)
}

/// The work folder of size `n`, and whether it is temporary.
fn work_dir(o: &LibrarySizes, n: u32) -> (PathBuf, bool) {
    match &o.keep {
        Some(dir) if o.sizes.len() > 1 => (dir.join(n.to_string()), false),
        Some(dir) => (dir.clone(), false),
        None => (
            std::env::temp_dir().join(format!("spindle-bench-{}-{n}", std::process::id())),
            true,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(sizes: Vec<u32>, keep: Option<PathBuf>) -> LibrarySizes {
        LibrarySizes {
            entries: 10_000,
            sizes,
            rounds: 1,
            seed: 1,
            sides: vec![Side::Spindle],
            keep,
            json: false,
            show_sql: false,
        }
    }

    #[test]
    fn entries_is_the_one_size_unless_sizes_are_given() {
        let mut o = sizes(vec![], None);
        o.entries = 7;
        assert_eq!(o.each_size(), [7]);
        o.sizes = vec![5, 6];
        assert_eq!(o.each_size(), [5, 6]);
    }

    #[test]
    fn contestants_are_named_and_an_unknown_one_is_refused() {
        assert_eq!(parse_side(" tuned"), Ok(Side::Tuned));
        assert_eq!(
            parse_side("mysql"),
            Err("unknown contestant 'mysql' (spindle, tuned, xmms2)".to_owned())
        );
    }

    #[test]
    fn a_size_of_zero_is_refused() {
        let e = run_library_sizes(
            &sizes(vec![10, 0], None),
            &mut |_| unreachable!(),
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "--entries must be at least 1");
    }

    #[test]
    fn kept_libraries_get_a_folder_per_size_when_there_are_several() {
        let keep = Some(PathBuf::from("k"));
        assert_eq!(
            work_dir(&sizes(vec![5], keep.clone()), 5),
            (PathBuf::from("k"), false)
        );
        assert_eq!(
            work_dir(&sizes(vec![5, 6], keep), 6),
            (PathBuf::from("k/6"), false)
        );
        let (tmp, temporary) = work_dir(&sizes(vec![5], None), 5);
        assert!(temporary && tmp.starts_with(std::env::temp_dir()));
    }

    #[test]
    fn a_failed_worker_names_the_size_and_removes_the_temporary_folder() {
        let o = sizes(vec![200], None);
        let (work, _) = work_dir(&o, 200);
        let mut seen = Vec::new();
        let e = run_library_sizes(
            &o,
            &mut |_| Err(BenchError::Worker("no".into())),
            &mut |ev| {
                if let SizesEvent::Size(n) = ev {
                    seen.push(n);
                }
            },
        )
        .unwrap_err();
        assert_eq!(seen, [200]);
        assert!(
            e.to_string().starts_with("bench library at 200 entries: "),
            "{e}"
        );
        assert!(!work.exists());
    }
}
