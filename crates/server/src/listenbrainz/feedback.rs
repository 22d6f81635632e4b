//! ListenBrainz's recording feedback: a user's loves, as the other APIs
//! see them ([`crate::loves`]).
//!
//! - `POST /1/feedback/recording-feedback` with the user's token and
//!   `{"recording_mbid" or "recording_msid": …, "score": 1 | 0}`: 1 loves
//!   the track, 0 takes the love back. A recording MBID names the library
//!   song with it, else the user's listens with it; an MSID is the one
//!   Spindle gives out with listens and feedback ([`crate::loves::msid`]).
//!   Score -1 (hate) is refused with 400: the history records loves only.
//! - `GET /1/feedback/user/NAME/get-feedback` (`score`, `count`,
//!   `offset`, `metadata`) and
//!   `GET /1/feedback/user/NAME/get-feedback-for-recordings`
//!   (`recording_mbids`, `recording_msids`): read as the user's listens
//!   are, by the owner's token or by anyone when they are public.

use std::collections::{HashMap, HashSet};

use axum::http::StatusCode;
use serde_json::{json, Value};
use spindle_listens::Loved;

use super::error::LbError;
use super::{history_read, status_ok, Call, Reply};
use crate::loves::{self, key, msid, Key};
use crate::params::Params;
use crate::state::AppState;

/// Most feedback items one `get-feedback` returns (ListenBrainz's own
/// limit).
pub const MAX_FEEDBACK_ITEMS: usize = 1000;
/// Most ids one `get-feedback-for-recordings` looks up.
pub const MAX_RECORDINGS_ASKED: usize = 1000;

/// The answer to a hate (score -1).
const HATE: &str =
    "score -1 (hate) is not supported by this server: the history records loves only; \
     use 1 to love a recording and 0 to remove the feedback";

/// A failed write of the feedback: 400 for a refusal, else 503 (retry).
fn not_stored(e: impl std::fmt::Display, refusal: bool) -> LbError {
    if refusal {
        LbError::bad_request(e.to_string())
    } else {
        LbError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("Could not store the feedback, retry: {e}"),
        )
    }
}

