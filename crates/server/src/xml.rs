//! The one escaping rule for text the server writes into markup: the
//! Last.fm and Subsonic XML answers, the SVG charts and the HTML of the
//! desktop-auth page, in element text and attribute values alike.
//!
//! - `&`, `<`, `>`, `"` and `'` become `&amp;`, `&lt;`, `&gt;`, `&quot;`
//!   and `&#39;` (a reference that XML and every HTML read the same way).
//! - Tab, line feed and carriage return become `&#9;`, `&#10;` and
//!   `&#13;`, so they survive a parser's attribute-value normalization
//!   (which turns them into spaces) and end-of-line handling (which turns
//!   `\r` into `\n`): Subsonic puts every value in an attribute.
//! - Characters XML 1.0 does not allow at all, not even as a reference
//!   (the other C0 controls, U+FFFE and U+FFFF; see
//!   <https://www.w3.org/TR/xml/#charsets>), become U+FFFD, so the
//!   document stays well-formed and the reader sees that something was
//!   there.
//! - Everything else, characters beyond the BMP included, is written as
//!   it is (the documents are UTF-8).

/// Appends `s` to `out`, escaped.
pub fn escape_into(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

/// `s`, escaped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(s, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_become_references() {
        assert_eq!(
            escape(r#"Tom & Jerry's <"Best">"#),
            "Tom &amp; Jerry&#39;s &lt;&quot;Best&quot;&gt;"
        );
        // Already escaped text is escaped again: the input is text, not
        // markup.
        assert_eq!(escape("&amp;"), "&amp;amp;");
    }

    #[test]
    fn whitespace_controls_survive_a_parser_and_others_are_replaced() {
        assert_eq!(escape("a\tb\nc\r\nd"), "a&#9;b&#10;c&#13;&#10;d");
        assert_eq!(
            escape("nul\0bell\u{7}esc\u{1b}"),
            "nul\u{fffd}bell\u{fffd}esc\u{fffd}"
        );
        assert_eq!(escape("\u{fffe}\u{ffff}"), "\u{fffd}\u{fffd}");
        // DEL and the C1 controls are allowed characters in XML 1.0.
        assert_eq!(escape("\u{7f}\u{85}"), "\u{7f}\u{85}");
        for c in (0u32..0x20).filter_map(char::from_u32) {
            let e = escape(&c.to_string());
            assert!(!e.chars().any(|x| (x as u32) < 0x20), "{c:?} gave {e:?}");
        }
    }

    #[test]
    fn other_characters_pass_as_they_are() {
        let s = "Björk — Ágætis byrjun 🎵 𝄞 日本語 \u{fffd}";
        assert_eq!(escape(s), s);
        let mut out = String::from("<a>");
        escape_into("x&y", &mut out);
        assert_eq!(out, "<a>x&amp;y");
    }
}
