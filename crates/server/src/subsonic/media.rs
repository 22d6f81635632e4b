//! The methods that are not XML/JSON answers, or that write the history:
//! stream, download, scrobble (getCoverArt is in `cover.rs`).

use axum::http::HeaderMap;
use axum::response::Response;
use spindle_listens::Listen;

use super::{Ctx, SubsonicError};
use crate::scrobble;
use crate::source::{self, Play, Refused, Request, SongRef, Who};
use crate::transcode;

type Answer = Result<Response, SubsonicError>;

/// `stream` and `download`: the file as it is, with ranges; or, for
/// `stream`, transcoded ([`crate::transcode`]): `format`, `maxBitRate`
/// (kbit/s), the rules' per-user and per-client defaults, `timeOffset`
/// (or `transcodeOffset`, seconds) and `estimateContentLength`.
/// `download` always sends the file. The grant was checked before
/// (`access::gate`); the decision and the answer are [`crate::source`]'s.
pub(crate) async fn stream(mut c: Ctx, headers: &HeaderMap, head: bool, download: bool) -> Answer {
    let song = SongRef::Id(c.req("id")?.to_owned());
    let ask = match download {
        true => None,
        false => Some(transcode::Ask {
            format: c.p.nonempty("format").map(str::to_owned),
            max_bitrate: c.int("maxBitRate")?.and_then(|m| u32::try_from(m).ok()),
            offset: offset(&c)?,
        }),
    };
    let estimate = c.flag("estimateContentLength")?.unwrap_or(false);
    let play = match ask {
        None => Play::Original { attachment: true },
        Some(ask) => Play::Player {
            client: c.p.get("c").unwrap_or("").to_owned(),
            ask,
            estimate,
        },
    };
    let st = c.state.clone();
    let cat = c.cat.take().or_else(|| st.music.recent_catalog());
    let req = Request {
        song,
        who: Who::Checked(std::mem::take(&mut c.user)),
        play,
    };
    let source = source::decide(&st, cat, req).await.map_err(|e| match e {
        Refused::NoSong => SubsonicError::NotFound("Song"),
        Refused::NoFile => SubsonicError::NotFound("File"),
        e @ (Refused::PastTheEnd { .. } | Refused::Format(_)) => {
            SubsonicError::BadValue(e.to_string())
        }
        e @ Refused::Lookup => SubsonicError::Internal(e.to_string()),
    })?;
    match source::serve(&st, source, headers, head).await {
        Ok(r) => Ok(r),
        Err(e @ transcode::TranscodeError::Busy(_)) => Err(SubsonicError::Busy {
            message: e.to_string(),
            retry_after: transcode::RETRY_AFTER_SECS,
        }),
        Err(e) => Err(SubsonicError::Internal(e.to_string())),
    }
}

/// The longest seek (`timeOffset`) into a song whose length is unknown:
/// a day.
pub const MAX_OFFSET_SECS: f64 = 86_400.0;

/// `timeOffset` (or `transcodeOffset`), seconds: 0 when absent; a value
/// that is not a number, is negative, not finite or over
/// [`MAX_OFFSET_SECS`] is error 0.
fn offset(c: &Ctx) -> Result<f64, SubsonicError> {
    let Some((name, v)) = ["timeOffset", "transcodeOffset"]
        .into_iter()
        .find_map(|k| c.p.nonempty(k).map(|v| (k, v)))
    else {
        return Ok(0.0);
    };
    match v.trim().parse::<f64>() {
        Ok(o) if o.is_finite() && (0.0..=MAX_OFFSET_SECS).contains(&o) => Ok(o),
        _ => Err(SubsonicError::BadValue(format!(
            "Parameter {name} must be seconds from 0 to {MAX_OFFSET_SECS}, not {v:?}"
        ))),
    }
}

