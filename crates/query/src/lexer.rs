//! Tokens of the pattern language (its grammar is in [`crate::parser`]).
//!
//! Only the ASCII space separates tokens. At a token start the lexer
//! recognises `(` `)` `#` `+` `:` `~` `<=` `>=` `<` `>`, the keywords `OR`
//! `AND` `NOT` (only as whole words: `ORANGE` is a word), `in:`, quoted
//! strings, and otherwise reads a bare word up to an unescaped space, `:`,
//! `~`, `<`, `>`, `(` or `)`. A bare word ended by `:` `~` `<` `>` is a
//! property name.
//!
//! Two deliberate departures from XMMS2's `collparser.c`, both only turning
//! errors into sensible patterns:
//!
//! * keywords must be whole words;
//! * **value mode**: the token right after an operator (`:` `~` `<` `<=`
//!   `>` `>=` `in:`) is always a value. It is read up to an unescaped space,
//!   `(` or `)` only, so it may hold `:` `~` `<` `>` (`url:file://*.flac`),
//!   and `OR`/`AND`/`NOT`/`#`/`+` there are plain text.
//!
//! Errors: a trailing lone `\` and an unterminated quote.

use crate::error::ParseError;

/// How a value word is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WordKind {
    /// All digits (`42`).
    Integer,
    /// Only `[0-9,-]` with at least one `,` or `-` (`3-7,9`).
    Sequence,
    /// Holds an unescaped `*` or `?`.
    Pattern,
    /// Anything else. A quoted string is always a STRING or a PATTERN.
    String,
}

/// What a token is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenKind {
    LParen,
    RParen,
    /// `#`, before an id sequence.
    Hash,
    /// `+`, before a property name (HAS).
    Plus,
    /// `:` (EQUALS).
    Colon,
    /// `~` (MATCH).
    Tilde,
    Lt,
    Le,
    Gt,
    Ge,
    Or,
    And,
    Not,
    /// `in:`, before the name of a saved collection.
    In,
    /// A value: the text with quotes and escapes removed.
    Word {
        kind: WordKind,
        text: String,
        quoted: bool,
    },
    /// A property name ended by `:` `~` `<` `>`; a name written as a single
    /// character is already expanded (`a` → `artist`).
    Prop(String),
}

/// One token and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    /// 1-based column, in characters, of the token's first character.
    pub column: usize,
    /// How many characters of the pattern the token spans.
    pub len: usize,
}

/// The one-letter property names and what they stand for.
pub const SHORT_PROPS: [(char, &str); 7] = [
    ('a', "artist"),
    ('l', "album"),
    ('t', "title"),
    ('n', "tracknr"),
    ('y', "year"),
    ('g', "genre"),
    ('u', "url"),
];

/// The long name of a one-letter property, if it has one.
pub fn short_prop(c: char) -> Option<&'static str> {
    SHORT_PROPS.iter().find(|(s, _)| *s == c).map(|(_, l)| *l)
}

/// `name` with a one-character name expanded (`a` → `artist`); other
/// names unchanged (XMMS2 falls back to the name itself).
pub fn expand_prop(name: &str) -> String {
    let mut chars = name.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => short_prop(c).unwrap_or(name).to_owned(),
        _ => name.to_owned(),
    }
}

impl TokenKind {
    /// A short description for error messages: `'OR'`, `the word "foo"`.
    pub fn describe(&self) -> String {
        match self {
            TokenKind::LParen => "'('".into(),
            TokenKind::RParen => "')'".into(),
            TokenKind::Hash => "'#'".into(),
            TokenKind::Plus => "'+'".into(),
            TokenKind::Colon => "':'".into(),
            TokenKind::Tilde => "'~'".into(),
            TokenKind::Lt => "'<'".into(),
            TokenKind::Le => "'<='".into(),
            TokenKind::Gt => "'>'".into(),
            TokenKind::Ge => "'>='".into(),
            TokenKind::Or => "'OR'".into(),
            TokenKind::And => "'AND'".into(),
            TokenKind::Not => "'NOT'".into(),
            TokenKind::In => "'in:'".into(),
            TokenKind::Word { kind, text, .. } => match kind {
                WordKind::Pattern => format!("the pattern {text:?}"),
                _ => format!("the word {text:?}"),
            },
            TokenKind::Prop(name) => format!("the property name {name:?}"),
        }
    }

