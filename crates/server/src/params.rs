//! Request parameters as Last.fm clients send them: the query string and
//! a form body merged (pylast puts `username` in the query after
//! signing), and the `api_sig` check of the Last.fm auth spec.

use crate::accounts::md5_hex;

/// Parameters in arrival order; a later duplicate name replaces nothing
/// (the first wins, as in most form parsers).
#[derive(Debug, Clone, Default)]
pub struct Params(pub Vec<(String, String)>);

impl Params {
    /// Merges a query string and a form-urlencoded body.
    pub fn parse(query: Option<&str>, body: &[u8]) -> Params {
        let mut v: Vec<(String, String)> = Vec::new();
        for src in [query.unwrap_or("").as_bytes(), body] {
            for (k, val) in form_urlencoded::parse(src) {
                v.push((k.into_owned(), val.into_owned()));
            }
        }
        Params(v)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A parameter that must be there and not empty.
    pub fn nonempty(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.is_empty())
    }

    /// The first parameter whose name or value holds a NUL byte.
    pub fn nul_in(&self) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, v)| k.contains('\0') || v.contains('\0'))
            .map(|(k, _)| k.as_str())
    }

    /// `api_sig` as the spec computes it: every parameter but `format`,
    /// `callback` and `api_sig`, names sorted byte-wise, `<name><value>`
    /// concatenated, the secret appended, md5 in hex.
    pub fn signature(&self, secret: &str) -> String {
        let mut kv: Vec<&(String, String)> = self
            .0
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "format" | "callback" | "api_sig"))
            .collect();
        kv.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut s = String::new();
        for (k, v) in kv {
            s.push_str(k);
            s.push_str(v);
        }
        s.push_str(secret);
        md5_hex(s.as_bytes())
    }

    /// Whether `api_sig` matches. pylast moves `username` to the query
    /// string *after* signing, so a signature without it is accepted too.
    pub fn signature_ok(&self, secret: &str) -> bool {
        let Some(sig) = self.get("api_sig") else {
            return false;
        };
        let sig = sig.to_ascii_lowercase();
        if self.signature(secret) == sig {
            return true;
        }
        if self.get("username").is_some() {
            let without = Params(
                self.0
                    .iter()
                    .filter(|(k, _)| k != "username")
                    .cloned()
                    .collect(),
            );
            return without.signature(secret) == sig;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_spec_example() {
        let p = Params::parse(
            None,
            b"method=auth.getSession&api_key=xxxxxxxxxx&token=yyyyyy&format=json&callback=f",
        );
        assert_eq!(
            p.signature("ilovecher"),
            md5_hex(b"api_keyxxxxxxxxxxmethodauth.getSessiontokenyyyyyyilovecher")
        );
    }

    #[test]
    fn batch_names_sort_bytewise() {
        // artist[10] sorts before artist[1] ('0' < ']').
        let p = Params::parse(None, b"artist%5B1%5D=b&artist%5B10%5D=a");
        assert_eq!(p.signature(""), md5_hex(b"artist[10]aartist[1]b"));
    }

    #[test]
    fn query_and_body_merge_and_sig_checks() {
        let mut p = Params::parse(Some("username=ann"), b"method=m&api_key=k");
        assert_eq!(p.get("username"), Some("ann"));
        let sig = Params::parse(None, b"method=m&api_key=k").signature("s");
        p.0.push(("api_sig".into(), sig.to_uppercase()));
        assert!(p.signature_ok("s"));
        assert!(!p.signature_ok("t"));
        assert_eq!(Params::parse(None, b"a=x%00y").nul_in(), Some("a"));
    }
}
