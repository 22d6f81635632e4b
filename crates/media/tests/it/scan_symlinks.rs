//! Symlinks in a music folder: those that stay inside are scanned, those
//! that lead out are neither listed nor kept from an earlier scan.

use std::os::unix::fs::symlink;
use std::path::Path;

use spindle_media::bench::generate_mp3s;
use spindle_media::scan::{url_path, Quiet};
use spindle_media::{scan, ScanOptions, ScanReport};
use spindle_query::SourcePref;
use spindle_store::{Db, ValueRef};

fn scan_dir(db: &Db, dir: &Path) -> ScanReport {
    scan(
        db,
        &[dir.to_path_buf()],
        &ScanOptions::default(),
        &mut Quiet,
    )
    .unwrap()
}

/// The urls in the library, relative to `dir`.
fn listed(db: &Db, dir: &Path) -> Vec<String> {
    let dir = dir.canonicalize().unwrap();
    let lib = db.read();
    let pref = SourcePref::default();
    let mut v: Vec<String> = lib
        .ids()
        .flat_map(|id| lib.get(id, "url", &pref))
        .filter_map(|u| match u {
            ValueRef::Str(s) => url_path(s),
            ValueRef::Int(_) => None,
        })
        .filter_map(|p| Some(p.strip_prefix(&dir).ok()?.to_string_lossy().into_owned()))
        .collect();
    v.sort();
    v
}

const TRACK: &str = "Artist 000/Album 000/01 Track 0.mp3";

#[test]
fn a_song_linked_from_outside_the_folder_is_not_listed_and_is_dropped_on_rescan() {
    let tmp = tempfile::tempdir().unwrap();
    let (music, elsewhere) = (tmp.path().join("music"), tmp.path().join("elsewhere"));
    generate_mp3s(&music, 1).unwrap();
    generate_mp3s(&elsewhere, 1).unwrap();
    symlink(TRACK, music.join("inside.mp3")).unwrap();
    symlink(elsewhere.join(TRACK), music.join("outside.mp3")).unwrap();
    // Points inside for the first scan, outside for the second.
    symlink(music.join(TRACK), music.join("swapped.mp3")).unwrap();
    let db = Db::open(tmp.path().join("db")).unwrap();

    let first = scan_dir(&db, &music);
    assert_eq!(
        listed(&db, &music),
        [TRACK, "inside.mp3", "swapped.mp3"],
        "{:?}",
        first.failed
    );
    let refused: Vec<_> = first.failed.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(refused, [music.canonicalize().unwrap().join("outside.mp3")]);
    assert!(first.failed[0].1.contains("outside the music folder"));

    std::fs::remove_file(music.join("swapped.mp3")).unwrap();
    symlink(elsewhere.join(TRACK), music.join("swapped.mp3")).unwrap();
    let second = scan_dir(&db, &music);
    assert_eq!(listed(&db, &music), [TRACK, "inside.mp3"]);
    assert_eq!(second.removed, 1);
    assert_eq!(second.failed.len(), 2, "{:?}", second.failed);
}
