//! The pattern parser: tokens to a [`Coll`] tree, by this grammar.
//!
//! ```text
//! query    = and_expr ;
//! and_expr = or_expr , { [ "AND" ] , or_expr } ;     (* juxtaposition is AND *)
//! or_expr  = unit , { "OR" , unit } ;                (* OR binds tighter *)
//! unit     = INTEGER | SEQUENCE                       (* position filter *)
//!          | "#" , ( INTEGER | SEQUENCE )             (* id filter *)
//!          | "+" , prop                               (* HAS *)
//!          | prop , ":" , value                       (* EQUALS, or MATCH for a PATTERN *)
//!          | prop , "~" , value                       (* MATCH on *value* *)
//!          | prop , ( "<" | ">" | "<=" | ">=" ) , value
//!          | "*"                                      (* everything *)
//!          | [ ":" | "~" ] , value                    (* over artist, album, title *)
//!          | "(" , and_expr , ")"
//!          | "NOT" , unit
//!          | "in:" , value ;
//! ```
//!
//! Decisions beyond XMMS2, all of which only give a meaning to patterns
//! XMMS2 rejects:
//!
//! * The empty (or all-space) pattern is an error; `*` selects everything.
//! * A value after `:` may also be a SEQUENCE (`date:2001-05-03`), and a
//!   comparison takes any non-pattern value (`title<foo` compares strings in
//!   natural order); `-5` is the integer -5 there.
//! * A trailing `AND`/`OR` (before the end or a `)`) is dropped with a
//!   warning in [`Parsed::warnings`]; anywhere else a dangling operator is an
//!   error.
//! * Nesting (parentheses and `NOT`) is limited to [`MAX_DEPTH`] levels;
//!   [`parse_limited`] takes tighter limits on length, filters and nesting
//!   ([`ParseLimits`]) for patterns from the network.
//! * `in:NAME` keeps the whole name (`in:Playlists/x` is the reference
//!   `"Playlists/x"`); any value kind is accepted as a name.
//!
//! Kept from XMMS2: a bare INTEGER or SEQUENCE is a filter on the property
//! key `position` (`3` is `position:3`, `2-4` is `position>1 AND
//! position<5`); ranges are nested filters, `Lt(b+1)` over `Gt(a-1)` over
//! the universe, exactly as `collparser.c` builds them; `y:` means the key
//! `year`, which XMMS2's scanner never stores (it uses `date`).
//!
//! Value typing, as XMMS2's medialib converts filter values: the value of
//! an EQUALS or a comparison is [`Value::Int`] if it is entirely a decimal
//! integer with an optional leading `-` that fits an `i64`, else
//! [`Value::Str`] (so `artist:"5"` compares with the integer 5). MATCH and
//! TOKEN values stay strings.

use crate::ast::{CmpOp, Coll, Field, Filter, FilterOp, Parsed, Value};
use crate::error::ParseError;
use crate::lexer::{expand_prop, tokenize, Token, TokenKind, WordKind};
use crate::limits::ParseLimits;

/// The properties a bare word is looked up in.
pub const AUTO_FIELDS: [&str; 3] = ["artist", "album", "title"];

/// The property key a bare number filters on.
pub const POSITION_KEY: &str = "position";

/// How deeply parentheses and `NOT` may nest in any pattern: 100 levels
/// ([`ParseLimits::LOCAL`]; the printer prints no deeper tree).
pub const MAX_DEPTH: usize = 100;

/// Parse a pattern into a collection tree, within [`ParseLimits::LOCAL`]
/// (for patterns typed on this machine and saved collections).
pub fn parse(pattern: &str) -> Result<Parsed, ParseError> {
    parse_limited(pattern, &ParseLimits::LOCAL)
}

/// Parse a pattern within `limits`: a pattern longer than
/// `limits.max_bytes` is refused before it is read, and the parser stops
/// at the first filter or level of nesting over the limit, before the
/// tree grows any further.
pub fn parse_limited(pattern: &str, limits: &ParseLimits) -> Result<Parsed, ParseError> {
    if pattern.len() > limits.max_bytes {
        return Err(too_long(pattern, limits));
    }
    let tokens = tokenize(pattern)?;
    let end_column = pattern.chars().count() + 1;
    let mut p = Parser {
        tokens,
        pos: 0,
        end_column,
        depth: 0,
        terms: 0,
        limits: *limits,
        warnings: Vec::new(),
    };
    if p.tokens.is_empty() {
        return Err(ParseError {
            column: 1,
            message: "expected a filter, found an empty pattern (use '*' for everything)".into(),
        });
    }
    let coll = p.and_expr()?;
    if let Some(tok) = p.peek() {
        // and_expr stops only at the end or at a ')'.
        return Err(p.error_at(tok, "unexpected ')' without a matching '('".into()));
    }
    Ok(Parsed {
        coll,
        warnings: p.warnings,
    })
}

