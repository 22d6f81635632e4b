//! `spindle query PATTERN`: run a collection pattern and print the result.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use spindle_query::{Coll, FetchSpec, OrderBy, SourcePref};
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

/// Show a parse error with a caret under the column.
fn parse_error(pattern: &str, e: &spindle_query::ParseError) -> UsageError {
    let caret = " ".repeat(e.column.saturating_sub(1));
    UsageError(format!("{e}\n  {pattern}\n  {caret}^"))
}

fn with_order(mut coll: Coll, order: &str) -> Result<Coll, UsageError> {
    let keys: Vec<&str> = order.split(',').filter(|k| !k.is_empty()).collect();
    // Stable sorts applied from the last key to the first.
    for key in keys.iter().rev() {
        let (descending, key) = match key.strip_prefix('-') {
            Some(k) => (true, k),
            None => (false, *key),
        };
        let by = match key {
            "id" => OrderBy::Id,
            "random" => OrderBy::Random(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64),
            ),
            k if k.contains(char::is_whitespace) => {
                return Err(UsageError(format!("--order: bad key '{k}'")))
            }
            k => OrderBy::Value(vec![k.to_owned()]),
        };
        coll = Coll::Order {
            by,
            descending,
            operand: Box::new(coll),
        };
    }
    Ok(coll)
}

pub fn run(args: &QueryArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let parsed = spindle_query::parse(&args.pattern).map_err(|e| parse_error(&args.pattern, &e))?;
    for w in &parsed.warnings {
        eprintln!("spindle: warning: {w}");
    }
    let mut coll = parsed.coll;
    if let Some(order) = &args.order {
        coll = with_order(coll, order)?;
    }
    if args.limit.is_some() || args.offset > 0 {
        coll = Coll::Limit {
            start: args.offset,
            length: args.limit,
            operand: Box::new(coll),
        };
    }
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
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if let Some(spec) = spec {
        let v = lib.shape(&spec, &ids.ids, &pref);
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    match args.format {
        Format::Ids => {
            for id in &ids.ids {
                writeln!(out, "{id}")?;
            }
        }
        Format::Json | Format::Table => {
            let fields: Vec<&str> = args
                .fetch
                .split(',')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .collect();
            let rows = lib.fetch_rows(&ids.ids, &fields, &pref);
            if args.format == Format::Json {
                write_json(&mut out, &fields, &rows)?;
            } else {
                write_table(&mut out, &fields, &rows)?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn parse_fetch_spec(text: &str) -> Result<FetchSpec, UsageError> {
    let json = spindle_query::json::parse_relaxed_json(text)
        .map_err(|e| UsageError(format!("--fetch: {e}")))?;
    spindle_query::json::fetch_from_json(&json).map_err(|e| UsageError(format!("--fetch: {e}")))
}

fn write_json(
    out: &mut impl Write,
    fields: &[&str],
    rows: &spindle_store::Rows<'_>,
) -> std::io::Result<()> {
    let arr: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let mut m = serde_json::Map::new();
            for (f, v) in fields.iter().zip(row) {
                if let Some(v) = v {
                    m.insert((*f).to_owned(), v.to_json());
                }
            }
            serde_json::Value::Object(m)
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &arr)?;
    writeln!(out)
}

fn write_table(
    out: &mut impl Write,
    fields: &[&str],
    rows: &spindle_store::Rows<'_>,
) -> std::io::Result<()> {
    const MAX_WIDTH: usize = 40;
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| v.map(|v| v.to_string()).unwrap_or_default())
                .map(|s| s.replace(['\n', '\t'], " "))
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = fields.iter().map(|f| f.chars().count()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count().min(MAX_WIDTH));
        }
    }
    let line = |out: &mut dyn Write, row: &[String]| -> std::io::Result<()> {
        let mut s = String::new();
        for (i, (c, w)) in row.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let shown: String = if c.chars().count() > MAX_WIDTH {
                c.chars().take(MAX_WIDTH - 1).chain(['…']).collect()
            } else {
                c.clone()
            };
            let pad = w.saturating_sub(shown.chars().count());
            s.push_str(&shown);
            if i + 1 < row.len() {
                s.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{s}")
    };
    let header: Vec<String> = fields.iter().map(|f| (*f).to_owned()).collect();
    line(out, &header)?;
    for row in &cells {
        line(out, row)?;
    }
    match cells.len() {
        1 => writeln!(out, "(1 entry)"),
        n => writeln!(out, "({n} entries)"),
    }
}
