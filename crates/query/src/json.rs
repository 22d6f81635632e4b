//! XMMS2's JSON forms: collections, fetch specifications, and the relaxed
//! JSON they are often written in (unquoted keys and words).
//!
//! A collection is `{"type": T, "attributes": {..}, "operands": [..]}`
//! (plus `"idlist": [..]` for an idlist), as XMMS2 serialises them and as
//! its `tests/server/medialib/*.json` use them. Attribute values are strings
//! in XMMS2 (`"start": "1"`); numbers are accepted too. Filter values follow
//! the parser's rule ([`value_from_str`]): `"value": "1"` is the integer 1.
//!
//! Decisions: a filter without operands filters the universe; the
//! reference `"All Media"` is the universe (XMMS2's `is_universe`);
//! `order` of type `random` without a seed uses seed 0; a `cluster-fallback`
//! of `null` means none; an `organize` source preference is handed down to
//! each child that has none of its own (`Organize` carries no preference).

use serde_json::{Map, Value as Json};

use crate::ast::{CmpOp, Coll, Field, Filter, FilterOp, OrderBy};
use crate::error::JsonError;
use crate::fetch::{Aggregate, ClusterBy, FetchSpec, Get};
use crate::parser::value_from_str;
use crate::sourcepref::SourcePref;

/// How deeply collections and fetch specifications may nest.
pub const MAX_JSON_DEPTH: usize = 128;

const COLL: &str = "collection";
const FETCH: &str = "fetch specification";
const COLL_TYPES: &str = "universe, equals, match, token, has, smaller, smallereq, greater, \
    greatereq, union, intersection, complement, order, limit, mediaset, idlist, reference";
const FETCH_TYPES: &str = "metadata, cluster-list, cluster-dict, organize, count";

/// A collection from its XMMS2 JSON form.
pub fn coll_from_json(v: &Json) -> Result<Coll, JsonError> {
    coll(v, "$", 0)
}

/// A fetch specification from its XMMS2 JSON form.
pub fn fetch_from_json(v: &Json) -> Result<FetchSpec, JsonError> {
    fetch(v, "$", 0)
}

fn invalid(what: &'static str, path: &str, message: impl Into<String>) -> JsonError {
    JsonError::Invalid {
        what,
        path: path.to_owned(),
        message: message.into(),
    }
}

/// `path.key`, or `path["odd key"]`.
fn child(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{key:?}]")
    }
}

/// A one-word description of a JSON value, for messages.
fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

fn object<'a>(
    what: &'static str,
    v: &'a Json,
    path: &str,
    example: &str,
) -> Result<&'a Map<String, Json>, JsonError> {
    v.as_object().ok_or_else(|| {
        invalid(
            what,
            path,
            format!("expected an object like {example}, found {}", kind(v)),
        )
    })
}

/// A key's value, with `null` read as absent.
fn get<'a>(obj: &'a Map<String, Json>, key: &str) -> Option<&'a Json> {
    obj.get(key).filter(|v| !v.is_null())
}

/// A string, or a number as its text (XMMS2 attributes are strings).
fn text(what: &'static str, v: &Json, path: &str) -> Result<String, JsonError> {
    match v {
        Json::String(s) => Ok(s.clone()),
        Json::Number(n) => Ok(n.to_string()),
        _ => Err(invalid(
            what,
            path,
            format!("expected a string, found {}", kind(v)),
        )),
    }
}

fn opt_text(
    what: &'static str,
    obj: &Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<Option<String>, JsonError> {
    get(obj, key)
        .map(|v| text(what, v, &child(path, key)))
        .transpose()
}

fn req_text(
    what: &'static str,
    obj: &Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<String, JsonError> {
    opt_text(what, obj, key, path)?.ok_or_else(|| invalid(what, path, format!("missing {key:?}")))
}

/// A list of strings, or one string (`"a:b"` split on `split` if given).
fn strings(
    what: &'static str,
    v: &Json,
    path: &str,
    split: Option<char>,
) -> Result<Vec<String>, JsonError> {
    match v {
        Json::String(s) => Ok(match split {
            Some(c) => s
                .split(c)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
            None => vec![s.clone()],
        }),
        Json::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Json::String(s) => Ok(s.clone()),
                _ => Err(invalid(
                    what,
                    &format!("{path}[{i}]"),
                    format!("expected a string, found {}", kind(item)),
                )),
            })
            .collect(),
        _ => Err(invalid(
            what,
            path,
            format!("expected a list of strings, found {}", kind(v)),
        )),
    }
}

