//! The query engine against a straightforward reference evaluator, on
//! random libraries and random queries (seeded; the seed is printed on
//! failure). Indexed and unindexed keys are both exercised, so the
//! planner's index paths are checked against a plain scan.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use spindle_query::glob::glob_match;
use spindle_query::{CmpOp, Coll, Field, Filter, FilterOp, OrderBy, SourcePref, Value};
use spindle_store::{Db, Op};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
    fn word(&mut self, v: &[&'static str]) -> &'static str {
        v[self.below(v.len())]
    }
    fn chance(&mut self, pct: usize) -> bool {
        self.below(100) < pct
    }
}

const KEYS: &[&str] = &["artist", "album", "title", "tracknr", "genre", "comment"];
const SOURCES: &[&str] = &[
    "plugin/id3v2",
    "plugin/vorbis",
    "client/a",
    "client/b",
    "server",
    "import/x",
];
const WORDS: &[&str] = &[
    "one",
    "One",
    "ONE two",
    "The One",
    "Someone",
    "one (Live)",
    "20abc",
    "31",
    "007",
    "7",
    "Ärger",
    "ärger",
    "straße",
    "STRASSE",
    "Metallica",
    "metallica",
    "foo bar",
    "Foo",
    "x",
    "",
    "track 2",
    "track 10",
    "Weezer",
    "a b c",
];

fn rand_value(r: &mut Rng) -> Value {
    if r.chance(35) {
        Value::Int(r.below(45) as i64 - 4)
    } else {
        Value::Str((*r.pick(WORDS)).to_owned())
    }
}

type RefEntry = Vec<(String, Value, String)>;

fn fold(s: &str) -> String {
    caseless::default_case_fold_str(s)
}

#[derive(PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Chunk {
    Num(usize, String),
    Char(char),
}

fn chunks(s: &str) -> Vec<Chunk> {
    let f = fold(s);
    let mut out = Vec::new();
    let cs: Vec<char> = f.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        if cs[i].is_ascii_digit() {
            let mut j = i;
            while j < cs.len() && cs[j].is_ascii_digit() {
                j += 1;
            }
            let d: String = cs[i..j].iter().collect();
            let d = d.trim_start_matches('0').to_owned();
            out.push(Chunk::Num(d.len(), d));
            i = j;
        } else {
            out.push(Chunk::Char(cs[i]));
            i += 1;
        }
    }
    out
}

/// Natural collation, written independently of the store's byte keys.
fn natural(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) if *x < 0 || *y < 0 => x.cmp(y),
        (Value::Int(x), Value::Str(_)) if *x < 0 => Ordering::Less,
        (Value::Str(_), Value::Int(y)) if *y < 0 => Ordering::Greater,
        _ => {
            let s = |v: &Value| match v {
                Value::Int(i) => i.to_string(),
                Value::Str(s) => s.clone(),
            };
            chunks(&s(a)).cmp(&chunks(&s(b)))
        }
    }
}

fn best<'e>(e: &'e RefEntry, key: &str, pref: &SourcePref) -> Vec<&'e Value> {
    let with: Vec<(usize, &Value)> = e
        .iter()
        .filter(|(k, _, _)| k == key)
        .filter_map(|(_, v, s)| pref.priority(s).map(|p| (p, v)))
        .collect();
    let Some(min) = with.iter().map(|(p, _)| *p).min() else {
        return Vec::new();
    };
    with.into_iter()
        .filter(|(p, _)| *p == min)
        .map(|(_, v)| v)
        .collect()
}

fn text(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Str(s) => fold(s),
    }
}

fn value_ok(op: &FilterOp, v: &Value) -> bool {
    match op {
        FilterOp::Has => true,
        FilterOp::Equals(Value::Int(i)) => matches!(v, Value::Int(j) if i == j),
        FilterOp::Equals(Value::Str(s)) => matches!(v, Value::Str(t) if fold(s) == fold(t)),
        FilterOp::Match(g) => glob_match(&fold(g), &text(v)),
        FilterOp::Token(t) => {
            let t = fold(t);
            let txt = text(v);
            txt.split_whitespace().any(|w| match t.strip_suffix('*') {
                Some(p) => w.starts_with(p),
                None => w == t,
            })
        }
        FilterOp::Cmp(op, x) => {
            let o = natural(v, x);
            match op {
                CmpOp::Lt => o == Ordering::Less,
                CmpOp::Le => o != Ordering::Greater,
                CmpOp::Gt => o == Ordering::Greater,
                CmpOp::Ge => o != Ordering::Less,
            }
        }
    }
}

