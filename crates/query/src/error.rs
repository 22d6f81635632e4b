//! Errors of the pattern parser and of the JSON forms.

/// A pattern that does not parse. `column` is 1-based, in characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parse error at column {column}: {message}")]
#[non_exhaustive]
pub struct ParseError {
    pub column: usize,
    pub message: String,
}

impl ParseError {
    /// The error, then `pattern` with a caret under the column.
    pub fn with_caret(&self, pattern: &str) -> String {
        let caret = " ".repeat(self.column.saturating_sub(1));
        format!("{self}\n  {pattern}\n  {caret}^")
    }
}

/// A JSON collection or fetch specification that cannot be used.
///
/// `path` names the offending part of the document, JSONPath-style
/// (`$.operands[0].attributes.value`), so a user can find it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonError {
    /// The text is not JSON, not even the relaxed form
    /// (`{type:count}`). `line` and `column` are 1-based, in characters.
    #[error("JSON syntax error at line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// A `type` that is not one of the known collection or fetch types.
    #[error("unknown {what} type {found:?} at {path}; expected one of: {expected}")]
    UnknownType {
        /// "collection" or "fetch specification".
        what: &'static str,
        path: String,
        found: String,
        expected: &'static str,
    },
    /// A well-formed document with a missing, mistyped or invalid part.
    #[error("invalid {what} at {path}: {message}")]
    Invalid {
        /// "collection" or "fetch specification".
        what: &'static str,
        path: String,
        message: String,
    },
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_caret_points_at_the_column() {
        let e = crate::parse("artist:").unwrap_err();
        let shown = e.with_caret("artist:");
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[0], e.to_string());
        assert_eq!(lines[1], "  artist:");
        assert_eq!(lines[2].find('^'), Some(2 + e.column - 1));
    }
}
