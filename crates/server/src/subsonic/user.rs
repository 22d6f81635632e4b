//! A user's own data: stars, playlists, now playing. (The user record is
//! in [`super::admin`].)
//! Playlists are private to their owner unless made public; a public
//! playlist is readable by everyone and changeable by its owner only.

use super::browse::song_node;
use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};
use crate::catalog::Song;
use crate::time::iso8601;
use crate::userdata::Playlist;

/// `star` and `unstar`: songs, albums and artists the user may see (a
/// hidden one is not found). A song's star is the love of its track
/// ([`crate::loves`]); albums and artists are starred in the user data.
pub(crate) fn star(c: &mut Ctx, on: bool) -> SyncResult {
    let cat = c.cat();
    let access = c.access();
    let mut songs = Vec::new();
    for id in c.all("id") {
        songs.push(access.song(&cat, id)?);
    }
    let mut ids = Vec::new();
    for id in c.all("albumId") {
        access.album(&cat, id)?;
        ids.push(id.to_owned());
    }
    for id in c.all("artistId") {
        access.artist(&cat, id)?;
        ids.push(id.to_owned());
    }
    if ids.is_empty() && songs.is_empty() {
        return Err(SubsonicError::Missing("id"));
    }
    for s in songs {
        crate::loves::star_song(&c.state, &c.user, s, on).map_err(SubsonicError::not_saved)?;
    }
    if !ids.is_empty() {
        c.state
            .music
            .userdata
            .star(&c.user, &ids, on, c.now())
            .map_err(SubsonicError::not_saved)?;
    }
    Ok(None)
}

/// `getStarred2`: what the user starred, of what they may see
/// (`musicFolderId` narrows it).
pub(crate) fn starred2(c: &mut Ctx) -> SyncResult {
    super::lists::starred_as(c, "starred2", super::lists::Shape::Id3)
}

/// A playlist as the user sees it: its songs still in the library and in
/// the folders the user may see.
fn playlist_node(c: &mut Ctx, id: u64, p: &Playlist, entries: bool) -> Node {
    let cat = c.cat();
    let access = c.access();
    let songs: Vec<_> = p
        .songs
        .iter()
        .filter_map(|s| access.entry(&cat, *s))
        .collect();
    let n = Node::new("playlist")
        .s("id", id.to_string())
        .s("name", p.name.clone())
        .s("comment", p.comment.clone())
        .s("owner", p.owner.clone())
        .b("public", p.public);
    with_songs(c, n, &songs, (p.created, p.changed), entries)
}

/// The rest of a playlist `n` with `songs` (of a stored playlist or a
/// playlist file): `songCount`, `duration`, `created` and `changed` (UNIX
/// seconds), the first song's cover and, with `entries`, the songs.
pub(crate) fn with_songs(
    c: &Ctx,
    n: Node,
    songs: &[&Song],
    (created, changed): (i64, i64),
    entries: bool,
) -> Node {
    let n = n
        .i("songCount", songs.len() as i64)
        .i(
            "duration",
            songs.iter().map(|s| s.duration.unwrap_or(0)).sum(),
        )
        .s("created", iso8601(created))
        .s("changed", iso8601(changed));
    let n = match songs.first() {
        Some(s) => n.s("coverArt", s.album_id.clone()),
        None => n,
    };
    if !entries {
        return n;
    }
    let starred = super::browse::marks(c);
    n.list(
        "entry",
        songs.iter().map(|s| song_node(s, &starred)).collect(),
    )
}

pub(crate) fn playlists(c: &mut Ctx) -> SyncResult {
    if let Some(other) = c.p.nonempty("username") {
        if other != c.user {
            return Err(SubsonicError::NotAuthorized(
                "Only your own playlists can be listed".into(),
            ));
        }
    }
    let list = c.state.music.userdata.playlists(&c.user);
    let mut nodes: Vec<Node> = list
        .iter()
        .map(|(id, p)| playlist_node(c, *id, p, false))
        .collect();
    // Playlist files of the music folders, read-only.
    nodes.extend(super::file_playlists::nodes(c));
    Ok(Some(Node::new("playlists").list("playlist", nodes)))
}

fn playlist_id(c: &Ctx, name: &'static str) -> Result<u64, SubsonicError> {
    let v = c.req(name)?;
    v.parse().map_err(|_| SubsonicError::NotFound("Playlist"))
}

/// A playlist the user may read.
fn readable(c: &Ctx, id: u64) -> Result<Playlist, SubsonicError> {
    let p = c
        .state
        .music
        .userdata
        .playlist(id)
        .ok_or(SubsonicError::NotFound("Playlist"))?;
    if p.owner != c.user && !p.public {
        return Err(SubsonicError::NotAuthorized(
            "This playlist belongs to another user".into(),
        ));
    }
    Ok(p)
}

/// A playlist the user may change.
fn owned(c: &Ctx, id: u64) -> Result<Playlist, SubsonicError> {
    let p = readable(c, id)?;
    if p.owner != c.user {
        return Err(SubsonicError::NotAuthorized(
            "This playlist belongs to another user".into(),
        ));
    }
    Ok(p)
}

pub(crate) fn playlist(c: &mut Ctx) -> SyncResult {
    let id = playlist_id(c, "id")?;
    let p = readable(c, id)?;
    Ok(Some(playlist_node(c, id, &p, true)))
}

