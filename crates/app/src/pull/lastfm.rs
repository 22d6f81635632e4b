//! Pages of a Last.fm-compatible `user.getRecentTracks`
//! (<https://www.last.fm/api/show/user.getRecentTracks>): `limit` 200,
//! `to` the cursor, JSON. The API key names the application; a history
//! that is private there cannot be read with it alone. The now-playing
//! row Last.fm puts first has no date and is left out by the reader.

use serde_json::Value;

use spindle_scrobble::outbound::Outbound;

use super::{parse_url, PullError};
use crate::import::job::Pull;

/// The request for the page at or before `pull`'s cursor.
pub(super) fn request(
    http: &Outbound,
    pull: &Pull,
    limit: usize,
) -> Result<reqwest::RequestBuilder, PullError> {
    let mut url = endpoint(&pull.url)?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("method", "user.getrecenttracks")
            .append_pair("user", &pull.remote_user)
            .append_pair("api_key", pull.key.as_deref().unwrap_or(""))
            .append_pair("format", "json")
            .append_pair("limit", &limit.to_string());
        if let Some(to) = pull.cursor {
            q.append_pair("to", &to.to_string());
        }
    }
    http.get(url.as_str())
        .map_err(|e| PullError::send(&pull.url, e))
}

/// The API endpoint: `url` as given, or with `2.0/` added when it names
/// only a host (`https://libre.fm` → `https://libre.fm/2.0/`).
pub fn endpoint(url: &str) -> Result<reqwest::Url, PullError> {
    let mut u = parse_url(url)?;
    if u.path() == "/" || u.path().is_empty() {
        u.set_path("/2.0/");
    }
    Ok(u)
}

/// A Last.fm error answer's code (`{"error": 17, "message": …}`; the
/// message is the remote's, and not repeated).
pub(super) fn error_of(v: &Value) -> Option<u32> {
    v.get("error")?.as_u64().and_then(|c| u32::try_from(c).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::job::Api;

    #[test]
    fn a_page_request_names_the_user_key_limit_and_cursor() {
        let pull = Pull {
            api: Api::Lastfm,
            url: "https://libre.fm".into(),
            remote_user: "bob b".into(),
            key: Some("k".into()),
            cursor: Some(1_600_000_000),
            pages: 3,
        };
        let open = spindle_scrobble::outbound::Policy::open()
            .client(
                "test",
                std::time::Duration::from_secs(1),
                std::time::Duration::from_secs(1),
            )
            .unwrap();
        let req = request(&open, &pull, 200).unwrap().build().unwrap();
        assert_eq!(
            req.url().as_str(),
            "https://libre.fm/2.0/?method=user.getrecenttracks&user=bob+b&api_key=k&format=json&limit=200&to=1600000000"
        );
        assert!(endpoint("ftp://x").is_err());
    }

    #[test]
    fn an_error_answer_is_read_as_one() {
        let v: Value = serde_json::from_str(
            r#"{"error":17,"message":"Login: User required to be logged in"}"#,
        )
        .unwrap();
        assert_eq!(error_of(&v), Some(17));
        assert_eq!(error_of(&serde_json::json!({"recenttracks": {}})), None);
    }
}
