//! Browsing by folders: `getIndexes` and `getMusicDirectory` over the real
//! folder tree of the music folders.
//!
//! The tree is the folders that hold songs of the catalog (at any depth),
//! as they lie on disk: a folder's directory lists its subfolders (as
//! directories) and its songs, by name. A folder's id is `fo-` and a hash
//! of its music folder's path and its path below it, so ids survive
//! restarts and rescans as long as the folder does. `getMusicDirectory`
//! also takes artist and album ids (`ar-…`, `al-…`), which `getAlbumList`,
//! `search2` and `getStarred` hand out: an artist's directory holds its
//! albums, an album's its songs.
//!
//! `getIndexes` lists the folders at the top of the music folders (of one,
//! with `musicFolderId`) under their first letter, and the songs lying
//! directly in a music folder as `child` entries. Its `lastModified` is the
//! latest of the music folders' own modification times and of when their
//! songs were added, in milliseconds; with `ifModifiedSince` at or after it
//! the answer holds no index.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::browse::{index_letter, song_node, Marks};
use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};
use crate::accounts::md5_hex;
use crate::catalog::{Album, Artist, Catalog};
use crate::time::iso8601;

/// One folder of the tree.
#[derive(Debug, Clone)]
pub(crate) struct Dir {
    pub id: String,
    pub name: String,
    /// Index into the music folders.
    pub folder: usize,
    /// Index of the folder above, within the tree (`None` for a music
    /// folder itself).
    pub parent: Option<usize>,
    /// Subfolders, by name caselessly.
    pub dirs: Vec<usize>,
    /// Songs lying in it (indexes into [`Catalog::songs`]), by file name.
    pub songs: Vec<usize>,
    /// A song at or below it, whose cover stands for the folder.
    pub cover: Option<usize>,
    /// When a song at or below it was last added, UNIX seconds.
    pub added: i64,
}

/// The folder tree of the catalog's songs.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    pub dirs: Vec<Dir>,
    /// The music folders' own entries, by music folder index.
    pub roots: Vec<usize>,
    by_id: HashMap<String, usize>,
}

/// The stable id of the folder `rel` below the music folder `root`.
pub(crate) fn folder_id(root: &Path, rel: &str) -> String {
    let key = format!("{}\0{}", root.to_string_lossy(), rel);
    format!("fo-{}", &md5_hex(key.as_bytes())[..16])
}

impl Tree {
    /// The tree of `cat`'s songs below `roots` (canonical music folders).
    pub fn build(cat: &Catalog, roots: &[PathBuf]) -> Tree {
        let mut t = Tree::default();
        // (music folder, path below it) → index in `dirs`.
        let mut at: HashMap<(usize, String), usize> = HashMap::new();
        for (n, root) in roots.iter().enumerate() {
            let name = root
                .file_name()
                .map_or_else(|| root.to_string_lossy(), |f| f.to_string_lossy())
                .into_owned();
            t.roots.push(t.dirs.len());
            at.insert((n, String::new()), t.dirs.len());
            t.dirs.push(Dir {
                id: folder_id(root, ""),
                name,
                folder: n,
                parent: None,
                dirs: Vec::new(),
                songs: Vec::new(),
                cover: None,
                added: 0,
            });
        }
        for (si, s) in cat.songs.iter().enumerate() {
            let Some(root) = roots.get(s.folder) else {
                continue;
            };
            let mut cur = t.roots[s.folder];
            let parts: Vec<&str> = s.path.split('/').filter(|p| !p.is_empty()).collect();
            let Some((_, dirs)) = parts.split_last() else {
                continue;
            };
            let mut rel = String::new();
            t.touch(cur, si, s.added);
            for part in dirs {
                if !rel.is_empty() {
                    rel.push('/');
                }
                rel.push_str(part);
                let key = (s.folder, rel.clone());
                cur = match at.get(&key) {
                    Some(&d) => d,
                    None => {
                        let d = t.dirs.len();
                        t.dirs.push(Dir {
                            id: folder_id(root, &rel),
                            name: (*part).to_owned(),
                            folder: s.folder,
                            parent: Some(cur),
                            dirs: Vec::new(),
                            songs: Vec::new(),
                            cover: None,
                            added: 0,
                        });
                        t.dirs[cur].dirs.push(d);
                        at.insert(key, d);
                        d
                    }
                };
                t.touch(cur, si, s.added);
            }
            t.dirs[cur].songs.push(si);
        }
        let names: Vec<String> = t.dirs.iter().map(|d| d.name.to_lowercase()).collect();
        for d in &mut t.dirs {
            d.dirs.sort_by(|&a, &b| names[a].cmp(&names[b]));
            d.songs
                .sort_by(|&a, &b| cat.songs[a].path.cmp(&cat.songs[b].path));
        }
        t.by_id = t
            .dirs
            .iter()
            .enumerate()
            .map(|(n, d)| (d.id.clone(), n))
            .collect();
        t
    }

