//! The in-memory library: entries of (key, value, source) properties over
//! interned strings, plus the indexes. All reads and the query engine
//! work on a [`Library`]; the [`crate::Db`] wraps it with durability.

use std::collections::{BTreeMap, BTreeSet};

use spindle_query::{SourcePref, Value};

use crate::changes::{ChangeStamp, Changes};
use crate::column::{Column, ColumnCache};
use crate::error::CommitError;
use crate::index::KeyIndex;
use crate::intern::Interner;
use crate::op::Op;

/// The key of the parent property; filters and fetches of it mean the id.
pub const PARENT_KEY: &str = "song_id";

/// A stored value: an integer or an interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Val {
    Int(i64),
    Str(u32),
}

/// One property of an entry. 16 bytes: key id, source id, value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Prop {
    pub key: u32,
    pub src: u16,
    pub val: Val,
}

/// A borrowed view of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueRef<'a> {
    Int(i64),
    Str(&'a str),
}

impl ValueRef<'_> {
    pub fn to_value(self) -> Value {
        match self {
            ValueRef::Int(i) => Value::Int(i),
            ValueRef::Str(s) => Value::Str(s.to_owned()),
        }
    }

    pub fn to_json(self) -> serde_json::Value {
        match self {
            ValueRef::Int(i) => serde_json::Value::from(i),
            ValueRef::Str(s) => serde_json::Value::from(s),
        }
    }
}

impl std::fmt::Display for ValueRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueRef::Int(i) => write!(f, "{i}"),
            ValueRef::Str(s) => f.write_str(s),
        }
    }
}

/// A source preference resolved against this library's source ids:
/// `rank[src]` is the priority, `u16::MAX` for ignored sources.
#[derive(Debug, Clone)]
pub(crate) struct Ranks {
    pub rank: Vec<u16>,
}

pub(crate) const IGNORED: u16 = u16::MAX;

/// How far past the current end a new entry id may be. Entries live in a
/// dense table indexed by id, so a huge id would allocate a huge table.
pub const MAX_ID_GAP: u32 = 1 << 24;

/// The whole library in memory.
#[derive(Debug, Clone, Default)]
pub struct Library {
    pub(crate) strings: Interner,
    pub(crate) keys: Interner,
    pub(crate) sources: Interner,
    /// `entries[id]`: `None` if there is no entry with that id. Properties
    /// are sorted by (key, src, val).
    pub(crate) entries: Vec<Option<Vec<Prop>>>,
    pub(crate) live: usize,
    pub(crate) props: usize,
    /// Indexes by key id.
    pub(crate) indexes: BTreeMap<u32, KeyIndex>,
    pub(crate) collections: BTreeMap<String, String>,
    /// Best-value columns, a read cache kept current by [`Library::apply`].
    pub(crate) columns: ColumnCache,
    /// Which entries changed lately.
    pub(crate) changes: Changes,
}

impl Library {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Number of property values.
    pub fn prop_count(&self) -> usize {
        self.props
    }

    /// The id a new entry would get.
    pub fn next_id(&self) -> u32 {
        (self.entries.len() as u32).max(1)
    }

    pub fn contains(&self, id: u32) -> bool {
        matches!(self.entries.get(id as usize), Some(Some(_)))
    }

