//! Case folding and natural collation, the two ways values compare.
//!
//! * Caseless comparison (EQUALS, MATCH, TOKEN) uses Unicode default case
//!   folding, with an ASCII fast path.
//! * Comparisons (`<`, `>`, …) use natural collation: digit runs compare
//!   as numbers, other text caselessly; an integer sorts like the string
//!   of its digits, so `"31" > 20`, `"20abc" > 20` and `"abc" > 20`;
//!   negative integers sort before everything else.
//!
//! [`collation_key`] turns a value into bytes whose plain byte order *is*
//! the natural order, so an ordered index is a `BTreeMap` of those bytes.

use std::borrow::Cow;

use spindle_query::Value;

/// Unicode default case folding of `s`, borrowing when nothing changes.
pub fn fold(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(s.to_ascii_lowercase())
        } else {
            Cow::Borrowed(s)
        }
    } else {
        let folded = caseless::default_case_fold_str(s);
        if folded == s {
            Cow::Borrowed(s)
        } else {
            Cow::Owned(folded)
        }
    }
}

/// First byte of a negative integer's key.
const NEG_INT: u8 = 0x00;
/// First byte of every other key (so even "" sorts after negatives).
const NATURAL: u8 = 0x01;
/// Marks a digit run inside a natural key.
const DIGITS: u8 = 0x01;

/// The natural-collation key of a value. Byte order of keys is the
/// collation order of values.
pub fn collation_key(v: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    match v {
        Value::Int(i) if *i < 0 => {
            out.push(NEG_INT);
            // Larger magnitude sorts first: store the i64 biased, big-endian.
            out.extend_from_slice(&((*i as u64) ^ (1 << 63)).to_be_bytes());
        }
        Value::Int(i) => {
            out.push(NATURAL);
            push_digits(&mut out, i.to_string().as_bytes());
        }
        Value::Str(s) => {
            out.push(NATURAL);
            push_text(&mut out, s);
        }
    }
    out
}

/// The collation key of a string (see [`collation_key`]).
pub fn collation_key_str(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 4);
    out.push(NATURAL);
    push_text(&mut out, s);
    out
}

fn push_digits(out: &mut Vec<u8>, digits: &[u8]) {
    let start = digits
        .iter()
        .position(|&d| d != b'0')
        .unwrap_or(digits.len());
    let sig = &digits[start..];
    out.push(DIGITS);
    // Digit runs longer than 255 significant digits are clamped; they
    // still sort after every shorter run.
    out.push(sig.len().min(255) as u8);
    out.extend_from_slice(sig);
}

fn push_text(out: &mut Vec<u8>, s: &str) {
    let folded = fold(s);
    let bytes = folded.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let j = bytes[i..]
                .iter()
                .position(|b| !b.is_ascii_digit())
                .map_or(bytes.len(), |p| i + p);
            push_digits(out, &bytes[i..j]);
            i = j;
        } else {
            // Text bytes are kept above the digit marker so that digits
            // sort before text; control bytes 0x00-0x01 are lifted to 0x02.
            out.push(bytes[i].max(0x02));
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(v: impl Into<Value>) -> Vec<u8> {
        collation_key(&v.into())
    }

    #[test]
    fn natural_order_table() {
        // Each pair: left < right.
        let less: &[(Value, Value)] = &[
            (Value::Int(2), Value::Int(10)),
            (Value::Int(-5), Value::Int(-1)),
            (Value::Int(-1), Value::Int(0)),
            (Value::Int(-1), "a".into()),
            (Value::Int(-1), "".into()),
            ("".into(), Value::Int(0)),
            (Value::Int(20), "31".into()),
            (Value::Int(20), "20abc".into()),
            (Value::Int(20), "abc".into()),
            ("track 2".into(), "track 10".into()),
            ("Abc".into(), "abd".into()),
            ("9".into(), Value::Int(10)),
        ];
        for (a, b) in less {
            assert!(k(a.clone()) < k(b.clone()), "{a:?} < {b:?}");
        }
        assert_eq!(k(Value::Int(20)), k("20"));
        assert_eq!(k("007"), k(Value::Int(7)));
        assert_eq!(k("ABC"), k("abc"));
    }

    #[test]
    fn folding() {
        assert_eq!(fold("MetallicA"), "metallica");
        assert_eq!(fold("STRASSE"), "strasse");
        assert_eq!(fold("Straße"), "strasse");
        assert_eq!(fold("ÆON"), "æon");
        assert!(matches!(fold("plain"), Cow::Borrowed(_)));
    }
}
