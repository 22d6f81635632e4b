//! The collection tree (Collections 2.0 operators) and its filters.
//!
//! A parsed pattern becomes a [`Coll`]: filters whose operand is the
//! universe, combined with union, intersection and complement. The JSON
//! form of XMMS2's collections maps onto the same tree, with ORDER, LIMIT,
//! MEDIASET and IDLIST on top.

use crate::sourcepref::SourcePref;

/// A property value: an integer or a UTF-8 string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Value {
    Int(i64),
    Str(String),
}

impl Value {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Str(_) => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Int(_) => None,
            Value::Str(s) => Some(s),
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Str(s) => f.write_str(s),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}

/// What a filter looks at: a property key, or the entry id itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Field {
    Key(String),
    Id,
}

/// A comparison operator (natural collation order: digit runs as numbers, text caselessly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
}

/// The test a filter applies to each (best-source) value of its field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterOp {
    /// `key:value` — caseless equality; an int never equals a string.
    Equals(Value),
    /// `key~glob` — whole-value glob with `*` and `?`, caseless.
    Match(String),
    /// a bare word — one whitespace-separated word equals the token
    /// (a trailing `*` makes it a prefix).
    Token(String),
    /// `+key` — the key is present from a non-ignored source.
    Has,
    /// `key<5`, `key>=x` — natural collation order.
    Cmp(CmpOp, Value),
}

/// One filter: a field, a test, and optionally its own source preference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub field: Field,
    pub op: FilterOp,
    /// Compare case-sensitively (not expressible in the pattern syntax).
    pub case_sensitive: bool,
    /// A source preference for this filter only; `None` uses the query's.
    pub sourcepref: Option<SourcePref>,
}

impl Filter {
    pub fn new(field: Field, op: FilterOp) -> Self {
        Filter {
            field,
            op,
            case_sensitive: false,
            sourcepref: None,
        }
    }

    pub fn key(key: &str, op: FilterOp) -> Self {
        Filter::new(Field::Key(key.to_owned()), op)
    }
}

/// How ORDER sorts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrderBy {
    /// By value of the first of these fields that the entry has.
    Value(Vec<String>),
    /// By entry id.
    Id,
    /// A seeded shuffle (the same seed gives the same order).
    Random(u64),
}

/// A collection: a set (or an ordered list) of entry ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coll {
    /// Every entry, in id order.
    Universe,
    /// Entries of `operand` that pass `filter`.
    Filter { filter: Filter, operand: Box<Coll> },
    /// Entries in any operand; ordered: first operand's order, then the next's.
    Union(Vec<Coll>),
    /// Entries in every operand; keeps the first operand's order.
    Intersection(Vec<Coll>),
    /// Entries of the universe not in the operand (NOT works on entries).
    Complement(Box<Coll>),
    /// A stable sort of the operand.
    Order {
        by: OrderBy,
        descending: bool,
        operand: Box<Coll>,
    },
    /// `length` entries of the operand starting at `start` (0-based).
    Limit {
        start: usize,
        length: Option<usize>,
        operand: Box<Coll>,
    },
    /// The operand as a set (forgets its order; id order results).
    Mediaset(Box<Coll>),
    /// An explicit list of ids, in this order.
    IdList(Vec<u32>),
    /// A saved collection, by name (`in:NAME`).
    Reference(String),
}

impl Coll {
    /// A filter over the universe.
    pub fn filter(filter: Filter) -> Coll {
        Coll::Filter {
            filter,
            operand: Box::new(Coll::Universe),
        }
    }
}

/// A parsed pattern with what the parser noticed but accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub coll: Coll,
    pub warnings: Vec<String>,
}
