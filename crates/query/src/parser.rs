//! The pattern parser (placeholder until the real grammar lands).

use crate::ast::Parsed;
use crate::error::ParseError;

/// Parse a pattern into a collection tree.
pub fn parse(_pattern: &str) -> Result<Parsed, ParseError> {
    Err(ParseError {
        column: 1,
        message: "the parser is not written yet".into(),
    })
}
