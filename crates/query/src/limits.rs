//! How large a pattern the parser accepts.
//!
//! A pattern's cost to parse, hold and evaluate grows with its length, its
//! number of filters and its nesting, so each is bounded before the tree is
//! built: the length before lexing, the filters and the nesting as the
//! parser meets them (it stops at the first one over the limit). Patterns
//! from the network ([`ParseLimits::NETWORK`]) get tight limits, since a
//! search box has no use for more; local ones ([`ParseLimits::LOCAL`], the
//! CLI and saved collections) generous ones that still keep the recursive
//! parser, printer and evaluator far from the end of a thread's stack.

/// [`ParseLimits::NETWORK`]'s length: 4 KiB, some 400 filters' worth of
/// text, far beyond anything typed into a search box.
pub const NETWORK_MAX_PATTERN_BYTES: usize = 4 * 1024;

/// [`ParseLimits::NETWORK`]'s filters: 64. Each filter can cost a pass over
/// the library (20,000 entries: about 10 ms), so 64 stay well inside a
/// query's time budget, and a search needs a handful.
pub const NETWORK_MAX_TERMS: usize = 64;

/// [`ParseLimits::NETWORK`]'s nesting of `(` and `NOT`: 16 levels, more
/// than a person writes, little enough that no recursion over the tree
/// comes near the stack of a server's blocking thread.
pub const NETWORK_MAX_DEPTH: usize = 16;

/// [`ParseLimits::LOCAL`]'s length: 4 MiB. Lexing holds every token of the
/// pattern at once (some tens of bytes each), so this bounds the parser's
/// memory to a few hundred MiB even for a pattern of one-letter words.
pub const LOCAL_MAX_PATTERN_BYTES: usize = 4 << 20;

/// [`ParseLimits::LOCAL`]'s filters: 100,000, room for generated patterns
/// (long id lists) while a runaway script still gets an error, not a tree
/// of millions of nodes.
pub const LOCAL_MAX_TERMS: usize = 100_000;

/// [`ParseLimits::LOCAL`]'s nesting: [`MAX_DEPTH`](crate::parser::MAX_DEPTH)
/// (100) levels, the depth the printer can print back; the parser, printer
/// and evaluator recurse once per level, a few hundred bytes of stack each.
pub const LOCAL_MAX_DEPTH: usize = crate::parser::MAX_DEPTH;

/// Limits on one pattern. A *term* is one filter as written: `artist:x`,
/// `tracknr>3`, `+comment`, a bare word, `*`, `in:NAME`, and each item of
/// a sequence (`#1,3-5` is two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// The most bytes of UTF-8 a pattern may have.
    pub max_bytes: usize,
    /// The most terms (filters) a pattern may have.
    pub max_terms: usize,
    /// The most levels `(` and `NOT` may nest.
    pub max_depth: usize,
    /// Where the pattern comes from, for messages: "from the network".
    pub origin: &'static str,
}

impl ParseLimits {
    /// For patterns from the network: search boxes, Subsonic `search3`.
    pub const NETWORK: ParseLimits = ParseLimits {
        max_bytes: NETWORK_MAX_PATTERN_BYTES,
        max_terms: NETWORK_MAX_TERMS,
        max_depth: NETWORK_MAX_DEPTH,
        origin: "from the network",
    };

    /// For patterns the user typed on this machine, and saved collections.
    pub const LOCAL: ParseLimits = ParseLimits {
        max_bytes: LOCAL_MAX_PATTERN_BYTES,
        max_terms: LOCAL_MAX_TERMS,
        max_depth: LOCAL_MAX_DEPTH,
        origin: "in a pattern",
    };
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits::LOCAL
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::{parse, parse_limited};

    const NET: ParseLimits = ParseLimits::NETWORK;

    fn terms(n: usize, term: &str, sep: &str) -> String {
        vec![term; n].join(sep)
    }

