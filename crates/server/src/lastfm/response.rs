//! Last.fm responses as a small element tree, rendered as XML (the
//! default) or as JSON by Last.fm's translation rules: attributes of an
//! element with children go under `"@attr"`, attributes of a text element
//! become members beside `"#text"`, repeated children become an array and
//! a single child stays an object.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value};

use crate::xml::escape_into;

/// The format a call asks for: XML, or JSON (`format=json`), in a
/// JSONP callback (`callback`) when it names one.
#[derive(Debug, Default)]
pub(crate) struct Fmt {
    pub json: bool,
    pub callback: Option<String>,
}

/// `body` (a document in the format `fmt`) as the answer, with `status`.
pub(crate) fn respond(fmt: &Fmt, status: StatusCode, body: String) -> Response {
    let (ctype, body) = match (&fmt.json, &fmt.callback) {
        (true, Some(cb)) => ("text/javascript; charset=utf-8", format!("{cb}({body});")),
        (true, None) => ("application/json; charset=utf-8", body),
        (false, _) => ("text/xml; charset=utf-8", body),
    };
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

/// One XML element.
#[derive(Debug, Clone, Default)]
pub struct Node {
    pub name: String,
    pub attrs: Vec<(String, Value)>,
    pub text: Option<String>,
    pub children: Vec<Node>,
}

impl Node {
    pub fn new(name: &str) -> Node {
        Node {
            name: name.into(),
            ..Node::default()
        }
    }
    /// An element holding text.
    pub fn text(name: &str, text: impl Into<String>) -> Node {
        Node {
            name: name.into(),
            text: Some(text.into()),
            ..Node::default()
        }
    }
    pub fn attr(mut self, k: &str, v: impl Into<Value>) -> Node {
        self.attrs.push((k.into(), v.into()));
        self
    }
    pub fn child(mut self, c: Node) -> Node {
        self.children.push(c);
        self
    }
    pub fn children(mut self, c: impl IntoIterator<Item = Node>) -> Node {
        self.children.extend(c);
        self
    }

    fn xml(&self, out: &mut String) {
        out.push('<');
        out.push_str(&self.name);
        for (k, v) in &self.attrs {
            out.push(' ');
            out.push_str(k);
            out.push_str("=\"");
            escape_into(&scalar(v), out);
            out.push('"');
        }
        if self.children.is_empty() && self.text.as_deref().unwrap_or("").is_empty() {
            out.push_str("/>");
            return;
        }
        out.push('>');
        if let Some(t) = &self.text {
            escape_into(t, out);
        }
        for c in &self.children {
            c.xml(out);
        }
        out.push_str("</");
        out.push_str(&self.name);
        out.push('>');
    }

    fn json(&self) -> Value {
        if self.children.is_empty() {
            let text = self.text.clone().unwrap_or_default();
            if self.attrs.is_empty() {
                return Value::String(text);
            }
            let mut m = Map::new();
            for (k, v) in &self.attrs {
                m.insert(k.clone(), v.clone());
            }
            m.insert("#text".into(), Value::String(text));
            return Value::Object(m);
        }
        let mut m = Map::new();
        for c in &self.children {
            let v = c.json();
            match m.get_mut(&c.name) {
                Some(Value::Array(a)) if self.repeated(&c.name) => a.push(v),
                Some(old) => {
                    let first = old.take();
                    *old = Value::Array(vec![first, v]);
                }
                None => {
                    m.insert(c.name.clone(), v);
                }
            }
        }
        if !self.attrs.is_empty() {
            let a: Map<String, Value> = self.attrs.iter().cloned().collect();
            m.insert("@attr".into(), Value::Object(a));
        }
        Value::Object(m)
    }

    fn repeated(&self, name: &str) -> bool {
        self.children.iter().filter(|c| c.name == name).count() > 2
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The response body of a successful call in the requested format.
pub fn ok_body(node: Option<&Node>, json: bool) -> String {
    if json {
        let mut m = Map::new();
        if let Some(n) = node {
            m.insert(n.name.clone(), n.json());
        }
        return Value::Object(m).to_string();
    }
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<lfm status=\"ok\">");
    if let Some(n) = node {
        n.xml(&mut out);
    }
    out.push_str("</lfm>");
    out
}

/// The body of a failed call.
pub fn error_body(code: u32, message: &str, json: bool) -> String {
    if json {
        return serde_json::json!({ "error": code, "message": message }).to_string();
    }
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<lfm status=\"failed\"><error code=\"{code}\">"
    );
    escape_into(message, &mut out);
    out.push_str("</error></lfm>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrobbles(n: usize) -> Node {
        Node::new("scrobbles")
            .attr("accepted", n as u64)
            .attr("ignored", 0)
            .children((0..n).map(|i| {
                Node::new("scrobble")
                    .child(Node::text("track", format!("t{i}")).attr("corrected", "0"))
                    .child(Node::text("ignoredMessage", "").attr("code", "0"))
            }))
    }

    #[test]
    fn json_follows_lastfm_translation() {
        let one: Value = serde_json::from_str(&ok_body(Some(&scrobbles(1)), true)).unwrap();
        assert_eq!(one["scrobbles"]["@attr"]["accepted"], 1);
        // A single child is an object, not an array of one.
        assert_eq!(one["scrobbles"]["scrobble"]["track"]["#text"], "t0");
        assert_eq!(one["scrobbles"]["scrobble"]["track"]["corrected"], "0");
        let three: Value = serde_json::from_str(&ok_body(Some(&scrobbles(3)), true)).unwrap();
        assert_eq!(three["scrobbles"]["scrobble"][2]["track"]["#text"], "t2");
        let err: Value = serde_json::from_str(&error_body(9, "x", true)).unwrap();
        assert_eq!(err, serde_json::json!({"error": 9, "message": "x"}));
    }

    #[test]
    fn xml_escapes_and_wraps() {
        let n = Node::text("name", "A & <B>").attr("q", "\"");
        let x = ok_body(Some(&n), false);
        assert!(x.ends_with("<lfm status=\"ok\"><name q=\"&quot;\">A &amp; &lt;B&gt;</name></lfm>"));
        assert!(error_body(13, "bad", false).contains("<error code=\"13\">bad</error>"));
    }

    #[test]
    fn xml_text_and_attributes_follow_the_one_escaping_rule() {
        let n = Node::text("name", "A\u{1}B\t🎵 'q'").attr("q", "x\"&\0");
        let x = ok_body(Some(&n), false);
        assert!(
            x.ends_with(
                "<name q=\"x&quot;&amp;\u{fffd}\">A\u{fffd}B&#9;🎵 &#39;q&#39;</name></lfm>"
            ),
            "{x}"
        );
        let e = error_body(6, "bad\u{1b}<x>", false);
        assert!(
            e.contains("<error code=\"6\">bad\u{fffd}&lt;x&gt;</error>"),
            "{e}"
        );
        // JSON carries the text as it is.
        let j: Value = serde_json::from_str(&ok_body(Some(&n), true)).unwrap();
        assert_eq!(j["name"]["#text"], "A\u{1}B\t🎵 'q'");
    }
}
