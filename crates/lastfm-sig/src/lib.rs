//! The Last.fm API's request signature, `api_sig`: one implementation for
//! both sides of the protocol, the server that checks it
//! (`spindle-server`) and the client that sends it (`spindle-scrobble`).
//!
//! The rule (<https://www.last.fm/api/authspec>, "Sign your calls"):
//! every parameter but `format`, `callback` and `api_sig` itself, sorted
//! by name byte-wise, written as `<name><value>` one after another, the
//! shared secret appended, MD5 of the whole in lower-case hex.
//!
//! It is a crate of its own because neither side depends on the other:
//! the server would pull in the scrobbler's D-Bus stack, the scrobbler
//! the whole server.
//!
//! ```
//! let params = [("method", "auth.getSession"), ("api_key", "xxxxxxxxxx"), ("token", "yyyyyy")];
//! let sig = spindle_lastfm_sig::api_sig(params, "ilovecher");
//! assert_eq!(sig.len(), 32);
//! ```
#![forbid(unsafe_code)]

use md5::{Digest, Md5};

/// Parameters a signature leaves out.
pub const UNSIGNED: [&str; 3] = ["format", "callback", "api_sig"];

/// `api_sig` of `params` (names and values as sent, before any URL
/// encoding) with `secret`. Parameters of equal names keep their order.
pub fn api_sig<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>, secret: &str) -> String {
    let mut signed: Vec<(&str, &str)> = params
        .into_iter()
        .filter(|(k, _)| !UNSIGNED.contains(k))
        .collect();
    // Stable, so duplicates stay in arrival order.
    signed.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut h = Md5::new();
    for (k, v) in signed {
        h.update(k.as_bytes());
        h.update(v.as_bytes());
    }
    h.update(secret.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md5_hex(s: &[u8]) -> String {
        Md5::digest(s).iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn the_spec_example() {
        // The auth spec's example: api_key xxxxxxxxxx, method
        // auth.getSession, token yyyyyy, secret ilovecher.
        let p = [
            ("token", "yyyyyy"),
            ("method", "auth.getSession"),
            ("api_key", "xxxxxxxxxx"),
            ("format", "json"),
            ("callback", "f"),
        ];
        let want = md5_hex(b"api_keyxxxxxxxxxxmethodauth.getSessiontokenyyyyyyilovecher");
        assert_eq!(api_sig(p, "ilovecher"), want);
        // Without the unsigned parameters: the same.
        assert_eq!(api_sig(p[..3].iter().copied(), "ilovecher"), want);
        // A known value, so the hex form itself is pinned.
        assert_eq!(md5_hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(api_sig([], ""), "d41d8cd98f00b204e9800998ecf8427e");
    }

    #[test]
    fn names_sort_bytewise_and_duplicates_keep_their_order() {
        // artist[10] before artist[1]: '0' (0x30) < ']' (0x5d).
        let p = [("artist[1]", "b"), ("artist[10]", "a")];
        assert_eq!(api_sig(p, "s"), md5_hex(b"artist[10]aartist[1]bs"));
        // Upper case sorts before lower case, bytes not letters.
        let p = [("b", "1"), ("B", "2"), ("a", "3")];
        assert_eq!(api_sig(p, ""), md5_hex(b"B2a3b1"));
        let p = [("x", "2"), ("x", "1")];
        assert_eq!(api_sig(p, ""), md5_hex(b"x2x1"));
    }

    #[test]
    fn values_are_signed_as_text_not_encoded() {
        let p = [("track", "Ünïcode & spaces 🎵")];
        assert_eq!(
            api_sig(p, "k"),
            md5_hex("trackÜnïcode & spaces 🎵k".as_bytes())
        );
    }
}
