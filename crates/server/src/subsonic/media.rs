//! The methods that are not XML/JSON answers, or that write the history:
//! stream, download, getCoverArt, scrobble.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;
use spindle_listens::Listen;
use spindle_media::tags::{embedded_cover, TagError};
use spindle_media::COVER_CAP;

use super::{missing, not_found, Ctx, Fail};
use crate::scrobble;
use crate::stream::serve_opened;

type Answer = Result<Response, Fail>;

/// `stream` and `download`: the file as it is, with ranges. `maxBitRate`
/// and `format` are accepted and ignored: there is no transcoding.
pub(crate) async fn stream(mut c: Ctx, headers: &HeaderMap, head: bool, download: bool) -> Answer {
    let id = c.req("id")?.to_owned();
    let st = c.state.clone();
    // With the catalog built and current, the lookup is a map access and a
    // realpath: done here, it saves a hop to the blocking pool per stream.
    if c.cat.is_none() {
        c.cat = st.music.recent_catalog();
    }
    let inline = c.cat.as_ref().is_some_and(|cat| cat.song(&id).is_some());
    let mut lookup = move || {
        let cat = c.cat();
        let s = cat.song(&id).ok_or_else(|| not_found("Song"))?;
        let track = crate::Music::track_of(s);
        let music = &c.state.music;
        // Through the tiers, the music folder is one copy among several.
        let path = match music.tiers() {
            Some(_) => None,
            None => Some(
                music
                    .stream_of(&c.state.reader, s)
                    .map_err(|_| not_found("File"))?,
            ),
        };
        let name = s
            .file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok::<_, Fail>((path, s.content_type.clone(), name, track))
    };
    let (path, ct, name, track) = if inline {
        lookup()?
    } else {
        tokio::task::spawn_blocking(lookup)
            .await
            .map_err(|_| Fail(0, "lookup failed".into()))??
    };
    let (mut resp, sent) = match (path, st.tiers()) {
        (_, Some(tiers)) => crate::tiered::serve_track(tiers, &track, &ct, headers, head).await,
        (Some(opened), None) => serve_opened(&st.reader, opened, &ct, headers, head).await,
        (None, None) => return Err(not_found("File")),
    };
    if sent.status < 300 {
        st.metrics.stream(sent.bytes);
    }
    if download {
        let ascii: String = name
            .chars()
            .map(|ch| {
                if ch.is_ascii_graphic() && ch != '"' && ch != '\\' {
                    ch
                } else {
                    '_'
                }
            })
            .collect();
        if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{ascii}\"")) {
            resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
        }
    }
    Ok(resp)
}

const FOLDER_ART: [&str; 6] = [
    "cover.jpg",
    "folder.jpg",
    "front.jpg",
    "cover.png",
    "folder.png",
    "front.png",
];

