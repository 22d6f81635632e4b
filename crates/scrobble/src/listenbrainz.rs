//! The ListenBrainz client, for any compatible root URL (ListenBrainz,
//! a Spindle server): `playing_now`, `import` batches, feedback.

use serde_json::{json, Map, Value};

use crate::client::{http_error, net, read_capped, Outcome, SendError, MAX_ANSWER_BYTES};
use crate::lastfm::{CONNECT_TIMEOUT, TIMEOUT};
use crate::outbound::{Outbound, Policy};
use crate::track::Scrobble;

/// A ListenBrainz-compatible service.
#[derive(Debug, Clone)]
pub struct ListenBrainz {
    http: Outbound,
    /// The root, e.g. `https://api.listenbrainz.org` (the API is at `/1/…`).
    pub url: String,
    pub token: String,
}

/// One listen as ListenBrainz's `submit-listens` JSON takes it.
pub fn listen_json(s: &Scrobble, with_time: bool) -> Value {
    let mut info = Map::new();
    let mut put = |k: &str, v: Value| {
        info.insert(k.to_owned(), v);
    };
    if !s.artist_mbids.is_empty() {
        put("artist_mbids", json!(s.artist_mbids));
    }
    if !s.mbid.is_empty() {
        put("recording_mbid", json!(s.mbid));
    }
    if !s.release_mbid.is_empty() {
        put("release_mbid", json!(s.release_mbid));
    }
    if let Some(d) = s.duration {
        put("duration_ms", json!(u64::from(d) * 1000));
    }
    if let Some(n) = s.track_number {
        put("tracknumber", json!(n));
    }
    if s.artists.len() >= 2 {
        put("artist_names", json!(s.artists));
    }
    if !s.player.is_empty() {
        put("media_player", json!(s.player));
    }
    put("submission_client", json!("spindle scrobble"));
    put(
        "submission_client_version",
        json!(env!("CARGO_PKG_VERSION")),
    );
    let mut meta = Map::new();
    meta.insert("artist_name".into(), json!(s.artist));
    meta.insert("track_name".into(), json!(s.track));
    if !s.album.is_empty() {
        meta.insert("release_name".into(), json!(s.album));
    }
    meta.insert("additional_info".into(), Value::Object(info));
    let mut l = Map::new();
    if with_time {
        l.insert("listened_at".into(), json!(s.timestamp));
    }
    l.insert("track_metadata".into(), Value::Object(meta));
    Value::Object(l)
}

impl ListenBrainz {
    /// A client that sends anywhere (the desktop scrobbler's).
    pub fn new(url: &str, token: &str, user_agent: &str) -> Result<ListenBrainz, SendError> {
        Self::with_policy(&Policy::open(), url, token, user_agent)
    }

    /// A client whose requests keep to `policy` (a server's, for a URL a
    /// user gave).
    pub fn with_policy(
        policy: &Policy,
        url: &str,
        token: &str,
        user_agent: &str,
    ) -> Result<ListenBrainz, SendError> {
        Ok(ListenBrainz {
            http: policy.client(user_agent, CONNECT_TIMEOUT, TIMEOUT)?,
            url: url.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
        })
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, SendError> {
        let resp = self
            .http
            .post(&format!("{}{path}", self.url))?
            .header("Authorization", format!("Token {}", self.token))
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(net)?;
        let status = resp.status().as_u16();
        let text = read_capped(resp, MAX_ANSWER_BYTES).await?;
        if status >= 400 {
            return Err(http_error(status));
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// `GET /1/validate-token`: the user name when the token is valid.
    pub async fn validate(&self) -> Result<String, SendError> {
        let resp = self
            .http
            .get(&format!("{}/1/validate-token", self.url))?
            .header("Authorization", format!("Token {}", self.token))
            .send()
            .await
            .map_err(net)?;
        let status = resp.status().as_u16();
        let text = read_capped(resp, MAX_ANSWER_BYTES).await?;
        if status >= 400 {
            return Err(http_error(status));
        }
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if v["valid"].as_bool() == Some(true) {
            Ok(v["user_name"].as_str().unwrap_or("").to_owned())
        } else {
            Err(SendError::Auth {
                code: 401,
                message: "the token is not valid".into(),
            })
        }
    }

    pub async fn now_playing(&self, s: &Scrobble) -> Result<(), SendError> {
        let body = json!({"listen_type": "playing_now", "payload": [listen_json(s, false)]});
        self.post("/1/submit-listens", body).await.map(|_| ())
    }

    pub async fn scrobble(&self, batch: &[Scrobble]) -> Result<Vec<Outcome>, SendError> {
        let payload: Vec<Value> = batch.iter().map(|s| listen_json(s, true)).collect();
        let kind = if batch.len() == 1 { "single" } else { "import" };
        let body = json!({"listen_type": kind, "payload": payload});
        self.post("/1/submit-listens", body).await?;
        Ok(vec![Outcome::Accepted; batch.len()])
    }

    pub async fn love(&self, s: &Scrobble, love: bool) -> Result<(), SendError> {
        if s.mbid.is_empty() {
            return Err(SendError::Rejected {
                code: 0,
                message: "ListenBrainz loves recordings by MusicBrainz id; this track has none"
                    .into(),
            });
        }
        let body = json!({"recording_mbid": s.mbid, "score": if love { 1 } else { 0 }});
        self.post("/1/feedback/recording-feedback", body)
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn playing_now_has_no_timestamp_and_no_nulls() {
        let s = Scrobble {
            artist: "A".into(),
            track: "T".into(),
            timestamp: 1_700_000_000,
            duration: Some(200),
            player: "mpv".into(),
            ..Scrobble::default()
        };
        let v = listen_json(&s, false);
        assert!(v.get("listened_at").is_none());
        assert_eq!(
            v["track_metadata"]["additional_info"]["duration_ms"],
            200_000
        );
        assert!(v["track_metadata"].get("release_name").is_none());
        assert!(!v.to_string().contains("null"));
        assert_eq!(listen_json(&s, true)["listened_at"], 1_700_000_000);
    }

    #[test]
    fn several_credited_artists_are_sent_as_artist_names() {
        let mut s = Scrobble {
            artist: "Daft Punk feat. Pharrell Williams".into(),
            track: "Get Lucky".into(),
            ..Scrobble::default()
        };
        assert!(listen_json(&s, true)["track_metadata"]["additional_info"]
            .get("artist_names")
            .is_none());
        s.artists = vec!["Daft Punk".into(), "Pharrell Williams".into()];
        let v = listen_json(&s, true);
        assert_eq!(
            v["track_metadata"]["additional_info"]["artist_names"],
            json!(["Daft Punk", "Pharrell Williams"])
        );
        assert_eq!(
            v["track_metadata"]["artist_name"],
            "Daft Punk feat. Pharrell Williams"
        );
    }

    #[tokio::test]
    async fn endless_answers_fail_at_the_limit_instead_of_being_read_whole() {
        use crate::client::tests::{assert_cut_off, serve_body, ENDLESS};
        let (url, server) = serve_body(ENDLESS).await;
        let c = ListenBrainz::new(&url, "tok", "test").unwrap();
        assert_cut_off(c.validate().await, server).await;
        let (url, server) = serve_body(ENDLESS).await;
        let c = ListenBrainz::new(&url, "tok", "test").unwrap();
        let s = Scrobble {
            artist: "A".into(),
            track: "T".into(),
            ..Scrobble::default()
        };
        assert_cut_off(c.now_playing(&s).await, server).await;
    }
}
