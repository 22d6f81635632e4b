//! One filter, two ways: tested against a single entry, or answered from
//! an index as a set of candidate ids (then verified per entry).

use spindle_query::glob::glob_match_chars;
use spindle_query::{CmpOp, Field, Filter, FilterOp, Value};

use crate::fold::{collation_key, collation_key_str, fold};
use crate::index::{KeyIndex, Posting};
use std::cell::RefCell;
use std::sync::Arc;

use super::budget::Meter;
use crate::column::{Cell, Column};
use crate::model::{Library, Prop, Ranks, Val};

/// A filter compiled against a library: key resolved, strings folded,
/// glob split into chars, comparison key precomputed.
pub(crate) struct Compiled {
    pub field: CField,
    pub op: COp,
    pub ranks: Ranks,
    pub case_sensitive: bool,
    /// The key's best-value column under `ranks`, when there is one:
    /// then most entries are tested without reading them.
    pub col: Option<Arc<Column>>,
    /// String value id → does it match? For the operations whose test
    /// builds a string (globs, words, comparisons of strings): a query
    /// meets the same artist or album many times.
    memo: RefCell<hashbrown::HashMap<u32, bool>>,
    /// Budget steps one test of a value costs: 1, and more for a long
    /// glob, word or bound (a glob's test grows with its length).
    pub cost: u64,
}

pub(crate) enum CField {
    Id,
    Key(u32),
    /// A key the library has never seen: no entry has it.
    Unknown,
}

pub(crate) enum COp {
    /// Int equality.
    EqInt(i64),
    /// Caseless string equality: the folded string id, or `None` if no
    /// stored string folds to it (then nothing matches).
    EqStr(Option<u32>),
    Match(Vec<char>),
    Token {
        word: String,
        prefix: bool,
    },
    Has,
    /// A comparison with a collation key, and the bound as an integer
    /// when it is one (integers then compare without building keys).
    Cmp(CmpOp, Vec<u8>, Option<i64>),
}

impl Compiled {
    pub fn new(lib: &Library, f: &Filter, ranks: Ranks) -> Compiled {
        let field = match &f.field {
            Field::Id => CField::Id,
            Field::Key(k) if k == crate::model::PARENT_KEY => CField::Id,
            Field::Key(k) => lib.keys.get(k).map_or(CField::Unknown, CField::Key),
        };
        let cs = f.case_sensitive;
        let op = match &f.op {
            FilterOp::Equals(Value::Int(i)) => COp::EqInt(*i),
            FilterOp::Equals(Value::Str(s)) => {
                let id = if cs {
                    lib.strings.get(s)
                } else {
                    lib.strings.get_folded(s)
                };
                COp::EqStr(id)
            }
            FilterOp::Match(g) => {
                let g = if cs { g.clone() } else { fold(g).into_owned() };
                COp::Match(g.chars().collect())
            }
            FilterOp::Token(t) => {
                let t = if cs { t.clone() } else { fold(t).into_owned() };
                match t.strip_suffix('*') {
                    Some(p) => COp::Token {
                        word: p.to_owned(),
                        prefix: true,
                    },
                    None => COp::Token {
                        word: t,
                        prefix: false,
                    },
                }
            }
            FilterOp::Has => COp::Has,
            FilterOp::Cmp(op, v) => {
                let key = collation_key(v);
                let int = match v {
                    Value::Int(i) => Some(*i),
                    Value::Str(_) => int_of_key(&key),
                };
                COp::Cmp(*op, key, int)
            }
        };
        let col = match field {
            CField::Key(k) => lib.column(k, &ranks, false),
            _ => None,
        };
        let len = match &op {
            COp::Match(g) => g.len(),
            COp::Token { word, .. } => word.len(),
            COp::Cmp(_, key, _) => key.len(),
            _ => 0,
        };
        Compiled {
            field,
            op,
            ranks,
            case_sensitive: cs,
            col,
            memo: RefCell::default(),
            cost: 1 + len as u64 / 16,
        }
    }

    pub fn value_matches(&self, lib: &Library, v: Val) -> bool {
        match (&self.op, v) {
            (COp::Match(_) | COp::Token { .. } | COp::Cmp(..), Val::Str(s)) => {
                if let Some(&hit) = self.memo.borrow().get(&s) {
                    return hit;
                }
                let hit = self.value_matches_uncached(lib, v);
                self.memo.borrow_mut().insert(s, hit);
                hit
            }
            _ => self.value_matches_uncached(lib, v),
        }
    }

