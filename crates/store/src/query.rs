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
        ids.iter()
            .map(|&id| {
                let props = self.entry(id).unwrap_or(&[]);
                fs.iter()
                    .map(|f| match f {
                        F::Id => Some(ValueRef::Int(i64::from(id))),
                        F::Key(k) => Library::best(props, *k, &ranks)
                            .next()
                            .map(|p| self.value_ref(p.val)),
                        F::None => None,
                    })
                    .collect()
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
