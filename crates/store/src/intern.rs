//! Interned strings: every distinct string value, key and source is
//! stored once and referred to by a `u32`.
//!
//! Each string also knows the id of its case-folded form, so caseless
//! equality of two values is an integer comparison.

use std::collections::HashMap;
use std::sync::Arc;

use crate::fold::fold;

/// A string table. Ids are dense and never reused while the table lives;
/// compaction writes only live strings, so garbage disappears on reopen.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    strings: Vec<Arc<str>>,
    folded: Vec<u32>,
    ids: HashMap<Arc<str>, u32>,
}

impl Interner {
    /// The id of `s`, adding it (and its folded form) if new.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.push(s);
        let f = fold(s);
        let fid = if f == s {
            id
        } else if let Some(&fid) = self.ids.get(f.as_ref()) {
            fid
        } else {
            let fid = self.push(&f);
            self.folded[fid as usize] = fid;
            fid
        };
        self.folded[id as usize] = fid;
        id
    }

    fn push(&mut self, s: &str) -> u32 {
        let id = self.strings.len() as u32;
        let arc: Arc<str> = Arc::from(s);
        self.strings.push(arc.clone());
        self.folded.push(id);
        self.ids.insert(arc, id);
        id
    }

    /// The id of `s` if interned.
    pub fn get(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }

    /// The id of the folded form of `s`, if any interned string folds to it.
    pub fn get_folded(&self, s: &str) -> Option<u32> {
        let f = fold(s);
        self.ids.get(f.as_ref()).map(|&id| self.folded[id as usize])
    }

    pub fn resolve(&self, id: u32) -> &str {
        &self.strings[id as usize]
    }

    pub fn folded(&self, id: u32) -> u32 {
        self.folded[id as usize]
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// Approximate heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        let text: usize = self.strings.iter().map(|s| s.len() + 16).sum();
        text + self.folded.len() * 4 + self.ids.capacity() * 24
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
    }
}