    /// The operator's own spelling, for messages ("after ':'").
    pub fn symbol(&self) -> &'static str {
        match self {
            TokenKind::LParen => "(",
            TokenKind::RParen => ")",
            TokenKind::Hash => "#",
            TokenKind::Plus => "+",
            TokenKind::Colon => ":",
            TokenKind::Tilde => "~",
            TokenKind::Lt => "<",
            TokenKind::Le => "<=",
            TokenKind::Gt => ">",
            TokenKind::Ge => ">=",
            TokenKind::Or => "OR",
            TokenKind::And => "AND",
            TokenKind::Not => "NOT",
            TokenKind::In => "in:",
            TokenKind::Word { .. } => "word",
            TokenKind::Prop(_) => "property",
        }
    }
}

const KEYWORDS: [(&str, TokenKind); 3] = [
    ("OR", TokenKind::Or),
    ("AND", TokenKind::And),
    ("NOT", TokenKind::Not),
];

/// Is `word` one of the keywords `OR` `AND` `NOT`?
pub fn is_keyword(word: &str) -> bool {
    KEYWORDS.iter().any(|(k, _)| *k == word)
}

/// Split a pattern into tokens.
pub fn tokenize(pattern: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut lexer = Lexer {
        chars: &chars,
        pos: 0,
    };
    let mut tokens = Vec::new();
    let mut value_next = false;
    loop {
        lexer.skip_spaces();
        let Some(c) = lexer.peek(0) else { break };
        let start = lexer.pos;
        let value_mode = std::mem::take(&mut value_next);
        let kind = if value_mode && c != '(' && c != ')' {
            if c == '"' || c == '\'' {
                lexer.quoted()?
            } else {
                lexer.bare(true)?
            }
        } else {
            match c {
                '(' => lexer.single(TokenKind::LParen),
                ')' => lexer.single(TokenKind::RParen),
                '#' => lexer.single(TokenKind::Hash),
                '+' => lexer.single(TokenKind::Plus),
                ':' => lexer.single(TokenKind::Colon),
                '~' => lexer.single(TokenKind::Tilde),
                '<' | '>' => {
                    let eq = lexer.peek(1) == Some('=');
                    lexer.pos += if eq { 2 } else { 1 };
                    match (c, eq) {
                        ('<', true) => TokenKind::Le,
                        ('<', false) => TokenKind::Lt,
                        (_, true) => TokenKind::Ge,
                        (_, false) => TokenKind::Gt,
                    }
                }
                '"' | '\'' => lexer.quoted()?,
                _ => {
                    if let Some(kw) = lexer.keyword() {
                        kw
                    } else if lexer.starts_with("in:") {
                        lexer.pos += 3;
                        TokenKind::In
                    } else {
                        lexer.bare(false)?
                    }
                }
            }
        };
        value_next = matches!(
            kind,
            TokenKind::Colon
                | TokenKind::Tilde
                | TokenKind::Lt
                | TokenKind::Le
                | TokenKind::Gt
                | TokenKind::Ge
                | TokenKind::In
        );
        tokens.push(Token {
            kind,
            column: start + 1,
            len: lexer.pos - start,
        });
    }
    Ok(tokens)
}

