//! The normal form names are compared in (dedupe, charts, library links).

/// Lower-cased, whitespace collapsed and trimmed.
///
/// ```
/// assert_eq!(spindle_listens::normalise("  The  Beatles "), "the beatles");
/// ```
pub fn normalise(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    normalise_into(s, &mut out);
    out
}

/// [`normalise`], appended to `out` (which callers reuse, so that the
/// submit and replay paths allocate nothing per name).
pub(crate) fn normalise_into(s: &str, out: &mut String) {
    if s.is_ascii() {
        // Fast path: byte-wise, the same result as the general one
        // (ASCII's Unicode whitespace is tab to carriage return and space).
        let start = out.len();
        let mut gap = false;
        for &b in s.as_bytes() {
            if matches!(b, b'\t'..=b'\r' | b' ') {
                gap = true;
                continue;
            }
            if gap && out.len() > start {
                out.push(' ');
            }
            gap = false;
            out.push(b.to_ascii_lowercase() as char);
        }
        return;
    }
    let start = out.len();
    for word in s.split_whitespace() {
        if out.len() > start {
            out.push(' ');
        }
        for c in word.chars() {
            out.extend(c.to_lowercase());
        }
    }
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
        // The ASCII fast path splits on the same whitespace as the
        // general path (form feed and vertical tab included).
        for a in ["a\x0cb", "a\x0bb", "a\u{a0}b", "A\r\nB"] {
            let general: Vec<String> = a
                .split_whitespace()
                .map(|w| w.chars().flat_map(char::to_lowercase).collect())
                .collect();
            assert_eq!(normalise(a), general.join(" "), "{a:?}");
        }
    }
}
