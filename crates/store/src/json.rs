//! The library as JSON, the format of `spindle db import-json` and
//! `export-json`: an array of entry objects, one per entry.
//!
//! * `"KEY"` is a property of source `server`; `"SOURCE/KEY"` names the
//!   source (split at the last `/`, so `"client/me/rating"` is key
//!   `rating` of source `client/me`).
//! * A value is a string or an integer (`true`/`false` are 1/0, `null` is
//!   no value); an array holds several values of the key.
//! * `"id"` is the entry's id (a positive integer); without it, element
//!   `i` (from 0) is entry `i + 1`. Entries not in the library are
//!   created.
//!
//! [`export`] writes what [`import_ops`] reads back: the same entries,
//! ids and (key, value, source) properties.
//!
//! ```
//! use spindle_store::{json, Db};
//! let dir = tempfile::tempdir().unwrap();
//! let db = Db::open(dir.path()).unwrap();
//! let doc = serde_json::json!([{"artist": "Foo", "client/me/rating": 5}]);
//! let import = json::import_ops(&doc, &db.read()).unwrap();
//! assert_eq!((import.entries, import.properties), (1, 2));
//! db.commit(import.ops).unwrap();
//! assert_eq!(json::export(&db.read()), serde_json::json!([
//!     {"id": 1, "artist": "Foo", "client/me/rating": 5}
//! ]));
//! ```

use std::collections::HashSet;

use serde_json::{Map, Value as Json};
use spindle_query::Value;

use crate::model::Library;
use crate::op::Op;

/// The source of a key written without one.
pub const DEFAULT_SOURCE: &str = "server";

/// A document that is not the library's JSON format; each names the
/// element (from 0) it found the problem in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonImportError {
    #[error("expected a JSON array of entry objects")]
    NotAnArray,
    #[error("element {index} is not an object")]
    NotAnObject { index: usize },
    #[error("element {index}: \"id\" must be a positive integer")]
    BadId { index: usize },
    /// A key with an empty source or name (`"/x"`, `"src/"`, `""`).
    #[error("element {index}: bad key {key:?}")]
    BadKey { index: usize, key: String },
    #[error("element {index}, key {key:?}: {problem}")]
    BadValue {
        index: usize,
        key: String,
        problem: ValueProblem,
    },
    /// More elements than entry ids, without `"id"`s.
    #[error("element {index}: too many entries for an id without \"id\"")]
    TooMany { index: usize },
}

/// Why a JSON value is not a property value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueProblem {
    #[error("{0} is not an integer")]
    NotAnInteger(String),
    #[error("nested arrays are not values")]
    NestedArray,
    #[error("an object is not a value")]
    Object,
}

/// What an import does: the operations to commit, and how many entries
/// and property values they hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonImport {
    pub ops: Vec<Op>,
    /// Elements of the array.
    pub entries: usize,
    /// Property values added.
    pub properties: usize,
}

/// The operations that add the entries of `doc` to `lib` (creating the
/// entries it does not hold). Nothing is applied: commit `ops`.
pub fn import_ops(doc: &Json, lib: &Library) -> Result<JsonImport, JsonImportError> {
    let arr = doc.as_array().ok_or(JsonImportError::NotAnArray)?;
    let mut ops = Vec::new();
    let mut properties = 0;
    let mut created = HashSet::new();
    for (index, item) in arr.iter().enumerate() {
        let obj = item
            .as_object()
            .ok_or(JsonImportError::NotAnObject { index })?;
        let id = match obj.get("id") {
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n > 0)
                .ok_or(JsonImportError::BadId { index })?,
            None => u32::try_from(index + 1).map_err(|_| JsonImportError::TooMany { index })?,
        };
        if !lib.contains(id) && created.insert(id) {
            ops.push(Op::CreateEntry(id));
        }
        for (name, v) in obj {
            if name == "id" {
                continue;
            }
            let (source, key) = split_key(name);
            if key.is_empty() || source.is_empty() {
                return Err(JsonImportError::BadKey {
                    index,
                    key: name.clone(),
                });
            }
            let mut values = Vec::new();
            values_of(v, &mut values).map_err(|problem| JsonImportError::BadValue {
                index,
                key: name.clone(),
                problem,
            })?;
            properties += values.len();
            ops.extend(values.into_iter().map(|value| Op::AddProp {
                entry: id,
                key: key.to_owned(),
                source: source.to_owned(),
                value,
            }));
        }
    }
    Ok(JsonImport {
        ops,
        entries: arr.len(),
        properties,
    })
}

/// Every entry of `lib` as an object with its `"id"`, in id order; a key
/// with several values (or several sources' values under one name)
/// becomes an array.
pub fn export(lib: &Library) -> Json {
    let mut arr = Vec::with_capacity(lib.len());
    for id in lib.ids() {
        let mut m = Map::new();
        m.insert("id".into(), id.into());
        for (k, v, s) in lib.properties(id) {
            let name = if s == DEFAULT_SOURCE {
                k.to_owned()
            } else {
                format!("{s}/{k}")
            };
            let v = v.to_json();
            match m.get_mut(&name) {
                Some(Json::Array(a)) => a.push(v),
                Some(old) => {
                    let prev = old.take();
                    *old = Json::Array(vec![prev, v]);
                }
                None => {
                    m.insert(name, v);
                }
            }
        }
        arr.push(Json::Object(m));
    }
    Json::Array(arr)
}

/// `"KEY"` → (`server`, KEY); `"SOURCE/KEY"` splits at the last `/`.
fn split_key(k: &str) -> (&str, &str) {
    k.rsplit_once('/').unwrap_or((DEFAULT_SOURCE, k))
}

