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
#[cfg(test)]
use serde_json::Value;

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
    /// One string as a text element in XML, a string field in JSON
    /// (Subsonic's `biography`, `notes` and image URLs are elements).
    Str(&'static str, String),
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
    /// An element with room for `fields` attributes and children, for
    /// nodes drawn many times per answer (songs, albums, artists).
    pub fn sized(name: &'static str, fields: usize) -> Node {
        Node {
            name,
            attrs: Vec::with_capacity(fields),
            kids: Vec::with_capacity(fields / 4),
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

    /// A string as a text element (`<notes>text</notes>`), a string
    /// field in JSON.
    pub fn text_el(mut self, name: &'static str, v: impl Into<String>) -> Node {
        self.kids.push(Kid::Str(name, v.into()));
        self
    }

    pub fn opt_text_el(self, name: &'static str, v: Option<impl Into<String>>) -> Node {
        match v {
            Some(v) => self.text_el(name, v),
            None => self,
        }
    }

    /// The node as JSON, for tests of the nodes other modules draw.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Value {
        let mut s = String::new();
        self.json_into(&mut s);
        match serde_json::from_str(&s) {
            Ok(v) => v,
            Err(e) => panic!("the renderer wrote invalid JSON ({e}): {s}"),
        }
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
                Attr::I(i) => push_int(*i, out),
                Attr::B(b) => out.push_str(if *b { "true" } else { "false" }),
                Attr::F(f) => {
                    use std::fmt::Write;
                    // Writing to a String cannot fail.
                    let _ = write!(out, "{f}");
                }
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
                        text_element(name, out, |out| push_int(*v, out));
                    }
                }
                Kid::Strs(name, vs) => {
                    for v in vs {
                        text_element(name, out, |out| escape_into(v, out));
                    }
                }
                Kid::Str(name, v) => text_element(name, out, |out| escape_into(v, out)),
            }
        }
        out.push_str("</");
        out.push_str(self.name);
        out.push('>');
    }

    /// An estimate of the rendered size, to size the output once.
    fn size_hint(&self) -> usize {
        let mut n = self.name.len() + 8 + self.text.as_ref().map_or(0, |t| t.len() + 12);
        for (k, v) in &self.attrs {
            n += k.len()
                + 6
                + match v {
                    Attr::S(s) => s.len() + 2,
                    _ => 8,
                };
        }
        for k in &self.kids {
            n += match k {
                Kid::One(c) => c.size_hint(),
                Kid::Many(name, ns) => {
                    name.len() + 4 + ns.iter().map(Node::size_hint).sum::<usize>()
                }
                Kid::Ints(name, vs) => name.len() * 2 + 8 + vs.len() * 24,
                Kid::Strs(name, vs) => {
                    name.len() * 2
                        + 8
                        + vs.iter()
                            .map(|v| v.len() + name.len() * 2 + 8)
                            .sum::<usize>()
                }
                Kid::Str(name, v) => name.len() * 2 + 5 + v.len(),
            };
        }
        n
    }

    /// The JSON field names of this node, in order, with their values:
    /// attributes, then `value` (the text), then children.
    fn json_fields(&self) -> impl Iterator<Item = (&'static str, Field<'_>)> {
        let attrs = self.attrs.iter().map(|(k, v)| (*k, Field::Attr(v)));
        let text = self.text.iter().map(|t| ("value", Field::Text(t)));
        let kids = self.kids.iter().map(|k| match k {
            Kid::One(n) => (n.name, Field::Kid(k)),
            Kid::Many(name, _) | Kid::Ints(name, _) | Kid::Strs(name, _) | Kid::Str(name, _) => {
                (*name, Field::Kid(k))
            }
        });
        attrs.chain(text).chain(kids)
    }

    /// Whether two fields of this node may share a name (a cheap filter:
    /// `false` is certain, `true` is checked by the caller).
    fn may_repeat_a_field(&self) -> bool {
        let mut seen = 0u64;
        for (k, _) in self.json_fields() {
            let b = k.as_bytes();
            let h = (b.len() as u64)
                .wrapping_mul(31)
                .wrapping_add(u64::from(b.first().copied().unwrap_or(0)))
                .wrapping_mul(31)
                .wrapping_add(u64::from(b.last().copied().unwrap_or(0)));
            let bit = 1u64 << (h % 64);
            if seen & bit != 0 {
                return true;
            }
            seen |= bit;
        }
        false
    }

    /// Appends the node as a JSON object. Fields follow the order of
    /// attributes, text and children; a name given twice keeps its first
    /// place and its last value (as an insertion-ordered map would).
    fn json_into(&self, out: &mut String) {
        out.push('{');
        let mut first = true;
        if self.may_repeat_a_field() {
            let fields: Vec<_> = self.json_fields().collect();
            for (i, (k, _)) in fields.iter().enumerate() {
                if fields[..i].iter().any(|(e, _)| e == k) {
                    continue;
                }
                let Some((_, v)) = fields.iter().rev().find(|(e, _)| e == k) else {
                    continue;
                };
                field_into(k, v, &mut first, out);
            }
        } else {
            for (k, v) in self.json_fields() {
                field_into(k, &v, &mut first, out);
            }
        }
        out.push('}');
    }
}

