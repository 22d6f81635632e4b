//! Fetch specifications: shaping the selected entries into a result.
//!
//! Results are JSON values. `metadata` nests dicts by its `get` list
//! (`[id, field, value]` gives `{id: {field: value}}`), the last element
//! being the leaf; values of several entries are folded by the aggregate.

use std::collections::BTreeSet;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::{Map, Value as Json};
use spindle_query::{Aggregate, ClusterBy, FetchSpec, Get, SourcePref};

use crate::model::{Library, ValueRef};

pub(crate) fn fetch(lib: &Library, spec: &FetchSpec, ids: &[u32], pref: &SourcePref) -> Json {
    match spec {
        FetchSpec::Count => Json::from(ids.len()),
        FetchSpec::Organize(children) => {
            let mut m = Map::new();
            for (name, child) in children {
                let v = fetch(lib, child, ids, pref);
                if !v.is_null() {
                    m.insert(name.clone(), v);
                }
            }
            Json::Object(m)
        }
        FetchSpec::Metadata {
            fields,
            get,
            aggregate,
            sourcepref,
        } => metadata(
            lib,
            ids,
            fields.as_deref(),
            get,
            *aggregate,
            sourcepref.as_ref().unwrap_or(pref),
        ),
        FetchSpec::ClusterList {
            by,
            fallback,
            data,
            sourcepref,
        }
        | FetchSpec::ClusterDict {
            by,
            fallback,
            data,
            sourcepref,
        } => {
            let pref = sourcepref.as_ref().unwrap_or(pref);
            let clusters = cluster(lib, ids, by, fallback.as_ref(), pref);
            if matches!(spec, FetchSpec::ClusterList { .. }) {
                Json::Array(
                    clusters
                        .iter()
                        .map(|(_, members)| fetch(lib, data, members, pref))
                        .collect(),
                )
            } else {
                let mut m = Map::new();
                for (key, members) in &clusters {
                    m.insert(key.clone(), fetch(lib, data, members, pref));
                }
                Json::Object(m)
            }
        }
    }
}

/// Group ids into clusters, in order of first appearance.
fn cluster(
    lib: &Library,
    ids: &[u32],
    by: &ClusterBy,
    fallback: Option<&Json>,
    pref: &SourcePref,
) -> Vec<(String, Vec<u32>)> {
    let mut order: Vec<(String, Vec<u32>)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let fallback_key = fallback.map(|f| match f {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    });
    let ranks = lib.ranks(pref);
    let key_id = match by {
        ClusterBy::Value(field) => lib.keys.get(field),
        _ => None,
    };
    for (pos, &id) in ids.iter().enumerate() {
        let key = match by {
            ClusterBy::Id => Some(id.to_string()),
            ClusterBy::Position => Some(pos.to_string()),
            ClusterBy::Value(_) => key_id.and_then(|k| {
                lib.entry(id).and_then(|props| {
                    Library::best(props, k, &ranks)
                        .next()
                        .map(|p| lib.value_ref(p.val).to_string())
                })
            }),
        };
        let Some(key) = key.or_else(|| fallback_key.clone()) else {
            continue;
        };
        match index.get(&key) {
            Some(&i) => order[i].1.push(id),
            None => {
                index.insert(key.clone(), order.len());
                order.push((key, vec![id]));
            }
        }
    }
    order
}

/// One (id, field, value, source) row a metadata fetch sees.
struct Row<'a> {
    id: u32,
    field: &'a str,
    value: ValueRef<'a>,
    source: &'a str,
}