    /// Ids of every entry, ascending.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.is_some())
            .map(|(i, _)| i as u32)
    }

    pub(crate) fn all_ids(&self) -> Vec<u32> {
        let mut v = Vec::with_capacity(self.live);
        v.extend(self.ids());
        v
    }

    pub(crate) fn entry(&self, id: u32) -> Option<&[Prop]> {
        self.entries.get(id as usize).and_then(|e| e.as_deref())
    }

    /// Where this library's history of changes stands now.
    pub fn change_stamp(&self) -> ChangeStamp {
        self.changes.stamp()
    }

    /// The entries created, deleted or changed after `since`, ascending,
    /// each once; `None` when `since` is of another library, or older
    /// than the last [`CHANGES_KEPT`](crate::CHANGES_KEPT) changes this
    /// library remembers (then read them all).
    pub fn changed_since(&self, since: ChangeStamp) -> Option<Vec<u32>> {
        self.changes.since(since)
    }

    /// The keys that are indexed, by name.
    pub fn indexed_keys(&self) -> Vec<String> {
        self.indexes
            .keys()
            .map(|&k| self.keys.resolve(k).to_owned())
            .collect()
    }

    pub fn is_indexed(&self, key: &str) -> bool {
        self.keys
            .get(key)
            .is_some_and(|k| self.indexes.contains_key(&k))
    }

    /// Saved collections: name → JSON form.
    pub fn collections(&self) -> &BTreeMap<String, String> {
        &self.collections
    }

    /// Distinct source names in use.
    pub fn source_names(&self) -> Vec<String> {
        let mut used = BTreeSet::new();
        for e in self.entries.iter().flatten() {
            for p in e {
                used.insert(p.src);
            }
        }
        used.into_iter()
            .map(|s| self.sources.resolve(u32::from(s)).to_owned())
            .collect()
    }

    pub(crate) fn value_ref(&self, v: Val) -> ValueRef<'_> {
        match v {
            Val::Int(i) => ValueRef::Int(i),
            Val::Str(s) => ValueRef::Str(self.strings.resolve(s)),
        }
    }

    pub(crate) fn ranks(&self, pref: &SourcePref) -> Ranks {
        let rank = (0..self.sources.len())
            .map(|i| match pref.priority(self.sources.resolve(i as u32)) {
                Some(p) => p.min(usize::from(IGNORED) - 1) as u16,
                None => IGNORED,
            })
            .collect();
        Ranks { rank }
    }

    /// The props of `key` on `entry` (all sources), as a slice.
    ///
    /// A linear walk for ordinary entries: their properties span a few
    /// cache lines read in order, where a binary search would miss the
    /// cache at every probe.
    pub(crate) fn key_props(props: &[Prop], key: u32) -> &[Prop] {
        let start = if props.len() <= 96 {
            props
                .iter()
                .position(|p| p.key >= key)
                .unwrap_or(props.len())
        } else {
            props.partition_point(|p| p.key < key)
        };
        let rest = &props[start..];
        let n = rest.iter().take_while(|p| p.key == key).count();
        &rest[..n]
    }

    /// The best-source values of `key` on an entry: every value whose
    /// source has the best priority present, ignoring ignored sources.
    pub(crate) fn best<'a>(
        props: &'a [Prop],
        key: u32,
        ranks: &'a Ranks,
    ) -> impl Iterator<Item = &'a Prop> + 'a {
        let kp = Self::key_props(props, key);
        let rank_of = move |p: &Prop| ranks.rank.get(p.src as usize).copied().unwrap_or(IGNORED);
        let best = if kp.len() == 1 {
            rank_of(&kp[0])
        } else {
            kp.iter().map(rank_of).min().unwrap_or(IGNORED)
        };
        kp.iter()
            .filter(move |p| best != IGNORED && rank_of(p) == best)
    }

    /// The best-source values of `key` on entry `id`, borrowed.
    pub fn get(&self, id: u32, key: &str, pref: &SourcePref) -> Vec<ValueRef<'_>> {
        let (Some(props), Some(k)) = (self.entry(id), self.keys.get(key)) else {
            return Vec::new();
        };
        let ranks = self.ranks(pref);
        Self::best(props, k, &ranks)
            .map(|p| self.value_ref(p.val))
            .collect()
    }

    /// Every property of an entry as (key, value, source), in key order.
    pub fn properties(&self, id: u32) -> Vec<(&str, ValueRef<'_>, &str)> {
        self.entry(id)
            .map(|props| {
                props
                    .iter()
                    .map(|p| {
                        (
                            self.keys.resolve(p.key),
                            self.value_ref(p.val),
                            self.sources.resolve(u32::from(p.src)),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    // ---- mutation -------------------------------------------------------

    /// Check that `ops` can all be applied, without changing anything.
    pub(crate) fn validate(&self, ops: &[Op]) -> Result<(), CommitError> {
        // Track entries created/deleted within the transaction.
        let mut created: BTreeSet<u32> = BTreeSet::new();
        let mut deleted: BTreeSet<u32> = BTreeSet::new();
        let exists = |id: u32, c: &BTreeSet<u32>, d: &BTreeSet<u32>| {
            !d.contains(&id) && (c.contains(&id) || self.contains(id))
        };
        let mut new_sources = BTreeSet::new();
        for op in ops {
            match op {
                Op::CreateEntry(id) => {
                    let next = self.next_id();
                    if *id >= next.saturating_add(MAX_ID_GAP) {
                        return Err(CommitError::IdOutOfRange {
                            id: *id,
                            next,
                            gap: MAX_ID_GAP,
                        });
                    }
                    if *id == 0 || exists(*id, &created, &deleted) {
                        return Err(CommitError::EntryExists(*id));
                    }
                    created.insert(*id);
                    deleted.remove(id);
                }
                Op::DeleteEntry(id) => {
                    if !exists(*id, &created, &deleted) {
                        return Err(CommitError::NoSuchEntry(*id));
                    }
                    deleted.insert(*id);
                    created.remove(id);
                }
                Op::AddProp {
                    entry, key, source, ..
                } => {
                    if key == PARENT_KEY {
                        return Err(CommitError::ReservedKey(key.clone()));
                    }
                    if !exists(*entry, &created, &deleted) {
                        return Err(CommitError::NoSuchEntry(*entry));
                    }
                    if self.sources.get(source).is_none() {
                        new_sources.insert(source.as_str());
                    }
                }
                Op::DelProp { entry, .. } | Op::DelKey { entry, .. } => {
                    if !exists(*entry, &created, &deleted) {
                        return Err(CommitError::NoSuchEntry(*entry));
                    }
                }
                Op::CreateIndex(key) | Op::DropIndex(key) => {
                    if key == PARENT_KEY {
                        return Err(CommitError::ReservedKey(key.clone()));
                    }
                }
                Op::SaveCollection { .. } | Op::DeleteCollection(_) => {}
            }
        }
        if self.sources.len() + new_sources.len() >= usize::from(u16::MAX) {
            return Err(CommitError::TooManySources);
        }
        Ok(())
    }

    /// Apply one operation. Callers validate first; applying an op that
    /// does not fit (a log replayed over a newer data file) is ignored.
    pub(crate) fn apply(&mut self, op: &Op) {
        if let Some(entry) = op.entry() {
            self.changes.record(entry);
        }
        match op {
            Op::CreateEntry(id) => {
                let i = *id as usize;
                if *id == 0 || *id >= self.next_id().saturating_add(MAX_ID_GAP) {
                    return;
                }
                if self.entries.len() <= i {
                    self.entries.resize_with(i + 1, || None);
                }
                if self.entries[i].is_none() {
                    self.entries[i] = Some(Vec::new());
                    self.live += 1;
                }
            }
            Op::DeleteEntry(id) => {
                let Some(slot) = self.entries.get_mut(*id as usize) else {
                    return;
                };
                if let Some(props) = slot.take() {
                    self.columns.update(*id, None, None);
                    self.live -= 1;
                    self.props -= props.len();
                    for p in props {
                        self.unindex(*id, p);
                    }
                }
            }
            Op::AddProp {
                entry,
                key,
                source,
                value,
            } => {
                if !self.contains(*entry) || key == PARENT_KEY {
                    return;
                }
                let k = self.keys.intern(key);
                let known = self.sources.len();
                let s = self.sources.intern(source);
                let Ok(src) = u16::try_from(s) else { return };
                if self.sources.len() != known {
                    // Every ranking gains a source: start the columns over.
                    self.columns.clear();
                }
                let val = match value {
                    Value::Int(i) => Val::Int(*i),
                    Value::Str(st) => Val::Str(self.strings.intern(st)),
                };
                let prop = Prop { key: k, src, val };
                let Some(Some(props)) = self.entries.get_mut(*entry as usize) else {
                    return;
                };
                if let Err(pos) = props.binary_search(&prop) {
                    props.insert(pos, prop);
                    self.columns.update(*entry, Some(k), Some(props));
                    self.props += 1;
                    self.index(*entry, prop);
                }
            }
            Op::DelProp {
                entry,
                key,
                source,
                value,
            } => {
                let (Some(k), Some(s)) = (self.keys.get(key), self.sources.get(source)) else {
                    return;
                };
                let val = match value {
                    Value::Int(i) => Val::Int(*i),
                    Value::Str(st) => match self.strings.get(st) {
                        Some(id) => Val::Str(id),
                        None => return,
                    },
                };
                let prop = Prop {
                    key: k,
                    src: s as u16,
                    val,
                };
                let Some(Some(props)) = self.entries.get_mut(*entry as usize) else {
                    return;
                };
                if let Ok(pos) = props.binary_search(&prop) {
                    props.remove(pos);
                    self.columns.update(*entry, Some(k), Some(props));
                    self.props -= 1;
                    self.unindex(*entry, prop);
                }
            }
            Op::DelKey { entry, key, source } => {
                let Some(k) = self.keys.get(key) else { return };
                let s = match source {
                    Some(name) => match self.sources.get(name) {
                        Some(s) => Some(s as u16),
                        None => return,
                    },
                    None => None,
                };
                let Some(Some(props)) = self.entries.get_mut(*entry as usize) else {
                    return;
                };
                let mut removed = Vec::new();
                props.retain(|p| {
                    let hit = p.key == k && s.is_none_or(|s| p.src == s);
                    if hit {
                        removed.push(*p);
                    }
                    !hit
                });
                if !removed.is_empty() {
                    self.columns.update(*entry, Some(k), Some(props));
                }
                self.props -= removed.len();
                for p in removed {
                    self.unindex(*entry, p);
                }
            }
            Op::CreateIndex(key) => {
                let k = self.keys.intern(key);
                if !self.indexes.contains_key(&k) {
                    let idx = KeyIndex::build(self, k);
                    self.indexes.insert(k, idx);
                }
            }
            Op::DropIndex(key) => {
                if let Some(k) = self.keys.get(key) {
                    self.indexes.remove(&k);
                }
            }
            Op::SaveCollection { name, json } => {
                self.collections.insert(name.clone(), json.clone());
            }
            Op::DeleteCollection(name) => {
                self.collections.remove(name);
            }
        }
    }

    fn index(&mut self, entry: u32, p: Prop) {
        if let Some(idx) = self.indexes.get_mut(&p.key) {
            idx.insert(&self.strings, entry, p);
        }
    }

    fn unindex(&mut self, entry: u32, p: Prop) {
        if let Some(idx) = self.indexes.get_mut(&p.key) {
            idx.remove(&self.strings, entry, p);
            // Siblings (same key and source) may share words or a
            // collation key with the removed value: post them again.
            if let Some(Some(props)) = self.entries.get(entry as usize) {
                for q in Library::key_props(props, p.key) {
                    if q.src == p.src {
                        idx.repost(&self.strings, entry, *q);
                    }
                }
            }
        }
    }

    /// Approximate heap bytes used by the library.
    pub fn heap_bytes(&self) -> usize {
        let entries: usize = self
            .entries
            .iter()
            .map(|e| 24 + e.as_ref().map_or(0, |p| p.capacity() * 16))
            .sum();
        entries
            + self.strings.heap_bytes()
            + self.keys.heap_bytes()
            + self.sources.heap_bytes()
            + self
                .indexes
                .values()
                .map(KeyIndex::heap_bytes)
                .sum::<usize>()
            + self.columns.heap_bytes()
            + self.changes.heap_bytes()
    }

    /// The best-value column of `key` under `ranks`: the cached one, or
    /// (when `build`) a new one.
    pub(crate) fn column(
        &self,
        key: u32,
        ranks: &Ranks,
        build: bool,
    ) -> Option<std::sync::Arc<Column>> {
        self.columns.get(self, key, ranks, build)
    }
}