    fn touch(&mut self, d: usize, song: usize, added: i64) {
        let dir = &mut self.dirs[d];
        dir.cover.get_or_insert(song);
        dir.added = dir.added.max(added);
    }

    pub fn get(&self, id: &str) -> Option<&Dir> {
        self.by_id.get(id).map(|&n| &self.dirs[n])
    }
}

/// A folder as a Subsonic `Child` directory.
fn dir_node(t: &Tree, cat: &Catalog, d: &Dir, starred: &impl Marks) -> Node {
    let n = Node::new("child")
        .s("id", d.id.clone())
        .opt_s("parent", d.parent.map(|p| t.dirs[p].id.clone()))
        .b("isDir", true)
        .s("title", d.name.clone())
        .s("created", iso8601(d.added));
    let n = match d.cover {
        Some(s) => n.s("coverArt", cat.songs[s].id.to_string()),
        None => n,
    };
    starred_attr(n, &d.id, starred)
}

/// The user's star and rating of `id`, as `starred` and `userRating`.
fn starred_attr(n: Node, id: &str, marks: &impl Marks) -> Node {
    let n = match marks.starred(id) {
        Some(t) => n.s("starred", iso8601(t)),
        None => n,
    };
    n.opt_i("userRating", marks.rating(id))
}

/// An album as a Subsonic `Child` directory (the album entries of
/// `getAlbumList`, `search2` and `getStarred`, opened with
/// `getMusicDirectory`).
pub(crate) fn album_child(a: &Album, starred: &impl Marks) -> Node {
    let n = Node::new("album")
        .s("id", a.id.clone())
        .s("parent", a.artist_id.clone())
        .b("isDir", true)
        .s("title", a.name.clone())
        .s("name", a.name.clone())
        .s("album", a.name.clone())
        .s("artist", a.artist.clone())
        .s("artistId", a.artist_id.clone())
        .opt_i("year", a.year)
        .opt_s("genre", a.genre.clone())
        .s("coverArt", a.id.clone())
        .i("songCount", a.songs.len() as i64)
        .i("duration", a.duration)
        .i("playCount", starred.album_plays(a).count)
        .s("created", iso8601(a.created))
        .s("mediaType", "album");
    starred_attr(n, &a.id, starred)
}

/// An artist as a Subsonic (v1) `Artist`.
pub(crate) fn artist_v1(a: &Artist, starred: &impl Marks) -> Node {
    starred_attr(
        Node::new("artist")
            .s("id", a.id.clone())
            .s("name", a.name.clone()),
        &a.id,
        starred,
    )
}

/// Milliseconds since the epoch of a folder's last change on disk.
fn mtime_ms(p: &Path) -> i64 {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64)
}

pub(crate) fn indexes(c: &mut Ctx) -> SyncResult {
    let scope = c.scope()?;
    let since = c.int("ifModifiedSince")?;
    let cat = c.cat();
    let views = c.state.subsonic.views.of(&cat);
    let roots = c.state.music.roots().to_vec();
    let tree = views.tree(&roots);
    let chosen: Vec<usize> = tree
        .roots
        .iter()
        .copied()
        .filter(|&r| scope.sees_dir(&tree.dirs[r]))
        .collect();
    let last = chosen
        .iter()
        .map(|&r| {
            let d = &tree.dirs[r];
            let disk = roots.get(d.folder).map_or(0, |p| mtime_ms(p));
            disk.max(d.added.saturating_mul(1000))
        })
        .max()
        .unwrap_or(0);
    let head = Node::new("indexes")
        .i("lastModified", last)
        .s("ignoredArticles", "");
    if since.is_some_and(|s| s >= last) {
        return Ok(Some(head));
    }
    let starred = super::browse::marks(c);
    let mut tops: Vec<usize> = chosen
        .iter()
        .flat_map(|&r| tree.dirs[r].dirs.iter().copied())
        .collect();
    let key = |n: &usize| tree.dirs[*n].name.to_lowercase();
    tops.sort_by_cached_key(key);
    let mut groups: Vec<(String, Vec<Node>)> = Vec::new();
    for n in tops {
        let d = &tree.dirs[n];
        let node = starred_attr(
            Node::new("artist")
                .s("id", d.id.clone())
                .s("name", d.name.clone()),
            &d.id,
            &starred,
        );
        let l = index_letter(&d.name);
        match groups.last_mut() {
            Some((g, v)) if *g == l => v.push(node),
            _ => groups.push((l, vec![node])),
        }
    }
    let index = groups
        .into_iter()
        .map(|(l, v)| Node::new("index").s("name", l).list("artist", v))
        .collect();
    let children = chosen
        .iter()
        .flat_map(|&r| tree.dirs[r].songs.iter())
        .map(|&s| song_node(&cat.songs[s], &starred))
        .collect();
    Ok(Some(
        head.list("shortcut", Vec::new())
            .list("index", index)
            .list("child", children),
    ))
}

