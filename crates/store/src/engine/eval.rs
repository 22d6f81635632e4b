//! Collection evaluation and the planner.

use std::collections::HashMap;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use spindle_query::{Coll, Filter, OrderBy, SourcePref};

use super::budget::Meter;
use super::filter::{CField, COp, Compiled};
use crate::column::Cell;
use crate::error::QueryError;
use crate::fold::collation_key;
use crate::model::{Library, Prop};

/// The result of evaluating a collection: entry ids, in result order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ids {
    pub ids: Vec<u32>,
    /// False when the ids are a plain set (then sorted ascending).
    pub ordered: bool,
}

impl Ids {
    fn set(mut ids: Vec<u32>) -> Ids {
        ids.sort_unstable();
        ids.dedup();
        Ids {
            ids,
            ordered: false,
        }
    }
}

const MAX_REFERENCE_DEPTH: usize = 32;

/// Steps counted for compiling one filter (source ranks, key lookups).
const COMPILE_STEPS: u64 = 16;

pub(crate) struct Evaluator<'a> {
    lib: &'a Library,
    pref: &'a SourcePref,
    /// The query's budget; every loop below counts its work here.
    meter: &'a Meter,
    refs: Vec<String>,
    /// Compiled filters by address (a filter is compiled once per query).
    compiled: HashMap<*const Filter, Compiled>,
}