fn ref_filter(f: &Filter, id: u32, e: &RefEntry, pref: &SourcePref) -> bool {
    let pref = f.sourcepref.as_ref().unwrap_or(pref);
    match &f.field {
        Field::Id => value_ok(&f.op, &Value::Int(i64::from(id))),
        Field::Key(k) => best(e, k, pref).into_iter().any(|v| value_ok(&f.op, v)),
    }
}

/// (ids, ordered)
fn ref_eval(lib: &BTreeMap<u32, RefEntry>, c: &Coll, pref: &SourcePref) -> (Vec<u32>, bool) {
    match c {
        Coll::Universe => (lib.keys().copied().collect(), false),
        Coll::Filter { filter, operand } => {
            let (ids, o) = ref_eval(lib, operand, pref);
            (
                ids.into_iter()
                    .filter(|id| ref_filter(filter, *id, &lib[id], pref))
                    .collect(),
                o,
            )
        }
        Coll::Union(ops) => {
            let parts: Vec<_> = ops.iter().map(|o| ref_eval(lib, o, pref)).collect();
            let ordered = parts.iter().any(|p| p.1);
            let mut out: Vec<u32> = Vec::new();
            for (ids, _) in parts {
                for id in ids {
                    if !out.contains(&id) {
                        out.push(id);
                    }
                }
            }
            if !ordered {
                out.sort();
            }
            (out, ordered)
        }
        Coll::Intersection(ops) => {
            let parts: Vec<_> = ops.iter().map(|o| ref_eval(lib, o, pref)).collect();
            let (first, o) = parts[0].clone();
            let mut out: Vec<u32> = first
                .into_iter()
                .filter(|id| parts[1..].iter().all(|p| p.0.contains(id)))
                .collect();
            if !o {
                out.sort();
            }
            (out, o)
        }
        Coll::Complement(op) => {
            let (ids, _) = ref_eval(lib, op, pref);
            (
                lib.keys().copied().filter(|i| !ids.contains(i)).collect(),
                false,
            )
        }
        Coll::Order {
            by: OrderBy::Value(fields),
            descending,
            operand,
        } => {
            let (ids, _) = ref_eval(lib, operand, pref);
            let key = |id: &u32| -> Option<Value> {
                fields.iter().find_map(|f| {
                    best(&lib[id], f, pref)
                        .into_iter()
                        .min_by(|a, b| natural(a, b))
                        .cloned()
                })
            };
            let mut keyed: Vec<(Option<Value>, u32)> = ids.iter().map(|i| (key(i), *i)).collect();
            let cmp = |a: &Option<Value>, b: &Option<Value>| match (a, b) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
                (Some(x), Some(y)) => natural(x, y),
            };
            if *descending {
                keyed.sort_by(|a, b| cmp(&b.0, &a.0));
            } else {
                keyed.sort_by(|a, b| cmp(&a.0, &b.0));
            }
            (keyed.into_iter().map(|(_, i)| i).collect(), true)
        }
        Coll::Limit {
            start,
            length,
            operand,
        } => {
            let (ids, _) = ref_eval(lib, operand, pref);
            (
                ids.into_iter()
                    .skip(*start)
                    .take(length.unwrap_or(usize::MAX))
                    .collect(),
                true,
            )
        }
        other => panic!("reference does not model {other:?}"),
    }
}

