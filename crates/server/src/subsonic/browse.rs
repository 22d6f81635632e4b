//! Browsing: music folders, indexes, artists, albums, songs, directories,
//! genres, and the OpenSubsonic extensions list.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::response::Node;
use super::{not_found, Ctx, Fail, SyncResult};
use crate::catalog::{Album, Artist, Catalog, Song};
use crate::time::iso8601;

pub(crate) type Starred = BTreeMap<String, i64>;

fn starred_attr(n: Node, id: &str, starred: &Starred) -> Node {
    match starred.get(id) {
        Some(t) => n.s("starred", iso8601(*t)),
        None => n,
    }
}

/// A song as a Subsonic `Child`.
pub(crate) fn song_node(s: &Song, starred: &Starred) -> Node {
    let id = s.id.to_string();
    let n = Node::new("song")
        .s("id", id.clone())
        .s("parent", s.album_id.clone())
        .b("isDir", false)
        .s("title", s.title.clone())
        .s("album", s.album.clone())
        .s("artist", s.artist.clone())
        .opt_i("track", s.track)
        .opt_i("year", s.year)
        .opt_s("genre", s.genre.clone())
        .s("coverArt", s.album_id.clone())
        .opt_i("size", s.size)
        .s("contentType", s.content_type.clone())
        .s("suffix", s.suffix.clone())
        .opt_i("duration", s.duration)
        .opt_i("bitRate", s.bitrate)
        .s("path", s.path.clone())
        .i("playCount", s.play_count)
        .opt_i("discNumber", s.disc)
        .s("created", iso8601(s.added))
        .s("albumId", s.album_id.clone())
        .s("artistId", s.artist_id.clone())
        .s("type", "music")
        .s("mediaType", "song")
        .b("isVideo", false);
    let n = if s.last_played > 0 {
        n.s("played", iso8601(s.last_played))
    } else {
        n
    };
    starred_attr(n, &id, starred)
}

/// An album as a Subsonic `AlbumID3`.
pub(crate) fn album_node(a: &Album, starred: &Starred) -> Node {
    let n = Node::new("album")
        .s("id", a.id.clone())
        .s("name", a.name.clone())
        .s("title", a.name.clone())
        .s("artist", a.artist.clone())
        .s("artistId", a.artist_id.clone())
        .s("coverArt", a.id.clone())
        .i("songCount", a.songs.len() as i64)
        .i("duration", a.duration)
        .i("playCount", a.play_count)
        .s("created", iso8601(a.created))
        .opt_i("year", a.year)
        .opt_s("genre", a.genre.clone());
    starred_attr(n, &a.id, starred)
}

pub(crate) fn artist_node(cat: &Catalog, a: &Artist, starred: &Starred) -> Node {
    let n = Node::new("artist")
        .s("id", a.id.clone())
        .s("name", a.name.clone())
        .i("albumCount", a.albums.len() as i64);
    let n = match a.albums.first() {
        Some(&al) => n.s("coverArt", cat.albums[al].id.clone()),
        None => n,
    };
    starred_attr(n, &a.id, starred)
}

pub(crate) fn extensions() -> Node {
    Node::new("").list(
        "openSubsonicExtensions",
        [("apiKeyAuthentication", 1), ("formPost", 1)]
            .iter()
            .map(|(name, v)| Node::new("e").s("name", *name).ints("versions", vec![*v]))
            .collect(),
    )
}

fn folder_filter(c: &Ctx) -> Result<Option<usize>, super::Fail> {
    match c.int("musicFolderId")? {
        None => Ok(None),
        Some(n) if n >= 1 && (n as usize) <= c.state.music.roots().len() => {
            Ok(Some(n as usize - 1))
        }
        Some(_) => Err(not_found("Music folder")),
    }
}

pub(crate) fn in_folder(cat: &Catalog, a: &Album, folder: Option<usize>) -> bool {
    folder.is_none_or(|f| a.songs.iter().any(|&s| cat.songs[s].folder == f))
}

pub(crate) fn music_folders(c: &mut Ctx) -> SyncResult {
    let folders = c
        .state
        .music
        .roots()
        .iter()
        .enumerate()
        .map(|(n, r)| {
            let name = r
                .file_name()
                .map_or_else(|| r.to_string_lossy(), |f| f.to_string_lossy())
                .into_owned();
            Node::new("musicFolder")
                .i("id", n as i64 + 1)
                .s("name", name)
        })
        .collect();
    Ok(Some(Node::new("musicFolders").list("musicFolder", folders)))
}

fn index_letter(name: &str) -> String {
    match name.chars().next() {
        Some(ch) if ch.is_alphabetic() => ch.to_uppercase().collect(),
        _ => "#".into(),
    }
}

/// Artists (indexes into the catalog) under their index letter.
type Groups = Vec<(String, Vec<usize>)>;

fn grouped(c: &mut Ctx) -> Result<(Arc<Catalog>, Groups), Fail> {
    let folder = folder_filter(c)?;
    let cat = c.cat();
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (n, a) in cat.artists.iter().enumerate() {
        if !a
            .albums
            .iter()
            .any(|&al| in_folder(&cat, &cat.albums[al], folder))
        {
            continue;
        }
        let l = index_letter(&a.name);
        match groups.last_mut() {
            Some((g, v)) if *g == l => v.push(n),
            _ => groups.push((l, vec![n])),
        }
    }
    Ok((cat, groups))
}

