//! The rest of Subsonic 1.16.1:
//!
//! - `search`, the deprecated first search: songs only, as `match`
//!   entries, found by the words of `artist`, `album`, `title` and `any`
//!   in the per-catalog text `search2`/`search3` use ([`super::views`]);
//! - videos: Spindle serves no video, so `getVideos` is empty and
//!   `getVideoInfo` and `getCaptions` find nothing (error 70);
//! - `hls.m3u8`: refused (error 50); `stream` plays every song whole;
//! - `getAvatar`: the image `DATA_DIR/avatars/NAME.png` (or `.jpg`,
//!   `.jpeg`, `.gif`, `.webp`) an administrator put there, else a PNG of
//!   the user's initial ([`crate::cover::initial`]); error 70 for an
//!   unknown user;
//! - `getChatMessages` and `addChatMessage`: one room for every user, in
//!   memory ([`super::chat`]).
//!
//! (`tokenInfo` lives with the rest of the API-key handling in
//! [`super::auth`].)

use std::path::PathBuf;

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use axum::response::Response;

use super::browse::song_node;
use super::chat::ChatError;
use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};

/// The most songs one `search` answers (`count`); 20 by default.
pub const SEARCH_MAX_COUNT: i64 = 500;

/// The folder under the data directory holding the users' avatars.
pub const AVATAR_DIR: &str = "avatars";

/// The largest avatar file served, in bytes.
pub const AVATAR_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// The file name endings an avatar may have, in the order they are
/// looked for, with their content types.
const AVATAR_TYPES: [(&str, &str); 5] = [
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
];

/// The lower-cased words of parameter `name` (none when it is absent),
/// refused past the network's query limits.
fn words(c: &Ctx, name: &str) -> Result<Vec<String>, SubsonicError> {
    let v = c.p.get(name).unwrap_or("").trim();
    let max = spindle_query::limits::NETWORK_MAX_PATTERN_BYTES;
    if v.len() > max {
        return Err(SubsonicError::BadValue(format!(
            "Parameter {name} is {} bytes long; at most {max} are allowed: shorten it",
            v.len()
        )));
    }
    Ok(v.split_whitespace().map(str::to_lowercase).collect())
}

/// Whether `field` (lower-cased here) holds every one of `words`.
fn holds_all(field: &str, words: &[String]) -> bool {
    if words.is_empty() {
        return true;
    }
    let f = field.to_lowercase();
    words.iter().all(|w| f.contains(w.as_str()))
}

/// `search` (deprecated since 1.4.0): songs whose artist, album and
/// title hold the words of `artist`, `album` and `title`, and whose text
/// holds the words of `any`; added after `newerThan` (ms); `count` (20,
/// at most [`SEARCH_MAX_COUNT`]) from `offset`. No criteria at all pages
/// through every song. `totalHits` counts every match.
pub(crate) fn search(c: &mut Ctx) -> SyncResult {
    let (artist, album, title, any) = (
        words(c, "artist")?,
        words(c, "album")?,
        words(c, "title")?,
        words(c, "any")?,
    );
    let count = c.int("count")?.unwrap_or(20).clamp(0, SEARCH_MAX_COUNT) as usize;
    let offset = c.int("offset")?.unwrap_or(0).max(0) as usize;
    let newer_than = c.int("newerThan")?;
    // Every word of every field is in the song's line of text, so the
    // text narrows the songs down before each field is checked.
    let all: Vec<String> = [&artist, &album, &title, &any]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let max = spindle_query::limits::NETWORK_MAX_TERMS;
    if all.len() > max {
        return Err(SubsonicError::BadValue(format!(
            "The search has {} words; at most {max} are allowed: use fewer words",
            all.len()
        )));
    }
    let cat = c.cat();
    let access = c.access();
    let candidates: Vec<usize> = if all.is_empty() {
        (0..cat.songs.len()).collect()
    } else {
        c.state.subsonic.views.of(&cat).text().search(&all).songs
    };
    let hits: Vec<usize> = candidates
        .into_iter()
        .filter(|&n| {
            let s = &cat.songs[n];
            access.sees_song(s)
                && holds_all(&s.artist, &artist)
                && holds_all(&s.album, &album)
                && holds_all(&s.title, &title)
                && newer_than.is_none_or(|t| s.added.saturating_mul(1000) > t)
        })
        .collect();
    let starred = super::browse::marks(c);
    let matches = hits
        .iter()
        .skip(offset)
        .take(count)
        .map(|&n| song_node(&cat.songs[n], &starred))
        .collect();
    Ok(Some(
        Node::new("searchResult")
            .i("offset", offset as i64)
            .i("totalHits", hits.len() as i64)
            .list("match", matches),
    ))
}

/// `getVideos`: none.
pub(crate) fn videos(_c: &mut Ctx) -> SyncResult {
    Ok(Some(Node::new("videos").list("video", Vec::new())))
}