/// A source preference: a list of globs or a colon-separated string; an
/// empty one means "inherit".
fn sourcepref(
    what: &'static str,
    obj: &Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<Option<SourcePref>, JsonError> {
    let Some(v) = get(obj, key) else {
        return Ok(None);
    };
    let patterns = strings(what, v, &child(path, key), Some(':'))?;
    Ok((!patterns.is_empty()).then(|| SourcePref::from_patterns(patterns)))
}

/// A non-negative integer from a number or a numeric string.
fn count_attr(obj: &Map<String, Json>, key: &str, path: &str) -> Result<Option<usize>, JsonError> {
    let Some(s) = opt_text(COLL, obj, key, path)? else {
        return Ok(None);
    };
    s.parse::<usize>().map(Some).map_err(|_| {
        invalid(
            COLL,
            &child(path, key),
            format!("expected a non-negative integer, found {s:?}"),
        )
    })
}

fn coll(v: &Json, path: &str, depth: usize) -> Result<Coll, JsonError> {
    if depth > MAX_JSON_DEPTH {
        return Err(invalid(
            COLL,
            path,
            format!("nested more than {MAX_JSON_DEPTH} levels deep"),
        ));
    }
    let obj = object(COLL, v, path, r#"{"type": "universe"}"#)?;
    let ty = req_text(COLL, obj, "type", path)?;
    let empty = Map::new();
    let attrs = match get(obj, "attributes") {
        None => &empty,
        Some(a) => object(
            COLL,
            a,
            &child(path, "attributes"),
            r#"{"field": "artist"}"#,
        )?,
    };
    let apath = child(path, "attributes");
    let operands = match get(obj, "operands") {
        None => Vec::new(),
        Some(Json::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| coll(item, &format!("{path}.operands[{i}]"), depth + 1))
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(invalid(
                COLL,
                &child(path, "operands"),
                format!("expected a list of collections, found {}", kind(other)),
            ))
        }
    };
    let one_operand = |mut operands: Vec<Coll>| -> Result<Box<Coll>, JsonError> {
        match operands.len() {
            1 => Ok(Box::new(operands.remove(0))),
            n => Err(invalid(
                COLL,
                path,
                format!("a {ty} takes exactly one operand, found {n}"),
            )),
        }
    };
    Ok(match ty.as_str() {
        "universe" => Coll::Universe,
        "equals" | "match" | "token" | "has" | "smaller" | "smallereq" | "greater"
        | "greatereq" => {
            let filter = filter(&ty, attrs, &apath)?;
            let operand = match operands.len() {
                0 => Box::new(Coll::Universe),
                _ => one_operand(operands)?,
            };
            Coll::Filter { filter, operand }
        }
        "union" => Coll::Union(operands),
        "intersection" => Coll::Intersection(operands),
        "complement" => Coll::Complement(one_operand(operands)?),
        "mediaset" => Coll::Mediaset(one_operand(operands)?),
        "order" => {
            let by = match opt_text(COLL, attrs, "type", &apath)?.as_deref() {
                None | Some("value") => {
                    let Some(field) = get(attrs, "field") else {
                        return Err(invalid(
                            COLL,
                            &apath,
                            "missing \"field\" (an order by value needs the field to sort by)",
                        ));
                    };
                    let fields = strings(COLL, field, &child(&apath, "field"), None)?;
                    if fields.is_empty() {
                        return Err(invalid(
                            COLL,
                            &child(&apath, "field"),
                            "expected at least one field",
                        ));
                    }
                    OrderBy::Value(fields)
                }
                Some("id") => OrderBy::Id,
                Some("random") => OrderBy::Random(seed(attrs, &apath)?),
                Some(other) => {
                    return Err(invalid(
                        COLL,
                        &child(&apath, "type"),
                        format!("expected \"value\", \"id\" or \"random\", found {other:?}"),
                    ))
                }
            };
            let descending = match opt_text(COLL, attrs, "direction", &apath)?.as_deref() {
                None | Some("ASC") => false,
                Some("DESC") => true,
                Some(other) => {
                    return Err(invalid(
                        COLL,
                        &child(&apath, "direction"),
                        format!("expected \"ASC\" or \"DESC\", found {other:?}"),
                    ))
                }
            };
            Coll::Order {
                by,
                descending,
                operand: one_operand(operands)?,
            }
        }
        "limit" => Coll::Limit {
            start: count_attr(attrs, "start", &apath)?.unwrap_or(0),
            length: count_attr(attrs, "length", &apath)?,
            operand: one_operand(operands)?,
        },
        "idlist" => Coll::IdList(idlist(obj, path)?),
        "reference" => {
            let name = req_text(COLL, attrs, "reference", &apath)?;
            if name == "All Media" {
                Coll::Universe
            } else {
                Coll::Reference(name)
            }
        }
        _ => {
            return Err(JsonError::UnknownType {
                what: COLL,
                path: child(path, "type"),
                found: ty,
                expected: COLL_TYPES,
            })
        }
    })
}

fn filter(ty: &str, attrs: &Map<String, Json>, apath: &str) -> Result<Filter, JsonError> {
    let field = match opt_text(COLL, attrs, "type", apath)?.as_deref() {
        None | Some("value") => Field::Key(required(
            attrs,
            "field",
            apath,
            &format!("the property this {ty} filter tests"),
        )?),
        Some("id") => Field::Id,
        Some(other) => {
            return Err(invalid(
                COLL,
                &child(apath, "type"),
                format!("expected \"value\" or \"id\", found {other:?}"),
            ))
        }
    };
    let value = || {
        required(
            attrs,
            "value",
            apath,
            &format!("the value this {ty} filter compares with"),
        )
    };
    let cmp =
        |op| -> Result<FilterOp, JsonError> { Ok(FilterOp::Cmp(op, value_from_str(&value()?))) };
    let op = match ty {
        "equals" => FilterOp::Equals(value_from_str(&value()?)),
        "match" => FilterOp::Match(value()?),
        "token" => FilterOp::Token(value()?),
        "has" => FilterOp::Has,
        "smaller" => cmp(CmpOp::Lt)?,
        "smallereq" => cmp(CmpOp::Le)?,
        "greater" => cmp(CmpOp::Gt)?,
        _ => cmp(CmpOp::Ge)?,
    };
    let case_sensitive = match opt_text(COLL, attrs, "collation", apath)?.as_deref() {
        None | Some("NOCASE") | Some("NATCOLL") => false,
        Some("BINARY") => true,
        Some(other) => {
            return Err(invalid(
                COLL,
                &child(apath, "collation"),
                format!("expected \"BINARY\", \"NOCASE\" or \"NATCOLL\", found {other:?}"),
            ))
        }
    };
    Ok(Filter {
        field,
        op,
        case_sensitive,
        sourcepref: sourcepref(COLL, attrs, "source-preference", apath)?,
    })
}

/// A required attribute, with a hint of what it is for when missing.
fn required(
    attrs: &Map<String, Json>,
    key: &str,
    apath: &str,
    purpose: &str,
) -> Result<String, JsonError> {
    match get(attrs, key) {
        Some(v) => text(COLL, v, &child(apath, key)),
        None => Err(invalid(COLL, apath, format!("missing {key:?} ({purpose})"))),
    }
}

fn seed(attrs: &Map<String, Json>, apath: &str) -> Result<u64, JsonError> {
    let Some(s) = opt_text(COLL, attrs, "seed", apath)? else {
        return Ok(0);
    };
    s.parse::<u64>()
        .or_else(|_| s.parse::<i64>().map(|n| n as u64))
        .map_err(|_| {
            invalid(
                COLL,
                &child(apath, "seed"),
                format!("expected an integer, found {s:?}"),
            )
        })
}

fn idlist(obj: &Map<String, Json>, path: &str) -> Result<Vec<u32>, JsonError> {
    let lpath = child(path, "idlist");
    match get(obj, "idlist") {
        None => Ok(Vec::new()),
        Some(Json::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let id = match item {
                    Json::Number(n) => n.as_u64(),
                    Json::String(s) => s.parse::<u64>().ok(),
                    _ => None,
                };
                id.and_then(|id| u32::try_from(id).ok()).ok_or_else(|| {
                    invalid(
                        COLL,
                        &format!("{lpath}[{i}]"),
                        format!("expected an entry id (0 to {}), found {item}", u32::MAX),
                    )
                })
            })
            .collect(),
        Some(other) => Err(invalid(
            COLL,
            &lpath,
            format!("expected a list of ids, found {}", kind(other)),
        )),
    }
}

