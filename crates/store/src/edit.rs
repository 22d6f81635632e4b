//! The edits of `spindle db add|set|delete`, each one transaction, and
//! the `KEY=VALUE` form they are written in.

use spindle_query::Value;

use crate::db::Db;
use crate::error::CommitError;
use crate::op::Op;

/// A `KEY=VALUE` argument that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AssignError {
    #[error("'{0}' is not KEY=VALUE")]
    NotKeyValue(String),
    #[error("'{0}' has an empty key")]
    EmptyKey(String),
}

/// A value as typed: digits are an integer unless `force_string`.
pub fn parse_value(s: &str, force_string: bool) -> Value {
    if force_string {
        Value::Str(s.to_owned())
    } else {
        spindle_query::value_from_str(s)
    }
}

/// `KEY=VALUE` (split at the first `=`) as a key and a [`parse_value`].
pub fn parse_assignment(s: &str, force_string: bool) -> Result<(String, Value), AssignError> {
    let Some((k, v)) = s.split_once('=') else {
        return Err(AssignError::NotKeyValue(s.to_owned()));
    };
    if k.is_empty() {
        return Err(AssignError::EmptyKey(s.to_owned()));
    }
    Ok((k.to_owned(), parse_value(v, force_string)))
}

impl Db {
    /// Adds `props` from `source` to entry `entry`, or to a new entry;
    /// returns the entry's id.
    pub fn add_props(
        &self,
        entry: Option<u32>,
        props: Vec<(String, Value)>,
        source: &str,
    ) -> Result<u32, CommitError> {
        let (entry, mut ops) = match entry {
            Some(id) => (id, Vec::new()),
            None => {
                let id = self.reserve_id();
                (id, vec![Op::CreateEntry(id)])
            }
        };
        ops.extend(props.into_iter().map(|(key, value)| Op::AddProp {
            entry,
            key,
            source: source.to_owned(),
            value,
        }));
        self.commit(ops)?;
        Ok(entry)
    }

    /// Replaces the values of `key` from `source` on `entry` by `value`.
    pub fn replace_prop(
        &self,
        entry: u32,
        key: &str,
        value: Value,
        source: &str,
    ) -> Result<(), CommitError> {
        self.commit(vec![
            Op::DelKey {
                entry,
                key: key.to_owned(),
                source: Some(source.to_owned()),
            },
            Op::AddProp {
                entry,
                key: key.to_owned(),
                source: source.to_owned(),
                value,
            },
        ])
    }

    /// Deletes `entry`, or only its `key` (from `source`, else from every
    /// source).
    pub fn delete(
        &self,
        entry: u32,
        key: Option<&str>,
        source: Option<&str>,
    ) -> Result<(), CommitError> {
        let op = match key {
            Some(key) => Op::DelKey {
                entry,
                key: key.to_owned(),
                source: source.map(str::to_owned),
            },
            None => Op::DeleteEntry(entry),
        };
        self.commit(vec![op])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_query::SourcePref;

    #[test]
    fn assignments_split_at_the_first_equals_sign() {
        assert_eq!(
            parse_assignment("tracknr=3", false),
            Ok(("tracknr".into(), Value::Int(3)))
        );
        assert_eq!(
            parse_assignment("tracknr=3", true),
            Ok(("tracknr".into(), Value::Str("3".into())))
        );
        assert_eq!(
            parse_assignment("a=b=c", false),
            Ok(("a".into(), Value::Str("b=c".into())))
        );
        assert_eq!(
            parse_assignment("x", false).map_err(|e| e.to_string()),
            Err("'x' is not KEY=VALUE".into())
        );
        assert_eq!(
            parse_assignment("=1", false).map_err(|e| e.to_string()),
            Err("'=1' has an empty key".into())
        );
    }

    #[test]
    fn add_replace_and_delete() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let props = vec![("artist".into(), Value::Str("Foo".into()))];
        let id = db.add_props(None, props, "client/cli").unwrap();
        db.add_props(Some(id), vec![("n".into(), Value::Int(1))], "other")
            .unwrap();
        db.replace_prop(id, "n", Value::Int(2), "client/cli")
            .unwrap();
        let get = |k| {
            let lib = db.read();
            let v: Vec<String> = lib
                .get(id, k, &SourcePref::parse("*"))
                .iter()
                .map(|v| v.to_string())
                .collect();
            v
        };
        let mut n = get("n");
        n.sort();
        assert_eq!(n, ["1", "2"]);
        db.delete(id, Some("n"), Some("other")).unwrap();
        assert_eq!(get("n"), ["2"]);
        db.delete(id, Some("n"), None).unwrap();
        assert!(get("n").is_empty());
        db.delete(id, None, None).unwrap();
        assert!(!db.read().contains(id));
    }
}
