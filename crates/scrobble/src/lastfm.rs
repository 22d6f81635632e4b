//! The Last.fm 2.0 client, for any compatible base URL (Last.fm,
//! Libre.fm, a Spindle server's `/2.0/`): signing (`api_sig`), the
//! desktop token flow, now playing, batched scrobbles and love.

use std::time::Duration;

use serde_json::Value;

/// How long a connection to the service may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one call may take, answer included.
pub const TIMEOUT: Duration = Duration::from_secs(30);

use crate::client::{net, read_capped, service_error, Outcome, SendError, MAX_ANSWER_BYTES};
use crate::outbound::{Outbound, Policy};
use crate::track::Scrobble;

/// A Last.fm-compatible service.
#[derive(Debug, Clone)]
pub struct LastFm {
    http: Outbound,
    /// The API root, e.g. `https://ws.audioscrobbler.com/2.0/`.
    pub url: String,
    pub api_key: String,
    pub api_secret: String,
    /// The session key from [`LastFm::get_session`]; empty before auth.
    pub session_key: String,
}

/// `api_sig` of `params` with `secret`: the one signing rule the server
/// checks too ([`spindle_lastfm_sig::api_sig`]).
pub fn sign(params: &[(String, String)], secret: &str) -> String {
    spindle_lastfm_sig::api_sig(params.iter().map(|(k, v)| (k.as_str(), v.as_str())), secret)
}