/// `<name>text</name>`, the text written by `text`.
fn text_element(name: &str, out: &mut String, text: impl FnOnce(&mut String)) {
    out.push('<');
    out.push_str(name);
    out.push('>');
    text(out);
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

/// One JSON field's value, borrowed from a node.
enum Field<'a> {
    Attr(&'a Attr),
    Text(&'a str),
    Kid(&'a Kid),
}

fn field_into(k: &str, v: &Field<'_>, first: &mut bool, out: &mut String) {
    if !*first {
        out.push(',');
    }
    *first = false;
    json_str_into(k, out);
    out.push(':');
    match v {
        Field::Attr(Attr::S(s)) => json_str_into(s, out),
        Field::Attr(Attr::I(i)) => push_int(*i, out),
        Field::Attr(Attr::B(b)) => out.push_str(if *b { "true" } else { "false" }),
        Field::Attr(Attr::F(f)) => push_f64(*f, out),
        Field::Text(t) => json_str_into(t, out),
        Field::Kid(Kid::One(n)) => n.json_into(out),
        Field::Kid(Kid::Many(_, ns)) => {
            out.push('[');
            for (i, n) in ns.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                n.json_into(out);
            }
            out.push(']');
        }
        Field::Kid(Kid::Ints(_, vs)) => {
            out.push('[');
            for (i, v) in vs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_int(*v, out);
            }
            out.push(']');
        }
        Field::Kid(Kid::Str(_, v)) => json_str_into(v, out),
        Field::Kid(Kid::Strs(_, vs)) => {
            out.push('[');
            for (i, v) in vs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_str_into(v, out);
            }
            out.push(']');
        }
    }
}

fn push_int(i: i64, out: &mut String) {
    use std::fmt::Write;
    // Writing to a String cannot fail.
    let _ = write!(out, "{i}");
}

/// A finite decimal as serde_json writes it (`-6.5`, `1.0`, `1e20`); a
/// value that is not finite (never stored: see [`Node::f`]) as `null`.
fn push_f64(f: f64, out: &mut String) {
    match serde_json::Number::from_f64(f) {
        Some(n) => {
            use std::fmt::Write;
            let _ = write!(out, "{n}");
        }
        None => out.push_str("null"),
    }
}

/// Appends `s` as a JSON string, escaped as serde_json escapes: `"` and
/// `\`, the short forms `\b \f \n \r \t`, other control characters
/// below U+0020 as `\u00XX`; everything else (DEL, non-ASCII, `/`) as
/// it is.
fn json_str_into(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        // `i` is at an ASCII byte, so a char boundary.
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
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
    let (body, ct) = render_body(env, fmt);
    let mut r = Response::new(Body::from(body));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    r
}

/// The document of `env` in `fmt`, written once into a string sized for
/// it, with its content type.
fn render_body(mut env: Node, fmt: &Format) -> (String, &'static str) {
    const XML_DECL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>"#;
    let hint = env.size_hint() + 64;
    match fmt {
        Format::Xml => {
            let mut s = String::with_capacity(hint + XML_DECL.len());
            s.push_str(XML_DECL);
            env.attrs
                .insert(0, ("xmlns", Attr::S("http://subsonic.org/restapi".into())));
            env.xml(&mut s);
            (s, "text/xml; charset=utf-8")
        }
        Format::Json => {
            let mut s = String::with_capacity(hint);
            json_document_into(&env, &mut s);
            (s, "application/json")
        }
        Format::Jsonp(cb) => {
            let mut s = String::with_capacity(hint + cb.len() + 3);
            s.push_str(cb);
            s.push('(');
            json_document_into(&env, &mut s);
            s.push_str(");");
            (s, "application/javascript")
        }
    }
}

