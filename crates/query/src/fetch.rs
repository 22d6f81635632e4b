//! Fetch specifications (Collections 2.0 query results): what to return
//! for the entries a collection selects.

use crate::sourcepref::SourcePref;

/// Which parts of a property a `metadata` fetch returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Get {
    Id,
    Field,
    Value,
    Source,
}

/// How a `metadata` fetch folds the values of many entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aggregate {
    First,
    Sum,
    Max,
    Min,
    Set,
    List,
    Random,
    Avg,
}

impl Aggregate {
    pub fn parse(s: &str) -> Option<Aggregate> {
        Some(match s {
            "first" => Aggregate::First,
            "sum" => Aggregate::Sum,
            "max" => Aggregate::Max,
            "min" => Aggregate::Min,
            "set" => Aggregate::Set,
            "list" => Aggregate::List,
            "random" => Aggregate::Random,
            "avg" => Aggregate::Avg,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Aggregate::First => "first",
            Aggregate::Sum => "sum",
            Aggregate::Max => "max",
            Aggregate::Min => "min",
            Aggregate::Set => "set",
            Aggregate::List => "list",
            Aggregate::Random => "random",
            Aggregate::Avg => "avg",
        }
    }
}

/// What a cluster groups entries by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterBy {
    /// The (best-source) value of a field; an entry with several values
    /// joins the cluster of its first.
    Value(String),
    /// Each entry on its own, keyed by id.
    Id,
    /// Each entry on its own, keyed by its position in the result.
    Position,
}

/// A fetch specification.
#[derive(Debug, Clone, PartialEq)]
pub enum FetchSpec {
    Metadata {
        /// `None` means every field.
        fields: Option<Vec<String>>,
        get: Vec<Get>,
        aggregate: Aggregate,
        sourcepref: Option<SourcePref>,
    },
    ClusterList {
        by: ClusterBy,
        /// Where entries lacking the field go; `None` drops them.
        fallback: Option<serde_json::Value>,
        data: Box<FetchSpec>,
        sourcepref: Option<SourcePref>,
    },
    ClusterDict {
        by: ClusterBy,
        fallback: Option<serde_json::Value>,
        data: Box<FetchSpec>,
        sourcepref: Option<SourcePref>,
    },
    /// A dict of named child specs, each over the same entries.
    Organize(Vec<(String, FetchSpec)>),
    /// The number of entries.
    Count,
}

impl FetchSpec {
    /// `metadata` fetching the values of `fields`, one dict per entry
    /// (the CLI's `--fetch artist,title`, wrapped in a cluster by id).
    pub fn fields_per_entry(fields: &[String]) -> FetchSpec {
        FetchSpec::ClusterList {
            by: ClusterBy::Id,
            fallback: None,
            data: Box::new(FetchSpec::Metadata {
                fields: Some(fields.to_vec()),
                get: vec![Get::Field, Get::Value],
                aggregate: Aggregate::First,
                sourcepref: None,
            }),
            sourcepref: None,
        }
    }
}
