//! Saved collections (`in:NAME`): stored as a pattern, or as XMMS2's
//! collection JSON when the tree has no pattern form.

use spindle_query::Coll;

use crate::error::QueryError;

pub(crate) fn decode(name: &str, text: &str) -> Result<Coll, QueryError> {
    let bad = |detail: String| QueryError::BadCollection {
        name: name.to_owned(),
        detail,
    };
    spindle_query::parse(text)
        .map(|p| p.coll)
        .map_err(|e| bad(e.to_string()))
}
