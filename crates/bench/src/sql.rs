//! The seven queries as SQL, for both SQLite layouts, with Spindle's
//! semantics (docs/library.md, "Queries"):
//!
//! * **Source preference**: a filter looks only at the values whose
//!   source has the best rank present for that key on that entry. Ranks
//!   live in a temporary table `rank(src, r)` filled from the preference;
//!   an ignored source has no row, so joining `rank` drops it. The
//!   best-rank test is a correlated `min()` over the entry's values of
//!   the key, answered from the primary key (tuned) or `key_idx` (XMMS2).
//! * **Caseless equality** uses the folded copy (tuned: Unicode case
//!   folding done at load time by the same function as Spindle's) or
//!   `COLLATE NOCASE` (XMMS2's index; ASCII only — the queried values are
//!   ASCII). An integer never equals a string.
//! * **TOKEN** (`one`): one space-separated word of the folded value is the
//!   token (`GLOB` on the folded copy; `LIKE` on XMMS2's value).
//! * **MATCH** (`artist~foo`): a whole-value glob on the folded value.
//! * **`>` in natural order** against an integer `n`: integers compare as
//!   numbers; a string that starts with digits compares by that number
//!   and, on a tie, is greater when more text follows (`"20/24" > 20`);
//!   other non-empty strings are greater than every number.
//!
//! Each query returns the best-source artist, album, title, tracknr and
//! duration of every matching entry; the caller picks the best-ranked
//! value per field.

use spindle_query::{CmpOp, Coll, Field, Filter, FilterOp, Value};

use crate::error::BenchError;

/// Which SQLite layout a statement is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Layout {
    Tuned,
    Xmms2,
}

/// The fields every query fetches, in output order.
pub const FIELDS: [&str; 5] = ["artist", "album", "title", "tracknr", "duration"];