struct Lexer<'a> {
    chars: &'a [char],
    pos: usize,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek(0) == Some(' ') {
            self.pos += 1;
        }
    }

    fn single(&mut self, kind: TokenKind) -> TokenKind {
        self.pos += 1;
        kind
    }

    fn starts_with(&self, s: &str) -> bool {
        s.chars().enumerate().all(|(i, c)| self.peek(i) == Some(c))
    }

    /// A keyword here, as a whole word (followed by the end, a space or a
    /// parenthesis)?
    fn keyword(&mut self) -> Option<TokenKind> {
        for (word, kind) in KEYWORDS {
            let n = word.chars().count();
            if self.starts_with(word) && matches!(self.peek(n), None | Some(' ' | '(' | ')')) {
                self.pos += n;
                return Some(kind);
            }
        }
        None
    }

    /// A quoted string; the lexer stands on the opening quote.
    fn quoted(&mut self) -> Result<TokenKind, ParseError> {
        let start = self.pos;
        let quote = self.chars[start];
        self.pos += 1;
        let mut text = String::new();
        let mut pattern = false;
        loop {
            let Some(c) = self.peek(0) else {
                return Err(ParseError {
                    column: self.chars.len() + 1,
                    message: format!(
                        "expected a closing {quote} for the string that starts at column {}",
                        start + 1
                    ),
                });
            };
            self.pos += 1;
            if c == quote {
                break;
            }
            if c == '\\' {
                // `\x` is `x`; a lone `\` at the end leaves the string
                // unterminated, reported on the next round.
                if let Some(e) = self.peek(0) {
                    text.push(e);
                    self.pos += 1;
                }
                continue;
            }
            if c == '*' || c == '?' {
                pattern = true;
            }
            text.push(c);
        }
        Ok(TokenKind::Word {
            kind: if pattern {
                WordKind::Pattern
            } else {
                WordKind::String
            },
            text,
            quoted: true,
        })
    }

    /// A bare word. In value mode only a space and parentheses end it;
    /// otherwise `:` `~` `<` `>` end it too and make it a property name.
    fn bare(&mut self, value_mode: bool) -> Result<TokenKind, ParseError> {
        let start = self.pos;
        let mut text = String::new();
        let (mut digits, mut seq_chars, mut seq_sep, mut pattern) = (true, true, false, false);
        let mut prop = false;
        while let Some(c) = self.peek(0) {
            let escaped = c == '\\';
            let c = if escaped {
                match self.peek(1) {
                    Some(e) => {
                        self.pos += 1;
                        e
                    }
                    None => {
                        return Err(ParseError {
                            column: self.pos + 1,
                            message:
                                "expected a character after '\\' (write '\\\\' for a backslash)"
                                    .into(),
                        })
                    }
                }
            } else {
                if matches!(c, ' ' | '(' | ')') {
                    break;
                }
                if !value_mode && matches!(c, ':' | '~' | '<' | '>') {
                    prop = true;
                    break;
                }
                c
            };
            self.pos += 1;
            // Typing as XMMS2 does it: escaped characters count for
            // INTEGER/SEQUENCE, but only unescaped wildcards make a PATTERN.
            digits &= c.is_ascii_digit();
            seq_chars &= c.is_ascii_digit() || c == ',' || c == '-';
            seq_sep |= c == ',' || c == '-';
            pattern |= !escaped && (c == '*' || c == '?');
            text.push(c);
        }
        if prop {
            // XMMS2 expands a name written as one character (`a:`), so
            // `\a:` (two characters) names the key "a" itself.
            let name = if self.pos - start == 1 {
                expand_prop(&text)
            } else {
                text
            };
            return Ok(TokenKind::Prop(name));
        }
        let kind = if pattern {
            WordKind::Pattern
        } else if digits {
            WordKind::Integer
        } else if seq_chars && seq_sep {
            WordKind::Sequence
        } else {
            WordKind::String
        };
        Ok(TokenKind::Word {
            kind,
            text,
            quoted: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(kind: WordKind, text: &str) -> TokenKind {
        TokenKind::Word {
            kind,
            text: text.into(),
            quoted: false,
        }
    }

    fn quoted(kind: WordKind, text: &str) -> TokenKind {
        TokenKind::Word {
            kind,
            text: text.into(),
            quoted: true,
        }
    }

    fn prop(name: &str) -> TokenKind {
        TokenKind::Prop(name.into())
    }

    fn kinds(p: &str) -> Vec<TokenKind> {
        tokenize(p)
            .unwrap_or_else(|e| panic!("{p:?}: {e}"))
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    #[test]
    fn every_token_kind() {
        use TokenKind::*;
        use WordKind as W;
        let cases: Vec<(&str, Vec<TokenKind>)> = vec![
            ("(", vec![LParen]),
            (")", vec![RParen]),
            ("#12", vec![Hash, word(W::Integer, "12")]),
            ("+comment", vec![Plus, word(W::String, "comment")]),
            (":foo", vec![Colon, word(W::String, "foo")]),
            ("~foo", vec![Tilde, word(W::String, "foo")]),
            ("n<5", vec![prop("tracknr"), Lt, word(W::Integer, "5")]),
            ("n<=5", vec![prop("tracknr"), Le, word(W::Integer, "5")]),
            ("n>5", vec![prop("tracknr"), Gt, word(W::Integer, "5")]),
            ("n>=5", vec![prop("tracknr"), Ge, word(W::Integer, "5")]),
            (
                "a OR b",
                vec![word(W::String, "a"), Or, word(W::String, "b")],
            ),
            (
                "a AND b",
                vec![word(W::String, "a"), And, word(W::String, "b")],
            ),
            ("NOT a", vec![Not, word(W::String, "a")]),
            ("in:Faves", vec![In, word(W::String, "Faves")]),
            ("\"a b\"", vec![quoted(W::String, "a b")]),
            ("'a b'", vec![quoted(W::String, "a b")]),
            ("\"a*\"", vec![quoted(W::Pattern, "a*")]),
            ("'a?'", vec![quoted(W::Pattern, "a?")]),
            ("\"a\\*\"", vec![quoted(W::String, "a*")]),
            ("'it\\'s'", vec![quoted(W::String, "it's")]),
            ("42", vec![word(W::Integer, "42")]),
            ("3-7,9", vec![word(W::Sequence, "3-7,9")]),
            ("-", vec![word(W::Sequence, "-")]),
            ("foo*", vec![word(W::Pattern, "foo*")]),
            ("f?o", vec![word(W::Pattern, "f?o")]),
            ("12*", vec![word(W::Pattern, "12*")]),
            ("foo", vec![word(W::String, "foo")]),
            ("1a", vec![word(W::String, "1a")]),
            ("foo\\*", vec![word(W::String, "foo*")]),
            ("a\\ b", vec![word(W::String, "a b")]),
            ("\\5", vec![word(W::Integer, "5")]),
            (
                "artist:x",
                vec![prop("artist"), Colon, word(W::String, "x")],
            ),
            ("a:x", vec![prop("artist"), Colon, word(W::String, "x")]),
            ("l~x", vec![prop("album"), Tilde, word(W::String, "x")]),
            ("t:x", vec![prop("title"), Colon, word(W::String, "x")]),
            (
                "y:1999",
                vec![prop("year"), Colon, word(W::Integer, "1999")],
            ),
            ("g:x", vec![prop("genre"), Colon, word(W::String, "x")]),
            ("u:x", vec![prop("url"), Colon, word(W::String, "x")]),
            ("b:x", vec![prop("b"), Colon, word(W::String, "x")]),
            ("\\a:x", vec![prop("a"), Colon, word(W::String, "x")]),
            (
                "my\\ key:x",
                vec![prop("my key"), Colon, word(W::String, "x")],
            ),
            // Keywords are whole words only (quirk fix).
            ("ORANGE", vec![word(W::String, "ORANGE")]),
            ("NOTHING", vec![word(W::String, "NOTHING")]),
            ("ANDROID", vec![word(W::String, "ANDROID")]),
            ("NOT(a)", vec![Not, LParen, word(W::String, "a"), RParen]),
            ("(a OR)", vec![LParen, word(W::String, "a"), Or, RParen]),
            ("OR:x", vec![prop("OR"), Colon, word(W::String, "x")]),
            ("or", vec![word(W::String, "or")]),
            // Value mode: ':' and friends inside a value (quirk fix).
            (
                "url:file://*.flac",
                vec![prop("url"), Colon, word(W::Pattern, "file://*.flac")],
            ),
            (
                "a:b:c~d<e>f",
                vec![prop("artist"), Colon, word(W::String, "b:c~d<e>f")],
            ),
            ("a:OR", vec![prop("artist"), Colon, word(W::String, "OR")]),
            ("a:#1", vec![prop("artist"), Colon, word(W::String, "#1")]),
            ("a: x", vec![prop("artist"), Colon, word(W::String, "x")]),
            (
                "(a:x)",
                vec![LParen, prop("artist"), Colon, word(W::String, "x"), RParen],
            ),
            ("n<-5", vec![prop("tracknr"), Lt, word(W::Sequence, "-5")]),
            ("in:a/b:c", vec![In, word(W::String, "a/b:c")]),
            ("index:x", vec![prop("index"), Colon, word(W::String, "x")]),
            // Only the ASCII space separates.
            ("a\tb", vec![word(W::String, "a\tb")]),
            (
                "  a   b  ",
                vec![word(W::String, "a"), word(W::String, "b")],
            ),
            ("c++", vec![word(W::String, "c++")]),
            ("a#b", vec![word(W::String, "a#b")]),
            ("\"a\"b", vec![quoted(W::String, "a"), word(W::String, "b")]),
            ("", vec![]),
        ];
        for (pattern, want) in cases {
            assert_eq!(kinds(pattern), want, "pattern {pattern:?}");
        }
    }

    #[test]
    fn columns_are_characters_one_based() {
        let toks = tokenize("ä:x  (NOT 'ö ü')").unwrap();
        let cols: Vec<(usize, usize)> = toks.iter().map(|t| (t.column, t.len)).collect();
        assert_eq!(
            cols,
            vec![(1, 1), (2, 1), (3, 1), (6, 1), (7, 3), (11, 5), (16, 1)]
        );
    }

    #[test]
    fn errors_point_at_the_column() {
        let cases = [
            ("abc\\", 4, "expected a character after '\\'"),
            (
                "a:\"foo",
                7,
                "expected a closing \" for the string that starts at column 3",
            ),
            (
                "'x\\'",
                5,
                "expected a closing ' for the string that starts at column 1",
            ),
        ];
        for (pattern, column, msg) in cases {
            let err = tokenize(pattern).unwrap_err();
            assert_eq!(err.column, column, "{pattern:?}: {err}");
            assert!(err.message.contains(msg), "{pattern:?}: {err}");
        }
    }

    #[test]
    fn expansion() {
        assert_eq!(expand_prop("a"), "artist");
        assert_eq!(expand_prop("z"), "z");
        assert_eq!(expand_prop("ab"), "ab");
        assert_eq!(expand_prop(""), "");
    }
}
