//! Subsonic responses as a small tree rendered to XML or to JSON the way
//! Subsonic servers do: attributes become fields, a list of elements of one
//! name becomes an array (even of one element, or none), a lone child
//! element an object, text content the field `value` (OpenSubsonic's
//! `<line start="0">words</line>` is `{"start":0,"value":"words"}`), and
//! a list of plain strings repeated text elements in XML
//! (`<moods>calm</moods>`) and an array of strings in JSON. The whole is
//! wrapped in
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
    /// A decimal (ReplayGain values).
    F(f64),
}

#[derive(Debug, Clone)]
enum Kid {
    One(Node),
    Many(&'static str, Vec<Node>),
    Ints(&'static str, Vec<i64>),
    Strs(&'static str, Vec<String>),
}

/// One element.
#[derive(Debug, Clone)]
pub struct Node {
    name: &'static str,
    attrs: Vec<(&'static str, Attr)>,
    kids: Vec<Kid>,
    /// Text content: XML text, the field `value` in JSON.
    text: Option<String>,
}

impl Node {
    pub fn new(name: &'static str) -> Node {
        Node {
            name,
            attrs: Vec::new(),
            kids: Vec::new(),
            text: None,
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
    /// A decimal attribute; a value that is not finite is left out.
    pub fn f(mut self, k: &'static str, v: f64) -> Node {
        if v.is_finite() {
            self.attrs.push((k, Attr::F(v)));
        }
        self
    }
    pub fn opt_f(self, k: &'static str, v: Option<f64>) -> Node {
        match v {
            Some(v) => self.f(k, v),
            None => self,
        }
    }
    /// Text content (XML text; the field `value` in JSON).
    pub fn text(mut self, v: impl Into<String>) -> Node {
        self.text = Some(v.into());
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
    /// The same element under another name (a song as a bookmark's
    /// `entry`).
    pub fn named(mut self, name: &'static str) -> Node {
        self.name = name;
        self
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

    /// Strings as text elements (`<moods>calm</moods>`), an array in JSON
    /// (even if empty).
    pub fn strs(mut self, name: &'static str, v: Vec<String>) -> Node {
        self.kids.push(Kid::Strs(name, v));
        self
    }

    /// The node as JSON, for tests of the nodes other modules draw.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Value {
        self.json()
    }

    /// The node as XML, for tests of the nodes other modules draw.
    #[cfg(test)]
    pub(crate) fn to_xml(&self) -> String {
        let mut s = String::new();
        self.xml(&mut s);
        s
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
                Attr::F(f) => out.push_str(&f.to_string()),
            }
            out.push('"');
        }
        if self.kids.is_empty() && self.text.is_none() {
            out.push_str("/>");
            return;
        }
        out.push('>');
        if let Some(t) = &self.text {
            escape_into(t, out);
        }
        for k in &self.kids {
            match k {
                Kid::One(n) => n.xml(out),
                Kid::Many(_, ns) => ns.iter().for_each(|n| n.xml(out)),
                Kid::Ints(name, vs) => {
                    for v in vs {
                        out.push_str(&format!("<{name}>{v}</{name}>"));
                    }
                }
                Kid::Strs(name, vs) => {
                    for v in vs {
                        out.push_str(&format!("<{name}>"));
                        escape_into(v, out);
                        out.push_str(&format!("</{name}>"));
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
                Attr::F(f) => Value::from(*f),
            };
            m.insert((*k).to_owned(), v);
        }
        if let Some(t) = &self.text {
            m.insert("value".to_owned(), Value::from(t.as_str()));
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
                Kid::Strs(name, vs) => {
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

    #[test]
    fn opensubsonic_shapes_render_in_both_formats() {
        let n = Node::new("song")
            .child(
                Node::new("replayGain")
                    .f("trackGain", -6.5)
                    .f("trackPeak", 0.98),
            )
            .list("genres", vec![Node::new("g").s("name", "Rock")])
            .strs("moods", vec!["calm".into(), "a<b".into()])
            .list(
                "line",
                vec![Node::new("l").i("start", 1500).text("Hello & bye")],
            )
            .f("nan", f64::NAN);
        let mut x = String::new();
        n.xml(&mut x);
        assert_eq!(
            x,
            "<song><replayGain trackGain=\"-6.5\" trackPeak=\"0.98\"/>\
             <genres name=\"Rock\"/><moods>calm</moods><moods>a&lt;b</moods>\
             <line start=\"1500\">Hello &amp; bye</line></song>"
        );
        assert_eq!(
            n.json().to_string(),
            concat!(
                r#"{"replayGain":{"trackGain":-6.5,"trackPeak":0.98},"genres":[{"name":"Rock"}],"#,
                r#""moods":["calm","a<b"],"line":[{"start":1500,"value":"Hello & bye"}]}"#
            )
        );
    }

    #[test]
    fn empty_lists_are_empty_arrays_in_json_and_nothing_in_xml() {
        let n = Node::new("album")
            .s("id", "x")
            .list("genres", vec![])
            .strs("moods", vec![]);
        let mut x = String::new();
        n.xml(&mut x);
        assert_eq!(x, r#"<album id="x"></album>"#);
        assert_eq!(n.json().to_string(), r#"{"id":"x","genres":[],"moods":[]}"#);
    }
}
