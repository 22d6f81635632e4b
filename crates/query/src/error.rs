//! Errors of the pattern parser and of the JSON forms.

/// A pattern that does not parse. `column` is 1-based, in characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parse error at column {column}: {message}")]
#[non_exhaustive]
pub struct ParseError {
    pub column: usize,
    pub message: String,
}