    fn value_matches_uncached(&self, lib: &Library, v: Val) -> bool {
        match (&self.op, v) {
            (COp::Has, _) => true,
            (COp::EqInt(i), Val::Int(j)) => *i == j,
            (COp::EqInt(_), Val::Str(_)) | (COp::EqStr(..), Val::Int(_)) => false,
            (COp::EqStr(id), Val::Str(s)) => match id {
                None => false,
                Some(id) if self.case_sensitive => *id == s,
                Some(id) => *id == lib.strings.folded(s),
            },
            (COp::Match(g), v) => {
                let chars: Vec<char> = match v {
                    Val::Int(i) => i.to_string().chars().collect(),
                    Val::Str(s) if self.case_sensitive => lib.strings.resolve(s).chars().collect(),
                    Val::Str(s) => lib.strings.resolve(lib.strings.folded(s)).chars().collect(),
                };
                glob_match_chars(g, &chars)
            }
            (COp::Token { word, prefix }, v) => {
                let text: std::borrow::Cow<'_, str> = match v {
                    Val::Int(i) => i.to_string().into(),
                    Val::Str(s) if self.case_sensitive => lib.strings.resolve(s).into(),
                    Val::Str(s) => lib.strings.resolve(lib.strings.folded(s)).into(),
                };
                text.split_whitespace().any(|w| {
                    if *prefix {
                        w.starts_with(word.as_str())
                    } else {
                        w == word
                    }
                })
            }
            // Integers collate in numeric order.
            (COp::Cmp(op, _, Some(bound)), Val::Int(i)) => cmp_holds(*op, i.cmp(bound)),
            (COp::Cmp(op, key, _), v) => {
                let vk = match v {
                    Val::Int(i) => collation_key(&Value::Int(i)),
                    Val::Str(s) => collation_key_str(lib.strings.resolve(s)),
                };
                cmp_holds(*op, vk.as_slice().cmp(key.as_slice()))
            }
        }
    }

    /// Is a candidate from [`Compiled::candidates`] certainly a match
    /// when its entry holds this key from one source only? True for the
    /// operations whose index lookup is exact (ranges, HAS, TOKEN), so
    /// their candidates need no value comparison.
    pub fn index_exact(&self) -> bool {
        !self.case_sensitive && matches!(self.op, COp::Cmp(..) | COp::Has | COp::Token { .. })
    }

    /// For an index-exact filter: accept `props` without comparing values
    /// if every value of the key comes from one source.
    pub fn accept_single_source(&self, props: &[Prop]) -> Option<bool> {
        let CField::Key(k) = self.field else {
            return None;
        };
        let kp = Library::key_props(props, k);
        let first = kp.first()?;
        kp.iter().all(|p| p.src == first.src).then_some(true)
    }

    /// Does the entry `id` (with `props`) pass? Reads `props` only when
    /// the column cannot answer.
    #[inline]
    pub fn test(&self, lib: &Library, id: u32, props: &[Prop]) -> bool {
        if let Some(col) = &self.col {
            match col.get(id) {
                Cell::None => return false,
                Cell::One(v) => return self.value_matches(lib, v),
                Cell::Slow => {}
            }
        }
        self.test_props(lib, id, props)
    }

    /// [`Compiled::test`] from the entry's properties.
    pub fn test_props(&self, lib: &Library, id: u32, props: &[Prop]) -> bool {
        match self.field {
            CField::Unknown => false,
            CField::Id => self.value_matches_id(id),
            CField::Key(k) => {
                Library::best(props, k, &self.ranks).any(|p| self.value_matches(lib, p.val))
            }
        }
    }

    fn value_matches_id(&self, id: u32) -> bool {
        let v = i64::from(id);
        match &self.op {
            COp::Has => true,
            COp::EqInt(i) => *i == v,
            COp::EqStr(..) => false,
            COp::Match(g) => {
                let chars: Vec<char> = v.to_string().chars().collect();
                glob_match_chars(g, &chars)
            }
            COp::Token { word, prefix } => {
                let s = v.to_string();
                if *prefix {
                    s.starts_with(word.as_str())
                } else {
                    s == *word
                }
            }
            COp::Cmp(op, key, _) => cmp_holds(
                *op,
                collation_key(&Value::Int(v)).as_slice().cmp(key.as_slice()),
            ),
        }
    }

    /// Candidate ids from an index (a superset of the matches), or `None`
    /// if the index cannot narrow this filter down. Out of budget
    /// (`meter`), a partial list.
    pub fn candidates(&self, lib: &Library, meter: &Meter) -> Option<Vec<u32>> {
        let k = match self.field {
            CField::Unknown => return Some(Vec::new()),
            CField::Id => return self.id_candidates(lib, meter),
            CField::Key(k) => k,
        };
        let idx = lib.indexes.get(&k)?;
        let mut out: Vec<u32> = Vec::new();
        let ranks = &self.ranks;
        let mut push = |list: &[Posting]| {
            if !meter.tick(list.len() as u64) {
                return;
            }
            for p in list {
                if ranks.rank.get(p.src as usize).copied() != Some(crate::model::IGNORED) {
                    out.push(p.entry);
                }
            }
        };
        match &self.op {
            COp::Has => idx.ord.values().for_each(|l| push(l)),
            COp::EqInt(i) => {
                if let Some(l) = idx.ord.get(collation_key(&Value::Int(*i)).as_slice()) {
                    push(l);
                }
            }
            COp::EqStr(None) => {}
            COp::EqStr(Some(id)) => {
                let key = collation_key_str(lib.strings.resolve(*id));
                if let Some(l) = idx.ord.get(key.as_slice()) {
                    push(l);
                }
            }
            COp::Cmp(op, key, _) => {
                use std::ops::Bound::*;
                let k: &[u8] = key.as_slice();
                let range: (std::ops::Bound<&[u8]>, std::ops::Bound<&[u8]>) = match op {
                    CmpOp::Lt => (Unbounded, Excluded(k)),
                    CmpOp::Le => (Unbounded, Included(k)),
                    CmpOp::Gt => (Excluded(k), Unbounded),
                    CmpOp::Ge => (Included(k), Unbounded),
                };
                for (_, l) in idx.ord.range::<[u8], _>(range) {
                    push(l);
                }
            }
            COp::Token { word, prefix } => {
                if self.case_sensitive {
                    return None;
                }
                if *prefix {
                    for (w, l) in idx.words.range::<str, _>((
                        std::ops::Bound::Included(word.as_str()),
                        std::ops::Bound::Unbounded,
                    )) {
                        if !w.starts_with(word.as_str()) {
                            break;
                        }
                        push(l);
                    }
                } else if let Some(l) = idx.words.get(word.as_str()) {
                    push(l);
                }
            }
            COp::Match(g) => {
                if self.case_sensitive {
                    return None;
                }
                match_candidates(lib, idx, g, self.cost, meter, &mut push)?;
            }
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    fn id_candidates(&self, lib: &Library, meter: &Meter) -> Option<Vec<u32>> {
        let n = lib.entries.len() as i64;
        let (lo, hi) = match &self.op {
            COp::EqInt(i) => (*i, *i),
            COp::Cmp(op, _, _) => {
                // Only integer bounds narrow; string bounds scan.
                let COp::Cmp(_, key, _) = &self.op else {
                    return None;
                };
                let bound = int_of_key(key)?;
                match op {
                    CmpOp::Lt => (0, bound - 1),
                    CmpOp::Le => (0, bound),
                    CmpOp::Gt => (bound + 1, n),
                    CmpOp::Ge => (bound, n),
                }
            }
            COp::EqStr(..) => return Some(Vec::new()),
            _ => return None,
        };
        let lo = lo.max(1);
        let hi = hi.min(n - 1);
        let mut out = Vec::new();
        let mut i = lo;
        while i <= hi && meter.tick(1) {
            if lib.contains(i as u32) {
                out.push(i as u32);
            }
            i += 1;
        }
        Some(out)
    }
}

/// The integer a collation key of a non-negative int stands for.
fn int_of_key(key: &[u8]) -> Option<i64> {
    if key.len() >= 3 && key[0] == 0x01 && key[1] == 0x01 && key.len() == 3 + key[2] as usize {
        std::str::from_utf8(&key[3..])
            .ok()?
            .parse()
            .ok()
            .or(Some(0))
    } else if key.first() == Some(&0x00) {
        // negative: nothing below 1 exists among ids; treat as 0.
        Some(0)
    } else {
        None
    }
}

fn match_candidates(
    lib: &Library,
    idx: &KeyIndex,
    g: &[char],
    cost: u64,
    meter: &Meter,
    push: &mut impl FnMut(&[Posting]),
) -> Option<()> {
    let prefix: String = g.iter().take_while(|c| **c != '*' && **c != '?').collect();
    if prefix.chars().count() == g.len() {
        // No wildcard: an equality on the literal (strings and ints).
        let key = collation_key_str(&prefix);
        if let Some(l) = idx.ord.get(key.as_slice()) {
            push(l);
        }
        return Some(());
    }
    if !prefix.is_empty() && !prefix.chars().any(|c| c.is_ascii_digit()) {
        let key = collation_key_str(&prefix);
        for (k, l) in idx.ord.range::<[u8], _>((
            std::ops::Bound::Included(key.as_slice()),
            std::ops::Bound::Unbounded,
        )) {
            if !k.starts_with(&key) {
                break;
            }
            push(l);
        }
        return Some(());
    }
    if idx.ints > 0 {
        return None;
    }
    for &f in idx.strs.keys() {
        if !meter.tick(cost) {
            break;
        }
        let chars: Vec<char> = lib.strings.resolve(f).chars().collect();
        if glob_match_chars(g, &chars) {
            let key = collation_key_str(lib.strings.resolve(f));
            if let Some(l) = idx.ord.get(key.as_slice()) {
                push(l);
            }
        }
    }
    Some(())
}

fn cmp_holds(op: CmpOp, ord: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match op {
        CmpOp::Lt => ord == Less,
        CmpOp::Le => ord != Greater,
        CmpOp::Gt => ord == Greater,
        CmpOp::Ge => ord != Less,
    }
}
