//! Where a user left off: the play queue (`savePlayQueue`/`getPlayQueue`,
//! and OpenSubsonic's `savePlayQueueByIndex`/`getPlayQueueByIndex`, which
//! name the current song by its place, so a song may be queued twice) and
//! bookmarks (`createBookmark`/`getBookmarks`/`deleteBookmark`), kept per
//! user in [`crate::userdata`]. Both forms of the queue read and write
//! one stored queue; the client that saved it (`c`) is its `changedBy`.

use super::browse::song_node;
use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};
use crate::catalog::Catalog;
use crate::time::iso8601;
use crate::userdata::PlayQueue;

/// The songs of the repeated `id` parameter, as entry ids; a song the
/// user may not see is not found.
fn queued_songs(c: &mut Ctx) -> Result<Vec<u32>, SubsonicError> {
    let cat = c.cat();
    let access = c.access();
    c.all("id")
        .into_iter()
        .map(|id| access.song(&cat, id).map(|s| s.id))
        .collect()
}

/// The client's name (`c`), within the history's limit.
fn client(c: &Ctx) -> Result<String, SubsonicError> {
    let name = c.p.nonempty("c").unwrap_or("subsonic");
    let max = spindle_listens::limits::MAX_CLIENT;
    if name.len() > max {
        return Err(SubsonicError::BadValue(format!(
            "The client name (c) is over {max} bytes"
        )));
    }
    Ok(name.to_owned())
}

/// The `position` parameter in milliseconds (0 when absent).
fn position(c: &Ctx) -> Result<i64, SubsonicError> {
    Ok(c.int("position")?.unwrap_or(0).max(0))
}

fn save(c: &Ctx, songs: Vec<u32>, current: Option<usize>) -> SyncResult {
    let q = if songs.is_empty() {
        None
    } else {
        Some(PlayQueue {
            songs,
            current,
            position: position(c)?,
            changed: c.now(),
            changed_by: client(c)?,
        })
    };
    c.state
        .music
        .userdata
        .set_play_queue(&c.user, q)
        .map_err(SubsonicError::not_saved)?;
    Ok(None)
}

/// `savePlayQueue`: `id` (repeated), `current` (a song id of the queue),
/// `position` (ms). No `id` clears the queue. A `current` not in the
/// queue is dropped (the queue is saved without one).
pub(crate) fn save_play_queue(c: &mut Ctx) -> SyncResult {
    let songs = queued_songs(c)?;
    let current = match c.p.nonempty("current").map(str::to_owned) {
        None => None,
        Some(id) => {
            let cat = c.cat();
            let song = c.access().song(&cat, &id)?.id;
            songs.iter().position(|&s| s == song)
        }
    };
    save(c, songs, current)
}

/// `savePlayQueueByIndex`: `id` (repeated), `currentIndex` (0-based, in
/// the list; needed with `id`), `position` (ms). No `id` clears it.
pub(crate) fn save_play_queue_by_index(c: &mut Ctx) -> SyncResult {
    let songs = queued_songs(c)?;
    let current = match c.int("currentIndex")? {
        None if songs.is_empty() => None,
        None => return Err(SubsonicError::Missing("currentIndex")),
        Some(i) => match usize::try_from(i).ok().filter(|&i| i < songs.len()) {
            Some(i) => Some(i),
            None => {
                return Err(SubsonicError::BadValue(format!(
                    "currentIndex {i} is outside the queue of {} songs (0 to {})",
                    songs.len(),
                    songs.len().saturating_sub(1)
                )))
            }
        },
    };
    save(c, songs, current)
}

/// The stored queue as shown: the songs still in the library and visible
/// to the user, and the current one's place among them.
struct Shown {
    nodes: Vec<Node>,
    current: Option<(usize, u32)>,
    q: Option<PlayQueue>,
}

fn shown(c: &mut Ctx) -> Shown {
    let cat: std::sync::Arc<Catalog> = c.cat();
    let access = c.access();
    let starred = super::browse::marks(c);
    let q = c.state.music.userdata.play_queue(&c.user);
    let mut nodes = Vec::new();
    let mut current = None;
    for (n, &entry) in q.iter().flat_map(|q| q.songs.iter()).enumerate() {
        let Some(s) = access.entry(&cat, entry) else {
            continue;
        };
        if q.as_ref().and_then(|q| q.current) == Some(n) {
            current = Some((nodes.len(), s.id));
        }
        nodes.push(song_node(s, &starred));
    }
    Shown { nodes, current, q }
}