/// The songs of the repeated parameter `name`; a hidden one is not found.
fn song_ids(c: &mut Ctx, name: &str) -> Result<Vec<u32>, SubsonicError> {
    let cat = c.cat();
    let access = c.access();
    c.all(name)
        .into_iter()
        .map(|s| access.song(&cat, s).map(|s| s.id))
        .collect()
}

pub(crate) fn create_playlist(c: &mut Ctx) -> SyncResult {
    let songs = song_ids(c, "songId")?;
    let now = c.now();
    let id = if c.p.nonempty("playlistId").is_some() {
        // Subsonic's createPlaylist with playlistId replaces the songs.
        let id = playlist_id(c, "playlistId")?;
        let mut p = owned(c, id)?;
        p.songs = songs;
        p.changed = now;
        if let Some(name) = c.p.nonempty("name") {
            p.name = name.to_owned();
        }
        c.state
            .music
            .userdata
            .put_playlist(id, p)
            .map_err(SubsonicError::not_saved)?;
        id
    } else {
        let name = c.req("name")?.to_owned();
        let p = Playlist {
            owner: c.user.clone(),
            name,
            comment: String::new(),
            public: false,
            songs,
            created: now,
            changed: now,
        };
        c.state
            .music
            .userdata
            .create_playlist(p)
            .map_err(SubsonicError::not_saved)?
    };
    let p = readable(c, id)?;
    Ok(Some(playlist_node(c, id, &p, true)))
}

pub(crate) fn update_playlist(c: &mut Ctx) -> SyncResult {
    let id = playlist_id(c, "playlistId")?;
    let mut p = owned(c, id)?;
    if let Some(n) = c.p.nonempty("name") {
        p.name = n.to_owned();
    }
    if let Some(n) = c.p.get("comment") {
        p.comment = n.to_owned();
    }
    if let Some(v) = c.flag("public")? {
        p.public = v;
    }
    let mut remove: Vec<usize> = Vec::new();
    for i in c.all("songIndexToRemove") {
        let i: usize = i.parse().map_err(|_| {
            SubsonicError::BadValue(format!("songIndexToRemove is not an index: {i:?}"))
        })?;
        remove.push(i);
    }
    // The indexes are places in the list as getPlaylist shows it (songs
    // still in the library and visible to the user).
    let shown: Vec<usize> = {
        let cat = c.cat();
        let access = c.access();
        (0..p.songs.len())
            .filter(|&i| access.entry(&cat, p.songs[i]).is_some())
            .collect()
    };
    let mut remove: Vec<usize> = remove
        .into_iter()
        .filter_map(|i| shown.get(i).copied())
        .collect();
    remove.sort_unstable();
    remove.dedup();
    for i in remove.into_iter().rev() {
        p.songs.remove(i);
    }
    p.songs.extend(song_ids(c, "songIdToAdd")?);
    p.changed = c.now();
    c.state
        .music
        .userdata
        .put_playlist(id, p)
        .map_err(SubsonicError::not_saved)?;
    Ok(None)
}

pub(crate) fn delete_playlist(c: &mut Ctx) -> SyncResult {
    let id = playlist_id(c, "id")?;
    owned(c, id)?;
    c.state
        .music
        .userdata
        .delete_playlist(id)
        .map_err(SubsonicError::not_saved)?;
    Ok(None)
}

/// `getNowPlaying`: what the asking user and users whose listening is
/// public play, of the songs the asking user may see. A private user's
/// now playing is theirs alone, administrators included (the privacy rule
/// of `docs/security.md`).
pub(crate) fn now_playing(c: &mut Ctx) -> SyncResult {
    let cat = c.cat();
    let access = c.access();
    let now = c.now();
    let starred = super::browse::marks(c);
    let list = c.state.now_playing_songs();
    let entries = list
        .into_iter()
        .filter(|p| super::privacy::sees_listening_of(c, &p.listen.user))
        .filter_map(|p| {
            let s = access.entry(&cat, p.song?)?;
            Some(
                song_node(s, &starred)
                    .s("username", p.listen.user)
                    .i("minutesAgo", (now - p.since).max(0) / 60)
                    .i("playerId", 0)
                    .s("playerName", p.listen.client),
            )
        })
        .collect();
    Ok(Some(Node::new("nowPlaying").list("entry", entries)))
}

#[cfg(test)]
mod tests {
    use crate::subsonic::testkit::Kit;

    #[tokio::test]
    async fn a_playlist_is_made_public_by_any_spelling_of_true_and_a_non_boolean_is_refused() {
        let k = Kit::new();
        let r = k.ok("ann", "createPlaylist", &[("name", "mix")]).await;
        let id = r["playlist"]["id"].as_str().unwrap().to_owned();
        let call = |v: &'static str| {
            let k = &k;
            let id = id.clone();
            async move {
                k.api(
                    "ann",
                    "updatePlaylist",
                    &[("playlistId", &id), ("public", v)],
                )
                .await
            }
        };
        assert_eq!(call("True").await["status"], "ok");
        let r = k.ok("ann", "getPlaylist", &[("id", &id)]).await;
        assert_eq!(r["playlist"]["public"], true, "{r}");
        assert_eq!(call("yes please").await["error"]["code"], 0);
        let r = k.ok("ann", "getPlaylist", &[("id", &id)]).await;
        assert_eq!(r["playlist"]["public"], true, "{r}");
        assert_eq!(call("FALSE").await["status"], "ok");
        let r = k.ok("ann", "getPlaylist", &[("id", &id)]).await;
        assert_eq!(r["playlist"]["public"], false, "{r}");
    }
}
