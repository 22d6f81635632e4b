//! Share links: `createShare`, `getShares`, `updateShare`,
//! `deleteShare`. A share is a list of songs (a song, an album, an
//! artist's albums or a playlist, resolved when it is made) behind a
//! random token, public at `/share/TOKEN` until it expires or is deleted
//! (the page and its streams: [`crate::share`]). Making one needs the
//! share role; a share is changed by its owner or an administrator.

use super::browse::song_node;
use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};
use crate::time::iso8601;
use crate::userdata::{Share, MAX_SHARE_SONGS};

/// The longest description, in bytes.
pub const MAX_DESCRIPTION: usize = 1_000;

/// The songs an `id` names: a song, an album, an artist, or a playlist
/// the user may read (a number is a song when there is such a song); of
/// the songs the user may see only (a hidden song, album or artist is not
/// found, so nobody shares what they may not see).
fn songs_of(c: &mut Ctx, id: &str) -> Result<Vec<u32>, SubsonicError> {
    let cat = c.cat();
    let access = c.access();
    let unknown = || SubsonicError::NotFound("Song, album, artist or playlist");
    if access.hides(&cat, id) {
        return Err(unknown());
    }
    let visible = |n: &usize| access.sees_song(&cat.songs[*n]);
    if let Some(s) = cat.song(id) {
        return Ok(vec![s.id]);
    }
    if let Some(a) = cat.album(id) {
        return Ok(a
            .songs
            .iter()
            .filter(|n| visible(n))
            .map(|&n| cat.songs[n].id)
            .collect());
    }
    if let Some(ar) = cat.artist(id) {
        return Ok(ar
            .albums
            .iter()
            .flat_map(|&al| cat.albums[al].songs.iter())
            .filter(|n| visible(n))
            .map(|&n| cat.songs[n].id)
            .collect());
    }
    let playlist = id
        .parse::<u64>()
        .ok()
        .and_then(|n| c.state.music.userdata.playlist(n))
        .filter(|p| p.owner == c.user || p.public);
    match playlist {
        Some(p) => Ok(p
            .songs
            .into_iter()
            .filter(|&s| access.entry(&cat, s).is_some())
            .collect()),
        None => Err(unknown()),
    }
}

/// `expires` in ms since the epoch as seconds; 0 or absent: never.
fn expires(c: &Ctx) -> Result<Option<Option<i64>>, SubsonicError> {
    match c.int("expires")? {
        None => Ok(None),
        Some(ms) if ms <= 0 => Ok(Some(None)),
        Some(ms) if ms / 1000 <= c.now() => Err(SubsonicError::BadValue(
            "expires is in the past: send a time to come, in ms since 1970, or 0 for never".into(),
        )),
        Some(ms) => Ok(Some(Some(ms / 1000))),
    }
}

fn description(c: &Ctx) -> Result<Option<String>, SubsonicError> {
    match c.p.get("description") {
        Some(d) if d.len() > MAX_DESCRIPTION => Err(SubsonicError::BadValue(format!(
            "The description is over {MAX_DESCRIPTION} bytes: shorten it"
        ))),
        d => Ok(d.map(|d| d.trim().to_owned())),
    }
}

/// A share as the user sees it: its entries of the folders they may see.
fn share_node(c: &mut Ctx, token: &str, s: &Share) -> Node {
    let cat = c.cat();
    let access = c.access();
    let starred = super::browse::marks(c);
    let entries = s
        .songs
        .iter()
        .filter_map(|&e| access.entry(&cat, e))
        .map(|song| song_node(song, &starred).named("entry"))
        .collect();
    let url = crate::share::share_url(&c.state, c.host.as_deref(), token);
    Node::new("share")
        .s("id", token)
        .s("url", url)
        .s("description", s.description.clone())
        .s("username", s.owner.clone())
        .s("created", iso8601(s.created))
        .opt_s("expires", s.expires.map(iso8601))
        .opt_s("lastVisited", s.last_visited.map(iso8601))
        .i("visitCount", i64::try_from(s.visits).unwrap_or(i64::MAX))
        .list("entry", entries)
}

/// A share the caller may change: their own, or any for an administrator.
fn owned(c: &Ctx) -> Result<(String, Share), SubsonicError> {
    let token = c.req("id")?.to_owned();
    let s = c
        .state
        .music
        .userdata
        .share(&token)
        .ok_or(SubsonicError::NotFound("Share"))?;
    if s.owner != c.user && !c.state.accounts.is_admin(&c.user) {
        return Err(SubsonicError::NotAuthorized(
            "This share belongs to another user".into(),
        ));
    }
    Ok((token, s))
}

/// `createShare`: `id` (repeated), `description`, `expires` (ms).
pub(crate) fn create(c: &mut Ctx) -> SyncResult {
    if !c.state.accounts.roles(&c.user).is_some_and(|r| r.share) {
        return Err(SubsonicError::NotAuthorized(
            "You may not share: ask an administrator for the share role".into(),
        ));
    }
    let ids: Vec<String> = c.all("id").into_iter().map(str::to_owned).collect();
    if ids.is_empty() {
        return Err(SubsonicError::Missing("id"));
    }
    let mut songs = Vec::new();
    for id in &ids {
        songs.extend(songs_of(c, id)?);
        if songs.len() > MAX_SHARE_SONGS {
            return Err(SubsonicError::BadValue(format!(
                "A share holds at most {MAX_SHARE_SONGS} songs: share less"
            )));
        }
    }
    let s = Share {
        owner: c.user.clone(),
        description: description(c)?.unwrap_or_default(),
        songs,
        created: c.now(),
        expires: expires(c)?.flatten(),
        last_visited: None,
        visits: 0,
    };
    let token = crate::accounts::random_hex();
    c.state
        .music
        .userdata
        .create_share(&token, s.clone())
        .map_err(SubsonicError::not_saved)?;
    let n = share_node(c, &token, &s);
    Ok(Some(Node::new("shares").list("share", vec![n])))
}

/// `getShares`: the caller's shares (an administrator's: everyone's),
/// expired ones included, oldest first.
pub(crate) fn list(c: &mut Ctx) -> SyncResult {
    let ud = &c.state.music.userdata;
    let mut all = if c.state.accounts.is_admin(&c.user) {
        ud.all_shares()
    } else {
        ud.shares_of(&c.user)
    };
    all.sort_by_key(|(t, s)| (s.created, t.clone()));
    let nodes = all.iter().map(|(t, s)| share_node(c, t, s)).collect();
    Ok(Some(Node::new("shares").list("share", nodes)))
}

/// `updateShare`: `id`, `description`, `expires` (ms; 0: never).
pub(crate) fn update(c: &mut Ctx) -> SyncResult {
    let (token, mut s) = owned(c)?;
    if let Some(d) = description(c)? {
        s.description = d;
    }
    if let Some(e) = expires(c)? {
        s.expires = e;
    }
    if !c
        .state
        .music
        .userdata
        .put_share(&token, s)
        .map_err(SubsonicError::not_saved)?
    {
        return Err(SubsonicError::NotFound("Share"));
    }
    Ok(None)
}

/// `deleteShare`: `id`; the link answers 404 from now on.
pub(crate) fn delete(c: &mut Ctx) -> SyncResult {
    let (token, _) = owned(c)?;
    c.state
        .music
        .userdata
        .delete_share(&token)
        .map_err(SubsonicError::not_saved)?;
    Ok(None)
}