/// `getVideoInfo` and `getCaptions`: no id is a video.
pub(crate) fn no_video(c: &mut Ctx) -> SyncResult {
    c.req("id")?;
    Err(SubsonicError::NotFound("Video (Spindle serves no video)"))
}

/// `hls.m3u8`: refused; HTTP Live Streaming would need the song cut into
/// segments, and every client that asks for it can `stream` instead.
pub(crate) fn hls(c: &mut Ctx) -> SyncResult {
    c.req("id")?;
    Err(SubsonicError::Unsupported(
        "HLS is not supported; use stream, which plays the whole song".to_owned(),
    ))
}

/// `getChatMessages`: the chat's messages after `since` (ms), newest
/// first.
pub(crate) fn chat_messages(c: &mut Ctx) -> SyncResult {
    let since = c.int("since")?;
    let messages = c
        .state
        .subsonic
        .chat
        .since(since)
        .into_iter()
        .map(|m| {
            Node::new("chatMessage")
                .s("username", m.username)
                .i("time", m.time_ms)
                .s("message", m.message)
        })
        .collect();
    Ok(Some(
        Node::new("chatMessages").list("chatMessage", messages),
    ))
}

/// `addChatMessage`: `message` from this user, now.
pub(crate) fn add_chat_message(c: &mut Ctx) -> SyncResult {
    let message = c.req("message")?;
    let now_ms = c.now().saturating_mul(1000);
    match c.state.subsonic.chat.add(&c.user, now_ms, message) {
        Ok(()) => Ok(None),
        Err(ChatError::Empty) => Err(SubsonicError::Missing("message")),
        Err(e) => Err(SubsonicError::BadValue(e.to_string())),
    }
}

/// Whether `name` can name a file in the avatar folder: no separators,
/// nothing hidden, nothing that climbs out.
fn safe_file_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\', '\0'])
}

/// The first avatar file of `user` under `dir` and its content type.
fn avatar_file(dir: &std::path::Path, user: &str) -> Option<(PathBuf, &'static str)> {
    AVATAR_TYPES.iter().find_map(|(ext, mime)| {
        let p = dir.join(format!("{user}.{ext}"));
        p.is_file().then_some((p, *mime))
    })
}

/// `getAvatar?username=NAME`: any user's avatar, to any user, as
/// Subsonic allows, else the user's initial; error 70 for an unknown
/// user.
pub(crate) async fn avatar(c: Ctx) -> Result<Response, SubsonicError> {
    let user = c.req("username")?.to_owned();
    if !safe_file_name(&user) || !c.state.accounts.user_exists(&user) {
        return Err(SubsonicError::NotFound("User"));
    }
    let asked = user.clone();
    let found = c
        .state
        .call(move |st| avatar_file(&st.db.dir().join(AVATAR_DIR), &user))
        .await?;
    let Some((path, mime)) = found else {
        // No file: the user's initial, so that apps show a picture rather
        // than a broken image.
        let png = crate::cover::initial::png(&asked).map_err(|e| {
            SubsonicError::Internal(format!("The default avatar cannot be drawn: {e}"))
        })?;
        return image_answer(png, "image/png");
    };
    let file_fail = |e: std::io::Error| {
        tracing::warn!(path = %path.display(), "cannot read avatar: {e}");
        SubsonicError::Internal(format!("The avatar file cannot be read: {e}"))
    };
    let len = tokio::fs::metadata(&path).await.map_err(file_fail)?.len();
    if len > AVATAR_MAX_BYTES {
        return Err(SubsonicError::Internal(format!(
            "The avatar file is {len} bytes; at most {AVATAR_MAX_BYTES} are served: make it smaller"
        )));
    }
    let bytes = tokio::fs::read(&path).await.map_err(file_fail)?;
    image_answer(bytes, mime)
}