/// The error for a pattern over `limits.max_bytes`, at the column of the
/// first character past the limit.
fn too_long(pattern: &str, limits: &ParseLimits) -> ParseError {
    let column = pattern
        .char_indices()
        .take_while(|(i, c)| i + c.len_utf8() <= limits.max_bytes)
        .count()
        + 1;
    ParseError {
        column,
        message: format!(
            "the pattern is {} bytes long; at most {} bytes are allowed {}: shorten it",
            pattern.len(),
            limits.max_bytes,
            limits.origin
        ),
    }
}

/// The value of an EQUALS or comparison filter from its text: an integer
/// if the text is one (optional `-`, then only decimal digits, fitting an
/// `i64`), else the string.
pub fn value_from_str(s: &str) -> Value {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = s.parse::<i64>() {
            return Value::Int(n);
        }
    }
    Value::Str(s.to_owned())
}

/// The glob of `key~value`: `*value*`, without doubling a `*` already at
/// either end; `~''` is `*`.
pub fn wrap_match(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    if !s.starts_with('*') {
        out.push('*');
    }
    out.push_str(s);
    if !s.is_empty() && !s.ends_with('*') {
        out.push('*');
    }
    out
}

/// A union over [`AUTO_FIELDS`] of one test.
pub fn auto_filter(op: FilterOp) -> Coll {
    Coll::Union(
        AUTO_FIELDS
            .iter()
            .map(|f| Coll::filter(Filter::key(f, op.clone())))
            .collect(),
    )
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    end_column: usize,
    depth: usize,
    /// Filters read so far (each item of a sequence counts).
    terms: usize,
    limits: ParseLimits,
    warnings: Vec<String>,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn peek_kind(&self) -> Option<&TokenKind> {
        self.peek().map(|t| &t.kind)
    }

    fn next(&mut self) -> Option<Token> {
        let tok = self.tokens.get(self.pos).cloned();
        if tok.is_some() {
            self.pos += 1;
        }
        tok
    }

    fn error_at(&self, tok: &Token, message: String) -> ParseError {
        ParseError {
            column: tok.column,
            message,
        }
    }

    /// An error at the next token, or at the end of the pattern.
    fn error_here(&self, expected: &str) -> ParseError {
        match self.peek() {
            Some(tok) => ParseError {
                column: tok.column,
                message: format!("{expected}, found {}", tok.kind.describe()),
            },
            None => ParseError {
                column: self.end_column,
                message: format!("{expected}, found the end of the pattern"),
            },
        }
    }

    fn enter(&mut self, tok: &Token) -> Result<(), ParseError> {
        self.depth += 1;
        let max = self.limits.max_depth;
        if self.depth > max {
            return Err(self.error_at(
                tok,
                format!(
                    "nested too deeply: more than {max} levels of '(' and NOT; at most {max} are allowed {}",
                    self.limits.origin
                ),
            ));
        }
        Ok(())
    }

    /// Count `n` more filters, starting at `tok`; an error past the limit.
    fn count_terms(&mut self, tok: &Token, n: usize) -> Result<(), ParseError> {
        self.terms = self.terms.saturating_add(n);
        let max = self.limits.max_terms;
        if self.terms > max {
            return Err(self.error_at(
                tok,
                format!(
                    "the pattern has more than {max} terms (filters like artist:x, tracknr>3 or a word); at most {max} are allowed {}: use fewer filters",
                    self.limits.origin
                ),
            ));
        }
        Ok(())
    }

    /// Can the next token start a unit? (`None` at the end.)
    fn unit_follows(&self) -> bool {
        !matches!(
            self.peek_kind(),
            None | Some(TokenKind::RParen | TokenKind::Or | TokenKind::And)
        )
    }

    fn and_expr(&mut self) -> Result<Coll, ParseError> {
        let mut operands = vec![self.or_expr()?];
        loop {
            match self.peek_kind() {
                None | Some(TokenKind::RParen) => break,
                Some(TokenKind::And) => {
                    let Some(and) = self.next() else { break };
                    match self.peek_kind() {
                        None | Some(TokenKind::RParen) => {
                            self.warnings.push(format!(
                                "column {}: nothing follows 'AND'; it was ignored",
                                and.column
                            ));
                            break;
                        }
                        Some(TokenKind::Or | TokenKind::And) => {
                            return Err(self.error_here("expected a filter after 'AND'"));
                        }
                        Some(_) => operands.push(self.or_expr()?),
                    }
                }
                Some(_) => operands.push(self.or_expr()?),
            }
        }
        Ok(if operands.len() == 1 {
            operands.remove(0)
        } else {
            Coll::Intersection(operands)
        })
    }

    fn or_expr(&mut self) -> Result<Coll, ParseError> {
        let mut operands = vec![self.unit()?];
        while self.peek_kind() == Some(&TokenKind::Or) {
            let Some(or) = self.next() else { break };
            match self.peek_kind() {
                None | Some(TokenKind::RParen) => {
                    self.warnings.push(format!(
                        "column {}: nothing follows 'OR'; it was ignored",
                        or.column
                    ));
                    break;
                }
                Some(TokenKind::Or | TokenKind::And) => {
                    return Err(self.error_here("expected a filter after 'OR'"));
                }
                Some(_) => operands.push(self.unit()?),
            }
        }
        Ok(if operands.len() == 1 {
            operands.remove(0)
        } else {
            Coll::Union(operands)
        })
    }

    fn unit(&mut self) -> Result<Coll, ParseError> {
        let Some(tok) = self.next() else {
            return Err(self.error_here("expected a filter"));
        };
        match &tok.kind {
            // Each starts one filter; a sequence one per item.
            TokenKind::Word {
                kind: WordKind::Integer | WordKind::Sequence,
                text,
                ..
            } => self.count_terms(&tok, text.split(',').count())?,
            TokenKind::Word { .. }
            | TokenKind::Prop(_)
            | TokenKind::Plus
            | TokenKind::Colon
            | TokenKind::Tilde
            | TokenKind::In => self.count_terms(&tok, 1)?,
            _ => {}
        }
        match &tok.kind {
            TokenKind::Word { kind, text, .. } => match kind {
                WordKind::Integer | WordKind::Sequence => {
                    sequence(&tok, text, Field::Key(POSITION_KEY.into()))
                }
                WordKind::String if self.cmp_follows() => {
                    // A spaced `tracknr <5`: the word is the property.
                    let key = expand_prop(text);
                    self.binary(key)
                }
                WordKind::Pattern if text == "*" => Ok(Coll::Universe),
                WordKind::Pattern => Ok(auto_filter(FilterOp::Match(text.clone()))),
                WordKind::String => Ok(auto_filter(FilterOp::Token(text.clone()))),
            },
            TokenKind::Prop(key) => {
                let key = key.clone();
                self.binary(key)
            }
            TokenKind::Hash => {
                match self.peek_kind() {
                    Some(TokenKind::Word {
                        kind: WordKind::Integer | WordKind::Sequence,
                        text,
                        ..
                    }) => {
                        let text = text.clone();
                        let Some(word) = self.next() else {
                            return Err(self.error_here("expected an id after '#'"));
                        };
                        self.count_terms(&tok, text.split(',').count())?;
                        sequence(&word, &text, Field::Id)
                    }
                    _ => Err(self
                        .error_here("expected an id or an id range after '#' (like #12 or #3-7)")),
                }
            }
            TokenKind::Plus => {
                let key = match self.peek_kind() {
                    Some(TokenKind::Word {
                        kind: WordKind::String | WordKind::Integer | WordKind::Sequence,
                        text,
                        ..
                    }) => expand_prop(text),
                    // `+a:x` is HAS artist followed by `:x`, as in XMMS2.
                    Some(TokenKind::Prop(key)) => key.clone(),
                    _ => return Err(self.error_here("expected a property name after '+'")),
                };
                self.pos += 1;
                Ok(Coll::filter(Filter::key(&key, FilterOp::Has)))
            }
            TokenKind::Colon => {
                let (kind, text, _) = self.value_after(&tok)?;
                Ok(auto_filter(match kind {
                    WordKind::Pattern => FilterOp::Match(text),
                    _ => FilterOp::Equals(value_from_str(&text)),
                }))
            }
            TokenKind::Tilde => {
                let (_, text, _) = self.value_after(&tok)?;
                Ok(auto_filter(FilterOp::Match(wrap_match(&text))))
            }
            TokenKind::Lt | TokenKind::Le | TokenKind::Gt | TokenKind::Ge => Err(self.error_at(
                &tok,
                format!(
                    "expected a property name before '{}' (like tracknr{}5)",
                    tok.kind.symbol(),
                    tok.kind.symbol()
                ),
            )),
            TokenKind::LParen => {
                self.enter(&tok)?;
                if !self.unit_follows() {
                    return Err(self.error_here("expected a filter after '('"));
                }
                let inner = self.and_expr()?;
                match self.peek_kind() {
                    Some(TokenKind::RParen) => {
                        self.pos += 1;
                        self.depth -= 1;
                        Ok(inner)
                    }
                    _ => Err(self.error_here(&format!(
                        "expected ')' to close the '(' at column {}",
                        tok.column
                    ))),
                }
            }
            TokenKind::Not => {
                self.enter(&tok)?;
                if !self.unit_follows() {
                    return Err(self.error_here("expected a filter after 'NOT'"));
                }
                let operand = self.unit()?;
                self.depth -= 1;
                Ok(Coll::Complement(Box::new(operand)))
            }
            TokenKind::In => {
                let (_, name, _) = self.value_after(&tok)?;
                Ok(Coll::Reference(name))
            }
            TokenKind::RParen => {
                Err(self.error_at(&tok, "unexpected ')' without a matching '('".into()))
            }
            TokenKind::Or | TokenKind::And => Err(self.error_at(
                &tok,
                format!("expected a filter before '{}'", tok.kind.symbol()),
            )),
        }
    }

    fn cmp_follows(&self) -> bool {
        matches!(
            self.peek_kind(),
            Some(TokenKind::Lt | TokenKind::Le | TokenKind::Gt | TokenKind::Ge)
        )
    }

    /// The value word after operator `op`: its kind, text and column.
    fn value_after(&mut self, op: &Token) -> Result<(WordKind, String, usize), ParseError> {
        match self.peek() {
            Some(Token {
                kind: TokenKind::Word { kind, text, .. },
                column,
                ..
            }) => {
                let found = (*kind, text.clone(), *column);
                self.pos += 1;
                Ok(found)
            }
            _ => Err(self.error_here(&match op.kind {
                TokenKind::In => "expected a collection name after 'in:'".to_owned(),
                _ => format!("expected a value after '{}'", op.kind.symbol()),
            })),
        }
    }

    /// `key` then an operator and a value.
    fn binary(&mut self, key: String) -> Result<Coll, ParseError> {
        let Some(op) = self.next() else {
            return Err(self.error_here("expected ':', '~', '<' or '>' after a property name"));
        };
        let (kind, text, column) = self.value_after(&op)?;
        let filter_op = match op.kind {
            TokenKind::Colon => match kind {
                WordKind::Pattern => FilterOp::Match(text),
                _ => FilterOp::Equals(value_from_str(&text)),
            },
            TokenKind::Tilde => FilterOp::Match(wrap_match(&text)),
            TokenKind::Lt | TokenKind::Le | TokenKind::Gt | TokenKind::Ge => {
                if kind == WordKind::Pattern {
                    return Err(ParseError {
                        column,
                        message: format!(
                            "expected an integer or a string after '{}', found the pattern {text:?} (escape '*' and '?' as '\\*' and '\\?')",
                            op.kind.symbol()
                        ),
                    });
                }
                let cmp = match op.kind {
                    TokenKind::Lt => CmpOp::Lt,
                    TokenKind::Le => CmpOp::Le,
                    TokenKind::Gt => CmpOp::Gt,
                    _ => CmpOp::Ge,
                };
                FilterOp::Cmp(cmp, value_from_str(&text))
            }
            _ => {
                return Err(self.error_at(
                    &op,
                    format!(
                        "expected ':', '~', '<' or '>' after the property name {key:?}, found {}",
                        op.kind.describe()
                    ),
                ))
            }
        };
        Ok(Coll::filter(Filter::key(&key, filter_op)))
    }
}

