//! Spindle's query language, after XMMS2's Collections.
//!
//! This crate owns the *language*: tokens ([`lexer`]), the pattern grammar
//! ([`parse`]), the collection tree ([`Coll`]), printing a tree back as a
//! pattern ([`to_pattern`]), XMMS2's JSON forms of collections and fetch
//! specifications ([`coll_from_json`], [`fetch_from_json`],
//! [`parse_relaxed_json`]), source preferences and globbing, and how large
//! a pattern may be ([`ParseLimits`], used by [`parse_limited`]), and the
//! command line's sort and window ([`Coll::ordered_by`], [`Coll::window`]).
//! It is pure: no
//! I/O, no storage, no evaluation — the store crate evaluates a [`Coll`]
//! against its entries.
//!
//! ```
//! use spindle_query::{parse, to_pattern, Coll};
//! let parsed = parse("artist:metallica tracknr>3").unwrap();
//! assert!(matches!(parsed.coll, Coll::Intersection(_)));
//! let again = to_pattern(&parsed.coll).unwrap();
//! assert_eq!(parse(&again).unwrap().coll, parsed.coll);
//! ```
#![forbid(unsafe_code)]

pub mod ast;
pub mod error;
pub mod fetch;
pub mod glob;
pub mod json;
pub mod lexer;
pub mod limits;
pub mod order;
pub mod parser;
pub mod printer;
pub mod sourcepref;

pub use ast::{CmpOp, Coll, Field, Filter, FilterOp, OrderBy, Parsed, Value};
pub use error::{JsonError, ParseError};
pub use fetch::{Aggregate, ClusterBy, FetchSpec, Get};
pub use glob::glob_match;
pub use json::{coll_from_json, fetch_from_json, parse_relaxed_json};
pub use limits::ParseLimits;
pub use order::OrderError;
pub use parser::{parse, parse_limited, value_from_str};
pub use printer::to_pattern;
pub use sourcepref::{SourcePref, DEFAULT_SOURCEPREF};
