//! Playlist files (`.m3u`, `.m3u8`) of the music folders as Subsonic
//! playlists: public, read-only (OpenSubsonic's `readonly`), owned by
//! [`crate::m3u::OWNER`], read again on every `getPlaylist` so they follow
//! their files. Changing or deleting one is refused with error 50.

use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};
use crate::m3u::{self, Found};

/// Whether a playlist id names a playlist file.
pub(crate) fn is_file_id(id: Option<&str>) -> bool {
    id.is_some_and(|i| i.starts_with("m3u-"))
}

/// A playlist file as the user sees it: its songs in the folders they may
/// see.
fn node(c: &mut Ctx, f: &Found, entries: bool) -> Node {
    let cat = c.cat();
    let access = c.access();
    let parsed = c
        .state
        .music
        .roots()
        .get(f.folder)
        .and_then(|r| spindle_media::MusicRoot::new(r).ok())
        .and_then(|root| root.read_capped(&f.file, spindle_media::SIDECAR_CAP).ok())
        .map(|b| m3u::parse(&b))
        .unwrap_or_default();
    let by_file = m3u::songs_by_file(&cat);
    let mut songs = m3u::resolve(&parsed, &f.file, &by_file);
    songs.retain(|&s| access.sees_song(&cat.songs[s]));
    let name = parsed.name.clone().unwrap_or_else(|| f.name.clone());
    let n = Node::new("playlist")
        .s("id", f.id.clone())
        .s("name", name)
        .s("comment", "")
        .s("owner", m3u::OWNER)
        .b("public", true)
        .b("readonly", true);
    let songs: Vec<_> = songs.iter().map(|&s| &*cat.songs[s]).collect();
    super::user::with_songs(c, n, &songs, (f.changed, f.changed), entries)
}

/// The playlist files of the music folders the user may see.
fn found(c: &mut Ctx) -> Vec<Found> {
    let cat = c.cat();
    let access = c.access();
    let views = c.state.subsonic.views.of(&cat);
    let mut all = views.playlists(c.state.music.roots()).to_vec();
    all.retain(|f| access.folder(f.folder));
    all
}

/// The playlist files, for `getPlaylists`.
pub(crate) fn nodes(c: &mut Ctx) -> Vec<Node> {
    found(c).iter().map(|f| node(c, f, false)).collect()
}

/// `getPlaylist` of a playlist file.
pub(crate) fn playlist(c: &mut Ctx) -> SyncResult {
    let id = c.req("id")?.to_owned();
    let f = found(c)
        .into_iter()
        .find(|f| f.id == id)
        .ok_or(SubsonicError::NotFound("Playlist"))?;
    Ok(Some(node(c, &f, true)))
}

/// `updatePlaylist` or `deletePlaylist` of a playlist file.
pub(crate) fn refuse_change(_c: &mut Ctx) -> SyncResult {
    Err(SubsonicError::NotAuthorized(
        "This playlist is a file in the music folder and is read-only: edit the file instead"
            .into(),
    ))
}