fn rand_filter(r: &mut Rng) -> Filter {
    let field = if r.chance(8) {
        Field::Id
    } else {
        Field::Key((*r.pick(KEYS)).to_owned())
    };
    let op = match r.below(6) {
        0 => FilterOp::Equals(rand_value(r)),
        1 => {
            let w = fold(r.word(WORDS));
            let g = match r.below(4) {
                0 => format!("*{w}*"),
                1 => format!("{}*", w.chars().take(2).collect::<String>()),
                2 => w.replacen('e', "?", 1),
                _ => w,
            };
            FilterOp::Match(g)
        }
        2 => {
            let w = r.pick(&[
                "one", "ONE", "two", "the", "foo", "live)", "on*", "trac*", "7",
            ]);
            FilterOp::Token((*w).to_owned())
        }
        3 => FilterOp::Has,
        _ => {
            let op = *r.pick(&[CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge]);
            FilterOp::Cmp(op, rand_value(r))
        }
    };
    let mut f = Filter::new(field, op);
    if r.chance(10) {
        f.sourcepref = Some(SourcePref::parse(r.word(&[
            "client/*:plugin/*",
            "server",
            "plugin/*:*",
        ])));
    }
    f
}

fn rand_coll(r: &mut Rng, depth: usize) -> Coll {
    if depth == 0 || r.chance(40) {
        return if r.chance(3) {
            Coll::Universe
        } else {
            Coll::filter(rand_filter(r))
        };
    }
    match r.below(5) {
        0 | 1 => Coll::Intersection(
            (0..2 + r.below(2))
                .map(|_| rand_coll(r, depth - 1))
                .collect(),
        ),
        2 | 3 => Coll::Union(
            (0..2 + r.below(2))
                .map(|_| rand_coll(r, depth - 1))
                .collect(),
        ),
        _ => Coll::Complement(Box::new(rand_coll(r, depth - 1))),
    }
}

fn wrap_ordered(r: &mut Rng, c: Coll) -> Coll {
    match r.below(10) {
        0 => Coll::Order {
            by: OrderBy::Value(vec![(*r.pick(KEYS)).to_owned(), "title".into()]),
            descending: r.chance(50),
            operand: Box::new(c),
        },
        1 => Coll::Limit {
            start: r.below(5),
            length: Some(r.below(10)),
            operand: Box::new(Coll::Order {
                by: OrderBy::Value(vec![(*r.pick(KEYS)).to_owned()]),
                descending: false,
                operand: Box::new(c),
            }),
        },
        _ => c,
    }
}

fn build(r: &mut Rng, db: &Db, n: usize) -> BTreeMap<u32, RefEntry> {
    let mut reference = BTreeMap::new();
    let mut ops = Vec::new();
    for _ in 0..n {
        let id = db.reserve_id();
        reference.insert(id, rand_entry(r, id, 8, &mut ops));
    }
    db.commit(ops).unwrap();
    reference
}

/// Adds a property to entry `id`: to the reference (a set, so once) and
/// as an op.
fn add_prop(
    e: &mut RefEntry,
    id: u32,
    key: String,
    source: String,
    value: Value,
    ops: &mut Vec<Op>,
) {
    if !e
        .iter()
        .any(|(k, v, s)| *k == key && *v == value && *s == source)
    {
        e.push((key.clone(), value.clone(), source.clone()));
    }
    ops.push(Op::AddProp {
        entry: id,
        key,
        source,
        value,
    });
}

/// A new entry with up to `max_props - 1` random properties: its ops
/// are pushed to `ops`, its reference form returned.
fn rand_entry(r: &mut Rng, id: u32, max_props: usize, ops: &mut Vec<Op>) -> RefEntry {
    ops.push(Op::CreateEntry(id));
    let mut e: RefEntry = Vec::new();
    for _ in 0..r.below(max_props) {
        let key = (*r.pick(KEYS)).to_owned();
        let source = (*r.pick(SOURCES)).to_owned();
        let value = rand_value(r);
        add_prop(&mut e, id, key, source, value, ops);
    }
    e
}

