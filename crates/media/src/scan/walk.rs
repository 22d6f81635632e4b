//! Walking music folders: every file with an audio extension, with its
//! size and modification time, stat'ed in parallel.
//!
//! Symlinks: a symlinked file is listed when, once resolved, it is a
//! regular file inside the music folder it was found in ([`MusicRoot`]);
//! a link that leads out of the folder is not listed and is reported once
//! per walk, with where it leads. Symlinks to directories are not
//! followed at all, so a walk can neither leave the folder through one nor
//! loop, and an album linked into a second place is not listed twice.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::beneath::MusicRoot;
use crate::tags::has_audio_extension;

/// A file found by the walk.
#[derive(Debug, Clone)]
pub struct Found {
    pub path: PathBuf,
    pub size: i64,
    /// Modification time, seconds since the epoch.
    pub lmod: i64,
    /// Index of the music folder (in the walk's `roots`) it was found in.
    pub folder: usize,
}

/// What the walk saw: audio files, and what it could not look at.
#[derive(Debug, Default)]
pub struct Walk {
    pub files: Vec<Found>,
    /// Directories or files that could not be read, with the reason.
    pub errors: Vec<(PathBuf, String)>,
}

/// Walks `roots`, following no symlinks to directories and only those
/// symlinked files that stay inside their folder.
pub fn walk(roots: &[MusicRoot]) -> Walk {
    let mut paths = Vec::new();
    let mut errors = Vec::new();
    for (folder, root) in roots.iter().enumerate() {
        for entry in walkdir::WalkDir::new(root.path()).follow_links(false) {
            match entry {
                Ok(e) => {
                    let ft = e.file_type();
                    if !has_audio_extension(e.path()) {
                        continue;
                    }
                    if ft.is_file() {
                        paths.push((e.into_path(), folder));
                    } else if ft.is_symlink() {
                        match root.check_inside(e.path()) {
                            Ok(_) => paths.push((e.into_path(), folder)),
                            Err(err) => errors.push((e.into_path(), format!("{err}; not listed"))),
                        }
                    }
                }
                Err(err) => {
                    let path = err
                        .path()
                        .map(Path::to_path_buf)
                        .unwrap_or_else(|| root.path().to_path_buf());
                    errors.push((path, err.to_string()));
                }
            }
        }
    }
    paths.sort();
    paths.dedup();
    let stats: Vec<Result<Found, (PathBuf, String)>> = paths
        .into_par_iter()
        .map(|(path, folder)| match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => Ok(Found {
                size: i64::try_from(m.len()).unwrap_or(i64::MAX),
                lmod: m.mtime(),
                path,
                folder,
            }),
            Ok(_) => Err((path, "not a regular file".to_owned())),
            Err(e) => Err((path, e.to_string())),
        })
        .collect();
    let mut files = Vec::with_capacity(stats.len());
    for s in stats {
        match s {
            Ok(f) => files.push(f),
            Err(e) => errors.push(e),
        }
    }
    Walk { files, errors }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn symlinks_out_of_the_folder_are_reported_not_listed_and_links_inside_are_listed() {
        let d = tempfile::tempdir().unwrap();
        let music = d.path().join("music");
        std::fs::create_dir_all(music.join("a")).unwrap();
        std::fs::create_dir_all(d.path().join("elsewhere")).unwrap();
        std::fs::write(music.join("a/one.mp3"), b"x").unwrap();
        std::fs::write(d.path().join("elsewhere/two.mp3"), b"y").unwrap();
        symlink("a/one.mp3", music.join("inside.mp3")).unwrap();
        symlink(d.path().join("elsewhere/two.mp3"), music.join("out.mp3")).unwrap();
        symlink("/etc/passwd", music.join("passwd.flac")).unwrap();
        symlink(d.path().join("elsewhere"), music.join("outdir")).unwrap();
        symlink("..", music.join("a/loop")).unwrap();
        let root = MusicRoot::new(&music).unwrap();
        let w = walk(std::slice::from_ref(&root));
        let listed: Vec<_> = w
            .files
            .iter()
            .map(|f| f.path.strip_prefix(root.path()).unwrap().to_owned())
            .collect();
        assert_eq!(
            listed,
            [PathBuf::from("a/one.mp3"), PathBuf::from("inside.mp3")]
        );
        let mut reported: Vec<_> = w
            .errors
            .iter()
            .map(|(p, why)| (p.file_name().unwrap().to_owned(), why.contains("outside")))
            .collect();
        reported.sort();
        assert_eq!(
            reported,
            [("out.mp3".into(), true), ("passwd.flac".into(), true)]
        );
    }
}
