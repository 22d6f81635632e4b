//! Best-value columns: a read cache that answers "what is entry N's
//! best-source value of key K?" without touching the entry.
//!
//! An entry's properties live in a heap block of their own, so reading
//! one key of many entries misses the cache once per entry (and once
//! more for the string). A column holds, for one key under one source
//! preference, every entry's best value packed in 8 bytes, in an array
//! indexed by id: fetching five fields of 100,000 entries reads five
//! arrays in order instead of 100,000 scattered blocks.
//!
//! Columns are built on demand (a pass over the entries, as a scan would
//! make anyway), kept up to date by [`crate::model::Library::apply`], and
//! dropped when a new source appears (which changes every ranking). An
//! entry whose key has several best values, or an integer that does not
//! fit in 62 bits, is marked [`Cell::Slow`]: callers then read the entry.
//! Ids past the end of a column (entries created after it was built) are
//! slow too, so a column is never wrong, only sometimes unhelpful.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::model::{Library, Prop, Ranks, Val};

/// No value (the entry has no such key, or only from ignored sources, or
/// there is no entry).
const NONE: u64 = 0;
const TAG_STR: u64 = 1;
const TAG_INT: u64 = 2;
const SLOW: u64 = 3;

/// Columns kept at most; past this the cache starts over (a library
/// rarely has more keys that are fetched or scanned in bulk).
const MAX_COLUMNS: usize = 32;

/// One entry's cell, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cell {
    None,
    One(Val),
    /// Read the entry's properties instead.
    Slow,
}

#[derive(Debug)]
pub(crate) struct Column {
    cells: Vec<u64>,
}

impl Column {
    pub fn build(lib: &Library, key: u32, ranks: &Ranks) -> Column {
        let cells = lib
            .entries
            .iter()
            .map(|e| e.as_deref().map_or(NONE, |p| pack_best(p, key, ranks)))
            .collect();
        Column { cells }
    }

    #[inline]
    pub fn get(&self, id: u32) -> Cell {
        match self.cells.get(id as usize) {
            None => Cell::Slow,
            Some(&c) => unpack(c),
        }
    }

    /// Every id with a value or a slow cell, ascending, then (as slow)
    /// the ids past the column's end up to `len`.
    pub fn present(&self, len: usize) -> impl Iterator<Item = (u32, Cell)> + '_ {
        self.cells
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != NONE)
            .map(|(i, &c)| (i as u32, unpack(c)))
            .chain((self.cells.len()..len).map(|i| (i as u32, Cell::Slow)))
    }

    fn set(&mut self, id: u32, props: Option<&[Prop]>, key: u32, ranks: &Ranks) {
        if let Some(c) = self.cells.get_mut(id as usize) {
            *c = props.map_or(NONE, |p| pack_best(p, key, ranks));
        }
    }

    fn heap_bytes(&self) -> usize {
        self.cells.capacity() * 8
    }
}

#[inline]
fn unpack(c: u64) -> Cell {
    match c & 3 {
        TAG_STR => Cell::One(Val::Str((c >> 2) as u32)),
        TAG_INT => Cell::One(Val::Int((c as i64) >> 2)),
        0 => Cell::None,
        _ => Cell::Slow,
    }
}

fn pack_best(props: &[Prop], key: u32, ranks: &Ranks) -> u64 {
    let mut best = Library::best(props, key, ranks);
    let Some(first) = best.next() else {
        return NONE;
    };
    if best.next().is_some() {
        return SLOW;
    }
    match first.val {
        Val::Str(s) => (u64::from(s) << 2) | TAG_STR,
        Val::Int(i) if (i << 2) >> 2 == i => ((i << 2) as u64) | TAG_INT,
        Val::Int(_) => SLOW,
    }
}

type Map = HashMap<(u32, Vec<u16>), Arc<Column>>;

/// The columns of a library, by (key, ranking). Interior mutability, so
/// readers under a shared lock can add a column.
#[derive(Default)]
pub(crate) struct ColumnCache {
    map: Mutex<Map>,
}

impl ColumnCache {
    /// The column of `key` under `ranks`; built if `build` and missing.
    pub fn get(&self, lib: &Library, key: u32, ranks: &Ranks, build: bool) -> Option<Arc<Column>> {
        let id = (key, ranks.rank.clone());
        if let Some(c) = self.lock().get(&id) {
            return Some(c.clone());
        }
        if !build {
            return None;
        }
        // Built outside the lock: two readers may both build it, and the
        // second insert wins; both are correct.
        let col = Arc::new(Column::build(lib, key, ranks));
        let mut map = self.lock();
        if map.len() >= MAX_COLUMNS {
            map.clear();
        }
        map.insert(id, col.clone());
        Some(col)
    }

    /// After a change to `key` on entry `id` (or to the whole entry when
    /// `key` is `None`): recompute that entry's cells.
    pub fn update(&mut self, id: u32, key: Option<u32>, props: Option<&[Prop]>) {
        let map = self.map.get_mut().unwrap_or_else(|e| e.into_inner());
        if map.is_empty() {
            return;
        }
        for ((k, rank), col) in map.iter_mut() {
            if key.is_some_and(|key| key != *k) {
                continue;
            }
            let ranks = Ranks { rank: rank.clone() };
            match Arc::get_mut(col) {
                Some(col) => col.set(id, props, *k, &ranks),
                None => {
                    // Someone still holds it: copy on write.
                    let mut fresh = Column {
                        cells: col.cells.clone(),
                    };
                    fresh.set(id, props, *k, &ranks);
                    *col = Arc::new(fresh);
                }
            }
        }
    }

    pub fn clear(&mut self) {
        self.map
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    pub fn heap_bytes(&self) -> usize {
        self.lock().values().map(|c| c.heap_bytes()).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Map> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A copy of a library starts with no columns.
impl Clone for ColumnCache {
    fn clone(&self) -> Self {
        ColumnCache::default()
    }
}

impl std::fmt::Debug for ColumnCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnCache")
            .field("columns", &self.lock().len())
            .finish()
    }
}