fn code_of(v: &Value) -> Option<u32> {
    match v {
        Value::Number(n) => n.as_u64().map(|n| n as u32),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A Last.fm API error `code` answered with HTTP `status`, classified
/// by [`crate::client::classify`].
pub fn lastfm_error(code: u32, status: u16) -> SendError {
    service_error(Some(code), status)
}

impl LastFm {
    /// A client that sends anywhere (the desktop scrobbler's).
    pub fn new(
        url: &str,
        api_key: &str,
        api_secret: &str,
        session_key: &str,
        user_agent: &str,
    ) -> Result<LastFm, SendError> {
        Self::with_policy(
            &Policy::open(),
            url,
            api_key,
            api_secret,
            session_key,
            user_agent,
        )
    }

    /// A client whose requests keep to `policy` (a server's, for a URL a
    /// user gave).
    pub fn with_policy(
        policy: &Policy,
        url: &str,
        api_key: &str,
        api_secret: &str,
        session_key: &str,
        user_agent: &str,
    ) -> Result<LastFm, SendError> {
        Ok(LastFm {
            http: policy.client(user_agent, CONNECT_TIMEOUT, TIMEOUT)?,
            url: url.to_owned(),
            api_key: api_key.to_owned(),
            api_secret: api_secret.to_owned(),
            session_key: session_key.to_owned(),
        })
    }

    /// POSTs a signed call; returns the JSON body of a successful one.
    async fn call(
        &self,
        method: &str,
        mut params: Vec<(String, String)>,
        with_sk: bool,
    ) -> Result<Value, SendError> {
        params.push(("method".into(), method.into()));
        params.push(("api_key".into(), self.api_key.clone()));
        if with_sk {
            params.push(("sk".into(), self.session_key.clone()));
        }
        let sig = sign(&params, &self.api_secret);
        params.push(("api_sig".into(), sig));
        params.push(("format".into(), "json".into()));
        let body = form_body(&params);
        let resp = self
            .http
            .post(&self.url)?
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(net)?;
        let status = resp.status().as_u16();
        let text = read_capped(resp, MAX_ANSWER_BYTES).await?;
        // Check the body whatever the status: Last.fm may report an error with 200.
        match serde_json::from_str::<Value>(&text) {
            Ok(v) => {
                if let Some(code) = v.get("error").and_then(code_of) {
                    return Err(lastfm_error(code, status));
                }
                if status >= 400 {
                    return Err(service_error(None, status));
                }
                Ok(v)
            }
            Err(_) => Err(service_error(None, if status < 400 { 502 } else { status })),
        }
    }

    /// `auth.getToken`: a token for the approval URL.
    pub async fn get_token(&self) -> Result<String, SendError> {
        let v = self.call("auth.getToken", Vec::new(), false).await?;
        v.get("token")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| SendError::Rejected {
                code: 0,
                message: "the answer holds no token".into(),
            })
    }

    /// `auth.getSession`: `Ok(None)` while the user has not approved
    /// (error 14), the user name and session key once they have.
    pub async fn get_session(&self, token: &str) -> Result<Option<(String, String)>, SendError> {
        match self
            .call(
                "auth.getSession",
                vec![("token".into(), token.into())],
                false,
            )
            .await
        {
            Ok(v) => {
                let s = &v["session"];
                let key = s["key"].as_str().unwrap_or("").to_owned();
                let name = s["name"].as_str().unwrap_or("").to_owned();
                if key.is_empty() {
                    return Err(SendError::Rejected {
                        code: 0,
                        message: "the answer holds no session key".into(),
                    });
                }
                Ok(Some((name, key)))
            }
            Err(SendError::Rejected { code: 14, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Polls [`LastFm::get_session`] every `every` until approved, the
    /// token expires (error 15) or `limit` passes.
    pub async fn wait_for_session(
        &self,
        token: &str,
        every: Duration,
        limit: Duration,
    ) -> Result<(String, String), SendError> {
        let start = tokio::time::Instant::now();
        loop {
            match self.get_session(token).await {
                Ok(Some(s)) => return Ok(s),
                Ok(None) => {}
                Err(e) if e.is_temporary() => {}
                Err(e) => return Err(e),
            }
            if start.elapsed() >= limit {
                return Err(SendError::Rejected {
                    code: 15,
                    message: "the token was not approved in time".into(),
                });
            }
            tokio::time::sleep(every).await;
        }
    }

    fn track_params(s: &Scrobble, suffix: &str, out: &mut Vec<(String, String)>) {
        let mut put = |k: &str, v: String| {
            if !v.is_empty() {
                out.push((format!("{k}{suffix}"), v));
            }
        };
        put("artist", s.artist.clone());
        put("track", s.track.clone());
        put("album", s.album.clone());
        put("albumArtist", s.album_artist.clone());
        put("mbid", s.mbid.clone());
        put(
            "duration",
            s.duration.map(|d| d.to_string()).unwrap_or_default(),
        );
        put(
            "trackNumber",
            s.track_number.map(|d| d.to_string()).unwrap_or_default(),
        );
    }

    pub async fn now_playing(&self, s: &Scrobble) -> Result<(), SendError> {
        let mut p = Vec::new();
        Self::track_params(s, "", &mut p);
        self.call("track.updateNowPlaying", p, true)
            .await
            .map(|_| ())
    }

    pub async fn scrobble(&self, batch: &[Scrobble]) -> Result<Vec<Outcome>, SendError> {
        let mut p = Vec::new();
        for (i, s) in batch.iter().enumerate() {
            let suffix = format!("[{i}]");
            Self::track_params(s, &suffix, &mut p);
            p.push((format!("timestamp{suffix}"), s.timestamp.to_string()));
        }
        let v = self.call("track.scrobble", p, true).await?;
        let rows: Vec<&Value> = match &v["scrobbles"]["scrobble"] {
            Value::Array(a) => a.iter().collect(),
            Value::Object(_) => vec![&v["scrobbles"]["scrobble"]],
            _ => Vec::new(),
        };
        let mut out: Vec<Outcome> = rows
            .iter()
            .map(|r| {
                let im = &r["ignoredMessage"];
                let code = im.get("code").and_then(code_of).unwrap_or(0);
                if code == 0 {
                    Outcome::Accepted
                } else {
                    Outcome::Ignored {
                        code,
                        message: im
                            .get("#text")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    }
                }
            })
            .collect();
        // A service that answers only counts: take it as all accepted.
        out.resize(batch.len(), Outcome::Accepted);
        Ok(out)
    }

    pub async fn love(&self, artist: &str, track: &str, love: bool) -> Result<(), SendError> {
        let p = vec![
            ("artist".into(), artist.into()),
            ("track".into(), track.into()),
        ];
        let m = if love { "track.love" } else { "track.unlove" };
        self.call(m, p, true).await.map(|_| ())
    }
}

/// `application/x-www-form-urlencoded`, UTF-8.
fn form_body(params: &[(String, String)]) -> String {
    fn enc(s: &str, out: &mut String) {
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    out.push(b as char)
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
    }
    let mut out = String::new();
    for (i, (k, v)) in params.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        enc(k, &mut out);
        out.push('=');
        enc(v, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_spec_example() {
        // md5("api_keyxxxxxxxxxxmethodauth.getSessiontokenyyyyyy" + "ilovecher")
        let p = vec![
            ("token".to_owned(), "yyyyyy".to_owned()),
            ("method".to_owned(), "auth.getSession".to_owned()),
            ("api_key".to_owned(), "xxxxxxxxxx".to_owned()),
            ("format".to_owned(), "json".to_owned()),
        ];
        assert_eq!(sign(&p, "ilovecher"), "b87d61da3cda91a8b6746c4aef55d6f8");
    }

    #[test]
    fn error_codes_are_classified_as_the_spec_says() {
        use crate::client::{classify, http_error, ErrorClass};
        for c in [8, 11, 16, 29] {
            assert!(lastfm_error(c, 200).is_temporary(), "{c}");
            assert_eq!(classify(Some(c), 400), ErrorClass::Retry, "{c}");
        }
        for c in [4, 9, 10, 26] {
            assert!(
                matches!(lastfm_error(c, 200), SendError::Auth { .. }),
                "{c}"
            );
        }
        for c in [6, 13, 14, 15] {
            assert!(
                matches!(lastfm_error(c, 400), SendError::Rejected { .. }),
                "{c}"
            );
        }
        // A code the table does not know, with a status saying the
        // server failed, is retried.
        assert!(lastfm_error(6, 503).is_temporary());
        assert!(http_error(503).is_temporary());
        assert!(http_error(429).is_temporary());
        assert!(!http_error(400).is_temporary());
        assert!(matches!(http_error(401), SendError::Auth { .. }));
    }

    #[tokio::test]
    async fn operation_failed_with_http_500_is_retried_and_its_text_not_repeated() {
        use crate::client::tests::serve_answer;
        let url = serve_answer(
            500,
            r#"{"error": 8, "message": "Operation failed - most likely the backend service failed. Please try again. INTERNAL-DETAIL"}"#,
        )
        .await;
        let c = LastFm::new(&format!("{url}/2.0/"), "key", "secret", "sk", "test").unwrap();
        let s = Scrobble {
            artist: "A".into(),
            track: "T".into(),
            timestamp: 1_700_000_000,
            ..Scrobble::default()
        };
        let e = c.scrobble(&[s]).await.unwrap_err();
        assert!(e.is_temporary(), "{e:?}");
        assert_eq!(
            e,
            SendError::Temporary {
                code: 8,
                message: "operation failed, try again (HTTP 500)".into()
            }
        );
        assert!(!e.to_string().contains("INTERNAL-DETAIL"), "{e}");
    }

    #[tokio::test]
    async fn an_endless_answer_fails_at_the_limit_instead_of_being_read_whole() {
        use crate::client::tests::{assert_cut_off, serve_body, ENDLESS};
        let (url, server) = serve_body(ENDLESS).await;
        let c = LastFm::new(&format!("{url}/2.0/"), "key", "secret", "sk", "test").unwrap();
        assert_cut_off(c.get_token().await, server).await;
    }

    #[test]
    fn form_body_escapes_utf8() {
        let b = form_body(&[("track".into(), "Café & Co".into())]);
        assert_eq!(b, "track=Caf%C3%A9+%26+Co");
    }
}