fn image_answer(bytes: Vec<u8>, mime: &'static str) -> Result<Response, SubsonicError> {
    Response::builder()
        .header(CONTENT_TYPE, mime)
        .header(CONTENT_LENGTH, bytes.len())
        .header(CACHE_CONTROL, "private, max-age=3600")
        .body(Body::from(bytes))
        .map_err(|e| SubsonicError::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::subsonic::testkit::Kit;

    fn titles(v: &serde_json::Value) -> Vec<String> {
        v["searchResult"]["match"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|s| s["title"].as_str().unwrap_or("").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn search_v1_finds_songs_by_field_and_pages_with_a_total() {
        let k = Kit::new();
        let cat = k.state.music.catalog(&k.state.db);
        let s = &cat.songs[0];
        let word = s.title.split_whitespace().next().unwrap().to_owned();
        let r = k.ok("ann", "search", &[("any", &word)]).await;
        assert!(titles(&r).contains(&s.title), "{r}");
        let r = k
            .ok("ann", "search", &[("title", &word), ("artist", &s.artist)])
            .await;
        assert!(titles(&r).contains(&s.title), "{r}");
        // A word of the title is not in the album field.
        let r = k
            .ok("ann", "search", &[("album", "zzz-no-such-album")])
            .await;
        assert_eq!(r["searchResult"]["totalHits"], 0);
        // No criteria: every song, paged, with the total.
        let r = k
            .ok("ann", "search", &[("count", "2"), ("offset", "1")])
            .await;
        assert_eq!(r["searchResult"]["offset"], 1);
        assert_eq!(r["searchResult"]["totalHits"], cat.songs.len());
        assert_eq!(titles(&r).len(), 2);
        // newerThan (ms) leaves out songs added at or before it.
        let newest = cat.songs.iter().map(|s| s.added).max().unwrap();
        let at = (newest * 1000).to_string();
        let r = k.ok("ann", "search", &[("newerThan", &at)]).await;
        assert_eq!(r["searchResult"]["totalHits"], 0);
        let before = ((newest - 1) * 1000).to_string();
        let r = k.ok("ann", "search", &[("newerThan", &before)]).await;
        assert!(r["searchResult"]["totalHits"].as_u64() > Some(0), "{r}");
    }

    #[tokio::test]
    async fn search_v1_answers_match_elements_in_xml() {
        let k = Kit::new();
        let x = k.xml("ann", "search", &[("count", "1")]).await;
        assert!(x.contains("<searchResult offset=\"0\" totalHits=\""), "{x}");
        assert!(x.contains("<match "), "{x}");
    }

    #[tokio::test]
    async fn there_are_no_videos_and_hls_is_refused() {
        let k = Kit::new();
        let v = k.ok("ann", "getVideos", &[]).await;
        assert_eq!(v["videos"]["video"], json!([]));
        let id = k.songs[0].clone();
        assert_eq!(k.code("ann", "getVideoInfo", &[("id", &id)]).await, 70);
        assert_eq!(k.code("ann", "getCaptions", &[("id", &id)]).await, 70);
        assert_eq!(k.code("ann", "getCaptions", &[]).await, 10);
        assert_eq!(k.code("ann", "hls.m3u8", &[("id", &id)]).await, 50);
    }

    #[tokio::test]
    async fn chat_messages_are_listed_with_their_author_and_time() {
        let k = Kit::new();
        k.ok("ann", "addChatMessage", &[("message", "hello")]).await;
        k.clock.set(k.now() + 10);
        k.ok("bob", "addChatMessage", &[("message", "hi ann")])
            .await;
        let r = k.ok("bob", "getChatMessages", &[]).await;
        let m = &r["chatMessages"]["chatMessage"];
        assert_eq!(m[0]["username"], "bob");
        assert_eq!(m[0]["message"], "hi ann");
        assert_eq!(m[1]["username"], "ann");
        assert_eq!(m[1]["time"], (k.now() - 10) * 1000);
        let since = ((k.now() - 5) * 1000).to_string();
        let r = k.ok("ann", "getChatMessages", &[("since", &since)]).await;
        assert_eq!(
            r["chatMessages"]["chatMessage"].as_array().map(Vec::len),
            Some(1)
        );
        assert_eq!(k.code("ann", "addChatMessage", &[]).await, 10);
        let long = "x".repeat(super::super::chat::CHAT_MAX_MESSAGE_CHARS + 1);
        assert_eq!(
            k.code("ann", "addChatMessage", &[("message", &long)]).await,
            0
        );
    }

    #[tokio::test]
    async fn an_avatar_file_is_served_to_any_user_and_without_one_the_initial() {
        let k = Kit::new();
        let (status, headers, body) = k.get("/rest/getAvatar?u=bob&p=pw&c=kit&username=ann").await;
        assert_eq!(status, 200);
        assert_eq!(headers["content-type"], "image/png");
        assert!(headers["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age"));
        assert_eq!(body.to_vec(), crate::cover::initial::png("ann").unwrap());
        assert_eq!(
            k.code("bob", "getAvatar", &[("username", "../x")]).await,
            70
        );
        assert_eq!(
            k.code("bob", "getAvatar", &[("username", "nobody")]).await,
            70
        );
        let dir = k.state.db.dir().join(super::AVATAR_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        let png = b"\x89PNG\r\n\x1a\nnot really".to_vec();
        std::fs::write(dir.join("ann.png"), &png).unwrap();
        let (status, headers, body) = k.get("/rest/getAvatar?u=bob&p=pw&c=kit&username=ann").await;
        assert_eq!(status, 200);
        assert_eq!(headers["content-type"], "image/png");
        assert_eq!(body.to_vec(), png);
    }

    #[test]
    fn avatar_names_cannot_leave_the_folder() {
        for bad in ["", "..", ".hidden", "a/b", "a\\b", "a\0b"] {
            assert!(!super::safe_file_name(bad), "{bad:?}");
        }
        assert!(super::safe_file_name("ann.smith"));
    }
}
