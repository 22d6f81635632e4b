//! The normal form names are compared in (dedupe, charts, library links).

/// Lower-cased, whitespace collapsed and trimmed.
///
/// ```
/// assert_eq!(spindle_listens::normalise("  The  Beatles "), "the beatles");
/// ```
pub fn normalise(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        for c in word.chars() {
            out.extend(c.to_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalise;

    #[test]
    fn folds_case_and_spaces() {
        for (a, b) in [
            ("ABC", "abc"),
            (" a \t b ", "a b"),
            ("Björk", "björk"),
            ("", ""),
        ] {
            assert_eq!(normalise(a), b);
        }
    }
}