pub(crate) fn directory(c: &mut Ctx) -> SyncResult {
    let id = c.req("id")?.to_owned();
    let cat = c.cat();
    let access = c.access();
    let starred = super::browse::marks(c);
    if id.starts_with("fo-") {
        let views = c.state.subsonic.views.of(&cat);
        let roots = c.state.music.roots().to_vec();
        let tree = views.tree(&roots);
        // A folder lies in one music folder: all of it is visible or none.
        let d = tree
            .get(&id)
            .filter(|d| access.sees_dir(d))
            .ok_or(SubsonicError::NotFound("Directory"))?;
        let mut kids: Vec<Node> = d
            .dirs
            .iter()
            .map(|&n| dir_node(tree, &cat, &tree.dirs[n], &starred))
            .collect();
        kids.extend(d.songs.iter().map(|&s| song_node(&cat.songs[s], &starred)));
        let n = Node::new("directory")
            .s("id", d.id.clone())
            .opt_s("parent", d.parent.map(|p| tree.dirs[p].id.clone()))
            .s("name", d.name.clone());
        return Ok(Some(starred_attr(n, &d.id, &starred).list("child", kids)));
    }
    if let Some(a) = cat.artist(&id).filter(|a| access.sees_artist(&cat, a)) {
        let a = access.artist_view(&cat, a);
        let kids = a
            .albums
            .iter()
            .map(|&n| album_child(&access.album_view(&cat, &cat.albums[n]), &starred))
            .collect();
        let n = Node::new("directory")
            .s("id", a.id.clone())
            .s("name", a.name.clone());
        return Ok(Some(starred_attr(n, &a.id, &starred).list("child", kids)));
    }
    if let Some(al) = cat.album(&id).filter(|a| access.sees_album(&cat, a)) {
        let al = access.album_view(&cat, al);
        let kids = al
            .songs
            .iter()
            .map(|&n| song_node(&cat.songs[n], &starred))
            .collect();
        let n = Node::new("directory")
            .s("id", al.id.clone())
            .s("parent", al.artist_id.clone())
            .s("name", al.name.clone())
            .i("playCount", starred.album_plays(&al).count);
        return Ok(Some(starred_attr(n, &al.id, &starred).list("child", kids)));
    }
    Err(SubsonicError::NotFound("Directory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_ids_depend_on_the_folder_and_path_only() {
        let a = folder_id(Path::new("/m"), "Artist/Album");
        assert_eq!(a, folder_id(Path::new("/m"), "Artist/Album"));
        assert_ne!(a, folder_id(Path::new("/n"), "Artist/Album"));
        assert_ne!(a, folder_id(Path::new("/m"), "Artist"));
        assert!(a.starts_with("fo-") && a.len() == 19);
    }

    #[test]
    fn the_tree_holds_every_folder_with_songs_and_the_songs_in_their_folder() {
        let cat = spindle_app::testlib::catalog(&[
            ("A/X/01.flac", "A", "X", "one", "", 0),
            ("A/X/02.flac", "A", "X", "two", "", 0),
            ("A/Y/CD1/01.flac", "A", "Y", "three", "", 0),
            ("b/Z/01.flac", "B", "Z", "four", "", 0),
            ("loose.flac", "C", "W", "five", "", 0),
        ]);
        let root = PathBuf::from(spindle_app::testlib::ROOT);
        let t = Tree::build(&cat, std::slice::from_ref(&root));
        let top = &t.dirs[t.roots[0]];
        let names =
            |v: &[usize]| -> Vec<String> { v.iter().map(|&n| t.dirs[n].name.clone()).collect() };
        assert_eq!(names(&top.dirs), ["A", "b"]);
        assert_eq!(top.songs.len(), 1);
        let a = t.get(&folder_id(&root, "A")).unwrap();
        assert_eq!(names(&a.dirs), ["X", "Y"]);
        assert!(a.songs.is_empty());
        let x = t.get(&folder_id(&root, "A/X")).unwrap();
        let titles: Vec<&str> = x
            .songs
            .iter()
            .map(|&s| cat.songs[s].title.as_str())
            .collect();
        assert_eq!(titles, ["one", "two"]);
        assert_eq!(t.dirs[x.parent.unwrap()].id, a.id);
        let cd = t.get(&folder_id(&root, "A/Y/CD1")).unwrap();
        assert_eq!(cd.songs.len(), 1);
        assert!(t.get("fo-0000000000000000").is_none());
    }
}
