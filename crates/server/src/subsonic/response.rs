//! Subsonic responses as a small tree rendered to XML or to JSON the way
//! Subsonic servers do: attributes become fields, a list of elements of one
//! name becomes an array, and the whole is wrapped in
//! `subsonic-response` with `status`, `version`, `type`, `serverVersion`
//! and `openSubsonic`.

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use serde_json::{Map, Value};

use crate::xml::escape_into;

/// The Subsonic API version spoken.
pub const API_VERSION: &str = "1.16.1";

#[derive(Debug, Clone)]
pub enum Attr {
    S(String),
    I(i64),
    B(bool),
}

#[derive(Debug, Clone)]
enum Kid {
    One(Node),
    Many(&'static str, Vec<Node>),
    Ints(&'static str, Vec<i64>),
}

/// One element.
#[derive(Debug, Clone)]
pub struct Node {
    name: &'static str,
    attrs: Vec<(&'static str, Attr)>,
    kids: Vec<Kid>,
}

impl Node {
    pub fn new(name: &'static str) -> Node {
        Node {
            name,
            attrs: Vec::new(),
            kids: Vec::new(),
        }
    }
    pub fn s(mut self, k: &'static str, v: impl Into<String>) -> Node {
        self.attrs.push((k, Attr::S(v.into())));
        self
    }
    pub fn i(mut self, k: &'static str, v: i64) -> Node {
        self.attrs.push((k, Attr::I(v)));
        self
    }
    pub fn b(mut self, k: &'static str, v: bool) -> Node {
        self.attrs.push((k, Attr::B(v)));
        self
    }
    pub fn opt_s(self, k: &'static str, v: Option<impl Into<String>>) -> Node {
        match v {
            Some(v) => self.s(k, v),
            None => self,
        }
    }
    pub fn opt_i(self, k: &'static str, v: Option<i64>) -> Node {
        match v {
            Some(v) => self.i(k, v),
            None => self,
        }
    }
    /// One child element.
    pub fn child(mut self, n: Node) -> Node {
        self.kids.push(Kid::One(n));
        self
    }
    /// A list of children named `name` (an array in JSON, even if empty).
    pub fn list(mut self, name: &'static str, nodes: Vec<Node>) -> Node {
        let nodes = nodes
            .into_iter()
            .map(|mut n| {
                n.name = name;
                n
            })
            .collect();
        self.kids.push(Kid::Many(name, nodes));
        self
    }
    /// Integers as text elements (`<versions>1</versions>`), an array in JSON.
    pub fn ints(mut self, name: &'static str, v: Vec<i64>) -> Node {
        self.kids.push(Kid::Ints(name, v));
        self
    }

    fn xml(&self, out: &mut String) {
        out.push('<');
        out.push_str(self.name);
        for (k, v) in &self.attrs {
            out.push(' ');
            out.push_str(k);
            out.push_str("=\"");
            match v {
                Attr::S(s) => escape_into(s, out),
                Attr::I(i) => out.push_str(&i.to_string()),
                Attr::B(b) => out.push_str(if *b { "true" } else { "false" }),
            }
            out.push('"');
        }
        if self.kids.is_empty() {
            out.push_str("/>");
            return;
        }
        out.push('>');
        for k in &self.kids {
            match k {
                Kid::One(n) => n.xml(out),
                Kid::Many(_, ns) => ns.iter().for_each(|n| n.xml(out)),
                Kid::Ints(name, vs) => {
                    for v in vs {
                        out.push_str(&format!("<{name}>{v}</{name}>"));
                    }
                }
            }
        }
        out.push_str("</");
        out.push_str(self.name);
        out.push('>');
    }

    fn json(&self) -> Value {
        let mut m = Map::new();
        for (k, v) in &self.attrs {
            let v = match v {
                Attr::S(s) => Value::from(s.as_str()),
                Attr::I(i) => Value::from(*i),
                Attr::B(b) => Value::from(*b),
            };
            m.insert((*k).to_owned(), v);
        }
        for k in &self.kids {
            match k {
                Kid::One(n) => {
                    m.insert(n.name.to_owned(), n.json());
                }
                Kid::Many(name, ns) => {
                    m.insert(
                        (*name).to_owned(),
                        Value::Array(ns.iter().map(Node::json).collect()),
                    );
                }
                Kid::Ints(name, vs) => {
                    m.insert((*name).to_owned(), Value::from(vs.clone()));
                }
            }
        }
        Value::Object(m)
    }
}

/// How the client asked for the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    Xml,
    Json,
    /// JSON wrapped in a call of this function.
    Jsonp(String),
}

impl Format {
    pub fn from_params(f: Option<&str>, callback: Option<&str>) -> Format {
        match f {
            Some("json") => Format::Json,
            Some("jsonp") => match callback {
                Some(cb)
                    if !cb.is_empty()
                        && cb
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.') =>
                {
                    Format::Jsonp(cb.to_owned())
                }
                _ => Format::Json,
            },
            _ => Format::Xml,
        }
    }
}

fn envelope(ok: bool) -> Node {
    Node::new("subsonic-response")
        .s("status", if ok { "ok" } else { "failed" })
        .s("version", API_VERSION)
        .s("type", "spindle")
        .s("serverVersion", env!("CARGO_PKG_VERSION"))
        .b("openSubsonic", true)
}

/// A successful answer carrying `body` (or nothing, for ping-like calls).
pub fn ok(body: Option<Node>, fmt: &Format) -> Response {
    let mut env = envelope(true);
    match body {
        // A nameless node's children go straight into the envelope
        // (getOpenSubsonicExtensions answers a bare list).
        Some(b) if b.name.is_empty() => env.kids.extend(b.kids),
        Some(b) => env = env.child(b),
        None => {}
    }
    render(env, fmt)
}

/// A Subsonic error (HTTP 200, as the spec has it).
pub fn error(code: u32, message: &str, fmt: &Format) -> Response {
    let env = envelope(false).child(
        Node::new("error")
            .i("code", i64::from(code))
            .s("message", message),
    );
    render(env, fmt)
}

fn render(env: Node, fmt: &Format) -> Response {
    let (body, ct) = match fmt {
        Format::Xml => {
            let mut s = String::from(r#"<?xml version="1.0" encoding="UTF-8"?>"#);
            let mut env = env;
            env.attrs
                .insert(0, ("xmlns", Attr::S("http://subsonic.org/restapi".into())));
            env.xml(&mut s);
            (s, "text/xml; charset=utf-8")
        }
        Format::Json | Format::Jsonp(_) => {
            let mut m = Map::new();
            m.insert("subsonic-response".into(), env.json());
            let json = Value::Object(m).to_string();
            match fmt {
                Format::Jsonp(cb) => (format!("{cb}({json});"), "application/javascript"),
                _ => (json, "application/json"),
            }
        }
    };
    let mut r = Response::new(Body::from(body));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_arrays_in_json_and_repeated_elements_in_xml() {
        let n = Node::new("artists").s("ignoredArticles", "").list(
            "index",
            vec![Node::new("x")
                .s("name", "A&B")
                .list("artist", vec![Node::new("y").i("id", 1)])],
        );
        let mut x = String::new();
        n.xml(&mut x);
        assert_eq!(
            x,
            r#"<artists ignoredArticles=""><index name="A&amp;B"><artist id="1"/></index></artists>"#
        );
        assert_eq!(
            n.json().to_string(),
            r#"{"ignoredArticles":"","index":[{"name":"A&B","artist":[{"id":1}]}]}"#
        );
    }

    #[test]
    fn attributes_follow_the_one_escaping_rule() {
        let n = Node::new("song").s("title", "Tom & Jerry's \"Song\"\u{0}\n🎵");
        let mut x = String::new();
        n.xml(&mut x);
        assert_eq!(
            x,
            "<song title=\"Tom &amp; Jerry&#39;s &quot;Song&quot;\u{fffd}&#10;🎵\"/>"
        );
        assert_eq!(n.json()["title"], "Tom & Jerry's \"Song\"\u{0}\n🎵");
    }
}
