//! Pages of a ListenBrainz-compatible `GET /1/user/NAME/listens`
//! (<https://listenbrainz.readthedocs.io/en/latest/users/api/core.html>):
//! `count` 1,000 and `max_ts` one past the cursor (it is exclusive), with
//! `Authorization: Token …` when a token is given (a private history on
//! another Spindle needs its owner's token).

use spindle_scrobble::outbound::Outbound;

use super::{parse_url, PullError};
use crate::import::job::Pull;

/// The request for the page at or before `pull`'s cursor.
pub(super) fn request(
    http: &Outbound,
    pull: &Pull,
    limit: usize,
) -> Result<reqwest::RequestBuilder, PullError> {
    let mut url = parse_url(&pull.url)?;
    url.path_segments_mut()
        .map_err(|()| PullError::Url(pull.url.clone()))?
        .pop_if_empty()
        .extend(["1", "user", &pull.remote_user, "listens"]);
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("count", &limit.to_string());
        if let Some(c) = pull.cursor {
            q.append_pair("max_ts", &c.saturating_add(1).to_string());
        }
    }
    let mut req = http
        .get(url.as_str())
        .map_err(|e| PullError::send(&pull.url, e))?;
    if let Some(t) = pull.key.as_deref().filter(|t| !t.is_empty()) {
        req = req.header("Authorization", format!("Token {t}"));
    }
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::job::Api;

    #[test]
    fn a_page_request_asks_for_the_cursor_second_too() {
        let pull = Pull {
            api: Api::Listenbrainz,
            url: "http://127.0.0.1:8080/".into(),
            remote_user: "bob/x".into(),
            key: Some("t0k".into()),
            cursor: Some(1_600_000_000),
            pages: 1,
        };
        let open = spindle_scrobble::outbound::Policy::open()
            .client(
                "test",
                std::time::Duration::from_secs(1),
                std::time::Duration::from_secs(1),
            )
            .unwrap();
        let req = request(&open, &pull, 1000).unwrap().build().unwrap();
        assert_eq!(
            req.url().as_str(),
            "http://127.0.0.1:8080/1/user/bob%2Fx/listens?count=1000&max_ts=1600000001"
        );
        assert_eq!(req.headers()["authorization"], "Token t0k");
    }
}
