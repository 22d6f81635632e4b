//! `spindle tiers upload`: the library's tracks copied to the storage
//! tiers' cold devices until each has `mindevcount` copies. The library
//! names a track by its `url`; [`crate::hot::track_of_url`] maps it to
//! the tiers' [`TrackRef`], as everywhere else in the core and the server.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use spindle_query::SourcePref;
use spindle_store::Db;
use spindle_tiers::runtime::{TiersError, UploadError, UploadReport};
use spindle_tiers::{Tiers, TiersConfig, TrackRef};

/// Why an upload could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UploadRunError {
    #[error("--music {}: {source}", dir.display())]
    Music {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("opening the library in {}: {source}", dir.display())]
    Library {
        dir: PathBuf,
        source: spindle_store::OpenError,
    },
    #[error(transparent)]
    Tiers(#[from] TiersError),
    /// The async runtime did not start.
    #[error(transparent)]
    Runtime(std::io::Error),
}

/// Every library track under one of `roots` (canonical music folders),
/// with its file.
pub fn library_tracks(db: &Db, roots: &[PathBuf]) -> Vec<(TrackRef, PathBuf)> {
    let lib = db.read();
    let ids: Vec<u32> = lib.ids().collect();
    let rows = lib.fetch_rows(&ids, &["url"], &SourcePref::default());
    rows.iter()
        .filter_map(|r| {
            let t = crate::hot::track_of_url(r.first().and_then(Option::as_ref), roots)?;
            let path = roots.get(t.folder?)?.join(&t.key);
            Some((t, path))
        })
        .collect()
}

/// Uploads every track of the library in `data_dir` scanned from the
/// `music` folders to the devices of `cfg`; `failed` hears of each track
/// left with fewer than `mindevcount` copies.
pub fn upload_library(
    cfg: TiersConfig,
    music: &[PathBuf],
    data_dir: &Path,
    failed: &mut (dyn FnMut(&UploadError) + Send),
) -> Result<UploadReport, UploadRunError> {
    let roots = music
        .iter()
        .map(|m| {
            std::fs::canonicalize(m).map_err(|source| UploadRunError::Music {
                dir: m.clone(),
                source,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let db = Db::open(data_dir).map_err(|source| UploadRunError::Library {
        dir: data_dir.to_owned(),
        source,
    })?;
    let tracks = library_tracks(&db, &roots);
    drop(db);
    let policy = crate::hot::policy(&cfg);
    let tiers = Arc::new(Tiers::new(cfg, &roots, data_dir, policy)?);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(UploadRunError::Runtime)?;
    Ok(rt.block_on(tiers.upload_all(&tracks, failed)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_store::{Op, Value};

    #[test]
    fn library_tracks_are_those_under_a_music_folder() {
        let dir = tempfile::tempdir().unwrap();
        let music = dir.path().join("music");
        std::fs::create_dir_all(&music).unwrap();
        let root = std::fs::canonicalize(&music).unwrap();
        let db = Db::open(dir.path().join("lib")).unwrap();
        let mut ops = Vec::new();
        for (id, url) in [
            (1, format!("file://{}/a/b.flac", root.display())),
            (2, "file:///elsewhere/c.flac".to_owned()),
        ] {
            ops.push(Op::CreateEntry(id));
            ops.push(Op::AddProp {
                entry: id,
                key: "url".into(),
                source: "plugin/test".into(),
                value: Value::Str(url),
            });
        }
        db.commit(ops).unwrap();
        let tracks = library_tracks(&db, std::slice::from_ref(&root));
        assert_eq!(
            tracks,
            [(
                TrackRef {
                    key: "a/b.flac".into(),
                    folder: Some(0)
                },
                root.join("a/b.flac")
            )]
        );
    }
}
