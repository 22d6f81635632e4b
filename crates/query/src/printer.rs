//! A collection tree back to a pattern.
//!
//! [`to_pattern`] prints a pattern that [`parse`](crate::parse) turns back
//! into an *equal* tree, or `None` when the pattern syntax cannot express
//! the tree: ORDER, LIMIT, MEDIASET, IDLIST, case-sensitive filters or
//! filters with their own source preference, filters over anything but the
//! universe (except the nested ranges that `2-4` and `#2-4` produce), TOKEN
//! filters other than a bare word's union over artist/album/title, MATCH
//! globs without a wildcard, string values that read as integers (the
//! parser would make them integers), one-element or empty unions and
//! intersections, and trees nested deeper than [`MAX_DEPTH`].
//!
//! Output style: `AND` written out, parentheses only where the tree needs
//! them (remember OR binds tighter than AND), values bare when safe and
//! double-quoted otherwise, property names escaped with `\`.

use crate::ast::{CmpOp, Coll, Field, Filter, FilterOp, Value};
use crate::lexer::{is_keyword, short_prop};
use crate::parser::{value_from_str, wrap_match, AUTO_FIELDS, MAX_DEPTH, POSITION_KEY};

/// Print `coll` as a pattern that parses back to an equal tree.
pub fn to_pattern(coll: &Coll) -> Option<String> {
    let mut out = String::new();
    Printer { depth: 0 }.and_expr(coll, &mut out)?;
    Some(out)
}

struct Printer {
    depth: usize,
}

impl Printer {
    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    fn and_expr(&mut self, coll: &Coll, out: &mut String) -> Option<()> {
        match coll {
            Coll::Intersection(ops) => {
                if ops.len() < 2 {
                    return None;
                }
                for (i, op) in ops.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" AND ");
                    }
                    self.or_expr(op, out)?;
                }
                Some(())
            }
            _ => self.or_expr(coll, out),
        }
    }

    fn or_expr(&mut self, coll: &Coll, out: &mut String) -> Option<()> {
        match coll {
            Coll::Union(ops) if !is_auto(coll) => {
                if ops.len() < 2 {
                    return None;
                }
                for (i, op) in ops.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" OR ");
                    }
                    self.unit(op, out)?;
                }
                Some(())
            }
            _ => self.unit(coll, out),
        }
    }

    fn unit(&mut self, coll: &Coll, out: &mut String) -> Option<()> {
        match coll {
            Coll::Universe => out.push('*'),
            Coll::Union(ops) => match auto_op(ops) {
                Some(op) => auto_filter(op, out)?,
                None => self.parens(coll, out)?,
            },
            Coll::Intersection(_) => self.parens(coll, out)?,
            Coll::Complement(operand) => {
                self.enter()?;
                out.push_str("NOT ");
                self.unit(operand, out)?;
                self.depth -= 1;
            }
            Coll::Reference(name) => {
                out.push_str("in:");
                out.push_str(&value_word(name, false));
            }
            Coll::Filter { filter, operand } => filter_unit(filter, operand, out)?,
            Coll::Order { .. } | Coll::Limit { .. } | Coll::Mediaset(_) | Coll::IdList(_) => {
                return None
            }
        }
        Some(())
    }

    fn parens(&mut self, coll: &Coll, out: &mut String) -> Option<()> {
        self.enter()?;
        out.push('(');
        self.and_expr(coll, out)?;
        out.push(')');
        self.depth -= 1;
        Some(())
    }
}

/// Is `coll` the union over artist/album/title that a bare word makes?
fn is_auto(coll: &Coll) -> bool {
    matches!(coll, Coll::Union(ops) if auto_op(ops).is_some())
}

/// The common test of a bare word's union, if `ops` is one.
fn auto_op(ops: &[Coll]) -> Option<&FilterOp> {
    if ops.len() != AUTO_FIELDS.len() {
        return None;
    }
    let mut common: Option<&FilterOp> = None;
    for (op, field) in ops.iter().zip(AUTO_FIELDS) {
        let Coll::Filter { filter, operand } = op else {
            return None;
        };
        if **operand != Coll::Universe
            || !plain(filter)
            || filter.field != Field::Key(field.to_owned())
            || !matches!(
                filter.op,
                FilterOp::Equals(_) | FilterOp::Match(_) | FilterOp::Token(_)
            )
        {
            return None;
        }
        match common {
            None => common = Some(&filter.op),
            Some(c) if *c == filter.op => {}
            Some(_) => return None,
        }
    }
    common
}

