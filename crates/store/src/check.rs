//! Consistency checks behind `spindle db check`.

use crate::index::KeyIndex;
use crate::model::Library;

impl Library {
    /// Every inconsistency found: unsorted or duplicate properties, wrong
    /// counts, an index that differs from one rebuilt from the entries.
    pub fn check(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut live = 0;
        let mut props = 0;
        for (id, e) in self.entries.iter().enumerate() {
            let Some(e) = e else { continue };
            live += 1;
            props += e.len();
            if e.windows(2).any(|w| w[0] >= w[1]) {
                problems.push(format!("entry {id}: properties unsorted or duplicated"));
            }
            for p in e {
                if p.key as usize >= self.keys.len() || usize::from(p.src) >= self.sources.len() {
                    problems.push(format!("entry {id}: dangling key or source"));
                }
                if let crate::model::Val::Str(s) = p.val {
                    if s as usize >= self.strings.len() {
                        problems.push(format!("entry {id}: dangling string"));
                    }
                }
            }
        }
        if live != self.live {
            problems.push(format!(
                "entry count {} but {live} entries found",
                self.live
            ));
        }
        if props != self.props {
            problems.push(format!("property count {} but {props} found", self.props));
        }
        for (&k, idx) in &self.indexes {
            let fresh = KeyIndex::build(self, k);
            if !fresh.same_as(idx) {
                problems.push(format!(
                    "index on '{}' differs from the entries",
                    self.keys.resolve(k)
                ));
            }
        }
        problems
    }
}