/// `{"subsonic-response": env}`.
fn json_document_into(env: &Node, out: &mut String) {
    out.push_str("{\"subsonic-response\":");
    env.json_into(out);
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    /// The JSON of a node as the renderer writes it.
    fn json_text(n: &Node) -> String {
        let mut s = String::new();
        n.json_into(&mut s);
        s
    }

    /// The JSON the server wrote before it rendered directly: the tree as
    /// a `serde_json::Value` (an insertion-ordered map), serialised.
    fn reference_json(n: &Node) -> Value {
        let mut m = Map::new();
        for (k, v) in &n.attrs {
            let v = match v {
                Attr::S(s) => Value::from(s.as_str()),
                Attr::I(i) => Value::from(*i),
                Attr::B(b) => Value::from(*b),
                Attr::F(f) => Value::from(*f),
            };
            m.insert((*k).to_owned(), v);
        }
        if let Some(t) = &n.text {
            m.insert("value".to_owned(), Value::from(t.as_str()));
        }
        for k in &n.kids {
            let (name, v) = match k {
                Kid::One(c) => (c.name, reference_json(c)),
                Kid::Many(name, ns) => {
                    (*name, Value::Array(ns.iter().map(reference_json).collect()))
                }
                Kid::Ints(name, vs) => (*name, Value::from(vs.clone())),
                Kid::Strs(name, vs) => (*name, Value::from(vs.clone())),
                Kid::Str(name, v) => (*name, Value::from(v.as_str())),
            };
            m.insert(name.to_owned(), v);
        }
        Value::Object(m)
    }

    /// Strings a JSON writer can get wrong: every control character,
    /// quotes and backslashes, DEL, non-ASCII of every width, the
    /// JavaScript line separators, markup characters.
    fn tricky_strings() -> Vec<String> {
        let controls: String = (0u8..0x20).map(char::from).collect();
        vec![
            String::new(),
            controls.clone(),
            format!("a{controls}b"),
            r#"Tom & Jerry's "Song" \ back\slash \"#.to_owned(),
            "\u{7f}del/slash</script>".to_owned(),
            "Björk – Sigur Rós · 東京事変 · 🎵🎸 · \u{2028}\u{2029} · \u{fffd}\u{ffff}".to_owned(),
            "\"\"\\\\\n\n\u{0}\u{0}".to_owned(),
            "<a b=\"c\">&amp;</a>".to_owned(),
        ]
    }

    #[test]
    fn json_strings_are_escaped_exactly_as_serde_json_escapes_them() {
        for t in tricky_strings() {
            let mut s = String::new();
            json_str_into(&t, &mut s);
            assert_eq!(s, Value::from(t.as_str()).to_string(), "{t:?}");
            let back: String = serde_json::from_str(&s).unwrap();
            assert_eq!(back, t);
        }
    }

    #[test]
    fn a_whole_tree_renders_as_the_serde_json_value_did() {
        let tricky = tricky_strings();
        let song = |t: &str| {
            Node::new("song")
                .s("id", t)
                .i("n", i64::MIN)
                .i("m", i64::MAX)
                .b("isDir", false)
                .f("gain", -6.5)
                .f("one", 1.0)
                .f("big", 1e20)
                .f("small", 1.5e-7)
                .text(t)
                .child(Node::new("replayGain").f("trackPeak", 0.98))
                .list("genres", vec![Node::new("g").s("name", t)])
                .list("none", vec![])
                .strs("moods", vec![t.to_owned(), "x".into()])
                .ints("versions", vec![1, -2])
        };
        let root = Node::new("searchResult3")
            .list("song", tricky.iter().map(|t| song(t)).collect())
            .child(song("lone"));
        assert_eq!(json_text(&root), reference_json(&root).to_string());
        for fmt in [Format::Json, Format::Jsonp("cb.x_1".into())] {
            let (body, _) = render_body(envelope(true).child(root.clone()), &fmt);
            let json = match &fmt {
                Format::Jsonp(cb) => body
                    .strip_prefix(&format!("{cb}("))
                    .and_then(|b| b.strip_suffix(");"))
                    .unwrap()
                    .to_owned(),
                _ => body,
            };
            let parsed: Value = serde_json::from_str(&json).unwrap();
            let mut m = Map::new();
            m.insert(
                "subsonic-response".into(),
                reference_json(&envelope(true).child(root.clone())),
            );
            assert_eq!(json, Value::Object(m.clone()).to_string());
            assert_eq!(parsed, Value::Object(m));
        }
    }

    #[test]
    fn a_field_named_twice_keeps_its_first_place_and_last_value() {
        let n = Node::new("x")
            .s("a", "1")
            .s("b", "2")
            .i("a", 3)
            .child(Node::new("b").i("c", 4))
            .text("t")
            .s("value", "v");
        assert_eq!(json_text(&n), reference_json(&n).to_string());
        assert_eq!(json_text(&n), r#"{"a":3,"b":{"c":4},"value":"t"}"#);
    }

    #[test]
    fn the_xml_document_carries_the_namespace_and_escapes_text() {
        let (body, ct) = render_body(
            envelope(true).child(Node::new("genre").i("songCount", 2).text("R&B")),
            &Format::Xml,
        );
        assert_eq!(ct, "text/xml; charset=utf-8");
        assert!(
            body.starts_with(
                r#"<?xml version="1.0" encoding="UTF-8"?><subsonic-response xmlns="http://subsonic.org/restapi" status="ok""#
            ),
            "{body}"
        );
        assert!(
            body.ends_with(r#"><genre songCount="2">R&amp;B</genre></subsonic-response>"#),
            "{body}"
        );
    }

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
            json_text(&n),
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
        assert_eq!(n.to_json()["title"], "Tom & Jerry's \"Song\"\u{0}\n🎵");
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
            json_text(&n),
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
        assert_eq!(json_text(&n), r#"{"id":"x","genres":[],"moods":[]}"#);
    }
}
