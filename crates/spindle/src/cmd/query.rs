//! `spindle query PATTERN`: run a collection pattern and print the result.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use spindle_query::{FetchSpec, SourcePref};
use spindle_store::Db;

use super::UsageError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns with a header.
    Table,
    /// A JSON array of objects (or the shaped result of a JSON fetch spec).
    Json,
    /// Matching entry ids, one per line, in result order.
    Ids,
}

/// Arguments of `spindle query`.
#[derive(Debug, clap::Args)]
#[command(after_help = "PATTERN examples:
  one                     a word in artist, album or title
  artist:metallica        caseless equality
  'artist~foo'            glob match (*foo*)
  'tracknr>20'            natural-order comparison
  +comment                has the key
  '#2-4'                  entries 2 to 4 by id
  'tracknr:4 OR artist~foo AND NOT artist:weezer'
                          (OR binds tighter than AND)

--fetch also takes a JSON fetch specification, e.g.
  --fetch '{type:cluster-dict, cluster-field:album, data:{type:count}}'")]
pub struct QueryArgs {
    /// The collection pattern.
    pub pattern: String,
    /// Comma-separated keys to print, or a JSON fetch specification.
    #[arg(long, default_value = "id,artist,album,title")]
    pub fetch: String,
    /// Source preference, colon-separated globs (default: XMMS2's).
    #[arg(long, value_name = "PREF")]
    pub sourcepref: Option<String>,
    /// Sort by these keys (comma-separated; '-key' descending; 'id'; 'random').
    #[arg(long, value_name = "KEYS", allow_hyphen_values = true)]
    pub order: Option<String>,
    /// Print at most N results.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Skip the first N results.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(args: &QueryArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let parsed =
        spindle_query::parse(&args.pattern).map_err(|e| UsageError(e.with_caret(&args.pattern)))?;
    for w in &parsed.warnings {
        eprintln!("spindle: warning: {w}");
    }
    let mut coll = parsed.coll;
    if let Some(order) = &args.order {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        coll = coll
            .ordered_by(order, seed)
            .map_err(|e| UsageError(format!("--order: {e}")))?;
    }
    let coll = coll.window(args.offset, args.limit);
    let pref = args
        .sourcepref
        .as_deref()
        .map_or_else(SourcePref::default, SourcePref::parse);
    let spec = if args.fetch.trim_start().starts_with('{') {
        Some(parse_fetch_spec(&args.fetch)?)
    } else {
        None
    };

    if !data_dir.exists() {
        anyhow::bail!(
            "no library at {} (create one with `spindle db import-json` or `spindle scan`)",
            data_dir.display()
        );
    }
    let db = Db::open_read_only(data_dir)
        .with_context(|| format!("opening the library in {}", data_dir.display()))?;
    for w in &db.open_report().warnings {
        eprintln!("spindle: warning: {w}");
    }
    let lib = db.read();
    let ids = lib.query_ids(&coll, &pref)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let fields: Vec<&str> = args
        .fetch
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .collect();
    match (spec, args.format) {
        (Some(spec), _) => print_json(&mut out, &lib.shape(&spec, &ids.ids, &pref))?,
        (None, Format::Ids) => ids.ids.iter().try_for_each(|id| writeln!(out, "{id}"))?,
        (None, Format::Json) => {
            let rows = lib.fetch_rows(&ids.ids, &fields, &pref);
            print_json(&mut out, &rows.to_json(&fields))?
        }
        (None, Format::Table) => {
            let rows = lib.fetch_rows(&ids.ids, &fields, &pref);
            rows.write_table(&fields, &mut out)?
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn print_json(out: &mut impl Write, v: &serde_json::Value) -> anyhow::Result<()> {
    serde_json::to_writer_pretty(&mut *out, v)?;
    writeln!(out)?;
    Ok(())
}

fn parse_fetch_spec(text: &str) -> Result<FetchSpec, UsageError> {
    spindle_query::json::parse_relaxed_json(text)
        .and_then(|json| spindle_query::json::fetch_from_json(&json))
        .map_err(|e| UsageError(format!("--fetch: {e}")))
}
