//! The operations a transaction is made of, and their byte encoding
//! (shared by the log and tests; see `docs/store-format.md`).

use spindle_query::Value;

use crate::codec::{Reader, Writer};
use crate::error::FormatError;

/// One change to the library. A transaction is a list of these, applied
/// all or nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Create an (empty) entry with this id.
    CreateEntry(u32),
    /// Delete an entry and all its properties.
    DeleteEntry(u32),
    /// Add a property value (a no-op if the same triple is there).
    AddProp {
        entry: u32,
        key: String,
        source: String,
        value: Value,
    },
    /// Remove one property value.
    DelProp {
        entry: u32,
        key: String,
        source: String,
        value: Value,
    },
    /// Remove every value of `key` from `source` (or from every source).
    DelKey {
        entry: u32,
        key: String,
        source: Option<String>,
    },
    /// Index `key` in memory (remembered in the database).
    CreateIndex(String),
    /// Stop indexing `key`.
    DropIndex(String),
    /// Save a collection under a name, as its JSON form.
    SaveCollection { name: String, json: String },
    /// Forget a saved collection.
    DeleteCollection(String),
}

const T_CREATE: u8 = 1;
const T_DELETE: u8 = 2;
const T_ADD: u8 = 3;
const T_DEL: u8 = 4;
const T_DELKEY: u8 = 5;
const T_INDEX: u8 = 6;
const T_UNINDEX: u8 = 7;
const T_SAVE: u8 = 8;
const T_FORGET: u8 = 9;

pub(crate) fn write_value(w: &mut Writer, v: &Value) {
    match v {
        Value::Int(i) => {
            w.u8(0);
            w.ivarint(*i);
        }
        Value::Str(s) => {
            w.u8(1);
            w.str(s);
        }
    }
}

pub(crate) fn read_value(r: &mut Reader<'_>) -> Result<Value, FormatError> {
    match r.u8()? {
        0 => Ok(Value::Int(r.ivarint()?)),
        1 => Ok(Value::Str(r.str()?.to_owned())),
        t => Err(FormatError::new(format!("unknown value tag {t}"))),
    }
}

impl Op {
    /// The entry this operation changes, if it changes one.
    pub fn entry(&self) -> Option<u32> {
        match self {
            Op::CreateEntry(id) | Op::DeleteEntry(id) => Some(*id),
            Op::AddProp { entry, .. } | Op::DelProp { entry, .. } | Op::DelKey { entry, .. } => {
                Some(*entry)
            }
            Op::CreateIndex(_)
            | Op::DropIndex(_)
            | Op::SaveCollection { .. }
            | Op::DeleteCollection(_) => None,
        }
    }

    pub(crate) fn encode(&self, w: &mut Writer) {
        match self {
            Op::CreateEntry(id) => {
                w.u8(T_CREATE);
                w.varint(u64::from(*id));
            }
            Op::DeleteEntry(id) => {
                w.u8(T_DELETE);
                w.varint(u64::from(*id));
            }
            Op::AddProp {
                entry,
                key,
                source,
                value,
            }
            | Op::DelProp {
                entry,
                key,
                source,
                value,
            } => {
                w.u8(if matches!(self, Op::AddProp { .. }) {
                    T_ADD
                } else {
                    T_DEL
                });
                w.varint(u64::from(*entry));
                w.str(key);
                w.str(source);
                write_value(w, value);
            }
            Op::DelKey { entry, key, source } => {
                w.u8(T_DELKEY);
                w.varint(u64::from(*entry));
                w.str(key);
                match source {
                    Some(s) => {
                        w.u8(1);
                        w.str(s);
                    }
                    None => w.u8(0),
                }
            }
            Op::CreateIndex(k) => {
                w.u8(T_INDEX);
                w.str(k);
            }
            Op::DropIndex(k) => {
                w.u8(T_UNINDEX);
                w.str(k);
            }
            Op::SaveCollection { name, json } => {
                w.u8(T_SAVE);
                w.str(name);
                w.str(json);
            }
            Op::DeleteCollection(name) => {
                w.u8(T_FORGET);
                w.str(name);
            }
        }
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Op, FormatError> {
        let tag = r.u8()?;
        Ok(match tag {
            T_CREATE => Op::CreateEntry(r.u32()?),
            T_DELETE => Op::DeleteEntry(r.u32()?),
            T_ADD | T_DEL => {
                let entry = r.u32()?;
                let key = r.str()?.to_owned();
                let source = r.str()?.to_owned();
                let value = read_value(r)?;
                if tag == T_ADD {
                    Op::AddProp {
                        entry,
                        key,
                        source,
                        value,
                    }
                } else {
                    Op::DelProp {
                        entry,
                        key,
                        source,
                        value,
                    }
                }
            }
            T_DELKEY => {
                let entry = r.u32()?;
                let key = r.str()?.to_owned();
                let source = match r.u8()? {
                    0 => None,
                    _ => Some(r.str()?.to_owned()),
                };
                Op::DelKey { entry, key, source }
            }
            T_INDEX => Op::CreateIndex(r.str()?.to_owned()),
            T_UNINDEX => Op::DropIndex(r.str()?.to_owned()),
            T_SAVE => Op::SaveCollection {
                name: r.str()?.to_owned(),
                json: r.str()?.to_owned(),
            },
            T_FORGET => Op::DeleteCollection(r.str()?.to_owned()),
            t => return Err(FormatError::new(format!("unknown operation tag {t}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let ops = vec![
            Op::CreateEntry(7),
            Op::AddProp {
                entry: 7,
                key: "artist".into(),
                source: "plugin/id3v2".into(),
                value: "Motörhead".into(),
            },
            Op::AddProp {
                entry: 7,
                key: "tracknr".into(),
                source: "plugin/id3v2".into(),
                value: Value::Int(-3),
            },
            Op::DelProp {
                entry: 7,
                key: "x".into(),
                source: "s".into(),
                value: Value::Int(i64::MAX),
            },
            Op::DelKey {
                entry: 7,
                key: "x".into(),
                source: None,
            },
            Op::DeleteEntry(7),
            Op::CreateIndex("artist".into()),
            Op::DropIndex("artist".into()),
            Op::SaveCollection {
                name: "fav".into(),
                json: "{}".into(),
            },
            Op::DeleteCollection("fav".into()),
        ];
        let mut w = Writer::new();
        for op in &ops {
            op.encode(&mut w);
        }
        let bytes = w.into_inner();
        let mut r = Reader::new(&bytes);
        for op in &ops {
            assert_eq!(&Op::decode(&mut r).unwrap(), op);
        }
        assert!(r.is_empty());
    }
}