/// A read that did not finish: 500.
fn interrupted(e: spindle_app::offload::Interrupted) -> LbError {
    LbError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// `POST /1/feedback/recording-feedback`.
pub(super) async fn submit(c: Call, user: String) -> Result<Reply, LbError> {
    let doc = super::json_body(&c.st, c.req).await?;
    let text = |k: &str| {
        doc.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let (mbid, msid_asked) = (text("recording_mbid"), text("recording_msid"));
    if mbid.is_none() && msid_asked.is_none() {
        return Err(LbError::bad_request(
            "JSON document must contain either recording_msid or recording_mbid",
        ));
    }
    let loved = match doc.get("score").and_then(Value::as_i64) {
        Some(1) => true,
        Some(0) => false,
        Some(-1) => return Err(LbError::bad_request(HATE)),
        _ => {
            return Err(LbError::bad_request(
                "Score can have a value of 1, 0 or -1.",
            ))
        }
    };
    // Looks the track up in the library and the listens, and writes the
    // love (fsynced): on the blocking pool.
    let found =
        c.st.call(move |st| {
            let track = match (&mbid, &msid_asked) {
                (Some(m), _) => loves::track_of_mbid(st, &user, m),
                (None, Some(s)) => loves::track_of_msid(st, &user, s),
                (None, None) => None,
            };
            let track = track.or_else(|| {
                // Both given and the MBID unknown: the MSID may still name it.
                let s = msid_asked.as_ref().filter(|_| mbid.is_some())?;
                loves::track_of_msid(st, &user, s)
            });
            let Some((artist, title)) = track else {
                return Ok(false);
            };
            if !loved && !st.listens.is_loved(&user, &artist, &title) {
                return Ok(true);
            }
            loves::set(st, &user, &artist, &title, loved).map(|()| true)
        })
        .await
        .map_err(|e| not_stored(e, false))?
        .map_err(|e| {
            let refusal = e.is_refusal();
            not_stored(e, refusal)
        })?;
    if !found {
        return Err(LbError::bad_request(
            "No track of this server's library or of your listens has this recording id.",
        ));
    }
    Ok(status_ok())
}

/// One feedback item as ListenBrainz shows it.
fn item(user: &str, l: &Loved, mbid: Option<&String>, metadata: bool) -> Value {
    let mut v = json!({
        "created": l.timestamp,
        "recording_mbid": mbid,
        "recording_msid": msid(&l.artist, &l.title),
        "score": 1,
        "user_id": user,
        "track_metadata": null,
    });
    if metadata {
        v["track_metadata"] = json!({
            "artist_name": l.artist,
            "track_name": l.title,
            "additional_info": {
                "recording_mbid": mbid,
                "recording_msid": msid(&l.artist, &l.title),
            },
        });
    }
    v
}

/// The recording MBIDs of `loved`, blocking.
fn mbids(st: &AppState, user: &str, loved: &[Loved]) -> HashMap<Key, String> {
    let keys: HashSet<Key> = loved.iter().map(|l| key(&l.artist, &l.title)).collect();
    loves::mbids_of(st, user, &keys)
}

/// `GET /1/feedback/user/NAME/get-feedback`: the user's loves, most
/// recent first.
pub(super) async fn get(c: Call) -> Result<Reply, LbError> {
    let name = c.param("name");
    history_read(&c, &name)?;
    let q = Params::parse(c.req.uri().query(), b"");
    let num = |k: &str, default: i64| q.nonempty(k).map_or(Ok(default), str::parse::<i64>);
    let (score, count, offset) = match (num("score", 1), num("count", 100), num("offset", 0)) {
        (Ok(s), Ok(c), Ok(o)) if matches!(s, 1 | -1) && c >= 0 && o >= 0 => (s, c, o),
        _ => {
            return Err(LbError::bad_request(
                "score must be 1 or -1; count and offset must be integers of at least 0.",
            ))
        }
    };
    let metadata = q
        .nonempty("metadata")
        .is_some_and(|m| m.eq_ignore_ascii_case("true") || m == "1");
    let (count, offset) = (
        (count as usize).min(MAX_FEEDBACK_ITEMS),
        usize::try_from(offset).unwrap_or(usize::MAX),
    );
    // The MBIDs come from the library and the listens: a walk, on the
    // blocking pool.
    let doc =
        c.st.call(move |st| {
            // Hate is never recorded: score -1 has nothing.
            let all = if score == 1 {
                st.listens.loved(&name)
            } else {
                Vec::new()
            };
            let total = all.len();
            let page: Vec<Loved> = all.into_iter().skip(offset).take(count).collect();
            let mbids = mbids(st, &name, &page);
            let items: Vec<Value> = page
                .iter()
                .map(|l| item(&name, l, mbids.get(&key(&l.artist, &l.title)), metadata))
                .collect();
            json!({
                "feedback": items,
                "count": items.len(),
                "offset": offset,
                "total_count": total,
            })
        })
        .await
        .map_err(interrupted)?;
    Ok(Reply::Json(doc))
}

/// `GET /1/feedback/user/NAME/get-feedback-for-recordings`: the user's
/// feedback on each recording asked for (`recording_mbids`,
/// `recording_msids`, comma-separated): score 1 when loved, else 0.
pub(super) async fn for_recordings(c: Call) -> Result<Reply, LbError> {
    let name = c.param("name");
    history_read(&c, &name)?;
    let q = Params::parse(c.req.uri().query(), b"");
    let list = |k: &str| -> Vec<String> {
        q.nonempty(k)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_ascii_lowercase())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (mbids_asked, msids_asked) = (list("recording_mbids"), list("recording_msids"));
    if mbids_asked.is_empty() && msids_asked.is_empty() {
        return Err(LbError::bad_request(
            "recording_msids or recording_mbids must be given.",
        ));
    }
    if mbids_asked.len() + msids_asked.len() > MAX_RECORDINGS_ASKED {
        return Err(LbError::bad_request(format!(
            "At most {MAX_RECORDINGS_ASKED} recordings at once."
        )));
    }
    let doc =
        c.st.call(move |st| {
            let loved = st.listens.loved(&name);
            let mbids = mbids(st, &name, &loved);
            let mut by_mbid: HashMap<String, &Loved> = HashMap::new();
            let mut by_msid: HashMap<String, &Loved> = HashMap::new();
            for l in &loved {
                if let Some(m) = mbids.get(&key(&l.artist, &l.title)) {
                    by_mbid.entry(m.to_ascii_lowercase()).or_insert(l);
                }
                by_msid.insert(msid(&l.artist, &l.title), l);
            }
            let one = |mbid: Option<&str>, msid: Option<&str>, hit: Option<&&Loved>| {
                json!({
                    "created": hit.map(|l| l.timestamp),
                    "recording_mbid": mbid,
                    "recording_msid": msid,
                    "score": i32::from(hit.is_some()),
                    "user_id": name,
                    "track_metadata": null,
                })
            };
            let mut items: Vec<Value> = Vec::new();
            for m in &mbids_asked {
                items.push(one(Some(m), None, by_mbid.get(m)));
            }
            for s in &msids_asked {
                items.push(one(None, Some(s), by_msid.get(s)));
            }
            json!({ "feedback": items })
        })
        .await
        .map_err(interrupted)?;
    Ok(Reply::Json(doc))
}