/// A position or id sequence: `3`, `2-4`, `3,5`, `7-`, `-2`, `-`.
fn sequence(tok: &Token, text: &str, field: Field) -> Result<Coll, ParseError> {
    // Columns inside the word are exact unless it held escapes.
    let exact = text.chars().count() == tok.len;
    let mut items = Vec::new();
    let mut offset = 0;
    for item in text.split(',') {
        let column = if exact {
            tok.column + offset
        } else {
            tok.column
        };
        items.push(sequence_item(item, column, &field)?);
        offset += item.len() + 1;
    }
    Ok(if items.len() == 1 {
        items.remove(0)
    } else {
        Coll::Union(items)
    })
}

fn sequence_item(item: &str, column: usize, field: &Field) -> Result<Coll, ParseError> {
    let bad = || ParseError {
        column,
        message: format!(
            "expected a number or a range like 3, 3-7, 3- or -7 in the sequence, found {item:?}"
        ),
    };
    let number = |s: &str, delta: i64| -> Result<i64, ParseError> {
        s.parse::<i64>()
            .ok()
            .and_then(|n| n.checked_add(delta))
            .ok_or_else(|| ParseError {
                column,
                message: format!("the number {s} is too large"),
            })
    };
    let filter = |op: FilterOp, operand: Coll| Coll::Filter {
        filter: Filter::new(field.clone(), op),
        operand: Box::new(operand),
    };
    if item.is_empty() || item.matches('-').count() > 1 {
        return Err(bad());
    }
    match item.split_once('-') {
        None => Ok(filter(
            FilterOp::Equals(Value::Int(number(item, 0)?)),
            Coll::Universe,
        )),
        Some((from, to)) => {
            let lower = if from.is_empty() {
                Coll::Universe
            } else {
                filter(
                    FilterOp::Cmp(CmpOp::Gt, Value::Int(number(from, -1)?)),
                    Coll::Universe,
                )
            };
            Ok(if to.is_empty() {
                lower
            } else {
                filter(FilterOp::Cmp(CmpOp::Lt, Value::Int(number(to, 1)?)), lower)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str, op: FilterOp) -> Coll {
        Coll::filter(Filter::key(k, op))
    }
    fn eq(k: &str, v: impl Into<Value>) -> Coll {
        key(k, FilterOp::Equals(v.into()))
    }
    fn matches(k: &str, g: &str) -> Coll {
        key(k, FilterOp::Match(g.into()))
    }
    fn cmp(k: &str, op: CmpOp, v: impl Into<Value>) -> Coll {
        key(k, FilterOp::Cmp(op, v.into()))
    }
    fn has(k: &str) -> Coll {
        key(k, FilterOp::Has)
    }
    fn token(v: &str) -> Coll {
        auto_filter(FilterOp::Token(v.into()))
    }
    fn not(c: Coll) -> Coll {
        Coll::Complement(Box::new(c))
    }
    fn and(v: Vec<Coll>) -> Coll {
        Coll::Intersection(v)
    }
    fn or(v: Vec<Coll>) -> Coll {
        Coll::Union(v)
    }
    fn on(field: &Field, op: FilterOp, operand: Coll) -> Coll {
        Coll::Filter {
            filter: Filter::new(field.clone(), op),
            operand: Box::new(operand),
        }
    }
    fn seq_eq(field: &Field, n: i64) -> Coll {
        on(field, FilterOp::Equals(Value::Int(n)), Coll::Universe)
    }
    fn seq_gt(field: &Field, n: i64) -> Coll {
        on(
            field,
            FilterOp::Cmp(CmpOp::Gt, Value::Int(n)),
            Coll::Universe,
        )
    }
    fn seq_lt(field: &Field, n: i64, operand: Coll) -> Coll {
        on(field, FilterOp::Cmp(CmpOp::Lt, Value::Int(n)), operand)
    }

    fn parsed(p: &str) -> Coll {
        match parse(p) {
            Ok(parsed) => {
                assert!(parsed.warnings.is_empty(), "{p:?}: {:?}", parsed.warnings);
                parsed.coll
            }
            Err(e) => panic!("{p:?}: {e}"),
        }
    }

    #[test]
    fn filters() {
        let cases: Vec<(&str, Coll)> = vec![
            ("artist:metallica", eq("artist", "metallica")),
            ("a:metallica", eq("artist", "metallica")),
            ("artist:\"Red Fang\"", eq("artist", "Red Fang")),
            ("tracknr:4", eq("tracknr", 4)),
            ("tracknr:-4", eq("tracknr", -4)),
            ("tracknr:\"4\"", eq("tracknr", 4)),
            ("tracknr:04", eq("tracknr", 4)),
            ("tracknr:+4", eq("tracknr", "+4")),
            (
                "title:99999999999999999999",
                eq("title", "99999999999999999999"),
            ),
            ("date:2001-05-03", eq("date", "2001-05-03")),
            ("artist:foo\\*", eq("artist", "foo*")),
            ("artist~foo", matches("artist", "*foo*")),
            ("artist~4", matches("artist", "*4*")),
            ("artist~foo*", matches("artist", "*foo*")),
            ("artist~*foo", matches("artist", "*foo*")),
            ("artist~f*o", matches("artist", "*f*o*")),
            ("artist~''", matches("artist", "*")),
            ("artist~*", matches("artist", "*")),
            ("artist:foo*", matches("artist", "foo*")),
            ("artist:\"f?o\"", matches("artist", "f?o")),
            ("url:file://*.flac", matches("url", "file://*.flac")),
            ("tracknr>20", cmp("tracknr", CmpOp::Gt, 20)),
            ("tracknr<20", cmp("tracknr", CmpOp::Lt, 20)),
            ("tracknr>=20", cmp("tracknr", CmpOp::Ge, 20)),
            ("tracknr<=20", cmp("tracknr", CmpOp::Le, 20)),
            ("tracknr<-3", cmp("tracknr", CmpOp::Lt, -3)),
            ("tracknr <20", cmp("tracknr", CmpOp::Lt, 20)),
            ("n < 20", cmp("tracknr", CmpOp::Lt, 20)),
            ("title<foo", cmp("title", CmpOp::Lt, "foo")),
            ("title>=\"a b\"", cmp("title", CmpOp::Ge, "a b")),
            ("+comment", has("comment")),
            ("+a", has("artist")),
            ("+\"my key\"", has("my key")),
            ("+123", has("123")),
            ("\\a:x", eq("a", "x")),
            ("in:Faves", Coll::Reference("Faves".into())),
            ("in:\"My Faves\"", Coll::Reference("My Faves".into())),
            ("in:Playlists/x", Coll::Reference("Playlists/x".into())),
            ("*", Coll::Universe),
            ("\"*\"", Coll::Universe),
            ("one", token("one")),
            ("\"one two\"", token("one two")),
            ("\"5\"", token("5")),
            ("one\\*", token("one*")),
            (":one", auto_filter(FilterOp::Equals("one".into()))),
            (":5", auto_filter(FilterOp::Equals(5.into()))),
            (":one*", auto_filter(FilterOp::Match("one*".into()))),
            ("~one", auto_filter(FilterOp::Match("*one*".into()))),
            ("one*", auto_filter(FilterOp::Match("one*".into()))),
            ("ORANGE", token("ORANGE")),
            ("NOTHING", token("NOTHING")),
            ("artist:OR", eq("artist", "OR")),
        ];
        for (pattern, want) in cases {
            assert_eq!(parsed(pattern), want, "pattern {pattern:?}");
        }
    }

    #[test]
    fn precedence_and_grouping() {
        let cases: Vec<(&str, Coll)> = vec![
            (
                "tracknr:4 OR artist~foo AND NOT artist:weezer",
                and(vec![
                    or(vec![eq("tracknr", 4), matches("artist", "*foo*")]),
                    not(eq("artist", "weezer")),
                ]),
            ),
            (
                "(tracknr:4 OR artist~foo) AND (NOT artist:weezer)",
                and(vec![
                    or(vec![eq("tracknr", 4), matches("artist", "*foo*")]),
                    not(eq("artist", "weezer")),
                ]),
            ),
            ("a:x b:y", and(vec![eq("artist", "x"), eq("b", "y")])),
            ("a:x AND b:y", and(vec![eq("artist", "x"), eq("b", "y")])),
            (
                "a:x b:y c:z",
                and(vec![eq("artist", "x"), eq("b", "y"), eq("c", "z")]),
            ),
            (
                "a:x OR b:y OR c:z",
                or(vec![eq("artist", "x"), eq("b", "y"), eq("c", "z")]),
            ),
            (
                "a:x OR (b:y OR c:z)",
                or(vec![
                    eq("artist", "x"),
                    or(vec![eq("b", "y"), eq("c", "z")]),
                ]),
            ),
            (
                "a:x OR b:y c:z OR d:w",
                and(vec![
                    or(vec![eq("artist", "x"), eq("b", "y")]),
                    or(vec![eq("c", "z"), eq("d", "w")]),
                ]),
            ),
            ("(a:x)", eq("artist", "x")),
            ("((a:x))", eq("artist", "x")),
            (
                "NOT a:x b:y",
                and(vec![not(eq("artist", "x")), eq("b", "y")]),
            ),
            ("NOT NOT a:x", not(not(eq("artist", "x")))),
            (
                "NOT (a:x OR b:y)",
                not(or(vec![eq("artist", "x"), eq("b", "y")])),
            ),
            ("NOT(a:x)", not(eq("artist", "x"))),
            ("(a:x)(b:y)", and(vec![eq("artist", "x"), eq("b", "y")])),
            (
                "+a:x",
                and(vec![
                    has("artist"),
                    auto_filter(FilterOp::Equals("x".into())),
                ]),
            ),
        ];
        for (pattern, want) in cases {
            assert_eq!(parsed(pattern), want, "pattern {pattern:?}");
        }
    }

    #[test]
    fn sequences() {
        let id = Field::Id;
        let pos = Field::Key(POSITION_KEY.into());
        let cases: Vec<(&str, Coll)> = vec![
            ("#12", seq_eq(&id, 12)),
            ("#2-4", seq_lt(&id, 5, seq_gt(&id, 1))),
            ("#3,5", or(vec![seq_eq(&id, 3), seq_eq(&id, 5)])),
            ("#7-", seq_gt(&id, 6)),
            ("#-7", seq_lt(&id, 8, Coll::Universe)),
            ("#-", Coll::Universe),
            ("#0-0", seq_lt(&id, 1, seq_gt(&id, -1))),
            (
                "#1,3-4,9-",
                or(vec![
                    seq_eq(&id, 1),
                    seq_lt(&id, 5, seq_gt(&id, 2)),
                    seq_gt(&id, 8),
                ]),
            ),
            ("3", seq_eq(&pos, 3)),
            ("2-4", seq_lt(&pos, 5, seq_gt(&pos, 1))),
            ("3,5", or(vec![seq_eq(&pos, 3), seq_eq(&pos, 5)])),
            ("-", Coll::Universe),
            ("position:3", seq_eq(&pos, 3)),
            ("#3 OR #5", or(vec![seq_eq(&id, 3), seq_eq(&id, 5)])),
        ];
        for (pattern, want) in cases {
            assert_eq!(parsed(pattern), want, "pattern {pattern:?}");
        }
    }

    #[test]
    fn trailing_operators_warn() {
        let cases = [
            (
                "a:b AND",
                eq("artist", "b"),
                "column 5: nothing follows 'AND'",
            ),
            (
                "a:b OR",
                eq("artist", "b"),
                "column 5: nothing follows 'OR'",
            ),
            (
                "(a:b OR)",
                eq("artist", "b"),
                "column 6: nothing follows 'OR'",
            ),
            (
                "(a:b AND) c",
                and(vec![eq("artist", "b"), token("c")]),
                "column 6",
            ),
        ];
        for (pattern, want, warning) in cases {
            let p = parse(pattern).unwrap_or_else(|e| panic!("{pattern:?}: {e}"));
            assert_eq!(p.coll, want, "{pattern:?}");
            assert_eq!(p.warnings.len(), 1, "{pattern:?}");
            assert!(
                p.warnings[0].contains(warning),
                "{pattern:?}: {:?}",
                p.warnings
            );
        }
    }

    #[test]
    fn errors_point_at_the_column() {
        let cases = [
            ("", 1, "expected a filter, found an empty pattern"),
            ("   ", 1, "expected a filter, found an empty pattern"),
            ("artist:", 8, "expected a value after ':'"),
            ("artist:   ", 11, "expected a value after ':'"),
            ("artist~", 8, "expected a value after '~'"),
            ("tracknr<", 9, "expected a value after '<'"),
            ("tracknr>=)", 10, "expected a value after '>=', found ')'"),
            ("(a:x", 5, "expected ')' to close the '(' at column 1"),
            ("a:x)", 4, "unexpected ')' without a matching '('"),
            ("#", 2, "expected an id or an id range after '#'"),
            ("#foo", 2, "expected an id or an id range after '#' (like #12 or #3-7), found the word \"foo\""),
            ("+", 2, "expected a property name after '+'"),
            ("+foo*", 2, "expected a property name after '+', found the pattern"),
            ("NOT", 4, "expected a filter after 'NOT', found the end"),
            ("NOT )", 5, "expected a filter after 'NOT', found ')'"),
            ("in:", 4, "expected a collection name after 'in:'"),
            ("()", 2, "expected a filter after '(', found ')'"),
            (")", 1, "unexpected ')'"),
            ("<5", 1, "expected a property name before '<'"),
            ("a:x >5", 5, "expected a property name before '>'"),
            ("AND a:x", 1, "expected a filter before 'AND'"),
            ("OR", 1, "expected a filter before 'OR'"),
            ("a:x OR AND b:y", 8, "expected a filter after 'OR', found 'AND'"),
            ("a:x AND OR b:y", 9, "expected a filter after 'AND', found 'OR'"),
            ("title<foo*", 7, "expected an integer or a string after '<', found the pattern"),
            ("#1--3", 2, "expected a number or a range"),
            ("#1,,3", 4, "expected a number or a range"),
            ("1,", 3, "expected a number or a range"),
            ("#99999999999999999999", 2, "the number 99999999999999999999 is too large"),
            ("#-9223372036854775807", 2, "too large"),
            ("a:\"x", 5, "expected a closing \""),
            ("a:x\\", 4, "expected a character after '\\'"),
            ("in:(", 4, "expected a collection name after 'in:', found '('"),
        ];
        for (pattern, column, msg) in cases {
            let err = parse(pattern).unwrap_err();
            assert_eq!(err.column, column, "{pattern:?}: {err}");
            assert!(err.message.contains(msg), "{pattern:?}: {err}");
        }
        let err = parse("artist:").unwrap_err();
        assert_eq!(
            err.to_string(),
            "parse error at column 8: expected a value after ':', found the end of the pattern"
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let ok = format!("{}a:x{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(parsed(&ok), eq("artist", "x"));
        let deep = format!("{}a:x", "(".repeat(MAX_DEPTH + 1));
        let err = parse(&deep).unwrap_err();
        assert_eq!(err.column, MAX_DEPTH + 1);
        assert!(err.message.contains("nested too deeply"));
        let nots = format!("{}a:x", "NOT ".repeat(100_000));
        assert!(parse(&nots).is_err());
    }

    #[test]
    fn quirks_of_section_6() {
        // ORANGE / NOTHING are words.
        assert_eq!(parsed("ORANGE"), token("ORANGE"));
        assert_eq!(parsed("NOTHING"), token("NOTHING"));
        // Trailing operators: accepted with a warning (tested above).
        assert_eq!(parse("a:b AND").map(|p| p.warnings.len()), Ok(1));
        // ':' inside a value after the operator.
        assert_eq!(parsed("url:file://*.flac"), matches("url", "file://*.flac"));
        // String comparisons.
        assert_eq!(parsed("title<foo"), cmp("title", CmpOp::Lt, "foo"));
        // y is year.
        assert_eq!(parsed("y:1999"), eq("year", 1999));
        // Errors with columns.
        for (p, col) in [("artist:", 8), ("(a:x", 5), ("a:x)", 4), ("#", 2), ("+", 2)] {
            assert_eq!(parse(p).map_err(|e| e.column), Err(col), "{p:?}");
        }
    }

    #[test]
    fn value_typing() {
        let cases = [
            ("0", Value::Int(0)),
            ("-0", Value::Int(0)),
            ("42", Value::Int(42)),
            ("-42", Value::Int(-42)),
            ("007", Value::Int(7)),
            ("9223372036854775807", Value::Int(i64::MAX)),
            ("-9223372036854775808", Value::Int(i64::MIN)),
            (
                "9223372036854775808",
                Value::Str("9223372036854775808".into()),
            ),
            ("+5", Value::Str("+5".into())),
            (" 5", Value::Str(" 5".into())),
            ("5a", Value::Str("5a".into())),
            ("-", Value::Str("-".into())),
            ("", Value::Str("".into())),
            ("٣", Value::Str("٣".into())),
        ];
        for (s, want) in cases {
            assert_eq!(value_from_str(s), want, "{s:?}");
        }
    }

    #[test]
    fn match_wrapping() {
        for (s, want) in [
            ("", "*"),
            ("*", "*"),
            ("**", "**"),
            ("a", "*a*"),
            ("a*", "*a*"),
            ("*a", "*a*"),
            ("*a*", "*a*"),
            ("?", "*?*"),
        ] {
            assert_eq!(wrap_match(s), want, "{s:?}");
        }
    }
}
