//! Walking music folders: every file with an audio extension, with its
//! size and modification time, stat'ed in parallel.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::tags::has_audio_extension;

/// A file found by the walk.
#[derive(Debug, Clone)]
pub struct Found {
    pub path: PathBuf,
    pub size: i64,
    /// Modification time, seconds since the epoch.
    pub lmod: i64,
}

/// What the walk saw: audio files, and what it could not look at.
#[derive(Debug, Default)]
pub struct Walk {
    pub files: Vec<Found>,
    /// Directories or files that could not be read, with the reason.
    pub errors: Vec<(PathBuf, String)>,
}

/// Walks `roots` (absolute paths), following no symlinks to directories
/// but following symlinked files.
pub fn walk(roots: &[PathBuf]) -> Walk {
    let mut paths = Vec::new();
    let mut errors = Vec::new();
    for root in roots {
        for entry in walkdir::WalkDir::new(root).follow_links(false) {
            match entry {
                Ok(e) => {
                    let ft = e.file_type();
                    if (ft.is_file() || ft.is_symlink()) && has_audio_extension(e.path()) {
                        paths.push(e.into_path());
                    }
                }
                Err(err) => {
                    let path = err
                        .path()
                        .map(Path::to_path_buf)
                        .unwrap_or_else(|| root.clone());
                    errors.push((path, err.to_string()));
                }
            }
        }
    }
    paths.sort();
    paths.dedup();
    let stats: Vec<Result<Found, (PathBuf, String)>> = paths
        .into_par_iter()
        .map(|path| match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => Ok(Found {
                size: i64::try_from(m.len()).unwrap_or(i64::MAX),
                lmod: m.mtime(),
                path,
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
