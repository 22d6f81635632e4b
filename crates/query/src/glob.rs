//! Whole-string glob matching with `*` (any run) and `?` (one char).
//!
//! Used for MATCH filters (on case-folded text) and for source
//! preferences (case-sensitive). Iterative with one backtrack point, so
//! `a*a*a*a*b` against a long string stays linear-ish, never exponential.

/// Does `text` match `pattern` as a whole? No escapes: the pattern
/// language has already removed them.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob_match_chars(&p, &t)
}

/// [`glob_match`] on pre-split characters (avoids re-collecting the
/// pattern for every value).
pub fn glob_match_chars(p: &[char], t: &[char]) -> bool {
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The literal prefix of a glob before its first wildcard, if the glob
/// is "prefix then `*` and nothing else" — usable as an index range.
pub fn literal_prefix(pattern: &str) -> &str {
    match pattern.find(['*', '?']) {
        Some(i) => &pattern[..i],
        None => pattern,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases = [
            ("*", "", true),
            ("*", "abc", true),
            ("a*", "abc", true),
            ("a*", "bac", false),
            ("*c", "abc", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*b*", "abc", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false),
            ("client/*", "client/playa", true),
            ("client/*", "plugin/id3v2", false),
            ("", "", true),
            ("", "a", false),
            ("ä*", "äö", true),
        ];
        for (p, t, want) in cases {
            assert_eq!(glob_match(p, t), want, "{p:?} vs {t:?}");
        }
    }

    #[test]
    fn prefix() {
        assert_eq!(literal_prefix("foo*"), "foo");
        assert_eq!(literal_prefix("*foo"), "");
        assert_eq!(literal_prefix("foo"), "foo");
    }
}
