//! `spindle db …`: low-level access to the library store.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Subcommand;
use spindle_media::Foreign;
use spindle_store::edit::{parse_assignment, parse_value};
use spindle_store::{Db, Op};

use super::UsageError;

/// The source the CLI writes under unless told otherwise.
const CLI_SOURCE: &str = "client/cli";

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Add an entry with properties: `spindle db add artist=Foo title=Bar tracknr=3`.
    Add {
        /// KEY=VALUE pairs; a value of digits is stored as an integer.
        #[arg(required = true, value_name = "KEY=VALUE")]
        props: Vec<String>,
        /// Add to this existing entry instead of creating one.
        #[arg(long)]
        id: Option<u32>,
        /// Source of the properties.
        #[arg(long, default_value = CLI_SOURCE)]
        source: String,
        /// Store every value as a string, even digits.
        #[arg(long)]
        string: bool,
    },
    /// Replace a key's values (from one source) on an entry.
    Set {
        id: u32,
        key: String,
        value: String,
        #[arg(long, default_value = CLI_SOURCE)]
        source: String,
        #[arg(long)]
        string: bool,
    },
    /// Delete an entry, or one key of it (from --source, or from every source).
    Delete {
        id: u32,
        key: Option<String>,
        #[arg(long)]
        source: Option<String>,
    },
    /// Index a key in memory (remembered in the database); no KEY lists indexes.
    Index {
        key: Option<String>,
        /// Drop the index instead.
        #[arg(long)]
        drop: bool,
    },
    /// Show entries, properties, sources, indexes and file sizes.
    Stats,
    /// Rewrite the data file from memory and start an empty log.
    Compact,
    /// Verify the data file, the log and every index; exits 1 on a problem.
    Check,
    /// Show every property of an entry, with its source.
    Show { id: u32 },
    /// Save a pattern as a named collection, usable as `in:NAME`.
    Save { name: String, pattern: String },
    /// Import a JSON array of entry objects ("KEY" or "SOURCE/KEY" → value).
    ImportJson {
        /// The file, or - for standard input.
        file: PathBuf,
    },
    /// Export every entry as a JSON array that import-json reads back.
    ExportJson {
        /// Write here instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Import an XMMS2 medialib.db (SQLite, schema version 36).
    ImportXmms2 { file: PathBuf },
    /// Import a beets library.db (items, albums, flexible attributes) as source import/beets.
    ImportBeets { file: PathBuf },
}

fn open_write(dir: &Path) -> anyhow::Result<Db> {
    let db = Db::open(dir).with_context(|| format!("opening the library in {}", dir.display()))?;
    for w in &db.open_report().warnings {
        eprintln!("spindle: warning: {w}");
    }
    Ok(db)
}

fn open_read(dir: &Path) -> anyhow::Result<Db> {
    if !dir.exists() {
        bail!("no library at {}", dir.display());
    }
    let db = Db::open_read_only(dir)
        .with_context(|| format!("opening the library in {}", dir.display()))?;
    for w in &db.open_report().warnings {
        eprintln!("spindle: warning: {w}");
    }
    Ok(db)
}

