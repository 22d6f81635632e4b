//! Where a cover may come from, best first, for a song, album or artist
//! id ([`candidates`]), and how each candidate's bytes are read
//! ([`load`]).
//!
//! - A song (its decimal id): the picture embedded in it (the front
//!   cover, else the first), then the images in its folder named
//!   [`FOLDER_STEMS`] with an [`IMAGE_EXTENSIONS`] extension, compared
//!   caselessly, in that order (`cover.jpg` before `cover.png` before
//!   `folder.jpg`); when the folder is a disc folder of an album (`CD1`,
//!   `Disc 2`), the album folder above it next.
//! - An album (`al-…`): its first song's.
//! - An artist (`ar-…`): `artist.*` in the artist's folder — the common
//!   parent folder of the artist's album folders (and, for an artist with
//!   one album folder, the folder above it) — then in each album folder;
//!   then the cover of the artist's first album.
//!
//! Only names are listed here; every file is opened through its music
//! folder's checked open ([`spindle_media::MusicRoot`]), so no candidate
//! leads out of a music folder. Each candidate carries the identity of
//! its file (path, inode, length, modification time), from which the
//! cover's ETag and cache key are made without reading a byte of it.

use std::path::{Path, PathBuf};

use spindle_media::tags::{embedded_cover, TagError};
use spindle_media::{MusicRoot, COVER_CAP};

use super::CoverError;
use crate::catalog::{Catalog, Song};
use crate::music::Music;

/// Names of cover images in an album's folder, best first.
pub const FOLDER_STEMS: &[&str] = &["cover", "folder", "front", "album"];

/// Name of an artist's image (in the artist's folder).
pub const ARTIST_STEMS: &[&str] = &["artist"];

/// Extensions of cover images, best first.
pub const IMAGE_EXTENSIONS: &[&str] = &["jpg", "jpeg", "png", "webp"];

/// Where one candidate's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The picture embedded in this song file.
    Embedded(PathBuf),
    /// An image file.
    File(PathBuf),
}

/// One place a cover may come from.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub source: Source,
    /// The music folder it lies under, through which it is opened.
    pub root: MusicRoot,
    /// What changes when its file does: kind, path, inode, length,
    /// modification time.
    pub identity: String,
}

/// The candidates of `id`, best first; an unknown id is
/// [`CoverError::NoSuchId`]. Call on a blocking thread.
pub fn candidates(music: &Music, cat: &Catalog, id: &str) -> Result<Vec<Candidate>, CoverError> {
    if let Some(song) = cat.song(id) {
        return Ok(song_candidates(music, song));
    }
    if let Some(album) = cat.album(id) {
        return Ok(album
            .songs
            .first()
            .map(|&n| song_candidates(music, &cat.songs[n]))
            .unwrap_or_default());
    }
    if let Some(artist) = cat.artist(id) {
        let first_songs: Vec<&Song> = artist
            .albums
            .iter()
            .filter_map(|&a| cat.albums[a].songs.first().map(|&n| &*cat.songs[n]))
            .collect();
        let mut out = artist_candidates(music, &first_songs);
        if let Some(song) = first_songs.first() {
            out.extend(song_candidates(music, song));
        }
        return Ok(out);
    }
    Err(CoverError::NoSuchId(id.to_owned()))
}

fn song_candidates(music: &Music, song: &Song) -> Vec<Candidate> {
    let mut out = Vec::new();
    let Ok(root) = music.folder_of(song) else {
        return out;
    };
    if let Ok((_, meta)) = music.file_of(song) {
        out.push(Candidate {
            identity: format!("embedded:{}", identity(&song.file, &meta)),
            source: Source::Embedded(song.file.clone()),
            root: root.clone(),
        });
    }
    let Some(dir) = song.file.parent() else {
        return out;
    };
    out.extend(images_in(root, dir, FOLDER_STEMS));
    if is_disc_folder(dir) {
        if let Some(up) = dir.parent().filter(|up| up.starts_with(root.path())) {
            out.extend(images_in(root, up, FOLDER_STEMS));
        }
    }
    out
}

/// `artist.*` in the folders of an artist whose albums' first songs are
/// `songs`.
fn artist_candidates(music: &Music, songs: &[&Song]) -> Vec<Candidate> {
    let Some(first) = songs.first() else {
        return Vec::new();
    };
    let Ok(root) = music.folder_of(first) else {
        return Vec::new();
    };
    let folder = first.folder;
    let top = root.path();
    let album_dirs: Vec<&Path> = songs
        .iter()
        .filter(|s| s.folder == folder)
        .filter_map(|s| album_folder(&s.file))
        .collect();
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(common) = common_folder(&album_dirs).filter(|c| c.starts_with(top)) {
        let single = album_dirs.iter().all(|d| *d == common);
        if single {
            if let Some(up) = common
                .parent()
                .filter(|up| up.starts_with(top) && *up != top)
            {
                dirs.push(up.to_owned());
            }
        }
        dirs.insert(0, common);
    }
    for d in album_dirs {
        if !dirs.iter().any(|x| x == d) {
            dirs.push(d.to_owned());
        }
    }
    dirs.iter()
        .flat_map(|d| images_in(root, d, ARTIST_STEMS))
        .collect()
}