/// `getCoverArt`: the front cover embedded in the song (or the album's
/// first song), else a cover image in its folder. `size` is ignored.
///
/// Every file is opened through the song's music folder's checked open
/// (no symlink out of the folder, regular files only) and images are
/// capped at [`COVER_CAP`]: a candidate that is refused or too large is
/// logged and the next one tried.
pub(crate) async fn cover_art(mut c: Ctx) -> Answer {
    let id = c.req("id")?.to_owned();
    let music = c.state.music.clone();
    let found = tokio::task::spawn_blocking(move || {
        let cat = c.cat();
        let song = if let Some(s) = cat.song(&id) {
            s
        } else if let Some(a) = cat.album(&id) {
            &cat.songs[*a.songs.first().ok_or_else(|| not_found("Cover art"))?]
        } else if let Some(a) = cat.artist(&id) {
            let al = &cat.albums[*a.albums.first().ok_or_else(|| not_found("Cover art"))?];
            &cat.songs[*al.songs.first().ok_or_else(|| not_found("Cover art"))?]
        } else {
            return Err(not_found("Cover art"));
        };
        let (file, _) = music.file_of(song).map_err(|_| not_found("Cover art"))?;
        match embedded_cover(&file, &song.file) {
            Ok(Some(cover)) => return Ok((cover.data, cover.mime)),
            Ok(None) => {}
            Err(e @ TagError::CoverTooLarge { .. }) => {
                tracing::warn!(
                    path = %song.file.display(),
                    "getCoverArt: skipping the cover in {}: {e}",
                    song.file.display()
                );
            }
            Err(_) => {}
        }
        let root = music.folder_of(song).map_err(|_| not_found("Cover art"))?;
        let dir = song.file.parent().ok_or_else(|| not_found("Cover art"))?;
        for name in FOLDER_ART {
            match root.read_capped(&dir.join(name), COVER_CAP) {
                Ok(bytes) => {
                    let mime = if name.ends_with(".png") {
                        "image/png"
                    } else {
                        "image/jpeg"
                    };
                    return Ok((bytes, mime.to_owned()));
                }
                Err(e) if e.is_missing() => {}
                Err(e) => tracing::warn!("getCoverArt: skipping {e}"),
            }
        }
        Err(not_found("Cover art"))
    })
    .await
    .map_err(|_| Fail(0, "lookup failed".into()))??;
    let (bytes, mime) = found;
    let mut r = Response::new(Body::from(bytes));
    if let Ok(v) = HeaderValue::from_str(&mime) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600"),
    );
    Ok(r)
}

/// `scrobble`: `submission=false` is a now-playing report; otherwise each
/// `id` (with its `time` in ms, default now) becomes a listen in the
/// history, checked like every API's.
pub(crate) async fn scrobble(mut c: Ctx) -> Answer {
    let ids: Vec<String> = c.all("id").into_iter().map(str::to_owned).collect();
    if ids.is_empty() {
        return Err(missing("id"));
    }
    let times: Vec<Option<i64>> = c
        .all("time")
        .into_iter()
        .map(|t| t.parse::<i64>().ok().map(|ms| ms / 1000))
        .collect();
    let submission = c.p.get("submission") != Some("false");
    let player = c.p.nonempty("c").unwrap_or("subsonic").to_owned();
    if player.len() > spindle_listens::limits::MAX_CLIENT {
        let max = spindle_listens::limits::MAX_CLIENT;
        return Err(Fail(0, format!("The client name (c) is over {max} bytes")));
    }
    let now = c.now();
    let user = c.user.clone();
    let (c, listens) = tokio::task::spawn_blocking(move || {
        let cat = c.cat();
        let mut out = Vec::new();
        for (n, id) in ids.iter().enumerate() {
            let s = cat.song(id).ok_or_else(|| not_found("Song"))?;
            let ts = times.get(n).copied().flatten().unwrap_or(now);
            let mut l = Listen::new(&user, ts, &s.artist, &s.title);
            l.album = s.album.clone();
            l.album_artist = s.album_artist.clone();
            l.duration = s.duration.and_then(|d| u32::try_from(d).ok());
            l.track_number = s.track.and_then(|t| u32::try_from(t).ok());
            l.client = player.clone();
            out.push((s.id, l));
        }
        Ok::<_, Fail>((c, out))
    })
    .await
    .map_err(|_| Fail(0, "lookup failed".into()))??;
    let fmt = super::response::Format::from_params(c.p.get("f"), c.p.get("callback"));
    if !submission {
        if let Some((song, l)) = listens.into_iter().last() {
            c.state.set_now_playing_song(l, song);
        }
        return Ok(super::response::ok(None, &fmt));
    }
    let ok: Vec<Listen> = listens
        .into_iter()
        .map(|(_, l)| l)
        .filter(|l| scrobble::check(&c.state, l, true).is_ok())
        .collect();
    scrobble::store(&c.state, ok)
        .await
        .map_err(|e| Fail(0, format!("Could not record the listen: {e}")))?;
    Ok(super::response::ok(None, &fmt))
}