fn fetch(v: &Json, path: &str, depth: usize) -> Result<FetchSpec, JsonError> {
    if depth > MAX_JSON_DEPTH {
        return Err(invalid(
            FETCH,
            path,
            format!("nested more than {MAX_JSON_DEPTH} levels deep"),
        ));
    }
    let obj = object(FETCH, v, path, r#"{"type": "count"}"#)?;
    let ty = opt_text(FETCH, obj, "type", path)?.unwrap_or_else(|| "metadata".into());
    let sp = sourcepref(FETCH, obj, "source-preference", path)?;
    Ok(match ty.as_str() {
        "metadata" => FetchSpec::Metadata {
            fields: fields(obj, path)?,
            get: gets(obj, path)?,
            aggregate: aggregate(obj, path)?,
            sourcepref: sp,
        },
        "cluster-list" | "cluster-dict" => {
            let by =
                match opt_text(FETCH, obj, "cluster-by", path)?.as_deref() {
                    None | Some("value") => match get(obj, "cluster-field") {
                        Some(v) => ClusterBy::Value(text(FETCH, v, &child(path, "cluster-field"))?),
                        None => return Err(invalid(
                            FETCH,
                            path,
                            "missing \"cluster-field\" (needed when \"cluster-by\" is \"value\")",
                        )),
                    },
                    Some("id") => ClusterBy::Id,
                    Some("position") => ClusterBy::Position,
                    Some(other) => {
                        return Err(invalid(
                            FETCH,
                            &child(path, "cluster-by"),
                            format!("expected \"value\", \"id\" or \"position\", found {other:?}"),
                        ))
                    }
                };
            let Some(data) = get(obj, "data") else {
                return Err(invalid(
                    FETCH,
                    path,
                    format!(
                        "a {ty} needs \"data\", the fetch specification for each cluster \
                         (like {{\"type\": \"count\"}})"
                    ),
                ));
            };
            let data = Box::new(fetch(data, &child(path, "data"), depth + 1)?);
            let fallback = get(obj, "cluster-fallback").cloned();
            if ty == "cluster-list" {
                FetchSpec::ClusterList {
                    by,
                    fallback,
                    data,
                    sourcepref: sp,
                }
            } else {
                FetchSpec::ClusterDict {
                    by,
                    fallback,
                    data,
                    sourcepref: sp,
                }
            }
        }
        "organize" => {
            let dpath = child(path, "data");
            let Some(data) = get(obj, "data") else {
                return Err(invalid(
                    FETCH,
                    path,
                    "an organize needs \"data\", an object of named fetch specifications",
                ));
            };
            let data = object(FETCH, data, &dpath, r#"{"tracks": {"type": "count"}}"#)?;
            let mut children = Vec::with_capacity(data.len());
            for (name, spec) in data {
                let mut spec = fetch(spec, &child(&dpath, name), depth + 1)?;
                if let Some(sp) = &sp {
                    inherit(&mut spec, sp);
                }
                children.push((name.clone(), spec));
            }
            FetchSpec::Organize(children)
        }
        "count" => FetchSpec::Count,
        _ => {
            return Err(JsonError::UnknownType {
                what: FETCH,
                path: child(path, "type"),
                found: ty,
                expected: FETCH_TYPES,
            })
        }
    })
}

/// Give `spec` the preference `sp` where it has none of its own.
fn inherit(spec: &mut FetchSpec, sp: &SourcePref) {
    match spec {
        FetchSpec::Metadata { sourcepref, .. }
        | FetchSpec::ClusterList { sourcepref, .. }
        | FetchSpec::ClusterDict { sourcepref, .. } => {
            if sourcepref.is_none() {
                *sourcepref = Some(sp.clone());
            }
        }
        FetchSpec::Organize(children) => {
            for (_, child) in children {
                inherit(child, sp);
            }
        }
        FetchSpec::Count => {}
    }
}

fn fields(obj: &Map<String, Json>, path: &str) -> Result<Option<Vec<String>>, JsonError> {
    let Some(v) = get(obj, "fields") else {
        return Ok(None);
    };
    let fpath = child(path, "fields");
    let fields = strings(FETCH, v, &fpath, None)?;
    for (i, f) in fields.iter().enumerate() {
        if fields[..i].contains(f) {
            return Err(invalid(
                FETCH,
                &format!("{fpath}[{i}]"),
                format!("duplicate field {f:?}; each field may be listed once"),
            ));
        }
    }
    // No fields means every field (XMMS2).
    Ok((!fields.is_empty()).then_some(fields))
}

fn gets(obj: &Map<String, Json>, path: &str) -> Result<Vec<Get>, JsonError> {
    let Some(v) = get(obj, "get") else {
        return Ok(vec![Get::Value]);
    };
    let gpath = child(path, "get");
    let names = strings(FETCH, v, &gpath, None)?;
    if names.is_empty() {
        return Err(invalid(
            FETCH,
            &gpath,
            "expected a non-empty list of \"id\", \"field\", \"value\", \"source\"",
        ));
    }
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let g = match name.as_str() {
            "id" => Get::Id,
            "field" => Get::Field,
            "value" => Get::Value,
            "source" => Get::Source,
            _ => {
                return Err(invalid(
                    FETCH,
                    &format!("{gpath}[{i}]"),
                    format!(
                        "unknown \"get\" entry {name:?}; expected \"id\", \"field\", \"value\" or \"source\""
                    ),
                ))
            }
        };
        if out.contains(&g) {
            return Err(invalid(
                FETCH,
                &format!("{gpath}[{i}]"),
                format!("duplicate \"get\" entry {name:?}; each may appear once"),
            ));
        }
        out.push(g);
    }
    Ok(out)
}

fn aggregate(obj: &Map<String, Json>, path: &str) -> Result<Aggregate, JsonError> {
    let Some(v) = get(obj, "aggregate") else {
        return Ok(Aggregate::First);
    };
    let apath = child(path, "aggregate");
    let Json::String(name) = v else {
        return Err(invalid(
            FETCH,
            &apath,
            format!("expected a string, found {}", kind(v)),
        ));
    };
    Aggregate::parse(name).ok_or_else(|| {
        invalid(
            FETCH,
            &apath,
            format!(
                "unknown aggregate {name:?}; expected one of first, sum, max, min, set, list, random, avg"
            ),
        )
    })
}

/// Parse strict JSON, or the relaxed form people write: keys and
/// bare-word values need no quotes (`{type:cluster-dict,
/// cluster-field:album, data:{type:count}}`), a trailing comma is allowed.
/// A bare word that reads as a JSON number is that number; `true`,
/// `false` and `null` are themselves; anything else is a string. A bare
/// value may hold `:` (`source-preference:client/*:plugin/*`) but no
/// space, comma, bracket, brace or quote.
pub fn parse_relaxed_json(s: &str) -> Result<Json, JsonError> {
    if let Ok(v) = serde_json::from_str(s) {
        return Ok(v);
    }
    let chars: Vec<char> = s.chars().collect();
    let mut p = Relaxed {
        chars: &chars,
        pos: 0,
    };
    let v = p.value(0)?;
    p.skip_ws();
    if p.pos < chars.len() {
        return Err(p.error("expected the end of the document after the value"));
    }
    Ok(v)
}

struct Relaxed<'a> {
    chars: &'a [char],
    pos: usize,
}

