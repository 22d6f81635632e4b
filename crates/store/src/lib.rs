//! Spindle's media-library store, after XMMS2's S4.
//!
//! The store owns the *data*: entries identified by a parent id, each
//! holding (key, value, source) properties, where a value is an integer
//! or a string and one key may hold several values. Source preferences
//! decide which values a query sees. Data lives in memory; durability is a
//! data file plus an fsynced log of committed transactions; indexes are
//! memory-only and rebuilt on open (S4's "midb" design). The query engine
//! evaluates `spindle_query` collections over it. [`json`] is the
//! library's JSON import/export format; [`text`] how rows, stats and
//! entries print; [`edit`] the one-transaction edits of `spindle db`.
//! A cluster's primary ships its library with [`Db::read_log_from`] and
//! [`Db::base`]; a replica takes it with [`Db::apply_shipped`],
//! [`Db::install_base`] and [`write_base`] (`docs/cluster.md`).
//!
//! It is *not* a tag reader, a server or a CLI: those sit above it. It is
//! synchronous; callers in async code run it on a blocking thread.
//!
//! ```
//! use spindle_store::{Db, Op};
//! use spindle_query::{parse, SourcePref};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let db = Db::open(dir.path()).unwrap();
//! let id = db.reserve_id();
//! db.commit(vec![
//!     Op::CreateEntry(id),
//!     Op::AddProp { entry: id, key: "artist".into(), source: "plugin/id3v2".into(), value: "Foo".into() },
//! ]).unwrap();
//! let lib = db.read();
//! let coll = spindle_query::Coll::Universe;
//! let ids = lib.query_ids(&coll, &SourcePref::default()).unwrap();
//! assert_eq!(ids.ids, vec![id]);
//! # let _ = parse;
//! ```
#![forbid(unsafe_code)]

mod changes;
mod check;
mod codec;
mod column;
mod db;
pub mod edit;
mod engine;
pub mod error;
pub mod fold;
#[doc(hidden)]
pub mod fuzzing;
mod index;
mod intern;
pub mod json;
mod log;
mod model;
mod op;
mod perms;
mod query;
mod saved;
mod ship;
mod snapshot;
pub mod text;

pub use changes::{ChangeStamp, Position, CHANGES_KEPT};
pub use db::{Db, OpenReport, Stats, DATA_FILE, LOCK_FILE, LOG_FILE};
pub use engine::{Budget, Ids};
pub use error::{CommitError, CompactError, OpenError, QueryError};
pub use model::{Library, ValueRef, PARENT_KEY};
pub use op::Op;
pub use query::Rows;
pub use ship::{
    write_base, ApplyError, Base, InstallError, LogPosition, LogRead, BASE_ATTEMPTS, LOG_HEADER_LEN,
};
pub use spindle_query::Value;
