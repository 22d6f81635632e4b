//! `.m3u` and `.m3u8` playlists found in the music folders: parsed here
//! and resolved to the catalog's songs; Subsonic shows them as read-only
//! public playlists (owner `spindle`) that follow their files.
//!
//! A playlist is lines of text (UTF-8, a byte-order mark ignored; `.m3u`
//! files that are not UTF-8 are read as Latin-1), LF or CRLF. `#EXTM3U`,
//! `#EXTINF:…` and other `#` lines are comments (an `#EXTINF` title is
//! kept for the entry after it, a `#PLAYLIST:` line names the playlist);
//! every other non-blank line is a path, relative to the playlist's folder
//! or absolute, or a `file://` URL. Entries that are not songs of the
//! catalog (outside the music folders, not scanned, URLs of streams) are
//! skipped.
//!
//! Finding the files walks the music folders ([`find`]), at most
//! [`MAX_FOLDERS_WALKED`] folders and [`MAX_PLAYLISTS`] playlists deep; a
//! playlist file over [`spindle_media::SIDECAR_CAP`] is not read.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use crate::accounts::md5_hex;
use crate::catalog::Catalog;

/// The most folders one search for playlists looks into.
pub const MAX_FOLDERS_WALKED: usize = 100_000;
/// The most playlists one search keeps.
pub const MAX_PLAYLISTS: usize = 1000;
/// The owner Subsonic shows for playlists from files.
pub const OWNER: &str = "spindle";

/// One entry of a playlist file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path as written.
    pub path: String,
    /// The `#EXTINF` title before it, if any.
    pub title: Option<String>,
}

/// A parsed playlist file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    /// The `#PLAYLIST:` name, if the file has one.
    pub name: Option<String>,
    pub entries: Vec<Entry>,
}

/// Parses the bytes of a playlist file.
pub fn parse(bytes: &[u8]) -> Parsed {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        // Latin-1: every byte is the code point of the same number.
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    };
    let mut out = Parsed::default();
    let mut title = None;
    for line in text.lines() {
        let line = line.trim_end_matches('\r').trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("#EXTINF:") {
            // `#EXTINF:seconds[ attributes],Artist - Title`
            title = rest.split_once(',').map(|(_, t)| t.trim().to_owned());
            continue;
        }
        if let Some(rest) = line.strip_prefix("#PLAYLIST:") {
            out.name = Some(rest.trim().to_owned()).filter(|n| !n.is_empty());
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        out.entries.push(Entry {
            path: line.to_owned(),
            title: title.take(),
        });
    }
    out
}

/// `path` with `.` and `..` taken away lexically (a `..` above the top is
/// dropped), without touching the disk.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The file an entry of the playlist at `list` names, absolute.
pub fn entry_file(list: &Path, entry: &str) -> Option<PathBuf> {
    let p = if entry.starts_with("file://") {
        spindle_media::scan::url_path(entry)?
    } else if entry.contains("://") {
        return None;
    } else {
        let e = entry.replace('\\', "/");
        let p = Path::new(&e);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            list.parent()?.join(p)
        }
    };
    Some(normalise(&p))
}

/// The catalog's songs by file, for resolving entries.
pub fn songs_by_file(cat: &Catalog) -> HashMap<&Path, usize> {
    cat.songs
        .iter()
        .enumerate()
        .map(|(n, s)| (s.file.as_path(), n))
        .collect()
}

/// The songs (indexes into the catalog) of a parsed playlist at `list`.
pub fn resolve(parsed: &Parsed, list: &Path, by_file: &HashMap<&Path, usize>) -> Vec<usize> {
    parsed
        .entries
        .iter()
        .filter_map(|e| entry_file(list, &e.path))
        .filter_map(|f| by_file.get(f.as_path()).copied())
        .collect()
}

/// A playlist file found in a music folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// `m3u-` and a hash of its path: stable while the file stays.
    pub id: String,
    pub file: PathBuf,
    /// Index into the music folders.
    pub folder: usize,
    /// Its file name without the extension.
    pub name: String,
    /// Its modification time, UNIX seconds.
    pub changed: i64,
}

/// The id of the playlist file at `file`.
pub fn playlist_id(file: &Path) -> String {
    format!("m3u-{}", &md5_hex(file.to_string_lossy().as_bytes())[..16])
}