/// On a mismatch, name the first leaf filter that disagrees.
fn report_leaves(
    lib: &spindle_store::Library,
    reference: &BTreeMap<u32, RefEntry>,
    coll: &Coll,
    pref: &SourcePref,
) {
    match coll {
        Coll::Filter { .. } | Coll::Universe => {
            let (want, _) = ref_eval(reference, coll, pref);
            let mut got = lib.query_ids(coll, pref).unwrap().ids;
            got.sort();
            if got != want {
                let extra: Vec<_> = got.iter().filter(|i| !want.contains(i)).collect();
                let missing: Vec<_> = want.iter().filter(|i| !got.contains(i)).collect();
                for id in extra.iter().chain(missing.iter()) {
                    eprintln!("entry {id}: {:?}", reference[*id]);
                }
                eprintln!("leaf {coll:?}: extra {extra:?}, missing {missing:?}");
            }
        }
        Coll::Union(v) | Coll::Intersection(v) => v
            .iter()
            .for_each(|c| report_leaves(lib, reference, c, pref)),
        Coll::Complement(c) | Coll::Order { operand: c, .. } | Coll::Limit { operand: c, .. } => {
            report_leaves(lib, reference, c, pref)
        }
        _ => {}
    }
}

#[test]
fn engine_matches_reference_on_random_queries() {
    let base_seed: u64 = std::env::var("SPINDLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_1234);
    let libraries = 25;
    let queries_per_library = 450;
    let mut total = 0;
    for l in 0..libraries {
        let seed = base_seed.wrapping_add(l);
        let mut r = Rng(seed | 1);
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let n = 20 + r.below(120);
        let reference = build(&mut r, &db, n);
        // Index a random subset of keys, so both index and scan paths run.
        let idx: Vec<Op> = KEYS
            .iter()
            .filter(|_| r.chance(50))
            .map(|k| Op::CreateIndex((*k).to_owned()))
            .collect();
        db.commit(idx).unwrap();
        // Some deletes after indexing, so index maintenance is checked too.
        let lib_ids: Vec<u32> = reference.keys().copied().collect();
        let mut reference = reference;
        for _ in 0..3 {
            let id = *r.pick(&lib_ids);
            if reference.remove(&id).is_some() {
                db.commit(vec![Op::DeleteEntry(id)]).unwrap();
            }
        }
        let lib = db.read();
        // Incrementally maintained indexes equal freshly built ones.
        assert_eq!(lib.check(), Vec::<String>::new(), "seed {seed}");
        for q in 0..queries_per_library {
            let pref = if r.chance(20) {
                SourcePref::parse(r.word(&[
                    "client/*:plugin/*",
                    "server:*",
                    "plugin/vorbis:client/b",
                ]))
            } else {
                SourcePref::default()
            };
            let coll = rand_coll(&mut r, 3);
            let coll = wrap_ordered(&mut r, coll);
            let (want, ordered) = ref_eval(&reference, &coll, &pref);
            let got = lib.query_ids(&coll, &pref).unwrap();
            let mut got_ids = got.ids.clone();
            let mut want_ids = want.clone();
            if !ordered {
                got_ids.sort();
                want_ids.sort();
            }
            if got_ids != want_ids {
                report_leaves(&lib, &reference, &coll, &pref);
            }
            assert_eq!(
                got_ids, want_ids,
                "seed {seed} (SPINDLE_SEED={base_seed}, library {l}), query {q}: {coll:?} with {pref}"
            );
            total += 1;
        }
    }
    assert!(total >= 10_000);
}

/// Random changes to a library whose best-value columns exist: adds
/// (sometimes from a source never seen), deletes of values, keys and
/// entries, new entries. Applied to the database and the reference.
fn mutate(r: &mut Rng, db: &Db, reference: &mut BTreeMap<u32, RefEntry>, round: usize) {
    let mut ops = Vec::new();
    for _ in 0..1 + r.below(12) {
        let ids: Vec<u32> = reference.keys().copied().collect();
        match r.below(10) {
            0..=3 if !ids.is_empty() => {
                let id = *r.pick(&ids);
                let key = (*r.pick(KEYS)).to_owned();
                let source = if r.chance(10) {
                    format!("client/new{round}")
                } else {
                    (*r.pick(SOURCES)).to_owned()
                };
                let value = rand_value(r);
                let e = reference.get_mut(&id).unwrap();
                add_prop(e, id, key, source, value, &mut ops);
            }
            4 | 5 if !ids.is_empty() => {
                let id = *r.pick(&ids);
                let e = reference.get_mut(&id).unwrap();
                if e.is_empty() {
                    continue;
                }
                let (key, value, source) = e.remove(r.below(e.len()));
                ops.push(Op::DelProp {
                    entry: id,
                    key,
                    source,
                    value,
                });
            }
            6 if !ids.is_empty() => {
                let id = *r.pick(&ids);
                let key = (*r.pick(KEYS)).to_owned();
                let source = r.chance(50).then(|| (*r.pick(SOURCES)).to_owned());
                let e = reference.get_mut(&id).unwrap();
                e.retain(|(k, _, s)| !(*k == key && source.as_ref().is_none_or(|src| src == s)));
                ops.push(Op::DelKey {
                    entry: id,
                    key,
                    source,
                });
            }
            7 if !ids.is_empty() => {
                let id = *r.pick(&ids);
                reference.remove(&id);
                ops.push(Op::DeleteEntry(id));
            }
            _ => {
                let id = db.reserve_id();
                let e = rand_entry(r, id, 6, &mut ops);
                reference.insert(id, e);
            }
        }
        // Ops are validated as a batch; commit now so each op sees the
        // entries the reference sees.
        db.commit(std::mem::take(&mut ops)).unwrap();
    }
}

/// The read caches (best-value columns, built by scans and large
/// fetches) stay true while the library changes under them: queries and
/// fetched rows against the reference after every round of changes.
#[test]
fn queries_and_fetches_stay_true_while_the_library_changes() {
    let base_seed: u64 = std::env::var("SPINDLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xC01D_5EED);
    let mut checks = 0;
    for l in 0..12 {
        let seed = base_seed.wrapping_add(l);
        let mut r = Rng(seed | 1);
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let n = 20 + r.below(100);
        let mut reference = build(&mut r, &db, n);
        let idx: Vec<Op> = KEYS
            .iter()
            .filter(|_| r.chance(30))
            .map(|k| Op::CreateIndex((*k).to_owned()))
            .collect();
        db.commit(idx).unwrap();
        for round in 0..15 {
            {
                let lib = db.read();
                for q in 0..40 {
                    let pref = if r.chance(20) {
                        SourcePref::parse(r.word(&["client/*:plugin/*", "server:*"]))
                    } else {
                        SourcePref::default()
                    };
                    let coll = rand_coll(&mut r, 2);
                    let (want, _) = ref_eval(&reference, &coll, &pref);
                    let mut got = lib.query_ids(&coll, &pref).unwrap().ids;
                    got.sort();
                    let mut want = want;
                    want.sort();
                    assert_eq!(
                        got, want,
                        "seed {seed} (SPINDLE_SEED={base_seed}, library {l}), round {round}, query {q}: {coll:?} with {pref}"
                    );
                    checks += 1;
                }
                let ids: Vec<u32> = reference.keys().copied().collect();
                let pref = SourcePref::default();
                let mut fields = vec!["id"];
                fields.extend(KEYS);
                let rows = lib.fetch_rows(&ids, &fields, &pref);
                assert_eq!(rows.len(), ids.len());
                for (id, row) in ids.iter().zip(&rows) {
                    assert_eq!(row[0], Some(spindle_store::ValueRef::Int(i64::from(*id))));
                    for (key, got) in KEYS.iter().zip(&row[1..]) {
                        let best = best(&reference[id], key, &pref);
                        match got {
                            None => assert!(
                                best.is_empty(),
                                "seed {seed}, round {round}: entry {id} {key}: fetched nothing, want one of {best:?}"
                            ),
                            Some(v) => assert!(
                                best.contains(&&v.to_value()),
                                "seed {seed}, round {round}: entry {id} {key}: fetched {v:?}, want one of {best:?}"
                            ),
                        }
                    }
                    checks += 1;
                }
            }
            mutate(&mut r, &db, &mut reference, round);
        }
    }
    assert!(checks >= 5_000, "{checks}");
}
