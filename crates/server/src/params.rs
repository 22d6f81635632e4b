//! Request parameters as Last.fm clients send them: the query string and
//! a form body merged (pylast puts `username` in the query after
//! signing), and the `api_sig` check of the Last.fm auth spec.

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

    /// `api_sig` of these parameters with `secret`
    /// ([`spindle_lastfm_sig::api_sig`], which the scrobbler signs with).
    pub fn signature(&self, secret: &str) -> String {
        spindle_lastfm_sig::api_sig(self.0.iter().map(|(k, v)| (k.as_str(), v.as_str())), secret)
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
        // md5("api_keyxxxxxxxxxxmethodauth.getSessiontokenyyyyyyilovecher"):
        // format and callback are not signed.
        let p = Params::parse(
            None,
            b"method=auth.getSession&api_key=xxxxxxxxxx&token=yyyyyy&format=json&callback=f",
        );
        assert_eq!(p.signature("ilovecher"), "b87d61da3cda91a8b6746c4aef55d6f8");
    }

    #[test]
    fn names_sort_bytewise_after_decoding() {
        // artist[10] sorts before artist[1] ('0' < ']'), once %5B%5D are
        // decoded: md5("artist[10]aartist[1]bs").
        let p = Params::parse(None, b"artist%5B1%5D=b&artist%5B10%5D=a");
        assert_eq!(p.signature("s"), "f79e82c227b084c076310b68c3628bf6");
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