    /// (pattern, limits, None if accepted / Some((column, message part))).
    #[allow(
        clippy::type_complexity,
        reason = "a table of test cases, read once, right below"
    )]
    fn cases() -> Vec<(String, ParseLimits, Option<(usize, &'static str)>)> {
        let wide = ParseLimits {
            max_bytes: usize::MAX,
            ..NET
        };
        vec![
            // Length, in bytes, checked before anything else.
            ("a".repeat(4096), NET, None),
            (
                "a".repeat(4097),
                NET,
                Some((4097, "the pattern is 4097 bytes long; at most 4096 bytes are allowed from the network")),
            ),
            ("ä".repeat(2048), NET, None),
            ("ä".repeat(2049), NET, Some((2049, "4098 bytes long"))),
            ("(".repeat(100_000), NET, Some((4097, "bytes long"))),
            // Terms: filters as written; a sequence counts each item.
            (terms(64, "title~a*", " "), NET, None),
            (
                terms(65, "title~a*", " "),
                NET,
                Some((64 * 9 + 1, "more than 64 terms")),
            ),
            (terms(64, "x", " OR "), NET, None),
            (terms(65, "x", " OR "), NET, Some((64 * 5 + 1, "more than 64 terms"))),
            (terms(65, "+a", " "), NET, Some((64 * 3 + 1, "more than 64 terms"))),
            (terms(65, ":x", " "), NET, Some((64 * 3 + 1, "more than 64 terms"))),
            (terms(65, "in:x", " "), NET, Some((64 * 5 + 1, "more than 64 terms"))),
            (terms(65, "*", " "), NET, Some((129, "more than 64 terms"))),
            (format!("#{}", terms(64, "1", ",")), NET, None),
            (format!("#{}", terms(65, "1", ",")), NET, Some((1, "more than 64 terms"))),
            (terms(65, "1", ","), NET, Some((1, "more than 64 terms"))),
            (
                terms(60_000, "title~a*", " AND "),
                wide,
                Some((64 * 13 + 1, "the pattern has more than 64 terms (filters like artist:x, tracknr>3 or a word); at most 64 are allowed from the network")),
            ),
            (terms(60_000, "title~a*", " "), ParseLimits::LOCAL, None),
            (
                terms(100_001, "a", " "),
                ParseLimits::LOCAL,
                Some((200_001, "at most 100000 are allowed in a pattern")),
            ),
            // Nesting of '(' and NOT.
            (format!("{}a:x{}", "(".repeat(16), ")".repeat(16)), NET, None),
            (
                format!("{}a:x{}", "(".repeat(17), ")".repeat(17)),
                NET,
                Some((17, "nested too deeply: more than 16 levels of '(' and NOT; at most 16 are allowed from the network")),
            ),
            (format!("{}a:x", "NOT ".repeat(17)), NET, Some((65, "nested too deeply"))),
            (format!("{}a:x", "NOT (".repeat(9)), NET, Some((41, "nested too deeply"))),
            (
                format!("{}a:x{}", "(".repeat(100), ")".repeat(100)),
                ParseLimits::LOCAL,
                None,
            ),
            ("(".repeat(100_000), ParseLimits::LOCAL, Some((101, "more than 100 levels"))),
            (
                format!("{}a:x", "NOT ".repeat(100_000)),
                ParseLimits::LOCAL,
                Some((401, "nested too deeply")),
            ),
        ]
    }

    #[test]
    fn patterns_over_a_limit_are_refused_at_the_column_where_they_cross_it() {
        for (pattern, limits, want) in cases() {
            let short = &pattern[..pattern.len().min(40)];
            match (parse_limited(&pattern, &limits), want) {
                (Ok(_), None) => {}
                (Err(e), Some((column, msg))) => {
                    assert_eq!(e.column, column, "{short:?}…: {e}");
                    assert!(e.message.contains(msg), "{short:?}…: {e}");
                }
                (Ok(_), Some(_)) => panic!("{short:?}… ({} bytes) was accepted", pattern.len()),
                (Err(e), None) => panic!("{short:?}… was refused: {e}"),
            }
        }
    }

    #[test]
    fn parse_applies_the_local_limits() {
        let deep = "(".repeat(101);
        assert_eq!(
            parse(&deep).unwrap_err(),
            parse_limited(&deep, &ParseLimits::LOCAL).unwrap_err()
        );
        let long = "a".repeat(LOCAL_MAX_PATTERN_BYTES + 1);
        assert!(parse(&long).unwrap_err().message.contains("bytes long"));
    }

    #[test]
    fn a_refused_pattern_says_what_to_do() {
        let e = parse_limited(&terms(65, "a:x", " "), &NET).unwrap_err();
        assert_eq!(
            e.to_string(),
            "parse error at column 257: the pattern has more than 64 terms (filters like \
             artist:x, tracknr>3 or a word); at most 64 are allowed from the network: use \
             fewer filters"
        );
    }
}