fn metadata(
    lib: &Library,
    ids: &[u32],
    fields: Option<&[String]>,
    get: &[Get],
    aggregate: Aggregate,
    pref: &SourcePref,
) -> Json {
    let ranks = lib.ranks(pref);
    let mut rows: Vec<Row<'_>> = Vec::new();
    for &id in ids {
        let Some(props) = lib.entry(id) else { continue };
        match fields {
            Some(fields) => {
                for f in fields {
                    if f == "id" || f == crate::model::PARENT_KEY {
                        rows.push(Row {
                            id,
                            field: f,
                            value: ValueRef::Int(i64::from(id)),
                            source: "server",
                        });
                        continue;
                    }
                    let Some(k) = lib.keys.get(f) else { continue };
                    for p in Library::best(props, k, &ranks) {
                        rows.push(Row {
                            id,
                            field: lib.keys.resolve(p.key),
                            value: lib.value_ref(p.val),
                            source: lib.sources.resolve(u32::from(p.src)),
                        });
                    }
                }
            }
            None => {
                // Every key, best source each; the id always.
                if get.contains(&Get::Id) && get.len() == 1 {
                    rows.push(Row {
                        id,
                        field: "id",
                        value: ValueRef::Int(i64::from(id)),
                        source: "server",
                    });
                    continue;
                }
                let mut i = 0;
                while i < props.len() {
                    let k = props[i].key;
                    let n = props[i..].partition_point(|p| p.key == k);
                    for p in Library::best(&props[i..i + n], k, &ranks) {
                        rows.push(Row {
                            id,
                            field: lib.keys.resolve(p.key),
                            value: lib.value_ref(p.val),
                            source: lib.sources.resolve(u32::from(p.src)),
                        });
                    }
                    i += n;
                }
            }
        }
    }
    nest(&rows, get, aggregate)
}

fn part(row: &Row<'_>, g: Get) -> Json {
    match g {
        Get::Id => Json::from(row.id),
        Get::Field => Json::from(row.field),
        Get::Value => row.value.to_json(),
        Get::Source => Json::from(row.source),
    }
}

fn part_key(row: &Row<'_>, g: Get) -> String {
    match g {
        Get::Id => row.id.to_string(),
        Get::Field => row.field.to_owned(),
        Get::Value => row.value.to_string(),
        Get::Source => row.source.to_owned(),
    }
}

fn nest(rows: &[Row<'_>], get: &[Get], aggregate: Aggregate) -> Json {
    match get {
        [] => Json::Null,
        [leaf] => aggregate_rows(rows, *leaf, aggregate),
        [level, rest @ ..] => {
            let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
            let mut index: std::collections::HashMap<String, usize> =
                std::collections::HashMap::new();
            for (i, r) in rows.iter().enumerate() {
                let k = part_key(r, *level);
                match index.get(&k) {
                    Some(&g) => groups[g].1.push(i),
                    None => {
                        index.insert(k.clone(), groups.len());
                        groups.push((k, vec![i]));
                    }
                }
            }
            if groups.is_empty() {
                return Json::Null;
            }
            let mut m = Map::new();
            for (k, members) in groups {
                let sub: Vec<Row<'_>> = members
                    .iter()
                    .map(|&i| Row {
                        id: rows[i].id,
                        field: rows[i].field,
                        value: rows[i].value,
                        source: rows[i].source,
                    })
                    .collect();
                m.insert(k, nest(&sub, rest, aggregate));
            }
            Json::Object(m)
        }
    }
}

fn aggregate_rows(rows: &[Row<'_>], leaf: Get, aggregate: Aggregate) -> Json {
    if rows.is_empty() {
        return Json::Null;
    }
    let ints = || {
        rows.iter().filter_map(|r| match (leaf, r.value) {
            (Get::Value, ValueRef::Int(i)) => Some(i),
            (Get::Id, _) => Some(i64::from(r.id)),
            _ => None,
        })
    };
    match aggregate {
        Aggregate::First => part(&rows[0], leaf),
        Aggregate::List => Json::Array(rows.iter().map(|r| part(r, leaf)).collect()),
        Aggregate::Set => {
            let mut seen = BTreeSet::new();
            Json::Array(
                rows.iter()
                    .map(|r| part(r, leaf))
                    .filter(|v| seen.insert(v.to_string()))
                    .collect(),
            )
        }
        Aggregate::Random => {
            let mut rng = rand::rngs::SmallRng::from_entropy();
            rows.choose(&mut rng).map_or(Json::Null, |r| part(r, leaf))
        }
        Aggregate::Sum => {
            let mut it = ints().peekable();
            if it.peek().is_none() {
                return Json::Null;
            }
            Json::from(it.fold(0i64, i64::wrapping_add))
        }
        Aggregate::Max => ints().max().map_or(Json::Null, Json::from),
        Aggregate::Min => ints().min().map_or(Json::Null, Json::from),
        Aggregate::Avg => {
            let (sum, n) = ints().fold((0f64, 0u64), |(s, n), i| (s + i as f64, n + 1));
            if n == 0 {
                Json::Null
            } else {
                Json::from(sum / n as f64)
            }
        }
    }
}