fn queue_node(c: &Ctx, name: &'static str, q: &Option<PlayQueue>) -> Node {
    let (changed, by, position) = q.as_ref().map_or((0, "", 0), |q| {
        (q.changed, q.changed_by.as_str(), q.position)
    });
    Node::new(name)
        .s("username", c.user.clone())
        .s("changed", iso8601(changed))
        .s("changedBy", by)
        .i("position", position)
}

/// `getPlayQueue`: the saved queue, or an empty one (changed at the
/// epoch) when none was saved.
pub(crate) fn get_play_queue(c: &mut Ctx) -> SyncResult {
    let s = shown(c);
    let n =
        queue_node(c, "playQueue", &s.q).opt_s("current", s.current.map(|(_, id)| id.to_string()));
    Ok(Some(n.list("entry", s.nodes)))
}

/// `getPlayQueueByIndex`: as [`get_play_queue`], with `currentIndex`.
pub(crate) fn get_play_queue_by_index(c: &mut Ctx) -> SyncResult {
    let s = shown(c);
    let n = queue_node(c, "playQueueByIndex", &s.q)
        .opt_i("currentIndex", s.current.map(|(i, _)| i as i64));
    Ok(Some(n.list("entry", s.nodes)))
}

/// `createBookmark`: `id` (a song), `position` (ms), `comment`. A second
/// bookmark in the same song moves the first.
pub(crate) fn create_bookmark(c: &mut Ctx) -> SyncResult {
    let id = c.req("id")?.to_owned();
    let position = c
        .int("position")?
        .ok_or(SubsonicError::Missing("position"))?
        .max(0);
    let comment = c.p.get("comment").unwrap_or("");
    if comment.len() > MAX_COMMENT {
        return Err(SubsonicError::BadValue(format!(
            "The comment is over {MAX_COMMENT} bytes: shorten it"
        )));
    }
    let comment = comment.to_owned();
    let cat = c.cat();
    let song = c.access().song(&cat, &id)?.id;
    c.state
        .music
        .userdata
        .set_bookmark(&c.user, song, position, &comment, c.now())
        .map_err(SubsonicError::not_saved)?;
    Ok(None)
}

/// The longest bookmark comment, in bytes.
pub const MAX_COMMENT: usize = 2_000;

/// `getBookmarks`: the user's bookmarks in songs still in the library
/// and visible to them.
pub(crate) fn get_bookmarks(c: &mut Ctx) -> SyncResult {
    let cat = c.cat();
    let access = c.access();
    let starred = super::browse::marks(c);
    let nodes = c
        .state
        .music
        .userdata
        .bookmarks(&c.user)
        .into_iter()
        .filter_map(|(entry, b)| {
            let s = access.entry(&cat, entry)?;
            Some(
                Node::new("bookmark")
                    .i("position", b.position)
                    .s("username", c.user.clone())
                    .s("comment", b.comment)
                    .s("created", iso8601(b.created))
                    .s("changed", iso8601(b.changed))
                    .child(song_node(s, &starred).named("entry")),
            )
        })
        .collect();
    Ok(Some(Node::new("bookmarks").list("bookmark", nodes)))
}