fn is_playlist(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("m3u") || e.eq_ignore_ascii_case("m3u8"))
}

/// Every playlist file in the music folders `roots`, by path. Symlinked
/// folders are not followed.
pub fn find(roots: &[PathBuf]) -> Vec<Found> {
    let mut out = Vec::new();
    let mut walked = 0usize;
    for (folder, root) in roots.iter().enumerate() {
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            walked += 1;
            if walked > MAX_FOLDERS_WALKED || out.len() >= MAX_PLAYLISTS {
                tracing::warn!(
                    "stopped looking for .m3u playlists after {walked} folders and {} playlists",
                    out.len()
                );
                return out;
            }
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                let p = e.path();
                if ft.is_dir() {
                    stack.push(p);
                } else if ft.is_file() && is_playlist(&p) {
                    let changed = e
                        .metadata()
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_secs() as i64);
                    out.push(Found {
                        id: playlist_id(&p),
                        name: p
                            .file_stem()
                            .map(|s| s.to_string_lossy().into_owned())
                            .unwrap_or_default(),
                        file: p,
                        folder,
                        changed,
                    });
                }
            }
        }
    }
    out.sort_by(|a, b| a.file.cmp(&b.file));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extinf_titles_bom_crlf_and_comments_are_understood() {
        let p = parse(
            b"\xEF\xBB\xBF#EXTM3U\r\n#PLAYLIST:Road trip\r\n#EXTINF:123,Artist - One\r\n01 One.flac\r\n\r\n# a comment\r\n../Other/02.mp3\r\n",
        );
        assert_eq!(p.name.as_deref(), Some("Road trip"));
        assert_eq!(
            p.entries,
            vec![
                Entry {
                    path: "01 One.flac".into(),
                    title: Some("Artist - One".into())
                },
                Entry {
                    path: "../Other/02.mp3".into(),
                    title: None
                },
            ]
        );
    }

    #[test]
    fn a_latin1_file_is_read_as_latin1() {
        let p = parse(b"Bj\xF6rk/J\xF3ga.mp3\n");
        assert_eq!(p.entries[0].path, "Björk/Jóga.mp3");
    }

    #[test]
    fn relative_absolute_and_url_entries_name_files() {
        let list = Path::new("/music/lists/mix.m3u");
        assert_eq!(
            entry_file(list, "../A/01.flac"),
            Some(PathBuf::from("/music/A/01.flac"))
        );
        assert_eq!(
            entry_file(list, "./x.mp3"),
            Some(PathBuf::from("/music/lists/x.mp3"))
        );
        assert_eq!(
            entry_file(list, "/music/B/02.flac"),
            Some(PathBuf::from("/music/B/02.flac"))
        );
        assert_eq!(
            entry_file(list, "sub\\03.flac"),
            Some(PathBuf::from("/music/lists/sub/03.flac"))
        );
        assert_eq!(
            entry_file(list, "file:///music/C%20D/04.flac"),
            Some(PathBuf::from("/music/C D/04.flac"))
        );
        assert_eq!(entry_file(list, "http://radio.example/stream"), None);
    }

    #[test]
    fn entries_resolve_to_catalog_songs_and_others_are_skipped() {
        let cat = spindle_app::testlib::catalog(&[
            ("A/01.flac", "A", "X", "one", "", 0),
            ("B/02.flac", "B", "Y", "two", "", 0),
        ]);
        let by_file = songs_by_file(&cat);
        let parsed = parse(b"../B/02.flac\nmissing.flac\n/music/A/01.flac\n");
        let list = Path::new("/music/lists/l.m3u8");
        let songs = resolve(&parsed, list, &by_file);
        let titles: Vec<&str> = songs.iter().map(|&n| cat.songs[n].title.as_str()).collect();
        assert_eq!(titles, ["two", "one"]);
    }

    #[test]
    fn playlist_files_are_found_in_every_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("top.m3u"), "x\n").unwrap();
        std::fs::write(dir.path().join("a/b/deep.M3U8"), "x\n").unwrap();
        std::fs::write(dir.path().join("a/song.flac"), "x").unwrap();
        let found = find(&[dir.path().to_path_buf()]);
        let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["deep", "top"]);
        assert_eq!(found[1].id, playlist_id(&dir.path().join("top.m3u")));
    }
}
