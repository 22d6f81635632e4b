//! Queries on a [`Library`]: collections in, ids or shaped results out.

use spindle_query::{Coll, FetchSpec, SourcePref};

use crate::column::{Cell, Column};
use crate::engine::{self, Budget, Evaluator, Ids, Meter};
use crate::error::QueryError;
use crate::model::{Library, Prop, Ranks, ValueRef};

/// Fewest rows for which a fetch builds a column it does not have yet.
const COLUMN_WORTH_IT: usize = 4096;

/// How a fetched field is read.
enum F {
    Id,
    Column(u32, std::sync::Arc<Column>),
    Key(u32),
    None,
}

/// Fetched rows, stored flat: `width` cells per row.
#[derive(Debug, Clone, Default)]
pub struct Rows<'a> {
    width: usize,
    cells: Vec<Option<ValueRef<'a>>>,
}

impl<'a> Rows<'a> {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.cells.len().checked_div(self.width).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cells per row (the fields asked for).
    pub fn width(&self) -> usize {
        self.width
    }

    pub fn iter(&self) -> std::slice::ChunksExact<'_, Option<ValueRef<'a>>> {
        self.cells.chunks_exact(self.width.max(1))
    }
}

impl<'a> std::ops::Index<usize> for Rows<'a> {
    type Output = [Option<ValueRef<'a>>];

    fn index(&self, i: usize) -> &Self::Output {
        &self.cells[i * self.width..(i + 1) * self.width]
    }
}

impl<'r, 'a> IntoIterator for &'r Rows<'a> {
    type Item = &'r [Option<ValueRef<'a>>];
    type IntoIter = std::slice::ChunksExact<'r, Option<ValueRef<'a>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Library {
    /// The ids a collection selects, in result order. No limit on time or
    /// work: for the CLI; queries from the network use
    /// [`Library::query_ids_with_budget`].
    pub fn query_ids(&self, coll: &Coll, pref: &SourcePref) -> Result<Ids, QueryError> {
        let meter = Meter::unlimited();
        Evaluator::new(self, pref, &meter).eval(coll)
    }

    /// [`Library::query_ids`] within `budget`: past its time or steps, or
    /// once its cancellation flag is raised, the query stops within
    /// milliseconds with [`QueryError::OverTime`],
    /// [`QueryError::OverSteps`] or [`QueryError::Cancelled`].
    pub fn query_ids_with_budget(
        &self,
        coll: &Coll,
        pref: &SourcePref,
        budget: Budget,
    ) -> Result<Ids, QueryError> {
        let meter = Meter::new(budget);
        let ids = Evaluator::new(self, pref, &meter).eval(coll)?;
        meter.check()?;
        Ok(ids)
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
    ///
    /// Large fetches read best-value columns (built on first use, then
    /// kept current); small ones read the entries, unless the columns
    /// are there already.
    pub fn fetch_rows<'a>(&'a self, ids: &[u32], fields: &[&str], pref: &SourcePref) -> Rows<'a> {
        let ranks = self.ranks(pref);
        let build = ids.len() >= COLUMN_WORTH_IT.max(self.entries.len() / 16);
        let fs: Vec<F> = fields
            .iter()
            .map(|f| {
                if *f == "id" || *f == crate::model::PARENT_KEY {
                    F::Id
                } else {
                    match self.keys.get(f) {
                        None => F::None,
                        Some(k) => match self.column(k, &ranks, build) {
                            Some(col) => F::Column(k, col),
                            None => F::Key(k),
                        },
                    }
                }
            })
            .collect();
        // Keys read from the entries, sorted, so one walk over an entry's
        // (key-sorted) properties serves every such field.
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
        let mut cells: Vec<Option<ValueRef<'a>>> = Vec::with_capacity(ids.len() * width);
        for &id in ids {
            let row = cells.len();
            let mut slow = false;
            for f in &fs {
                cells.push(match f {
                    F::Id => Some(ValueRef::Int(i64::from(id))),
                    F::None | F::Key(_) => None,
                    F::Column(_, col) => match col.get(id) {
                        Cell::None => None,
                        Cell::One(v) => Some(self.value_ref(v)),
                        Cell::Slow => {
                            slow = true;
                            None
                        }
                    },
                });
            }
            if wanted.is_empty() && !slow {
                continue;
            }
            let props = self.entry(id).unwrap_or(&[]);
            let row = &mut cells[row..];
            if slow || wanted.len() == 1 {
                for (i, f) in fs.iter().enumerate() {
                    let k = match f {
                        F::Column(k, col) if col.get(id) == Cell::Slow => *k,
                        F::Key(k) => *k,
                        _ => continue,
                    };
                    row[i] = self.first_best(props, k, &ranks);
                }
            } else {
                let mut rest = props;
                for &(k, i) in &wanted {
                    let start = rest.iter().position(|p| p.key >= k).unwrap_or(rest.len());
                    rest = &rest[start..];
                    let n = rest.iter().take_while(|p| p.key == k).count();
                    row[i] = self.first_best(&rest[..n], k, &ranks);
                }
            }
        }
        Rows { width, cells }
    }

    /// The first best-source value of `key` among `props`.
    fn first_best(&self, props: &[Prop], k: u32, ranks: &Ranks) -> Option<ValueRef<'_>> {
        match Library::key_props(props, k) {
            [] => None,
            [one] => (ranks.rank.get(one.src as usize).copied() != Some(crate::model::IGNORED))
                .then(|| self.value_ref(one.val)),
            many => Library::best(many, k, ranks)
                .next()
                .map(|p| self.value_ref(p.val)),
        }
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