pub fn run(cmd: &DbCommand, dir: &Path) -> anyhow::Result<ExitCode> {
    match cmd {
        DbCommand::Add {
            props,
            id,
            source,
            string,
        } => {
            let parsed = props
                .iter()
                .map(|p| parse_assignment(p, *string).map_err(|e| UsageError(e.to_string())))
                .collect::<Result<Vec<_>, _>>()?;
            println!("{}", open_write(dir)?.add_props(*id, parsed, source)?);
        }
        DbCommand::Set {
            id,
            key,
            value,
            source,
            string,
        } => open_write(dir)?.replace_prop(*id, key, parse_value(value, *string), source)?,
        DbCommand::Delete { id, key, source } => {
            open_write(dir)?.delete(*id, key.as_deref(), source.as_deref())?
        }
        DbCommand::Index { key: None, .. } => {
            for k in open_read(dir)?.read().indexed_keys() {
                println!("{k}");
            }
        }
        DbCommand::Index {
            key: Some(key),
            drop,
        } => {
            let op = if *drop {
                Op::DropIndex(key.clone())
            } else {
                Op::CreateIndex(key.clone())
            };
            open_write(dir)?.commit(vec![op])?;
        }
        DbCommand::Stats => {
            let db = open_read(dir)?;
            print!("{}", db.stats().render(dir, db.open_report().elapsed));
        }
        DbCommand::Compact => {
            let db = open_write(dir)?;
            let before = db.stats();
            let bytes = db.compact()?;
            println!(
                "compacted: data file {} → {} bytes, log {} bytes → empty",
                before.data_file_bytes, bytes, before.log_bytes
            );
        }
        DbCommand::Check => {
            let db = open_read(dir)?;
            let problems = db.read().check();
            if problems.is_empty() && db.open_report().warnings.is_empty() {
                let s = db.stats();
                println!("ok: {} entries, {} properties", s.entries, s.properties);
            } else {
                for p in &problems {
                    println!("problem: {p}");
                }
                return Ok(ExitCode::from(1));
            }
        }
        DbCommand::Show { id } => {
            let db = open_read(dir)?;
            let text = db.read().describe_entry(*id);
            print!(
                "{}",
                text.with_context(|| format!("no entry with id {id}"))?
            );
        }
        DbCommand::Save { name, pattern } => {
            spindle_query::parse(pattern).map_err(|e| UsageError(format!("{e}\n  {pattern}")))?;
            open_write(dir)?.commit(vec![Op::SaveCollection {
                name: name.clone(),
                json: pattern.clone(),
            }])?;
        }
        DbCommand::ImportJson { file } => {
            let text = read_input(file)?;
            let json: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not valid JSON", file.display()))?;
            let db = open_write(dir)?;
            let import = spindle_store::json::import_ops(&json, &db.read())?;
            db.commit(import.ops)?;
            println!(
                "imported {} entries ({} properties)",
                import.entries, import.properties
            );
        }
        DbCommand::ExportJson { output } => {
            let db = open_read(dir)?;
            let text = serde_json::to_string_pretty(&spindle_store::json::export(&db.read()))?;
            match output {
                Some(p) => std::fs::write(p, text + "\n")
                    .with_context(|| format!("writing {}", p.display()))?,
                None => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(text.as_bytes())?;
                    out.write_all(b"\n")?;
                }
            }
        }
        DbCommand::ImportXmms2 { file } => import(&open_write(dir)?, file, Foreign::Xmms2)?,
        DbCommand::ImportBeets { file } => import(&open_write(dir)?, file, Foreign::Beets)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Imports a foreign library with a progress bar on stderr (hidden when
/// stderr is not a terminal) and prints what it did.
fn import(db: &spindle_store::Db, file: &Path, foreign: Foreign) -> anyhow::Result<()> {
    let what = foreign.tracks();
    let bar = indicatif::ProgressBar::with_draw_target(
        None,
        indicatif::ProgressDrawTarget::stderr_with_hz(4),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {pos}/{len} {msg} [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.set_message(format!("{what} imported"));
    let r = foreign.import(db, file, &mut |p| {
        if let Some(t) = p.total {
            bar.set_length(t);
        }
        bar.set_position(p.entries);
    });
    bar.finish_and_clear();
    let r = r.with_context(|| format!("importing {}", file.display()))?;
    for note in &r.notes {
        eprintln!("spindle: note: {note}");
    }
    println!(
        "imported {} {what}: {} created, {} updated, {} unchanged",
        r.entries, r.created, r.updated, r.unchanged
    );
    Ok(())
}

fn read_input(file: &Path) -> anyhow::Result<String> {
    if file == Path::new("-") {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        Ok(s)
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))
    }
}