/// A filter without the options the syntax cannot express.
fn plain(filter: &Filter) -> bool {
    !filter.case_sensitive && filter.sourcepref.is_none()
}

fn auto_filter(op: &FilterOp, out: &mut String) -> Option<()> {
    match op {
        FilterOp::Token(t) => out.push_str(&token_word(t)),
        FilterOp::Equals(v) => {
            out.push(':');
            out.push_str(&equals_value(v)?);
        }
        FilterOp::Match(g) => out.push_str(&match_suffix(g)?),
        _ => return None,
    }
    Some(())
}

fn filter_unit(filter: &Filter, operand: &Coll, out: &mut String) -> Option<()> {
    if !plain(filter) {
        return None;
    }
    if *operand != Coll::Universe {
        return range(filter, operand, out);
    }
    let key = match &filter.field {
        Field::Id => return id_filter(&filter.op, out),
        Field::Key(key) => key,
    };
    match &filter.op {
        FilterOp::Has => {
            out.push('+');
            out.push_str(&has_key(key)?);
        }
        FilterOp::Equals(v) => {
            out.push_str(&prop_name(key)?);
            out.push(':');
            out.push_str(&equals_value(v)?);
        }
        FilterOp::Match(g) => {
            out.push_str(&prop_name(key)?);
            out.push_str(&match_suffix(g)?);
        }
        FilterOp::Cmp(op, v) => {
            out.push_str(&prop_name(key)?);
            out.push_str(match op {
                CmpOp::Lt => "<",
                CmpOp::Le => "<=",
                CmpOp::Gt => ">",
                CmpOp::Ge => ">=",
            });
            out.push_str(&equals_value(v)?);
        }
        FilterOp::Token(_) => return None,
    }
    Some(())
}

/// `#n`, `#n-`, `#-n`: the id filters a one-sided sequence item makes.
fn id_filter(op: &FilterOp, out: &mut String) -> Option<()> {
    let item = match op {
        FilterOp::Equals(Value::Int(n)) if *n >= 0 => n.to_string(),
        FilterOp::Cmp(CmpOp::Gt, Value::Int(a)) => format!("{}-", lower_bound(*a)?),
        FilterOp::Cmp(CmpOp::Lt, Value::Int(b)) => format!("-{}", upper_bound(*b)?),
        _ => return None,
    };
    out.push('#');
    out.push_str(&item);
    Some(())
}

/// `a-b` / `#a-b`: `Lt(b+1)` over `Gt(a-1)` over the universe, on the id or
/// on `position`.
fn range(outer: &Filter, operand: &Coll, out: &mut String) -> Option<()> {
    let Coll::Filter {
        filter: inner,
        operand: inner_operand,
    } = operand
    else {
        return None;
    };
    if **inner_operand != Coll::Universe || !plain(inner) || inner.field != outer.field {
        return None;
    }
    let (FilterOp::Cmp(CmpOp::Lt, Value::Int(b)), FilterOp::Cmp(CmpOp::Gt, Value::Int(a))) =
        (&outer.op, &inner.op)
    else {
        return None;
    };
    let item = format!("{}-{}", lower_bound(*a)?, upper_bound(*b)?);
    match &outer.field {
        Field::Id => out.push('#'),
        Field::Key(k) if k == POSITION_KEY => {}
        Field::Key(_) => return None,
    }
    out.push_str(&item);
    Some(())
}

/// The `a` of `a-` for a filter `> a-1` (sequence numbers are unsigned).
fn lower_bound(gt: i64) -> Option<i64> {
    gt.checked_add(1).filter(|n| *n >= 0)
}

/// The `b` of `-b` for a filter `< b+1`.
fn upper_bound(lt: i64) -> Option<i64> {
    lt.checked_sub(1).filter(|n| *n >= 0)
}

/// The value of an EQUALS or comparison, as a value word. A string that
/// the parser would read as an integer cannot be written.
fn equals_value(v: &Value) -> Option<String> {
    match v {
        Value::Int(n) => Some(n.to_string()),
        Value::Str(s) => match value_from_str(s) {
            Value::Int(_) => None,
            Value::Str(_) => Some(value_word(s, true)),
        },
    }
}