impl Relaxed<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn error(&self, message: &str) -> JsonError {
        self.error_at(self.pos, message)
    }

    fn error_at(&self, pos: usize, message: &str) -> JsonError {
        let before = &self.chars[..pos.min(self.chars.len())];
        let line = before.iter().filter(|c| **c == '\n').count() + 1;
        let column = before.iter().rev().take_while(|c| **c != '\n').count() + 1;
        let found = match self.chars.get(pos) {
            Some(c) => format!("found {c:?}"),
            None => "found the end of the document".to_owned(),
        };
        JsonError::Syntax {
            line,
            column,
            message: format!("{message}, {found}"),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > MAX_JSON_DEPTH {
            return Err(self.error(&format!("nested more than {MAX_JSON_DEPTH} levels deep")));
        }
        self.skip_ws();
        match self.peek() {
            Some('{') => self.object(depth),
            Some('[') => self.array(depth),
            Some('"') => self.string().map(Json::String),
            Some(c) if !is_delimiter(c) => Ok(bare_value(&self.word(true))),
            _ => Err(self.error("expected a value")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, JsonError> {
        self.pos += 1;
        let mut map = Map::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some('}') => {
                    self.pos += 1;
                    return Ok(Json::Object(map));
                }
                Some('"') => {
                    let key = self.string()?;
                    self.member(key, &mut map, depth)?;
                }
                Some(c) if !is_delimiter(c) => {
                    let key = self.word(false);
                    self.member(key, &mut map, depth)?;
                }
                _ => return Err(self.error("expected a key or '}'")),
            }
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some('}') => {}
                _ => return Err(self.error("expected ',' or '}' after a value in an object")),
            }
        }
    }

    fn member(
        &mut self,
        key: String,
        map: &mut Map<String, Json>,
        depth: usize,
    ) -> Result<(), JsonError> {
        self.skip_ws();
        if self.peek() != Some(':') {
            return Err(self.error(&format!("expected ':' after the key {key:?}")));
        }
        self.pos += 1;
        let v = self.value(depth + 1)?;
        map.insert(key, v);
        Ok(())
    }

    fn array(&mut self, depth: usize) -> Result<Json, JsonError> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            if self.peek() == Some(']') {
                self.pos += 1;
                return Ok(Json::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(']') => {}
                _ => return Err(self.error("expected ',' or ']' after a value in a list")),
            }
        }
    }

    /// A double-quoted JSON string, decoded by serde_json itself.
    fn string(&mut self) -> Result<String, JsonError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err(self.error_at(start, "unterminated string")),
                Some('\\') => self.pos += 2,
                Some('"') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => self.pos += 1,
            }
        }
        let end = self.pos.min(self.chars.len());
        let raw: String = self.chars[start..end].iter().collect();
        serde_json::from_str::<String>(&raw)
            .map_err(|e| self.error_at(start, &format!("invalid string ({e})")))
    }

    /// A bare word; in value position it may hold ':'.
    fn word(&mut self, value: bool) -> String {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_whitespace() || is_delimiter(c) || (!value && c == ':') {
                break;
            }
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }
}