/// The folder of the album a song file belongs to: its own folder, or
/// the one above when that is a disc folder.
fn album_folder(file: &Path) -> Option<&Path> {
    let dir = file.parent()?;
    match dir.parent() {
        Some(up) if is_disc_folder(dir) => Some(up),
        _ => Some(dir),
    }
}

/// The deepest folder every one of `dirs` lies in.
fn common_folder(dirs: &[&Path]) -> Option<PathBuf> {
    let (first, rest) = dirs.split_first()?;
    let mut common = first.to_path_buf();
    for d in rest {
        while !d.starts_with(&common) {
            if !common.pop() {
                return None;
            }
        }
    }
    Some(common)
}

/// Whether a folder's name says it holds one disc of an album: `CD1`,
/// `cd 02`, `Disc 2`, `disk_3`, `Disc1 - Live`.
pub fn is_disc_folder(dir: &Path) -> bool {
    let Some(name) = dir.file_name().map(|n| n.to_string_lossy().to_lowercase()) else {
        return false;
    };
    ["cd", "disc", "disk"].iter().any(|p| {
        name.strip_prefix(p).is_some_and(|rest| {
            let rest = rest.trim_start_matches([' ', '_', '-', '.']);
            rest.starts_with(|c: char| c.is_ascii_digit())
        })
    })
}

/// The images in `dir` named one of `stems` with an image extension,
/// caselessly, best first, each stat-ed through the checked open.
fn images_in(root: &MusicRoot, dir: &Path, stems: &[&str]) -> Vec<Candidate> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<((usize, usize), PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_lowercase();
            let (stem, ext) = name.rsplit_once('.')?;
            let s = stems.iter().position(|x| *x == stem)?;
            let x = IMAGE_EXTENSIONS.iter().position(|x| *x == ext)?;
            Some(((s, x), e.path()))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .filter_map(|(_, path)| match root.open(&path) {
            Ok((_, meta)) => Some(Candidate {
                identity: format!("file:{}", identity(&path, &meta)),
                source: Source::File(path),
                root: root.clone(),
            }),
            Err(e) => {
                if !e.is_missing() {
                    tracing::warn!("cover art: skipping {e}");
                }
                None
            }
        })
        .collect()
}

fn identity(path: &Path, meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!(
        "{}:{}:{}:{}.{}",
        path.display(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec()
    )
}

/// The MIME type of a cover image file by its extension (for a file
/// sent without being decoded).
pub fn mime_by_name(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "webp" => "image/webp",
        _ => "image/jpeg",
    }
}

/// The bytes of a candidate, opened through its music folder; `None`
/// when it has none (a song without a picture) or cannot be read (logged
/// when that is news: a refused link, a picture over [`COVER_CAP`]).
pub fn load(c: &Candidate) -> Option<Vec<u8>> {
    let root = &c.root;
    match &c.source {
        Source::Embedded(path) => {
            let (file, _) = root.open(path).ok()?;
            match embedded_cover(&file, path) {
                Ok(found) => found.map(|cover| cover.data),
                Err(e @ TagError::CoverTooLarge { .. }) => {
                    tracing::warn!(path = %path.display(), "cover art: skipping the picture in {}: {e}", path.display());
                    None
                }
                Err(_) => None,
            }
        }
        Source::File(path) => match root.read_capped(path, COVER_CAP) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                if !e.is_missing() {
                    tracing::warn!("cover art: skipping {e}");
                }
                None
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disc_folders_are_told_from_album_folders() {
        for yes in ["CD1", "cd 02", "Disc 2", "disk_3", "Disc1 - Live", "DISC-4"] {
            assert!(is_disc_folder(Path::new(yes)), "{yes}");
        }
        for no in ["Cdrom", "Discography", "Disco Hits", "cover", "1999", ""] {
            assert!(!is_disc_folder(Path::new(no)), "{no}");
        }
    }

    #[test]
    fn the_common_folder_is_the_deepest_shared_one() {
        let p = |s: &'static str| Path::new(s);
        assert_eq!(
            common_folder(&[p("/m/A/One"), p("/m/A/Two"), p("/m/A/Three/CD1")]),
            Some(PathBuf::from("/m/A"))
        );
        assert_eq!(
            common_folder(&[p("/m/A/One")]),
            Some(PathBuf::from("/m/A/One"))
        );
        assert_eq!(
            common_folder(&[p("/m/A/One"), p("/m/B/Two")]),
            Some(PathBuf::from("/m"))
        );
        assert_eq!(common_folder(&[]), None);
    }
}