/// The `index` nodes of `groups`, each artist drawn by `artist`.
fn index_nodes(cat: &Catalog, groups: Groups, artist: impl Fn(&Artist) -> Node) -> Vec<Node> {
    groups
        .into_iter()
        .map(|(l, v)| {
            let artists = v.iter().map(|&n| artist(&cat.artists[n])).collect();
            Node::new("index").s("name", l).list("artist", artists)
        })
        .collect()
}

pub(crate) fn indexes(c: &mut Ctx) -> SyncResult {
    let (cat, groups) = grouped(c)?;
    let starred = c.state.music.userdata.starred(&c.user);
    let idx = index_nodes(&cat, groups, |a| {
        starred_attr(
            Node::new("artist")
                .s("id", a.id.clone())
                .s("name", a.name.clone()),
            &a.id,
            &starred,
        )
    });
    Ok(Some(
        Node::new("indexes")
            .i("lastModified", c.now() * 1000)
            .s("ignoredArticles", "")
            .list("index", idx),
    ))
}

pub(crate) fn artists(c: &mut Ctx) -> SyncResult {
    let (cat, groups) = grouped(c)?;
    let starred = c.state.music.userdata.starred(&c.user);
    let idx = index_nodes(&cat, groups, |a| artist_node(&cat, a, &starred));
    Ok(Some(
        Node::new("artists")
            .s("ignoredArticles", "")
            .list("index", idx),
    ))
}

/// What a lookup by `id` needs: the id, the catalog, the user's stars.
fn by_id(c: &mut Ctx) -> Result<(String, Arc<Catalog>, Starred), Fail> {
    let id = c.req("id")?.to_owned();
    let cat = c.cat();
    let starred = c.state.music.userdata.starred(&c.user);
    Ok((id, cat, starred))
}

/// An album's songs as Subsonic `Child`ren.
fn song_nodes(cat: &Catalog, a: &Album, starred: &Starred) -> Vec<Node> {
    a.songs
        .iter()
        .map(|&n| song_node(&cat.songs[n], starred))
        .collect()
}

pub(crate) fn artist(c: &mut Ctx) -> SyncResult {
    let (id, cat, starred) = by_id(c)?;
    let a = cat.artist(&id).ok_or_else(|| not_found("Artist"))?;
    let albums = a
        .albums
        .iter()
        .map(|&n| album_node(&cat.albums[n], &starred))
        .collect();
    Ok(Some(artist_node(&cat, a, &starred).list("album", albums)))
}

pub(crate) fn album(c: &mut Ctx) -> SyncResult {
    let (id, cat, starred) = by_id(c)?;
    let a = cat.album(&id).ok_or_else(|| not_found("Album"))?;
    let songs = song_nodes(&cat, a, &starred);
    Ok(Some(album_node(a, &starred).list("song", songs)))
}

pub(crate) fn song(c: &mut Ctx) -> SyncResult {
    let (id, cat, starred) = by_id(c)?;
    let s = cat.song(&id).ok_or_else(|| not_found("Song"))?;
    Ok(Some(song_node(s, &starred)))
}

/// Folder browsing over the same tree: an artist's directory holds its
/// albums, an album's directory its songs.
pub(crate) fn directory(c: &mut Ctx) -> SyncResult {
    let (id, cat, starred) = by_id(c)?;
    if let Some(a) = cat.artist(&id) {
        let kids = a
            .albums
            .iter()
            .map(|&n| {
                let al = &cat.albums[n];
                starred_attr(
                    Node::new("child")
                        .s("id", al.id.clone())
                        .s("parent", a.id.clone())
                        .b("isDir", true)
                        .s("title", al.name.clone())
                        .s("album", al.name.clone())
                        .s("artist", al.artist.clone())
                        .s("coverArt", al.id.clone())
                        .opt_i("year", al.year),
                    &al.id,
                    &starred,
                )
            })
            .collect();
        return Ok(Some(
            Node::new("directory")
                .s("id", a.id.clone())
                .s("name", a.name.clone())
                .list("child", kids),
        ));
    }
    if let Some(al) = cat.album(&id) {
        let kids = song_nodes(&cat, al, &starred);
        return Ok(Some(
            Node::new("directory")
                .s("id", al.id.clone())
                .s("parent", al.artist_id.clone())
                .s("name", al.name.clone())
                .list("child", kids),
        ));
    }
    Err(not_found("Directory"))
}

pub(crate) fn genres(c: &mut Ctx) -> SyncResult {
    let cat = c.cat();
    let mut g: HashMap<&str, (i64, std::collections::HashSet<&str>)> = HashMap::new();
    for s in &cat.songs {
        if let Some(name) = &s.genre {
            let e = g.entry(name).or_default();
            e.0 += 1;
            e.1.insert(&s.album_id);
        }
    }
    let mut v: Vec<_> = g.into_iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    let nodes = v
        .into_iter()
        .map(|(name, (songs, albums))| {
            Node::new("genre")
                .s("value", name)
                .i("songCount", songs)
                .i("albumCount", albums.len() as i64)
        })
        .collect();
    Ok(Some(Node::new("genres").list("genre", nodes)))
}