/// A membership test for operands that cannot be tested entry by entry
/// (ordered sub-collections, references): materialised once.
enum Test<'c> {
    Filter(&'c Filter),
    All,
    Not(Box<Test<'c>>),
    And(Vec<Test<'c>>),
    Or(Vec<Test<'c>>),
    Member(Vec<u32>),
}

impl<'a> Evaluator<'a> {
    pub fn new(lib: &'a Library, pref: &'a SourcePref, meter: &'a Meter) -> Self {
        Evaluator {
            lib,
            pref,
            meter,
            refs: Vec::new(),
            compiled: HashMap::new(),
        }
    }

    fn compile(&mut self, f: &Filter) -> &Compiled {
        let lib = self.lib;
        let pref = self.pref;
        let meter = self.meter;
        self.compiled.entry(f as *const Filter).or_insert_with(|| {
            meter.tick(COMPILE_STEPS);
            let ranks = lib.ranks(f.sourcepref.as_ref().unwrap_or(pref));
            Compiled::new(lib, f, ranks)
        })
    }

    /// Every live id, counted against the budget before it is gathered.
    fn all_ids(&self) -> Result<Vec<u32>, QueryError> {
        self.meter.tick(self.lib.entries.len() as u64);
        self.meter.check()?;
        Ok(self.lib.all_ids())
    }

    /// Evaluate `coll`, or stop with the budget's error.
    pub fn eval(&mut self, coll: &Coll) -> Result<Ids, QueryError> {
        self.meter.check()?;
        let ids = self.eval_node(coll)?;
        // Loops that ran out of budget stopped early: their result is
        // partial and must not be used.
        self.meter.check()?;
        Ok(ids)
    }

    fn eval_node(&mut self, coll: &Coll) -> Result<Ids, QueryError> {
        Ok(match coll {
            Coll::Universe => Ids::set(self.all_ids()?),
            Coll::Filter { filter, operand } => {
                if matches!(**operand, Coll::Universe) {
                    Ids::set(self.filter_universe(filter))
                } else {
                    let base = self.eval(operand)?;
                    let lib = self.lib;
                    let meter = self.meter;
                    let c = self.compile(filter);
                    let ids = base
                        .ids
                        .into_iter()
                        .filter(|&id| {
                            meter.tick(c.cost) && lib.entry(id).is_some_and(|p| c.test(lib, id, p))
                        })
                        .collect();
                    Ids {
                        ids,
                        ordered: base.ordered,
                    }
                }
            }
            Coll::Union(ops) => self.union(ops)?,
            Coll::Intersection(ops) => self.intersection(ops)?,
            Coll::Complement(op) => {
                let inner = self.eval(op)?;
                let mut sorted = inner.ids;
                if inner.ordered {
                    sorted.sort_unstable();
                }
                Ids::set(difference(&self.all_ids()?, &sorted))
            }
            Coll::Order {
                by,
                descending,
                operand,
            } => {
                let base = self.eval(operand)?;
                self.meter.tick(base.ids.len() as u64);
                self.meter.check()?;
                Ids {
                    ids: self.order(base.ids, by, *descending),
                    ordered: true,
                }
            }
            Coll::Limit {
                start,
                length,
                operand,
            } => {
                let base = self.eval(operand)?;
                let ids: Vec<u32> = base
                    .ids
                    .into_iter()
                    .skip(*start)
                    .take(length.unwrap_or(usize::MAX))
                    .collect();
                Ids { ids, ordered: true }
            }
            Coll::Mediaset(op) => {
                let inner = self.eval(op)?;
                Ids::set(inner.ids)
            }
            Coll::IdList(list) => {
                self.meter.tick(list.len() as u64);
                self.meter.check()?;
                let mut seen = std::collections::HashSet::new();
                let ids = list
                    .iter()
                    .copied()
                    .filter(|&id| self.lib.contains(id) && seen.insert(id))
                    .collect();
                Ids { ids, ordered: true }
            }
            Coll::Reference(name) => {
                // A fresh evaluator: the decoded tree is a temporary, and
                // the filter cache is keyed by address.
                let coll = self.resolve(name)?;
                let mut sub = Evaluator::new(self.lib, self.pref, self.meter);
                sub.refs = self.refs.clone();
                sub.refs.push(name.clone());
                sub.eval(&coll)?
            }
        })
    }

    fn resolve(&self, name: &str) -> Result<Coll, QueryError> {
        if self.refs.iter().any(|r| r == name) || self.refs.len() >= MAX_REFERENCE_DEPTH {
            return Err(QueryError::RecursiveReference(name.to_owned()));
        }
        let json = self
            .lib
            .collections
            .get(name)
            .ok_or_else(|| QueryError::NoSuchCollection(name.to_owned()))?;
        crate::saved::decode(name, json)
    }

    /// A filter over every entry: from the index if it can, else a scan
    /// of the key's best-value column (built by the first scan).
    ///
    /// Out of budget it stops early with a partial result, which
    /// [`Evaluator::eval`] then refuses.
    fn filter_universe(&mut self, f: &Filter) -> Vec<u32> {
        let lib = self.lib;
        let meter = self.meter;
        let c = self.compile(f);
        // HAS selects a large share of the library: reading the column
        // beats gathering every posting of the index.
        let has = matches!(c.op, COp::Has);
        if !has || !matches!(c.field, CField::Key(_)) {
            if let Some(cands) = c.candidates(lib, meter) {
                if matches!(c.field, CField::Id) {
                    return cands;
                }
                let exact = c.index_exact() && c.col.is_none();
                return cands
                    .into_iter()
                    .filter(|&id| {
                        meter.tick(c.cost)
                            && lib.entry(id).is_some_and(|p| {
                                (exact && c.accept_single_source(p) == Some(true))
                                    || c.test(lib, id, p)
                            })
                    })
                    .collect();
            }
        }
        let CField::Key(k) = c.field else {
            // The id, or a key no entry has.
            return lib
                .entries
                .iter()
                .enumerate()
                .take_while(|_| meter.tick(c.cost))
                .filter_map(|(id, e)| {
                    let p = e.as_deref()?;
                    c.test(lib, id as u32, p).then_some(id as u32)
                })
                .collect();
        };
        if c.col.is_none() {
            // Building the column reads every entry once.
            if !meter.tick(lib.entries.len() as u64) {
                return Vec::new();
            }
            let col = lib.column(k, &c.ranks, true);
            if let Some(c) = self.compiled.get_mut(&(f as *const Filter)) {
                c.col = col;
            }
        }
        let c = self.compile(f);
        let Some(col) = &c.col else {
            return Vec::new();
        };
        col.present(lib.entries.len())
            .take_while(|_| meter.tick(c.cost))
            .filter(|&(id, cell)| match cell {
                Cell::None => false,
                Cell::One(v) => has || c.value_matches(lib, v),
                Cell::Slow => lib.entry(id).is_some_and(|p| c.test_props(lib, id, p)),
            })
            .map(|(id, _)| id)
            .collect()
    }

    /// Can this operand be answered from indexes alone (no entry scan)?
    fn indexable(&mut self, coll: &Coll) -> bool {
        match coll {
            Coll::Filter { filter, operand } if matches!(**operand, Coll::Universe) => {
                let lib = self.lib;
                let c = self.compile(filter);
                match c.field {
                    CField::Unknown | CField::Id => true,
                    CField::Key(k) => lib.indexes.contains_key(&k),
                }
            }
            Coll::Union(ops) => ops.iter().all(|o| self.indexable(o)),
            Coll::Intersection(ops) => ops.iter().any(|o| self.indexable(o)),
            Coll::IdList(_) | Coll::Limit { .. } | Coll::Order { .. } => true,
            Coll::Reference(_) => true,
            Coll::Mediaset(op) => self.indexable(op),
            _ => false,
        }
    }

    fn union(&mut self, ops: &[Coll]) -> Result<Ids, QueryError> {
        let mut parts = Vec::with_capacity(ops.len());
        for o in ops {
            parts.push(self.eval(o)?);
        }
        // Merging copies every part once more.
        self.meter
            .tick(parts.iter().map(|p| p.ids.len() as u64).sum());
        self.meter.check()?;
        if parts.iter().all(|p| !p.ordered) {
            let mut all: Vec<u32> = Vec::with_capacity(parts.iter().map(|p| p.ids.len()).sum());
            for p in parts {
                all.extend(p.ids);
            }
            return Ok(Ids::set(all));
        }
        let mut seen = std::collections::HashSet::new();
        let mut ids = Vec::new();
        for p in parts {
            for id in p.ids {
                if seen.insert(id) {
                    ids.push(id);
                }
            }
        }
        Ok(Ids { ids, ordered: true })
    }

    fn intersection(&mut self, ops: &[Coll]) -> Result<Ids, QueryError> {
        if ops.is_empty() {
            return Ok(Ids::set(self.lib.all_ids()));
        }
        // The first operand's order is kept if it is ordered.
        let first = self.eval_if_ordered(&ops[0])?;
        if let Some(first) = first {
            let mut rest = Vec::new();
            for o in &ops[1..] {
                self.meter.check()?;
                rest.push(self.test_for(o)?);
            }
            let lib = self.lib;
            let ids = first
                .ids
                .into_iter()
                .take_while(|_| self.meter.tick(1))
                .filter(|&id| {
                    lib.entry(id)
                        .is_some_and(|p| rest.iter().all(|t| self.run_test(t, id, p)))
                })
                .collect();
            return Ok(Ids { ids, ordered: true });
        }
        // Unordered: materialise the indexable operands, smallest first.
        let mut sets: Vec<Vec<u32>> = Vec::new();
        let mut tests = Vec::new();
        for o in ops {
            self.meter.check()?;
            if self.indexable(o) {
                let r = self.eval(o)?;
                let mut ids = r.ids;
                if r.ordered {
                    ids.sort_unstable();
                    ids.dedup();
                }
                sets.push(ids);
            } else {
                tests.push(o);
            }
        }
        sets.sort_by_key(Vec::len);
        let mut cands: Vec<u32> = match sets.first() {
            Some(_) => {
                let mut it = sets.into_iter();
                let mut acc = it.next().unwrap_or_default();
                for s in it {
                    self.meter.tick((acc.len() + s.len()) as u64);
                    self.meter.check()?;
                    acc = intersect(&acc, &s);
                    if acc.is_empty() {
                        break;
                    }
                }
                acc
            }
            None => {
                // Nothing indexable: start from the cheapest scan, the
                // first filter, then test the others on its survivors.
                let Some(first) = tests.first().copied() else {
                    return Ok(Ids::set(self.lib.all_ids()));
                };
                tests.remove(0);
                let r = self.eval(first)?;
                let mut ids = r.ids;
                self.meter.tick(ids.len() as u64);
                ids.sort_unstable();
                ids
            }
        };
        if !tests.is_empty() && !cands.is_empty() {
            let mut compiled = Vec::new();
            for o in tests {
                self.meter.check()?;
                compiled.push(self.test_for(o)?);
            }
            let lib = self.lib;
            cands.retain(|&id| {
                self.meter.ok()
                    && lib
                        .entry(id)
                        .is_some_and(|p| compiled.iter().all(|t| self.run_test(t, id, p)))
            });
        }
        Ok(Ids {
            ids: cands,
            ordered: false,
        })
    }

    fn eval_if_ordered(&mut self, coll: &Coll) -> Result<Option<Ids>, QueryError> {
        let ordered_kind = matches!(
            coll,
            Coll::Order { .. } | Coll::Limit { .. } | Coll::IdList(_)
        ) || matches!(coll, Coll::Union(_) | Coll::Reference(_) | Coll::Intersection(_) if Self::may_be_ordered(coll));
        if !ordered_kind {
            return Ok(None);
        }
        let r = self.eval(coll)?;
        Ok(r.ordered.then_some(r))
    }

    fn may_be_ordered(coll: &Coll) -> bool {
        match coll {
            Coll::Order { .. } | Coll::Limit { .. } | Coll::IdList(_) | Coll::Reference(_) => true,
            Coll::Union(ops) => ops.iter().any(Self::may_be_ordered),
            Coll::Intersection(ops) => ops.first().is_some_and(Self::may_be_ordered),
            Coll::Filter { operand, .. } => Self::may_be_ordered(operand),
            _ => false,
        }
    }

    /// Turn an operand into a per-entry test.
    fn test_for<'c>(&mut self, coll: &'c Coll) -> Result<Test<'c>, QueryError> {
        Ok(match coll {
            Coll::Universe => Test::All,
            Coll::Filter { filter, operand } if matches!(**operand, Coll::Universe) => {
                self.compile(filter);
                Test::Filter(filter)
            }
            Coll::Complement(op) => Test::Not(Box::new(self.test_for(op)?)),
            Coll::Intersection(ops) if !ops.iter().any(Self::may_be_ordered) => {
                let mut v = Vec::new();
                for o in ops {
                    self.meter.check()?;
                    v.push(self.test_for(o)?);
                }
                Test::And(v)
            }
            Coll::Union(ops) if !ops.iter().any(Self::may_be_ordered) => {
                let mut v = Vec::new();
                for o in ops {
                    self.meter.check()?;
                    v.push(self.test_for(o)?);
                }
                Test::Or(v)
            }
            other => {
                let mut ids = self.eval(other)?.ids;
                self.meter.tick(ids.len() as u64);
                ids.sort_unstable();
                Test::Member(ids)
            }
        })
    }

    /// Out of budget the answer is meaningless; the caller's
    /// [`Evaluator::eval`] then refuses the result.
    fn run_test(&self, t: &Test<'_>, id: u32, props: &[Prop]) -> bool {
        match t {
            Test::All => true,
            Test::Filter(f) => self
                .compiled
                .get(&(*f as *const Filter))
                .is_some_and(|c| self.meter.tick(c.cost) && c.test(self.lib, id, props)),
            Test::Not(t) => !self.run_test(t, id, props),
            Test::And(v) => v.iter().all(|t| self.run_test(t, id, props)),
            Test::Or(v) => v.iter().any(|t| self.run_test(t, id, props)),
            Test::Member(ids) => self.meter.tick(1) && ids.binary_search(&id).is_ok(),
        }
    }

    fn order(&self, mut ids: Vec<u32>, by: &OrderBy, descending: bool) -> Vec<u32> {
        match by {
            OrderBy::Id => {
                ids.sort();
                if descending {
                    ids.reverse();
                }
                ids
            }
            OrderBy::Random(seed) => {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(*seed);
                ids.shuffle(&mut rng);
                ids
            }
            OrderBy::Value(fields) => {
                let ranks = self.lib.ranks(self.pref);
                let keys: Vec<Option<u32>> = fields.iter().map(|f| self.lib.keys.get(f)).collect();
                let mut keyed: Vec<(Option<Vec<u8>>, u32)> = ids
                    .iter()
                    .map(|&id| {
                        let k = self.lib.entry(id).and_then(|props| {
                            // An entry with several values sorts by its
                            // smallest one.
                            keys.iter().flatten().find_map(|&k| {
                                Library::best(props, k, &ranks)
                                    .map(|p| collation_key(&self.lib.value_ref(p.val).to_value()))
                                    .min()
                            })
                        });
                        (k, id)
                    })
                    .collect();
                if descending {
                    keyed.sort_by(|a, b| b.0.cmp(&a.0));
                } else {
                    keyed.sort_by(|a, b| a.0.cmp(&b.0));
                }
                keyed.into_iter().map(|(_, id)| id).collect()
            }
        }
    }
}

fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.len() * 16 < large.len() {
        return small
            .iter()
            .copied()
            .filter(|x| large.binary_search(x).is_ok())
            .collect();
    }
    let mut out = Vec::with_capacity(small.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

fn difference(all: &[u32], minus: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(all.len().saturating_sub(minus.len()));
    let mut j = 0;
    for &x in all {
        while j < minus.len() && minus[j] < x {
            j += 1;
        }
        if j < minus.len() && minus[j] == x {
            continue;
        }
        out.push(x);
    }
    out
}
