//! Interned strings: every distinct string value, key and source is
//! stored once and referred to by a `u32`.
//!
//! Strings live back to back in one arena (no allocation per string, and
//! one cache miss fewer per lookup than a `Vec<Arc<str>>`). Each string
//! also knows the id of its case-folded form, so caseless equality of two
//! values is an integer comparison.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::fold::fold;

/// A string table. Ids are dense and never reused while the table lives;
/// compaction writes only live strings, so garbage disappears on reopen.
#[derive(Default, Clone)]
pub struct Interner {
    arena: String,
    /// `offsets[i]..offsets[i + 1]` is string `i` in the arena.
    offsets: Vec<usize>,
    folded: Vec<u32>,
    table: HashTable<u32>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl std::fmt::Debug for Interner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interner")
            .field("len", &self.len())
            .finish()
    }
}

fn slice<'a>(arena: &'a str, offsets: &[usize], id: u32) -> &'a str {
    let i = id as usize;
    &arena[offsets[i]..offsets.get(i + 1).copied().unwrap_or(arena.len())]
}

impl Interner {
    /// The id of `s`, adding it (and its folded form) if new.
    pub fn intern(&mut self, s: &str) -> u32 {
        let (id, new) = self.find_or_push(s);
        if !new {
            return id;
        }
        let f = fold(s);
        let fid = if f == s {
            id
        } else {
            let (fid, _) = self.find_or_push(&f);
            self.folded[fid as usize]
        };
        self.folded[id as usize] = fid;
        id
    }

    /// The id of `s` and whether it was added: one hash and one probe
    /// either way (a bulk load adds almost every string it meets).
    fn find_or_push(&mut self, s: &str) -> (u32, bool) {
        let hash = self.hasher.hash_one(s);
        let Self {
            arena,
            offsets,
            folded,
            table,
            hasher,
        } = self;
        match table.entry(
            hash,
            |&id| slice(arena, offsets, id) == s,
            |&other| hasher.hash_one(slice(arena, offsets, other)),
        ) {
            hashbrown::hash_table::Entry::Occupied(e) => (*e.get(), false),
            hashbrown::hash_table::Entry::Vacant(v) => {
                let id = offsets.len() as u32;
                offsets.push(arena.len());
                arena.push_str(s);
                folded.push(id);
                v.insert(id);
                (id, true)
            }
        }
    }

    /// Make room for `strings` more strings of `bytes` bytes in all, so
    /// a bulk load does not grow the table step by step.
    pub fn reserve(&mut self, strings: usize, bytes: usize) {
        let Self {
            arena,
            offsets,
            folded,
            table,
            hasher,
        } = self;
        offsets.reserve(strings);
        folded.reserve(strings);
        table.reserve(strings, |&other| {
            hasher.hash_one(slice(arena, offsets, other))
        });
        arena.reserve(bytes);
    }

    /// The id of `s` if interned.
    pub fn get(&self, s: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(s);
        self.table
            .find(hash, |&id| slice(&self.arena, &self.offsets, id) == s)
            .copied()
    }

    /// The id of the folded form of `s`, if any interned string folds to it.
    pub fn get_folded(&self, s: &str) -> Option<u32> {
        let f = fold(s);
        self.get(f.as_ref()).map(|id| self.folded[id as usize])
    }

    pub fn resolve(&self, id: u32) -> &str {
        slice(&self.arena, &self.offsets, id)
    }

    pub fn folded(&self, id: u32) -> u32 {
        self.folded[id as usize]
    }

    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Approximate heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        self.arena.capacity()
            + self.offsets.capacity() * 8
            + self.folded.capacity() * 4
            + self.table.capacity() * 5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_ids_shared() {
        let mut i = Interner::default();
        let a = i.intern("Metallica");
        let b = i.intern("METALLICA");
        let c = i.intern("metallica");
        assert_ne!(a, b);
        assert_eq!(i.folded(a), i.folded(b));
        assert_eq!(i.folded(a), c);
        assert_eq!(i.get_folded("MetalLica"), Some(c));
        assert_eq!(i.get_folded("slayer"), None);
        assert_eq!(i.resolve(a), "Metallica");
        assert_eq!(i.resolve(c), "metallica");
        let e = i.intern("");
        assert_eq!(i.resolve(e), "");
        assert_eq!(i.get(""), Some(e));
    }
}