/// An SQL string literal.
fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A Spindle glob (`*`, `?`) as an SQLite GLOB pattern (which also knows
/// `[…]`: brackets are escaped as one-character classes).
fn glob_pattern(g: &str) -> String {
    let mut out = String::with_capacity(g.len());
    for c in g.chars() {
        match c {
            '[' => out.push_str("[[]"),
            ']' => out.push_str("[]]"),
            c => out.push(c),
        }
    }
    out
}

/// A text with LIKE's `%`, `_` and the escape character escaped.
fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A Spindle glob as a LIKE pattern (ASCII-caseless in SQLite).
fn like_pattern(g: &str) -> String {
    let mut out = String::with_capacity(g.len());
    for c in g.chars() {
        match c {
            '*' => out.push('%'),
            '?' => out.push('_'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Natural-order comparison of a TEXT expression `v` with integer `n`.
fn natural_text_cmp(v: &str, op: CmpOp, n: i64) -> String {
    let num = format!("CAST({v} AS INTEGER)");
    let suffix = format!("{v} GLOB '*[^0-9]*'");
    let digits = format!("{v} GLOB '[0-9]*'");
    let (with_digits, without) = match op {
        CmpOp::Gt => (
            format!("{num} > {n} OR ({num} = {n} AND {suffix})"),
            format!("{v} <> ''"),
        ),
        CmpOp::Ge => (format!("{num} >= {n}"), format!("{v} <> ''")),
        CmpOp::Lt => (format!("{num} < {n}"), format!("{v} = ''")),
        CmpOp::Le => (
            format!("{num} < {n} OR ({num} = {n} AND NOT {suffix})"),
            format!("{v} = ''"),
        ),
    };
    format!("(CASE WHEN {digits} THEN ({with_digits}) ELSE ({without}) END)")
}

fn sql_op(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}

/// Translates a collection into SQL for one layout. `key_id` resolves a
/// key name to the tuned layout's key id (`None`: no entry has the key).
pub struct Translator<'k> {
    pub layout: Layout,
    pub key_id: &'k dyn Fn(&str) -> Option<i64>,
}

impl Translator<'_> {
    /// The whole statement: matching entries joined with their fields,
    /// in no particular order (the caller groups rows by entry).
    /// Columns: entry, key (id or name), rank, value [, intval].
    ///
    /// `*` skips the set and reads the five keys straight from the index;
    /// an entry without any of them would be missing (none is, in the
    /// generated library: every track has an artist and a title).
    pub fn query(&self, coll: &Coll) -> Result<String, BenchError> {
        let set = self.set(coll)?;
        Ok(match self.layout {
            Layout::Tuned => {
                let keys: Vec<String> = FIELDS
                    .iter()
                    .filter_map(|f| (self.key_id)(f))
                    .map(|k| k.to_string())
                    .collect();
                let keys = keys.join(", ");
                if matches!(coll, Coll::Universe) {
                    // Everything: five covering index ranges, no join.
                    format!(
                        "SELECT p.entry, p.key, r.r, p.value FROM prop p \
                         JOIN rank r ON r.src = p.src WHERE p.key IN ({keys})"
                    )
                } else {
                    format!(
                        "WITH m(e) AS ({set}) \
                         SELECT p.entry, p.key, r.r, p.value FROM m \
                         JOIN prop p ON p.entry = m.e \
                         JOIN rank r ON r.src = p.src \
                         WHERE p.key IN ({keys})"
                    )
                }
            }
            Layout::Xmms2 => {
                let keys: Vec<String> = FIELDS.iter().map(|f| lit(f)).collect();
                let keys = keys.join(", ");
                if matches!(coll, Coll::Universe) {
                    format!(
                        "SELECT p.id, p.key, r.r, p.value, p.intval FROM Media p \
                         JOIN rank r ON r.src = p.source WHERE p.key IN ({keys})"
                    )
                } else {
                    format!(
                        "WITH m(e) AS ({set}) \
                         SELECT p.id, p.key, r.r, p.value, p.intval FROM m \
                         JOIN Media p ON p.id = m.e \
                         JOIN rank r ON r.src = p.source \
                         WHERE p.key IN ({keys})"
                    )
                }
            }
        })
    }

    fn universe(&self) -> String {
        match self.layout {
            Layout::Tuned => "SELECT id AS e FROM entry".to_owned(),
            // XMMS2's layout has no table of entries.
            Layout::Xmms2 => "SELECT DISTINCT id AS e FROM Media".to_owned(),
        }
    }

    /// A SELECT of one column `e`: the ids of the entries in `coll`.
    pub fn set(&self, coll: &Coll) -> Result<String, BenchError> {
        Ok(match coll {
            Coll::Universe => self.universe(),
            Coll::Filter { filter, operand } if matches!(**operand, Coll::Universe) => {
                self.filter(filter)?
            }
            Coll::Union(ops) => {
                let parts: Result<Vec<String>, BenchError> = ops
                    .iter()
                    .map(|o| Ok(format!("SELECT e FROM ({})", self.set(o)?)))
                    .collect();
                parts?.join(" UNION ")
            }
            Coll::Intersection(ops) => {
                // Positive operands intersect; complements subtract.
                let mut pos = Vec::new();
                let mut neg = Vec::new();
                for o in ops {
                    match o {
                        Coll::Complement(inner) => neg.push(self.set(inner)?),
                        other => pos.push(self.set(other)?),
                    }
                }
                if pos.is_empty() {
                    pos.push(self.universe());
                }
                let mut sql = pos
                    .iter()
                    .map(|p| format!("SELECT e FROM ({p})"))
                    .collect::<Vec<_>>()
                    .join(" INTERSECT ");
                for n in neg {
                    sql.push_str(&format!(" EXCEPT SELECT e FROM ({n})"));
                }
                sql
            }
            Coll::Complement(inner) => format!(
                "SELECT e FROM ({}) EXCEPT SELECT e FROM ({})",
                self.universe(),
                self.set(inner)?
            ),
            other => return Err(BenchError::Unsupported(format!("{other:?}"))),
        })
    }

    fn filter(&self, f: &Filter) -> Result<String, BenchError> {
        if f.case_sensitive || f.sourcepref.is_some() {
            return Err(BenchError::Unsupported(format!("{f:?}")));
        }
        let Field::Key(key) = &f.field else {
            return Err(BenchError::Unsupported(format!("{f:?}")));
        };
        match self.layout {
            Layout::Tuned => self.tuned_filter(key, &f.op),
            Layout::Xmms2 => self.xmms2_filter(key, &f.op),
        }
    }

    fn tuned_filter(&self, key: &str, op: &FilterOp) -> Result<String, BenchError> {
        let Some(k) = (self.key_id)(key) else {
            return Ok("SELECT NULL AS e WHERE 0".to_owned());
        };
        let fold = |s: &str| spindle_store::fold::fold(s).into_owned();
        let cond = match op {
            FilterOp::Has => "1".to_owned(),
            FilterOp::Equals(Value::Int(i)) => format!("p.value = {i}"),
            FilterOp::Equals(Value::Str(s)) => format!("p.folded = {}", lit(&fold(s))),
            FilterOp::Match(g) => {
                let pat = lit(&glob_pattern(&fold(g)));
                // Integers match digit-wise; only a glob of digits and
                // wildcards can match one. Leaving the clause out keeps
                // the (key, folded) index covering.
                let ints = if g.chars().all(|c| c.is_ascii_digit() || "*?-".contains(c)) {
                    format!(" OR (p.folded IS NULL AND CAST(p.value AS TEXT) GLOB {pat})")
                } else {
                    String::new()
                };
                format!("(p.folded GLOB {pat}{ints})")
            }
            FilterOp::Token(t) if !t.ends_with('*') => {
                let word = fold(t);
                let w = glob_pattern(&word);
                let ints = match word.parse::<i64>() {
                    Ok(i) if i.to_string() == word => {
                        format!(" OR (p.folded IS NULL AND p.value = {i})")
                    }
                    _ => String::new(),
                };
                format!(
                    "(p.folded = {} OR p.folded GLOB {} OR p.folded GLOB {} OR p.folded GLOB {}{ints})",
                    lit(&word),
                    lit(&format!("{w} *")),
                    lit(&format!("* {w}")),
                    lit(&format!("* {w} *")),
                )
            }
            FilterOp::Cmp(cop, Value::Int(n)) if *n >= 0 => {
                let o = sql_op(*cop);
                let text = format!(
                    "(typeof(p.value) = 'text' AND {})",
                    natural_text_cmp("p.value", *cop, *n)
                );
                match cop {
                    // Integers sort before text in SQLite, so `> n` is an
                    // index range holding the larger integers and all text;
                    // the second test sorts the text out.
                    CmpOp::Gt | CmpOp::Ge => {
                        format!("p.value {o} {n} AND (typeof(p.value) = 'integer' OR {text})")
                    }
                    CmpOp::Lt | CmpOp::Le => {
                        format!("((typeof(p.value) = 'integer' AND p.value {o} {n}) OR {text})")
                    }
                }
            }
            other => return Err(BenchError::Unsupported(format!("{other:?}"))),
        };
        let best = if matches!(op, FilterOp::Has) {
            String::new()
        } else {
            format!(
                " AND r.r = (SELECT min(r2.r) FROM prop q JOIN rank r2 ON r2.src = q.src \
                 WHERE q.entry = p.entry AND q.key = {k})"
            )
        };
        Ok(format!(
            "SELECT p.entry AS e FROM prop p JOIN rank r ON r.src = p.src \
             WHERE p.key = {k} AND {cond}{best}"
        ))
    }

    fn xmms2_filter(&self, key: &str, op: &FilterOp) -> Result<String, BenchError> {
        let k = lit(key);
        let cond = match op {
            FilterOp::Has => "1".to_owned(),
            // Integers are also stored as text in `value`: the text index
            // finds them, `intval` confirms the type.
            FilterOp::Equals(Value::Int(i)) => format!("p.value = '{i}' AND p.intval = {i}"),
            FilterOp::Equals(Value::Str(s)) => {
                format!("p.value = {} COLLATE NOCASE AND p.intval IS NULL", lit(s))
            }
            FilterOp::Match(g) => format!("p.value LIKE {} ESCAPE '\\'", lit(&like_pattern(g))),
            FilterOp::Token(t) if !t.ends_with('*') => {
                let w = like_escape(t);
                format!(
                    "(p.value LIKE {} ESCAPE '\\' OR p.value LIKE {} ESCAPE '\\' \
                     OR p.value LIKE {} ESCAPE '\\' OR p.value LIKE {} ESCAPE '\\')",
                    lit(&w),
                    lit(&format!("{w} %")),
                    lit(&format!("% {w}")),
                    lit(&format!("% {w} %")),
                )
            }
            FilterOp::Cmp(cop, Value::Int(n)) if *n >= 0 => format!(
                "(p.intval {} {n} OR (p.intval IS NULL AND {}))",
                sql_op(*cop),
                natural_text_cmp("p.value", *cop, *n)
            ),
            other => return Err(BenchError::Unsupported(format!("{other:?}"))),
        };
        let best = if matches!(op, FilterOp::Has) {
            String::new()
        } else {
            " AND r.r = (SELECT min(r2.r) FROM Media q JOIN rank r2 ON r2.src = q.source \
             WHERE q.id = p.id AND q.key = p.key)"
                .to_owned()
        };
        Ok(format!(
            "SELECT p.id AS e FROM Media p JOIN rank r ON r.src = p.source \
             WHERE p.key = {k} AND {cond}{best}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn eval(conn: &Connection, expr: &str) -> bool {
        conn.query_row(&format!("SELECT {expr}"), [], |r| r.get::<_, bool>(0))
            .unwrap()
    }

    #[test]
    fn natural_comparison_matches_spindle_collation() {
        use spindle_store::fold::collation_key;
        let conn = Connection::open_in_memory().unwrap();
        let texts = [
            "07", "7", "20", "020", "21", "20/24", "4/12", "31", "abc", "", "2x",
        ];
        for t in texts {
            for op in [CmpOp::Gt, CmpOp::Ge, CmpOp::Lt, CmpOp::Le] {
                let n = 20;
                let want = {
                    let a = collation_key(&Value::Str(t.to_owned()));
                    let b = collation_key(&Value::Int(n));
                    match op {
                        CmpOp::Gt => a > b,
                        CmpOp::Ge => a >= b,
                        CmpOp::Lt => a < b,
                        CmpOp::Le => a <= b,
                    }
                };
                let got = eval(&conn, &natural_text_cmp(&lit(t), op, n));
                assert_eq!(got, want, "{t:?} {op:?} {n}");
            }
        }
    }

    #[test]
    fn patterns_escape() {
        assert_eq!(like_pattern("*fo_o%*"), "%fo\\_o\\%%");
        assert_eq!(glob_pattern("a[b]*"), "a[[]b[]]*");
        assert_eq!(lit("it's"), "'it''s'");
    }
}
