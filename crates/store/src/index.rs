//! In-memory indexes of one key (built on open, never stored — as S4's
//! midb). Each index answers, for the values of its key:
//!
//! * `ord`: natural-collation key → postings, for EQUALS (then verified),
//!   ranges and literal-prefix globs;
//! * `words`: case-folded whitespace-separated words of string values →
//!   postings, for TOKEN filters (whole word or prefix);
//! * `strs`: the distinct case-folded strings, so a MATCH like `*foo*`
//!   globs over distinct values instead of over every entry.
//!
//! A posting is (entry id, source id): filters still apply the source
//! preference, cheaply, to each candidate.

use std::collections::BTreeMap;

use hashbrown::HashMap;

use crate::fold::{collation_key, collation_key_str};
use crate::intern::Interner;
use crate::model::{Library, Prop, Val};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Posting {
    pub entry: u32,
    pub src: u16,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct KeyIndex {
    pub ord: BTreeMap<Box<[u8]>, Vec<Posting>>,
    pub words: BTreeMap<Box<str>, Vec<Posting>>,
    /// Distinct folded string ids → number of values folding to it.
    pub strs: HashMap<u32, u32>,
    /// Number of integer values (MATCH over ints cannot use `strs`).
    pub ints: usize,
    pub postings: usize,
}

fn val_key(strings: &Interner, v: Val) -> Box<[u8]> {
    match v {
        Val::Int(i) => collation_key(&spindle_query::Value::Int(i)).into_boxed_slice(),
        Val::Str(s) => collation_key_str(strings.resolve(s)).into_boxed_slice(),
    }
}

/// The distinct case-folded words of a value (an integer is one word).
fn words_of(strings: &Interner, v: Val) -> Vec<String> {
    match v {
        Val::Int(i) => vec![i.to_string()],
        Val::Str(s) => {
            let mut out: Vec<String> = Vec::new();
            for w in strings.resolve(strings.folded(s)).split_whitespace() {
                if !out.iter().any(|o| o == w) {
                    out.push(w.to_owned());
                }
            }
            out
        }
    }
}

fn insert_posting(list: &mut Vec<Posting>, p: Posting) {
    match list.last() {
        Some(last) if *last < p => list.push(p),
        None => list.push(p),
        _ => {
            if let Err(pos) = list.binary_search(&p) {
                list.insert(pos, p);
            }
        }
    }
}

fn remove_posting(list: &mut Vec<Posting>, p: Posting) {
    if let Ok(pos) = list.binary_search(&p) {
        list.remove(pos);
    }
}

impl KeyIndex {
    /// Build from scratch: postings are grouped by distinct value first,
    /// so each collation key and word list is computed once per distinct
    /// value, and the maps are bulk-loaded from sorted runs.
    pub fn build(lib: &Library, key: u32) -> KeyIndex {
        let strings = &lib.strings;
        let mut by_str: HashMap<u32, Vec<Posting>> = HashMap::new();
        let mut by_int: HashMap<i64, Vec<Posting>> = HashMap::new();
        let mut postings = 0usize;
        let mut ints = 0usize;
        for (id, props) in lib.entries.iter().enumerate() {
            let Some(props) = props else { continue };
            for p in Library::key_props(props, key) {
                let posting = Posting {
                    entry: id as u32,
                    src: p.src,
                };
                postings += 1;
                match p.val {
                    Val::Int(i) => {
                        ints += 1;
                        by_int.entry(i).or_default().push(posting);
                    }
                    Val::Str(s) => {
                        let f = strings.folded(s);
                        by_str.entry(f).or_default().push(posting);
                    }
                }
            }
        }
        let strs: HashMap<u32, u32> = by_str.iter().map(|(&f, l)| (f, l.len() as u32)).collect();
        let mut ord_runs: Vec<(Box<[u8]>, Vec<Posting>)> =
            Vec::with_capacity(by_str.len() + by_int.len());
        // Words borrow from the string arena; only distinct words are
        // copied, once, into the map.
        let int_words: Vec<(String, &Vec<Posting>)> =
            by_int.iter().map(|(i, l)| (i.to_string(), l)).collect();
        let mut word_runs: HashMap<&str, Vec<Posting>> = HashMap::new();
        for (w, list) in &int_words {
            word_runs
                .entry(w.as_str())
                .or_default()
                .extend_from_slice(list);
        }
        let mut seen: Vec<&str> = Vec::new();
        for (&f, list) in &by_str {
            seen.clear();
            for w in strings.resolve(f).split_whitespace() {
                if seen.contains(&w) {
                    continue;
                }
                seen.push(w);
                word_runs.entry(w).or_default().extend_from_slice(list);
            }
        }
        let mut words: Vec<(Box<str>, Vec<Posting>)> = word_runs
            .into_iter()
            .map(|(w, l)| (Box::from(w), l))
            .collect();
        for (i, list) in by_int {
            ord_runs.push((val_key(strings, Val::Int(i)), list));
        }
        for (f, list) in by_str {
            ord_runs.push((val_key(strings, Val::Str(f)), list));
        }
        ord_runs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // Distinct values can share a collation key ("007" and "7"): merge.
        let mut merged: Vec<(Box<[u8]>, Vec<Posting>)> = Vec::with_capacity(ord_runs.len());
        for (k, list) in ord_runs {
            match merged.last_mut() {
                Some((lk, ll)) if *lk == k => ll.extend(list),
                _ => merged.push((k, list)),
            }
        }
        let finish = |mut l: Vec<Posting>| {
            l.sort_unstable();
            l.dedup();
            l.shrink_to_fit();
            l
        };
        let ord: BTreeMap<Box<[u8]>, Vec<Posting>> =
            merged.into_iter().map(|(k, l)| (k, finish(l))).collect();
        let mut words: Vec<(Box<str>, Vec<Posting>)> =
            words.drain(..).map(|(w, l)| (w, finish(l))).collect();
        words.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        KeyIndex {
            ord,
            words: words.into_iter().collect(),
            strs,
            ints,
            postings,
        }
    }

    pub fn insert(&mut self, strings: &Interner, entry: u32, p: Prop) {
        let posting = Posting { entry, src: p.src };
        insert_posting(
            self.ord.entry(val_key(strings, p.val)).or_default(),
            posting,
        );
        match p.val {
            Val::Int(_) => self.ints += 1,
            Val::Str(s) => *self.strs.entry(strings.folded(s)).or_insert(0) += 1,
        }
        for w in words_of(strings, p.val) {
            insert_posting(self.words.entry(w.into()).or_default(), posting);
        }
        self.postings += 1;
    }

    pub fn remove(&mut self, strings: &Interner, entry: u32, p: Prop) {
        let posting = Posting { entry, src: p.src };
        let key = val_key(strings, p.val);
        if let Some(list) = self.ord.get_mut(&key) {
            remove_posting(list, posting);
            if list.is_empty() {
                self.ord.remove(&key);
            }
        }
        match p.val {
            Val::Int(_) => self.ints = self.ints.saturating_sub(1),
            Val::Str(s) => {
                let f = strings.folded(s);
                if let Some(n) = self.strs.get_mut(&f) {
                    *n -= 1;
                    if *n == 0 {
                        self.strs.remove(&f);
                    }
                }
            }
        }
        // Another value of the same entry and source may still hold the
        // word; the library re-adds those postings (`repost`) afterwards.
        for w in words_of(strings, p.val) {
            if let Some(list) = self.words.get_mut(w.as_str()) {
                remove_posting(list, posting);
                if list.is_empty() {
                    self.words.remove(w.as_str());
                }
            }
        }
        self.postings = self.postings.saturating_sub(1);
    }

    /// Re-add the postings (not the counts) of a value that is still
    /// there after a sibling value with the same words or key was removed.
    pub fn repost(&mut self, strings: &Interner, entry: u32, p: Prop) {
        let posting = Posting { entry, src: p.src };
        insert_posting(
            self.ord.entry(val_key(strings, p.val)).or_default(),
            posting,
        );
        for w in words_of(strings, p.val) {
            insert_posting(self.words.entry(w.into()).or_default(), posting);
        }
    }

    /// Same postings, words and counts (for `db check`).
    pub fn same_as(&self, other: &KeyIndex) -> bool {
        self.ord == other.ord
            && self.words == other.words
            && self.strs == other.strs
            && self.ints == other.ints
            && self.postings == other.postings
    }

    pub fn heap_bytes(&self) -> usize {
        let ord: usize = self
            .ord
            .iter()
            .map(|(k, v)| k.len() + 48 + v.capacity() * 8)
            .sum();
        let words: usize = self
            .words
            .iter()
            .map(|(k, v)| k.len() + 48 + v.capacity() * 8)
            .sum();
        ord + words + self.strs.capacity() * 12
    }
}
