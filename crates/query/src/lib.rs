//! Spindle's query language, after XMMS2's Collections.
//!
//! This crate owns the *language*: tokens, the pattern grammar, the
//! collection tree ([`Coll`]), fetch specifications ([`FetchSpec`]), source
//! preferences and globbing. It is pure: no I/O, no storage, no
//! evaluation — the store crate evaluates a [`Coll`] against its entries.
//!
//! ```
//! use spindle_query::{parse, Coll};
//! let parsed = parse("artist:metallica").unwrap();
//! assert!(matches!(parsed.coll, Coll::Filter { .. }));
//! ```
#![forbid(unsafe_code)]

pub mod ast;
pub mod error;
pub mod fetch;
pub mod glob;
pub mod parser;
pub mod sourcepref;

pub use ast::{CmpOp, Coll, Field, Filter, FilterOp, OrderBy, Parsed, Value};
pub use error::ParseError;
pub use fetch::{Aggregate, ClusterBy, FetchSpec, Get};
pub use glob::glob_match;
pub use parser::parse;
pub use sourcepref::{SourcePref, DEFAULT_SOURCEPREF};
