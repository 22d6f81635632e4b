//! The query engine: evaluates a collection tree to an ordered list of
//! entry ids, then shapes the result with a fetch specification.
//!
//! Planning, in short: filters over the universe on an indexed key (or on
//! the id) are answered from the index — inside AND/OR/NOT trees too, not
//! only at the top. An intersection materialises its indexable operands,
//! smallest first, and tests the rest entry by entry on the survivors; a
//! union merges; a complement subtracts from the universe. Anything
//! ordered (ORDER, LIMIT, IDLIST) keeps its order through unions and as
//! the first operand of an intersection.
//!
//! Every loop counts its work against the query's [`Budget`] (time, steps,
//! a cancellation flag) and stops early when it runs out; see [`budget`].

pub(crate) mod budget;
mod eval;
mod fetch;
pub(crate) mod filter;

pub use budget::Budget;
pub(crate) use budget::Meter;
pub(crate) use eval::Evaluator;
pub use eval::Ids;
pub(crate) use fetch::fetch;
