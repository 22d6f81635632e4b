//! Queries on a [`Library`]: collections in, ids or shaped results out.

use spindle_query::{Coll, FetchSpec, SourcePref};

use crate::engine::{self, Evaluator, Ids};
use crate::error::QueryError;
use crate::model::{Library, ValueRef};

impl Library {
    /// The ids a collection selects, in result order.
    pub fn query_ids(&self, coll: &Coll, pref: &SourcePref) -> Result<Ids, QueryError> {
        Evaluator::new(self, pref).eval(coll)
    }

    /// A collection shaped by a fetch specification.
    pub fn query(
        &self,
        coll: &Coll,
        spec: &FetchSpec,
        pref: &SourcePref,
    ) -> Result<serde_json::Value, QueryError> {
        let ids = self.query_ids(coll, pref)?;
        Ok(engine::fetch(self, spec, &ids.ids, pref))
    }

    /// Shape already-selected ids with a fetch specification.
    pub fn shape(&self, spec: &FetchSpec, ids: &[u32], pref: &SourcePref) -> serde_json::Value {
        engine::fetch(self, spec, ids, pref)
    }

    /// For each id, the first best-source value of each field (`"id"` is
    /// the entry id). The fast path behind `spindle query --fetch`.
    pub fn fetch_rows<'a>(
        &'a self,
        ids: &[u32],
        fields: &[&str],
        pref: &SourcePref,
    ) -> Vec<Vec<Option<ValueRef<'a>>>> {
        let ranks = self.ranks(pref);
        enum F {
            Id,
            Key(u32),
            None,
        }
        let fs: Vec<F> = fields
            .iter()
            .map(|f| {
                if *f == "id" || *f == crate::model::PARENT_KEY {
                    F::Id
                } else {
                    self.keys.get(f).map_or(F::None, F::Key)
                }
            })
            .collect();
        // Keys the fields ask for, sorted, so one walk over an entry's
        // (key-sorted) properties serves every field.
        let mut wanted: Vec<(u32, usize)> = fs
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match f {
                F::Key(k) => Some((*k, i)),
                _ => None,
            })
            .collect();
        wanted.sort_unstable();
        let width = fields.len();
        ids.iter()
            .map(|&id| {
                let mut row: Vec<Option<ValueRef<'a>>> = vec![None; width];
                for (i, f) in fs.iter().enumerate() {
                    if let F::Id = f {
                        row[i] = Some(ValueRef::Int(i64::from(id)));
                    }
                }
                let props = self.entry(id).unwrap_or(&[]);
                let mut rest = props;
                for &(k, i) in &wanted {
                    let start = rest.iter().position(|p| p.key >= k).unwrap_or(rest.len());
                    rest = &rest[start..];
                    let n = rest.iter().take_while(|p| p.key == k).count();
                    let kp = &rest[..n];
                    row[i] = match kp {
                        [] => None,
                        [one] => (ranks.rank.get(one.src as usize).copied()
                            != Some(crate::model::IGNORED))
                        .then(|| self.value_ref(one.val)),
                        many => Library::best(many, k, &ranks)
                            .next()
                            .map(|p| self.value_ref(p.val)),
                    };
                }
                row
            })
            .collect()
    }

    /// Every best-source value of each field, for each id.
    pub fn fetch_all_values<'a>(
        &'a self,
        id: u32,
        field: &str,
        pref: &SourcePref,
    ) -> Vec<ValueRef<'a>> {
        self.get(id, field, pref)
    }
}