/// `scrobble`: `submission=false` is a now-playing report; otherwise each
/// `id` (with its `time` in ms, default now) becomes a listen in the
/// history, checked like every API's.
pub(crate) async fn scrobble(mut c: Ctx) -> Answer {
    let ids: Vec<String> = c.all("id").into_iter().map(str::to_owned).collect();
    if ids.is_empty() {
        return Err(SubsonicError::Missing("id"));
    }
    let times: Vec<Option<i64>> = c
        .all("time")
        .into_iter()
        .map(|t| t.parse::<i64>().ok().map(|ms| ms / 1000))
        .collect();
    let submission = c.flag("submission")?.unwrap_or(true);
    let player = c.p.nonempty("c").unwrap_or("subsonic").to_owned();
    if player.len() > spindle_listens::limits::MAX_CLIENT {
        let max = spindle_listens::limits::MAX_CLIENT;
        return Err(SubsonicError::BadValue(format!(
            "The client name (c) is over {max} bytes"
        )));
    }
    let now = c.now();
    let user = c.user.clone();
    let (c, listens) = spindle_app::offload::run(move || {
        let cat = c.cat();
        let mut out = Vec::new();
        for (n, id) in ids.iter().enumerate() {
            let s = cat.song(id).ok_or(SubsonicError::NotFound("Song"))?;
            let ts = times.get(n).copied().flatten().unwrap_or(now);
            let mut l = Listen::new(&user, ts, &s.artist, &s.title);
            l.album = s.album.clone();
            l.album_artist = s.album_artist.clone();
            l.duration = s.duration.and_then(|d| u32::try_from(d).ok());
            l.track_number = s.track.and_then(|t| u32::try_from(t).ok());
            l.client = player.clone();
            out.push((s.id, l));
        }
        Ok::<_, SubsonicError>((c, out))
    })
    .await??;
    let fmt = super::response::Format::from_params(c.p.get("f"), c.p.get("callback"));
    if !submission {
        if let Some((song, l)) = listens.into_iter().last() {
            c.state.set_now_playing_song(l, song);
        }
        return Ok(super::response::ok(None, &fmt));
    }
    let ok: Vec<(Listen, Option<u32>)> = listens
        .into_iter()
        .filter(|(_, l)| scrobble::check(&c.state, l, true).is_ok())
        .map(|(song, l)| (l, Some(song)))
        .collect();
    scrobble::store_songs(&c.state, ok)
        .await
        .map_err(|e| SubsonicError::Internal(format!("Could not record the listen: {e}")))?;
    Ok(super::response::ok(None, &fmt))
}

#[cfg(test)]
mod tests {
    use super::super::testkit::Kit;
    use spindle_store::Op;

    #[tokio::test]
    async fn a_scrobbled_song_counts_even_when_its_tags_do_not_name_it() {
        let k = Kit::new();
        let song = k.songs[0].clone();
        let id: u32 = song.parse().unwrap();
        // A file whose tags name no artist is shown under a name from its
        // path, which matches no tag of the library.
        k.state
            .db
            .commit(vec![Op::DelKey {
                entry: id,
                key: "artist".into(),
                source: None,
            }])
            .unwrap();
        k.state.music.library_changed();
        let t = (k.now() * 1000).to_string();
        k.ok("ann", "scrobble", &[("id", &song), ("time", &t)])
            .await;
        k.state.flush_library_links();
        let r = k.ok("ann", "getSong", &[("id", &song)]).await;
        assert_eq!(r["song"]["playCount"], 1, "{r}");
    }

    #[tokio::test]
    async fn a_python_false_submission_is_now_playing_and_no_play() {
        let k = Kit::new();
        let song = k.songs[0].clone();
        k.ok("ann", "scrobble", &[("id", &song), ("submission", "False")])
            .await;
        k.state.flush_library_links();
        let r = k.ok("ann", "getSong", &[("id", &song)]).await;
        assert_eq!(r["song"]["playCount"].as_i64().unwrap_or(0), 0, "{r}");
        let r = k.ok("ann", "getNowPlaying", &[]).await;
        assert_eq!(r["nowPlaying"]["entry"][0]["id"], song.as_str(), "{r}");
        // A value that is no boolean is refused, not taken for a play.
        let bad = [("id", song.as_str()), ("submission", "maybe")];
        assert_eq!(k.code("ann", "scrobble", &bad).await, 0);
        let r = k.ok("ann", "getSong", &[("id", &song)]).await;
        assert_eq!(r["song"]["playCount"].as_i64().unwrap_or(0), 0, "{r}");
        // Python's True (and 1) is a play.
        k.ok("ann", "scrobble", &[("id", &song), ("submission", "True")])
            .await;
        k.state.flush_library_links();
        let r = k.ok("ann", "getSong", &[("id", &song)]).await;
        assert_eq!(r["song"]["playCount"], 1, "{r}");
    }

    #[tokio::test]
    async fn a_stream_with_an_estimate_flag_that_is_no_boolean_is_refused() {
        let k = Kit::new();
        let bad = [
            ("id", k.songs[0].as_str()),
            ("estimateContentLength", "maybe"),
        ];
        assert_eq!(k.code("ann", "stream", &bad).await, 0);
    }

    #[tokio::test]
    async fn a_seek_that_is_no_time_or_past_the_end_is_refused_before_any_transcode() {
        let k = Kit::new();
        let song = k.songs[0].as_str();
        // The demo's first song lasts 4 s.
        for bad in ["1e308", "-1", "NaN", "inf", "abc", "4", "86401"] {
            let r = k
                .api("ann", "stream", &[("id", song), ("timeOffset", bad)])
                .await;
            assert_eq!(r["error"]["code"], 0, "{bad}: {r}");
            let msg = r["error"]["message"].as_str().unwrap_or("");
            assert!(msg.contains("timeOffset"), "{bad}: {msg}");
        }
        let r = k
            .api("ann", "stream", &[("id", song), ("transcodeOffset", "-3")])
            .await;
        assert!(r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("transcodeOffset"));
    }
}