fn values_of(v: &Json, out: &mut Vec<Value>) -> Result<(), ValueProblem> {
    match v {
        Json::String(s) => out.push(Value::Str(s.clone())),
        Json::Number(n) => match n.as_i64() {
            Some(i) => out.push(Value::Int(i)),
            None => return Err(ValueProblem::NotAnInteger(n.to_string())),
        },
        Json::Array(a) => {
            for x in a {
                if x.is_array() {
                    return Err(ValueProblem::NestedArray);
                }
                values_of(x, out)?;
            }
        }
        Json::Bool(b) => out.push(Value::Int(i64::from(*b))),
        Json::Null => {}
        Json::Object(_) => return Err(ValueProblem::Object),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use spindle_query::SourcePref;

    use super::*;
    use crate::{Db, ValueRef};

    fn import(db: &Db, doc: &Json) -> Result<JsonImport, JsonImportError> {
        let plan = import_ops(doc, &db.read())?;
        db.commit(plan.ops.clone()).unwrap();
        Ok(plan)
    }

    #[test]
    fn an_export_imports_back_to_the_same_library() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let doc = json!([
            {"artist": "Foo", "tracknr": 3, "client/me/rating": 5},
            {"id": 7, "title": ["A", "B"], "plugin/id3v2/title": "A (id3)"},
        ]);
        import(&db, &doc).unwrap();
        let first = export(&db.read());
        assert_eq!(first[0]["id"], 1);
        assert_eq!(first[1]["title"], json!(["A", "B"]));

        let dir2 = tempfile::tempdir().unwrap();
        let copy = Db::open(dir2.path()).unwrap();
        import(&copy, &first).unwrap();
        assert_eq!(export(&copy.read()), first);
    }

    #[test]
    fn sources_come_from_the_last_slash_and_default_to_server() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        import(&db, &json!([{"artist": "Foo", "client/me/rating": 4}])).unwrap();
        let lib = db.read();
        let mut props = lib.properties(1);
        props.sort_by_key(|p| p.0);
        assert_eq!(
            props,
            [
                ("artist", ValueRef::Str("Foo"), "server"),
                ("rating", ValueRef::Int(4), "client/me"),
            ]
        );
        assert_eq!(split_key("a/b/c"), ("a/b", "c"));
    }

    #[test]
    fn integers_strings_booleans_and_null_keep_their_kind() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let plan = import(
            &db,
            &json!([{"n": 12, "s": "12", "yes": true, "no": false, "none": null}]),
        )
        .unwrap();
        assert_eq!(plan.properties, 4);
        let lib = db.read();
        let get = |k: &str| lib.get(1, k, &SourcePref::default());
        assert_eq!(get("n"), [ValueRef::Int(12)]);
        assert_eq!(get("s"), [ValueRef::Str("12")]);
        assert_eq!(get("yes"), [ValueRef::Int(1)]);
        assert_eq!(get("no"), [ValueRef::Int(0)]);
        assert!(get("none").is_empty());
    }

    #[test]
    fn an_array_is_several_values_of_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let plan = import(&db, &json!([{"genre": ["rock", "pop", 3]}])).unwrap();
        assert_eq!((plan.entries, plan.properties), (1, 3));
        let lib = db.read();
        let mut got = lib.get(1, "genre", &SourcePref::default());
        got.sort_by_key(|v| v.to_string());
        assert_eq!(
            got,
            [
                ValueRef::Int(3),
                ValueRef::Str("pop"),
                ValueRef::Str("rock")
            ]
        );
    }

    #[test]
    fn ids_are_given_or_counted_and_existing_entries_are_not_created_again() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        import(&db, &json!([{"a": 1}, {"a": 2}])).unwrap();
        // Entry 2 exists, entry 5 does not: one CreateEntry, even though 5
        // appears twice.
        let plan = import_ops(
            &json!([{"id": 2, "b": 1}, {"id": 5, "b": 2}, {"id": 5, "c": 3}]),
            &db.read(),
        )
        .unwrap();
        let creates: Vec<&Op> = plan
            .ops
            .iter()
            .filter(|o| matches!(o, Op::CreateEntry(_)))
            .collect();
        assert_eq!(creates, [&Op::CreateEntry(5)]);
        db.commit(plan.ops).unwrap();
        assert_eq!(db.read().ids().collect::<Vec<_>>(), [1, 2, 5]);
        for bad in [
            json!(0),
            json!(-1),
            json!("3"),
            json!(1.5),
            json!(1u64 << 33),
        ] {
            assert_eq!(
                import_ops(&json!([{}, {"id": bad}]), &db.read()),
                Err(JsonImportError::BadId { index: 1 })
            );
        }
    }

    #[test]
    fn errors_name_the_element_and_the_key() {
        let lib = Library::new();
        let err = |doc: Json| import_ops(&doc, &lib).unwrap_err().to_string();
        assert_eq!(
            err(json!({"a": 1})),
            "expected a JSON array of entry objects"
        );
        assert_eq!(err(json!([{}, 3])), "element 1 is not an object");
        assert_eq!(
            err(json!([{}, {}, {"id": "x"}])),
            "element 2: \"id\" must be a positive integer"
        );
        assert_eq!(err(json!([{"src/": 1}])), "element 0: bad key \"src/\"");
        assert_eq!(err(json!([{"/k": 1}])), "element 0: bad key \"/k\"");
        assert_eq!(
            err(json!([{}, {"n": 1.5}])),
            "element 1, key \"n\": 1.5 is not an integer"
        );
        assert_eq!(
            err(json!([{"n": [[1]]}])),
            "element 0, key \"n\": nested arrays are not values"
        );
        assert_eq!(
            err(json!([{"n": {"x": 1}}])),
            "element 0, key \"n\": an object is not a value"
        );
    }
}