/// `~inner` when the glob is `inner` wrapped, else `:glob` (a PATTERN
/// after `:` is a MATCH without wrapping). A glob without a wildcard
/// cannot be written.
fn match_suffix(glob: &str) -> Option<String> {
    if let Some(inner) = glob.strip_prefix('*').and_then(|g| g.strip_suffix('*')) {
        if wrap_match(inner) == glob {
            return Some(format!("~{}", value_word(inner, false)));
        }
    }
    if !glob.contains(['*', '?']) {
        return None;
    }
    Some(format!(":{}", value_word(glob, false)))
}

/// A word in value position (after an operator or `in:`): bare when safe,
/// else double-quoted (a leading `=` too: `<=x` would read as `<=`). With
/// `literal`, `*` and `?` are escaped so the word is not a PATTERN.
fn value_word(s: &str, literal: bool) -> String {
    let quote = s.is_empty() || s.contains([' ', '(', ')']) || s.starts_with(['"', '\'', '=']);
    let mut out = String::with_capacity(s.len() + 2);
    if quote {
        out.push('"');
    }
    for c in s.chars() {
        let escape = c == '\\' || (quote && c == '"') || (literal && (c == '*' || c == '?'));
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    if quote {
        out.push('"');
    }
    out
}

/// A bare word's TOKEN value: bare if it lexes as a plain STRING,
/// otherwise quoted (a quoted word is never an INTEGER or a SEQUENCE).
fn token_word(s: &str) -> String {
    let safe = !s.is_empty()
        && !s.contains([
            ' ', ':', '~', '<', '>', '(', ')', '\\', '"', '\'', '#', '+', '*', '?',
        ])
        && !s
            .chars()
            .all(|c| c.is_ascii_digit() || c == ',' || c == '-')
        && !is_keyword(s);
    if safe {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if matches!(c, '\\' | '"' | '*' | '?') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Characters a property name must escape.
fn special_in_name(c: char) -> bool {
    matches!(
        c,
        ' ' | ':' | '~' | '<' | '>' | '(' | ')' | '\\' | '"' | '\'' | '#' | '+'
    )
}

/// A property name before `:` `~` `<` `>`.
fn prop_name(key: &str) -> Option<String> {
    let mut chars = key.chars();
    let first = chars.next()?;
    let mut out = String::with_capacity(key.len() + 2);
    // A name written as one character is expanded, and `in:` is a
    // reference: escape the first character to keep the name as it is.
    let one_char = chars.next().is_none();
    if special_in_name(first) || (one_char && short_prop(first).is_some()) || key == "in" {
        out.push('\\');
    }
    out.push(first);
    for c in key.chars().skip(1) {
        if special_in_name(c) {
            out.push('\\');
        }
        out.push(c);
    }
    Some(out)
}

/// The word after `+`: a STRING, INTEGER or SEQUENCE, never a keyword or
/// a PATTERN. A one-letter key that expands cannot be written.
fn has_key(key: &str) -> Option<String> {
    let mut chars = key.chars();
    let first = chars.next()?;
    if chars.next().is_none() && short_prop(first).is_some() {
        return None;
    }
    let mut out = String::with_capacity(key.len() + 2);
    for (i, c) in key.chars().enumerate() {
        if special_in_name(c) || c == '*' || c == '?' || (i == 0 && is_keyword(key)) {
            out.push('\\');
        }
        out.push(c);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::OrderBy;
    use crate::parser::{auto_filter as auto, parse};
    use crate::sourcepref::SourcePref;

    fn key(k: &str, op: FilterOp) -> Coll {
        Coll::filter(Filter::key(k, op))
    }

    fn round_trip(coll: &Coll) -> String {
        let p = to_pattern(coll).unwrap_or_else(|| panic!("cannot print {coll:?}"));
        match parse(&p) {
            Ok(parsed) => assert_eq!(&parsed.coll, coll, "printed as {p:?}"),
            Err(e) => panic!("{coll:?} printed as {p:?}, which fails: {e}"),
        }
        p
    }

    #[test]
    fn patterns_print_back() {
        // (input, expected printing)
        let cases = [
            ("artist:metallica", "artist:metallica"),
            ("a:metallica", "artist:metallica"),
            ("artist:\"Red Fang\"", "artist:\"Red Fang\""),
            ("tracknr:4", "tracknr:4"),
            ("artist~foo", "artist~foo"),
            ("artist~''", "artist:*"),
            ("artist:foo*", "artist:foo*"),
            ("artist:*foo", "artist:*foo"),
            ("artist:**", "artist:**"),
            ("title<\"=x\"", "title<\"=x\""),
            ("url:file://*.flac", "url:file://*.flac"),
            ("tracknr>=20", "tracknr>=20"),
            ("title<foo", "title<foo"),
            ("title<\"foo\\*\"", "title<foo\\*"),
            ("+comment", "+comment"),
            ("in:\"My Faves\"", "in:\"My Faves\""),
            ("*", "*"),
            ("one", "one"),
            ("\"5\"", "\"5\""),
            ("\"one two\"", "\"one two\""),
            ("one\\*", "\"one\\*\""),
            ("\"OR\"", "\"OR\""),
            (":one", ":one"),
            ("~one", "~one"),
            ("one*", ":one*"),
            ("#12", "#12"),
            ("#2-4", "#2-4"),
            ("#3,5", "#3 OR #5"),
            ("#7-", "#7-"),
            ("#-7", "#-7"),
            ("#0-0", "#0-0"),
            ("3", "position:3"),
            ("2-4", "2-4"),
            ("\\a:x", "\\a:x"),
            ("\"in\\:x\"", "\"in:x\""),
            (
                "tracknr:4 OR artist~foo AND NOT artist:weezer",
                "tracknr:4 OR artist~foo AND NOT artist:weezer",
            ),
            ("a:x OR (b:y OR c:z)", "artist:x OR (b:y OR c:z)"),
            ("(a:x b:y) c:z", "(artist:x AND b:y) AND c:z"),
            ("NOT (a:x OR b:y)", "NOT (artist:x OR b:y)"),
            ("NOT one", "NOT one"),
            ("one OR two", "one OR two"),
        ];
        for (input, want) in cases {
            let coll = parse(input)
                .unwrap_or_else(|e| panic!("{input:?}: {e}"))
                .coll;
            assert_eq!(round_trip(&coll), want, "input {input:?}");
        }
    }

    #[test]
    fn awkward_names_and_values_round_trip() {
        let keys = [
            "a", "in", "OR", "my key", "k:x", "(", "\"q", "#h", "+p", "x\\y", "ä", "u*", "5",
        ];
        let values = [
            "", " ", "a b", "(x)", "\"", "'", "\\", "OR", "in:x", "a:b", "-", "1-2", "*", "?x",
            "ä ö", "#1", "+",
        ];
        for k in keys {
            for v in values {
                for op in [
                    FilterOp::Equals(Value::Str(v.into())),
                    FilterOp::Cmp(CmpOp::Le, Value::Str(v.into())),
                    FilterOp::Match(format!("*{v}*")),
                    FilterOp::Match(format!("{v}?")),
                ] {
                    round_trip(&key(k, op));
                }
                round_trip(&auto(FilterOp::Token(format!("{k}{v}"))));
                let kv = format!("{k}{v}");
                if value_from_str(&kv) != Value::Int(5) {
                    round_trip(&auto(FilterOp::Equals(Value::Str(kv))));
                }
                round_trip(&Coll::Reference(format!("{k}{v}")));
            }
            if k != "a" {
                round_trip(&key(k, FilterOp::Has));
            }
        }
    }

    #[test]
    fn inexpressible_trees_give_none() {
        let cs = {
            let mut f = Filter::key("artist", FilterOp::Equals("x".into()));
            f.case_sensitive = true;
            Coll::filter(f)
        };
        let sp = {
            let mut f = Filter::key("artist", FilterOp::Equals("x".into()));
            f.sourcepref = Some(SourcePref::parse("client/*"));
            Coll::filter(f)
        };
        let cases = vec![
            Coll::Order {
                by: OrderBy::Id,
                descending: false,
                operand: Box::new(Coll::Universe),
            },
            Coll::Limit {
                start: 0,
                length: Some(3),
                operand: Box::new(Coll::Universe),
            },
            Coll::Mediaset(Box::new(Coll::Universe)),
            Coll::IdList(vec![1, 2]),
            cs,
            sp,
            key("artist", FilterOp::Token("x".into())),
            key("artist", FilterOp::Match("x".into())),
            key("artist", FilterOp::Equals("5".into())),
            key("artist", FilterOp::Equals("-07".into())),
            key("", FilterOp::Has),
            key("a", FilterOp::Has),
            Coll::filter(Filter::new(Field::Id, FilterOp::Equals(Value::Int(-1)))),
            Coll::filter(Filter::new(Field::Id, FilterOp::Has)),
            Coll::filter(Filter::new(Field::Id, FilterOp::Cmp(CmpOp::Ge, 3.into()))),
            Coll::Filter {
                filter: Filter::key("artist", FilterOp::Has),
                operand: Box::new(key("album", FilterOp::Has)),
            },
            Coll::Union(vec![]),
            Coll::Union(vec![Coll::Universe]),
            Coll::Intersection(vec![Coll::Universe]),
            Coll::Complement(Box::new(Coll::IdList(vec![]))),
        ];
        for c in cases {
            assert_eq!(to_pattern(&c), None, "{c:?}");
        }
        let mut deep = Coll::Universe;
        for _ in 0..=MAX_DEPTH {
            deep = Coll::Complement(Box::new(deep));
        }
        assert_eq!(to_pattern(&deep), None);
    }

    /// xorshift64*: tiny, seeded, good enough to generate trees.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
            &items[self.below(items.len())]
        }
    }

    const PIECES: &[&str] = &[
        "a", "b", "Red", "Fang", " ", "OR", "AND", "NOT", "in", ":", "~", "<", ">", "=", "(", ")",
        "\"", "'", "\\", "*", "?", "#", "+", "-", ",", "0", "7", "42", "ä", "\t", "é",
    ];

    fn text(rng: &mut Rng) -> String {
        (0..rng.below(4)).map(|_| *rng.pick(PIECES)).collect()
    }

    fn value(rng: &mut Rng) -> Value {
        match rng.below(3) {
            0 => Value::Int(rng.next() as i64 >> rng.below(64)),
            _ => Value::Str(text(rng)),
        }
    }

    fn field(rng: &mut Rng) -> String {
        match rng.below(4) {
            0 => rng
                .pick(&["artist", "album", "title", "tracknr", "position"])
                .to_string(),
            _ => text(rng),
        }
    }

    fn filter_op(rng: &mut Rng) -> FilterOp {
        match rng.below(6) {
            0 => FilterOp::Equals(value(rng)),
            1 => FilterOp::Match(format!("*{}*", text(rng))),
            2 => FilterOp::Match(text(rng)),
            3 => FilterOp::Token(text(rng)),
            4 => FilterOp::Has,
            _ => FilterOp::Cmp(
                *rng.pick(&[CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge]),
                value(rng),
            ),
        }
    }

    fn tree(rng: &mut Rng, depth: usize) -> Coll {
        let leaf = depth == 0 || rng.below(3) == 0;
        if leaf {
            return match rng.below(8) {
                0 => Coll::Universe,
                1 => Coll::Reference(text(rng)),
                2 => auto(filter_op(rng)),
                3 => {
                    let n = rng.below(20) as i64;
                    let f = if rng.below(2) == 0 {
                        Field::Id
                    } else {
                        Field::Key(POSITION_KEY.into())
                    };
                    let gt = Coll::Filter {
                        filter: Filter::new(f.clone(), FilterOp::Cmp(CmpOp::Gt, Value::Int(n - 1))),
                        operand: Box::new(Coll::Universe),
                    };
                    Coll::Filter {
                        filter: Filter::new(f, FilterOp::Cmp(CmpOp::Lt, Value::Int(n + 3))),
                        operand: Box::new(gt),
                    }
                }
                4 => Coll::filter(Filter::new(Field::Id, filter_op(rng))),
                _ => Coll::filter(Filter::key(&field(rng), filter_op(rng))),
            };
        }
        let kind = rng.below(3);
        if kind == 2 {
            return Coll::Complement(Box::new(tree(rng, depth - 1)));
        }
        let n = 2 + rng.below(3);
        let ops = (0..n).map(|_| tree(rng, depth - 1)).collect();
        if kind == 0 {
            Coll::Union(ops)
        } else {
            Coll::Intersection(ops)
        }
    }

    #[test]
    fn random_trees_round_trip() {
        let base = std::env::var("SPINDLE_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5eed_1234_u64);
        let (mut printed, total) = (0, 3000);
        for i in 0..total {
            let seed = base.wrapping_add(i).max(1);
            let mut rng = Rng(seed);
            let coll = tree(&mut rng, 4);
            let Some(p) = to_pattern(&coll) else { continue };
            printed += 1;
            match parse(&p) {
                Ok(parsed) => assert_eq!(
                    parsed.coll, coll,
                    "seed {seed}: printed as {p:?} (rerun with SPINDLE_SEED={seed})"
                ),
                Err(e) => panic!("seed {seed}: printed as {p:?}, which fails: {e}"),
            }
        }
        // The generator must mostly make printable trees, or this test
        // checks nothing.
        assert!(
            printed > total / 4,
            "only {printed} of {total} trees printable"
        );
    }
}