fn is_delimiter(c: char) -> bool {
    matches!(c, '{' | '}' | '[' | ']' | ',' | '"')
}

fn bare_value(word: &str) -> Json {
    match word {
        "true" => Json::Bool(true),
        "false" => Json::Bool(false),
        "null" => Json::Null,
        _ => match serde_json::from_str::<Json>(word) {
            Ok(n @ Json::Number(_)) => n,
            _ => Json::String(word.to_owned()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Value;
    use serde_json::json;

    fn int(n: i64) -> Value {
        Value::Int(n)
    }

    fn filter(key: &str, op: FilterOp) -> Coll {
        Coll::filter(Filter::key(key, op))
    }

    #[test]
    fn collections() {
        let cases: Vec<(Json, Coll)> = vec![
            (json!({"type": "universe"}), Coll::Universe),
            (
                json!({"type":"equals","attributes":{"type":"value","field":"artist","value":"Red Fang"},"operands":[{"type":"universe"}]}),
                filter("artist", FilterOp::Equals("Red Fang".into())),
            ),
            (
                json!({"type":"equals","attributes":{"field":"tracknr","value":"1"}}),
                filter("tracknr", FilterOp::Equals(int(1))),
            ),
            (
                json!({"type":"equals","attributes":{"field":"tracknr","value":1}}),
                filter("tracknr", FilterOp::Equals(int(1))),
            ),
            (
                json!({"type":"equals","attributes":{"field":"x","value":"+1"}}),
                filter("x", FilterOp::Equals("+1".into())),
            ),
            (
                json!({"type":"match","attributes":{"field":"artist","value":"*fang*"}}),
                filter("artist", FilterOp::Match("*fang*".into())),
            ),
            (
                json!({"type":"token","attributes":{"field":"title","value":"one"}}),
                filter("title", FilterOp::Token("one".into())),
            ),
            (
                json!({"type":"has","attributes":{"field":"comment"}}),
                filter("comment", FilterOp::Has),
            ),
            (
                json!({"type":"smaller","attributes":{"field":"tracknr","value":"3"}}),
                filter("tracknr", FilterOp::Cmp(CmpOp::Lt, int(3))),
            ),
            (
                json!({"type":"smallereq","attributes":{"field":"t","value":"b"}}),
                filter("t", FilterOp::Cmp(CmpOp::Le, "b".into())),
            ),
            (
                json!({"type":"greater","attributes":{"field":"t","value":"-2"}}),
                filter("t", FilterOp::Cmp(CmpOp::Gt, int(-2))),
            ),
            (
                json!({"type":"greatereq","attributes":{"field":"t","value":"2"}}),
                filter("t", FilterOp::Cmp(CmpOp::Ge, int(2))),
            ),
            (
                json!({"type":"equals","attributes":{"type":"id","value":"7"}}),
                Coll::filter(Filter::new(Field::Id, FilterOp::Equals(int(7)))),
            ),
            (
                json!({"type":"equals","attributes":{"field":"artist","value":"X","collation":"BINARY","source-preference":"client/*:plugin/*"}}),
                Coll::filter(Filter {
                    field: Field::Key("artist".into()),
                    op: FilterOp::Equals("X".into()),
                    case_sensitive: true,
                    sourcepref: Some(SourcePref::parse("client/*:plugin/*")),
                }),
            ),
            (
                json!({"type":"smaller","attributes":{"field":"n","value":"5"},"operands":[{"type":"greater","attributes":{"field":"n","value":"1"}}]}),
                Coll::Filter {
                    filter: Filter::key("n", FilterOp::Cmp(CmpOp::Lt, int(5))),
                    operand: Box::new(filter("n", FilterOp::Cmp(CmpOp::Gt, int(1)))),
                },
            ),
            (
                json!({"type":"union","operands":[{"type":"universe"},{"type":"reference","attributes":{"reference":"Faves","namespace":"Collections"}}]}),
                Coll::Union(vec![Coll::Universe, Coll::Reference("Faves".into())]),
            ),
            (
                json!({"type":"intersection","operands":[{"type":"universe"}]}),
                Coll::Intersection(vec![Coll::Universe]),
            ),
            (
                json!({"type":"complement","operands":[{"type":"universe"}]}),
                Coll::Complement(Box::new(Coll::Universe)),
            ),
            (
                json!({"type":"order","attributes":{"type":"value","field":"tracknr"},"operands":[{"type":"universe"}]}),
                Coll::Order {
                    by: OrderBy::Value(vec!["tracknr".into()]),
                    descending: false,
                    operand: Box::new(Coll::Universe),
                },
            ),
            (
                json!({"type":"order","attributes":{"field":["album","title"],"direction":"DESC"},"operands":[{"type":"universe"}]}),
                Coll::Order {
                    by: OrderBy::Value(vec!["album".into(), "title".into()]),
                    descending: true,
                    operand: Box::new(Coll::Universe),
                },
            ),
            (
                json!({"type":"order","attributes":{"type":"id"},"operands":[{"type":"universe"}]}),
                Coll::Order {
                    by: OrderBy::Id,
                    descending: false,
                    operand: Box::new(Coll::Universe),
                },
            ),
            (
                json!({"type":"order","attributes":{"type":"random","seed":31337},"operands":[{"type":"universe"}]}),
                Coll::Order {
                    by: OrderBy::Random(31337),
                    descending: false,
                    operand: Box::new(Coll::Universe),
                },
            ),
            (
                json!({"type":"order","attributes":{"type":"random","seed":"42"},"operands":[{"type":"universe"}]}),
                Coll::Order {
                    by: OrderBy::Random(42),
                    descending: false,
                    operand: Box::new(Coll::Universe),
                },
            ),
            (
                json!({"type":"limit","attributes":{"start":"1","length":"2"},"operands":[{"type":"universe"}]}),
                Coll::Limit {
                    start: 1,
                    length: Some(2),
                    operand: Box::new(Coll::Universe),
                },
            ),
            (
                json!({"type":"limit","attributes":{"start":3},"operands":[{"type":"universe"}]}),
                Coll::Limit {
                    start: 3,
                    length: None,
                    operand: Box::new(Coll::Universe),
                },
            ),
            (
                json!({"type":"mediaset","operands":[{"type":"universe"}]}),
                Coll::Mediaset(Box::new(Coll::Universe)),
            ),
            (
                json!({"type":"idlist","idlist":[3,1,2]}),
                Coll::IdList(vec![3, 1, 2]),
            ),
            (json!({"type":"idlist"}), Coll::IdList(vec![])),
            (
                json!({"type":"reference","attributes":{"reference":"All Media"}}),
                Coll::Universe,
            ),
        ];
        for (json, want) in cases {
            assert_eq!(coll_from_json(&json), Ok(want), "{json}");
        }
    }

    #[test]
    fn collection_errors() {
        let cases = [
            (json!([]), "invalid collection at $: expected an object"),
            (json!({}), "invalid collection at $: missing \"type\""),
            (
                json!({"type":"frobnicate"}),
                "unknown collection type \"frobnicate\" at $.type; expected one of: universe",
            ),
            (
                json!({"type":"union","operands":[{"type":"nope"}]}),
                "at $.operands[0].type",
            ),
            (
                json!({"type":"equals","attributes":{"value":"x"}}),
                "invalid collection at $.attributes: missing \"field\"",
            ),
            (
                json!({"type":"equals","attributes":{"field":"x"}}),
                "missing \"value\"",
            ),
            (
                json!({"type":"equals","attributes":{"field":"x","value":"1","collation":"WEIRD"}}),
                "at $.attributes.collation: expected \"BINARY\"",
            ),
            (
                json!({"type":"equals","attributes":{"field":"x","value":[1]}}),
                "at $.attributes.value: expected a string, found a list",
            ),
            (
                json!({"type":"complement"}),
                "a complement takes exactly one operand, found 0",
            ),
            (
                json!({"type":"limit","attributes":{"start":"-1"},"operands":[{"type":"universe"}]}),
                "at $.attributes.start: expected a non-negative integer, found \"-1\"",
            ),
            (
                json!({"type":"order","operands":[{"type":"universe"}]}),
                "missing \"field\"",
            ),
            (
                json!({"type":"order","attributes":{"field":"a","direction":"UP"},"operands":[{"type":"universe"}]}),
                "expected \"ASC\" or \"DESC\"",
            ),
            (
                json!({"type":"idlist","idlist":[1,-2]}),
                "at $.idlist[1]: expected an entry id",
            ),
            (
                json!({"type":"idlist","idlist":[4294967296u64]}),
                "$.idlist[0]",
            ),
            (
                json!({"type":"union","operands":{}}),
                "expected a list of collections",
            ),
        ];
        for (json, msg) in cases {
            match coll_from_json(&json) {
                Ok(c) => panic!("{json} parsed as {c:?}"),
                Err(e) => assert!(e.to_string().contains(msg), "{json}: {e}"),
            }
        }
        let mut deep = json!({"type":"universe"});
        for _ in 0..=MAX_JSON_DEPTH + 1 {
            deep = json!({"type":"complement","operands":[deep]});
        }
        assert!(coll_from_json(&deep).is_err());
    }

    fn metadata(fields: Option<&[&str]>, get: &[Get], aggregate: Aggregate) -> FetchSpec {
        FetchSpec::Metadata {
            fields: fields.map(|f| f.iter().map(|s| s.to_string()).collect()),
            get: get.to_vec(),
            aggregate,
            sourcepref: None,
        }
    }

    #[test]
    fn fetch_specs() {
        let cases: Vec<(Json, FetchSpec)> = vec![
            (json!({"type":"count"}), FetchSpec::Count),
            (
                json!({"type":"metadata"}),
                metadata(None, &[Get::Value], Aggregate::First),
            ),
            (json!({}), metadata(None, &[Get::Value], Aggregate::First)),
            (
                json!({"type":"metadata","fields":[],"get":["id","field","value","source"],"aggregate":"avg"}),
                metadata(
                    None,
                    &[Get::Id, Get::Field, Get::Value, Get::Source],
                    Aggregate::Avg,
                ),
            ),
            (
                json!({"fields":["duration","size"],"get":["field","value"],"aggregate":"sum"}),
                metadata(
                    Some(&["duration", "size"]),
                    &[Get::Field, Get::Value],
                    Aggregate::Sum,
                ),
            ),
            (
                json!({"fields":["title"],"source-preference":["A","B/*"]}),
                FetchSpec::Metadata {
                    fields: Some(vec!["title".into()]),
                    get: vec![Get::Value],
                    aggregate: Aggregate::First,
                    sourcepref: Some(SourcePref::parse("A:B/*")),
                },
            ),
            (
                json!({"fields":["title"],"source-preference":"A:B/*"}),
                FetchSpec::Metadata {
                    fields: Some(vec!["title".into()]),
                    get: vec![Get::Value],
                    aggregate: Aggregate::First,
                    sourcepref: Some(SourcePref::parse("A:B/*")),
                },
            ),
            (
                json!({"type":"cluster-dict","cluster-by":"value","cluster-field":"album","cluster-fallback":"<Unknown Album>","data":{"type":"metadata","fields":["title"],"get":["value"],"aggregate":"list"}}),
                FetchSpec::ClusterDict {
                    by: ClusterBy::Value("album".into()),
                    fallback: Some(json!("<Unknown Album>")),
                    data: Box::new(metadata(Some(&["title"]), &[Get::Value], Aggregate::List)),
                    sourcepref: None,
                },
            ),
            (
                json!({"type":"cluster-list","cluster-by":"id","cluster-fallback":null,"data":{"type":"count"}}),
                FetchSpec::ClusterList {
                    by: ClusterBy::Id,
                    fallback: None,
                    data: Box::new(FetchSpec::Count),
                    sourcepref: None,
                },
            ),
            (
                json!({"type":"cluster-list","cluster-by":"position","cluster-fallback":{"a":1},"data":{"get":["id"]}}),
                FetchSpec::ClusterList {
                    by: ClusterBy::Position,
                    fallback: Some(json!({"a":1})),
                    data: Box::new(metadata(None, &[Get::Id], Aggregate::First)),
                    sourcepref: None,
                },
            ),
            (
                json!({"type":"organize","source-preference":["A"],"data":{"id":{"get":["id"]},"n":{"type":"count"},"t":{"fields":["title"],"source-preference":["B"]}}}),
                FetchSpec::Organize(vec![
                    (
                        "id".into(),
                        FetchSpec::Metadata {
                            fields: None,
                            get: vec![Get::Id],
                            aggregate: Aggregate::First,
                            sourcepref: Some(SourcePref::parse("A")),
                        },
                    ),
                    ("n".into(), FetchSpec::Count),
                    (
                        "t".into(),
                        FetchSpec::Metadata {
                            fields: Some(vec!["title".into()]),
                            get: vec![Get::Value],
                            aggregate: Aggregate::First,
                            sourcepref: Some(SourcePref::parse("B")),
                        },
                    ),
                ]),
            ),
        ];
        for (json, want) in cases {
            assert_eq!(fetch_from_json(&json), Ok(want), "{json}");
        }
    }

    #[test]
    fn fetch_errors() {
        let cases = [
            (
                json!({"aggregate":"median"}),
                "invalid fetch specification at $.aggregate: unknown aggregate \"median\"; expected one of first",
            ),
            (
                json!({"get":["value","id","value"]}),
                "at $.get[2]: duplicate \"get\" entry \"value\"",
            ),
            (json!({"get":[]}), "at $.get: expected a non-empty list"),
            (json!({"get":["size"]}), "unknown \"get\" entry \"size\""),
            (json!({"fields":["a","a"]}), "duplicate field \"a\""),
            (
                json!({"type":"cluster-list","cluster-by":"id"}),
                "a cluster-list needs \"data\"",
            ),
            (
                json!({"type":"cluster-dict","data":{"type":"count"}}),
                "missing \"cluster-field\"",
            ),
            (
                json!({"type":"cluster-dict","cluster-by":"genre","data":{"type":"count"}}),
                "at $.cluster-by: expected \"value\", \"id\" or \"position\"",
            ),
            (json!({"type":"organize"}), "an organize needs \"data\""),
            (
                json!({"type":"organize","data":{"x":{"type":"sum"}}}),
                "unknown fetch specification type \"sum\" at $.data.x.type",
            ),
            (
                json!({"type":"shuffle"}),
                "unknown fetch specification type \"shuffle\" at $.type; expected one of: metadata",
            ),
            (json!("count"), "at $: expected an object"),
            (
                json!({"type":"cluster-list","cluster-by":"id","data":{"aggregate":3}}),
                "at $.data.aggregate: expected a string, found a number",
            ),
        ];
        for (json, msg) in cases {
            match fetch_from_json(&json) {
                Ok(f) => panic!("{json} parsed as {f:?}"),
                Err(e) => assert!(e.to_string().contains(msg), "{json}: {e}"),
            }
        }
    }

    #[test]
    fn relaxed_json() {
        let cases = [
            (r#"{"type": "count"}"#, json!({"type": "count"})),
            ("{type:count}", json!({"type": "count"})),
            (
                "{type:cluster-dict, cluster-field:album, data:{type:organize, data:{tracks:{type:count},\nduration:{fields:[duration], get:[value], aggregate:sum}}}}",
                json!({"type":"cluster-dict","cluster-field":"album","data":{"type":"organize","data":{"tracks":{"type":"count"},"duration":{"fields":["duration"],"get":["value"],"aggregate":"sum"}}}}),
            ),
            (
                "{n: 1, f: -2.5, t: true, x: null, s: 1a, q: \"a b\\n\"}",
                json!({"n": 1, "f": -2.5, "t": true, "x": null, "s": "1a", "q": "a b\n"}),
            ),
            (
                "{source-preference:client/*:plugin/*}",
                json!({"source-preference": "client/*:plugin/*"}),
            ),
            ("[a, b,]", json!(["a", "b"])),
            ("{a:{},b:[]}", json!({"a": {}, "b": []})),
            ("  42  ", json!(42)),
            ("{\"a\" : b}", json!({"a": "b"})),
        ];
        for (text, want) in cases {
            assert_eq!(parse_relaxed_json(text), Ok(want), "{text}");
        }
        let spec = parse_relaxed_json(
            "{type:cluster-dict, cluster-field:album, data:{type:organize, data:{tracks:{type:count}, duration:{fields:[duration], get:[value], aggregate:sum}}}}",
        )
        .and_then(|v| fetch_from_json(&v));
        assert!(
            matches!(spec, Ok(FetchSpec::ClusterDict { .. })),
            "{spec:?}"
        );
    }

    #[test]
    fn relaxed_json_errors() {
        let cases = [
            ("", 1, 1, "expected a value, found the end of the document"),
            ("{a b}", 1, 4, "expected ':' after the key \"a\", found 'b'"),
            ("{a:1", 1, 5, "expected ',' or '}'"),
            ("[1 2]", 1, 4, "expected ',' or ']'"),
            ("{a:1}\n x", 2, 2, "expected the end of the document"),
            ("{a:\"b}", 1, 4, "unterminated string"),
            ("{a:\"\\q\"}", 1, 4, "invalid string"),
            ("{,}", 1, 2, "expected a key or '}'"),
            ("{a:}", 1, 4, "expected a value"),
        ];
        for (text, line, column, msg) in cases {
            match parse_relaxed_json(text) {
                Err(JsonError::Syntax {
                    line: l,
                    column: c,
                    message,
                }) => {
                    assert_eq!((l, c), (line, column), "{text:?}: {message}");
                    assert!(message.contains(msg), "{text:?}: {message}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        let deep = "[".repeat(10_000);
        assert!(parse_relaxed_json(&deep).is_err());
    }
}