/// `deleteBookmark`: `id` (a song); 70 when the user has no bookmark in it.
pub(crate) fn delete_bookmark(c: &mut Ctx) -> SyncResult {
    let id = c.req("id")?;
    let entry: u32 = id
        .parse()
        .map_err(|_| SubsonicError::NotFound("Bookmark"))?;
    let gone = c
        .state
        .music
        .userdata
        .delete_bookmark(&c.user, entry)
        .map_err(SubsonicError::not_saved)?;
    if !gone {
        return Err(SubsonicError::NotFound("Bookmark"));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use crate::subsonic::testkit::Kit;

    #[tokio::test]
    async fn a_saved_queue_comes_back_in_both_forms_with_the_client_that_saved_it() {
        let k = Kit::new();
        let (a, b) = (k.songs[0].as_str(), k.songs[1].as_str());
        k.ok(
            "ann",
            "savePlayQueueByIndex",
            &[
                ("id", a),
                ("id", b),
                ("id", a),
                ("currentIndex", "2"),
                ("position", "4200"),
            ],
        )
        .await;
        let q = &k.ok("ann", "getPlayQueueByIndex", &[]).await["playQueueByIndex"];
        assert_eq!(
            q["currentIndex"], 2,
            "the second copy of a song, by its place"
        );
        assert_eq!(q["position"], 4200);
        assert_eq!(q["changedBy"], "kit");
        assert_eq!(q["username"], "ann");
        assert_eq!(q["entry"].as_array().unwrap().len(), 3);
        let q = &k.ok("ann", "getPlayQueue", &[]).await["playQueue"];
        assert_eq!(q["current"], a);
        // The id form names the current song by id: its first place.
        k.ok(
            "ann",
            "savePlayQueue",
            &[("id", a), ("id", b), ("current", b)],
        )
        .await;
        let q = &k.ok("ann", "getPlayQueueByIndex", &[]).await["playQueueByIndex"];
        assert_eq!(
            (q["currentIndex"].as_i64(), q["position"].as_i64()),
            (Some(1), Some(0))
        );
        let empty = &k.ok("bob", "getPlayQueue", &[]).await["playQueue"];
        assert!(empty["entry"].as_array().unwrap().is_empty(), "per user");
        assert!(k
            .xml("ann", "getPlayQueue", &[])
            .await
            .contains("<playQueue "));
        k.ok("ann", "savePlayQueue", &[]).await;
        let q = &k.ok("ann", "getPlayQueue", &[]).await["playQueue"];
        assert!(q["entry"].as_array().unwrap().is_empty(), "no id clears it");
    }

    #[tokio::test]
    async fn a_queue_with_a_bad_index_or_song_is_refused() {
        let k = Kit::new();
        let a = k.songs[0].as_str();
        let save = "savePlayQueueByIndex";
        assert_eq!(
            k.code("ann", save, &[("id", a), ("currentIndex", "1")])
                .await,
            0
        );
        assert_eq!(
            k.code("ann", save, &[("id", a), ("currentIndex", "-1")])
                .await,
            0
        );
        assert_eq!(k.code("ann", save, &[("id", a)]).await, 10);
        assert_eq!(
            k.code("ann", "savePlayQueue", &[("id", "999999")]).await,
            70
        );
    }

    #[tokio::test]
    async fn bookmarks_are_made_moved_listed_and_deleted() {
        let k = Kit::new();
        let a = k.songs[0].as_str();
        let make = |pos: &'static str| [("id", a), ("position", pos), ("comment", "chorus")];
        k.ok("ann", "createBookmark", &make("1000")).await;
        k.ok("ann", "createBookmark", &make("2500")).await;
        let r = k.ok("ann", "getBookmarks", &[]).await;
        let list = r["bookmarks"]["bookmark"].as_array().unwrap();
        assert_eq!(list.len(), 1, "one bookmark per song");
        assert_eq!(list[0]["position"], 2500);
        assert_eq!(list[0]["comment"], "chorus");
        assert_eq!(list[0]["entry"]["id"], a, "the entry is one object");
        let xml = k.xml("ann", "getBookmarks", &[]).await;
        assert!(
            xml.contains("<bookmark ") && xml.contains("<entry id="),
            "{xml}"
        );
        let bob = k.ok("bob", "getBookmarks", &[]).await;
        assert!(bob["bookmarks"]["bookmark"].as_array().unwrap().is_empty());
        assert_eq!(k.code("ann", "createBookmark", &[("id", a)]).await, 10);
        assert_eq!(k.code("bob", "deleteBookmark", &[("id", a)]).await, 70);
        k.ok("ann", "deleteBookmark", &[("id", a)]).await;
        assert_eq!(k.code("ann", "deleteBookmark", &[("id", a)]).await, 70);
    }

    #[tokio::test]
    async fn a_playlist_over_a_limit_is_refused_with_an_error_naming_it() {
        use crate::userdata::{MAX_PLAYLIST_NAME, MAX_PLAYLIST_SONGS};
        let k = Kit::new();
        let long = "n".repeat(MAX_PLAYLIST_NAME + 1);
        let r = k.api("ann", "createPlaylist", &[("name", &long)]).await;
        assert_eq!(r["error"]["code"], 0, "{r}");
        let msg = r["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("playlist name is over 1024 bytes"), "{msg}");
        let many: Vec<(&str, &str)> = (0..=MAX_PLAYLIST_SONGS)
            .map(|_| ("songId", k.songs[0].as_str()))
            .collect();
        let mut params = vec![("name", "big")];
        params.extend(many);
        let r = k.api("ann", "createPlaylist", &params).await;
        assert_eq!(r["status"], "failed", "{r}");
        let r = k.ok("ann", "getPlaylists", &[]).await;
        assert!(
            r["playlists"]["playlist"]
                .as_array()
                .is_none_or(|a| a.is_empty()),
            "{r}"
        );
    }
}
