//! Scanning real files of every format, and rescanning after edits,
//! moves and deletions. Needs Debian's encoders: `#[ignore]`d in the plain
//! unit stage, run by `scripts/ci.d/30-media.sh` with `--include-ignored`.

use std::path::Path;

use spindle_media::scan::{file_url, Quiet, STATUS_MISSING};
use spindle_media::{scan, ScanOptions, ScanReport};
use spindle_query::{SourcePref, Value};
use spindle_store::{Db, Op, ValueRef};

use crate::corpus;

fn scan_dir(db: &Db, dir: &Path) -> ScanReport {
    let opts = ScanOptions {
        batch_size: 4,
        now: Some(1_700_000_000),
    };
    scan(db, &[dir.to_path_buf()], &opts, &mut Quiet).unwrap()
}

fn id_of(db: &Db, path: &Path) -> u32 {
    let url = file_url(&std::fs::canonicalize(path).unwrap());
    let lib = db.read();
    let pref = SourcePref::default();
    let found = lib
        .ids()
        .find(|&id| lib.get(id, "url", &pref).contains(&ValueRef::Str(&url)));
    found.unwrap_or_else(|| panic!("no entry for {url}"))
}

fn strs(db: &Db, id: u32, key: &str) -> Vec<String> {
    let lib = db.read();
    lib.get(id, key, &SourcePref::default())
        .iter()
        .map(|v| v.to_string())
        .collect()
}

fn int(db: &Db, id: u32, key: &str) -> Option<i64> {
    let lib = db.read();
    lib.get(id, key, &SourcePref::default())
        .iter()
        .find_map(|v| match v {
            ValueRef::Int(i) => Some(*i),
            ValueRef::Str(_) => None,
        })
}

fn source_of(db: &Db, id: u32, key: &str) -> Option<String> {
    let lib = db.read();
    lib.properties(id)
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, _, s)| s.to_string())
}

#[test]
#[ignore = "needs sox, lame, flac, vorbis-tools, opus-tools, ffmpeg (scripts/ci.d/30-media.sh)"]
fn every_format_scans_with_its_tags_and_broken_files_are_reported_not_fatal() {
    let Some((tmp, dir, exp)) = corpus::corpus() else {
        return;
    };
    let db = Db::open(tmp.path().join("db")).unwrap();
    let r = scan_dir(&db, &dir);
    assert_eq!(r.files as usize, exp.len() + corpus::BROKEN.len(), "{r:?}");
    assert_eq!(r.added as usize, exp.len(), "{r:?}");
    let failed: Vec<String> = r
        .failed
        .iter()
        .map(|(p, _)| {
            p.strip_prefix(std::fs::canonicalize(&dir).unwrap())
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    let mut broken: Vec<String> = corpus::BROKEN.iter().map(|s| s.to_string()).collect();
    broken.sort();
    let mut failed_sorted = failed.clone();
    failed_sorted.sort();
    assert_eq!(failed_sorted, broken, "reasons: {:?}", r.failed);
    assert!(r.failed.iter().all(|(_, why)| !why.is_empty()));

    for e in &exp {
        let id = id_of(&db, &dir.join(e.rel));
        let ctx = e.rel;
        assert_eq!(strs(&db, id, "mime"), vec![e.mime.to_owned()], "{ctx}");
        assert_eq!(
            strs(&db, id, "title"),
            e.title.map(str::to_owned).into_iter().collect::<Vec<_>>(),
            "{ctx}"
        );
        let mut artists = strs(&db, id, "artist");
        artists.sort();
        let mut want: Vec<String> = e.artists.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(artists, want, "{ctx}");
        let mut genres = strs(&db, id, "genre");
        genres.sort();
        let mut want: Vec<String> = e.genres.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(genres, want, "{ctx}");
        assert_eq!(
            strs(&db, id, "album"),
            e.album.map(str::to_owned).into_iter().collect::<Vec<_>>(),
            "{ctx}"
        );
        assert_eq!(int(&db, id, "tracknr"), e.tracknr, "{ctx}");
        if e.title.is_some() {
            assert_eq!(
                source_of(&db, id, "title").as_deref(),
                Some(e.source),
                "{ctx}"
            );
        }
        let ms = int(&db, id, "duration").unwrap_or_else(|| panic!("{ctx}: no duration"));
        assert!((900..=1200).contains(&ms), "{ctx}: duration {ms}");
        assert!(
            int(&db, id, "samplerate").is_some_and(|s| s >= 8000),
            "{ctx}"
        );
        assert!(
            int(&db, id, "channels").is_some_and(|c| c == 1 || c == 2),
            "{ctx}"
        );
        assert!(int(&db, id, "bitrate").is_some_and(|b| b > 1000), "{ctx}");
        let size = std::fs::metadata(dir.join(e.rel)).unwrap().len() as i64;
        assert_eq!(int(&db, id, "size"), Some(size), "{ctx}");
        assert!(int(&db, id, "lmod").is_some(), "{ctx}");
        assert_eq!(int(&db, id, "added"), Some(1_700_000_000), "{ctx}");
        assert!(strs(&db, id, "url")[0].starts_with("file:///"), "{ctx}");
    }
    // The details of the richest file.
    let v24 = id_of(&db, &dir.join(exp[0].rel));
    assert_eq!(strs(&db, v24, "album_artist"), ["Björk"]);
    assert_eq!(int(&db, v24, "totaltracks"), Some(10));
    assert_eq!(int(&db, v24, "partofset"), Some(1));
    assert_eq!(strs(&db, v24, "date"), ["2001-08-27"]);
    assert_eq!(int(&db, v24, "year"), Some(2001));
    assert_eq!(strs(&db, v24, "composer"), ["Björk"]);
    assert_eq!(strs(&db, v24, "comment"), ["multi-artist ID3v2.4"]);
    assert_eq!(
        strs(&db, v24, "musicbrainz_trackid"),
        ["0f5b5a2e-0000-4000-8000-000000000001"]
    );
    assert!(strs(&db, v24, "url")[0]
        .contains("%C3%9Cn%C3%AFc%C3%B8d%C3%A9%20%E2%80%93%20%C3%84rtist.mp3"));
    let flac = id_of(&db, &dir.join(exp[3].rel));
    assert_eq!(strs(&db, flac, "originaldate"), ["1960"]);
    assert_eq!(
        int(&db, id_of(&db, &dir.join(exp[2].rel)), "year"),
        Some(1998)
    );

    // A no-change rescan opens nothing and changes nothing.
    let before = db.stats();
    let again = scan_dir(&db, &dir);
    assert_eq!(
        (again.added, again.updated, again.unchanged),
        (0, 0, exp.len() as u64),
        "{again:?}"
    );
    assert_eq!(again.failed.len(), corpus::BROKEN.len());
    assert_eq!(db.stats().properties, before.properties);
}

#[test]
#[ignore = "needs the corpus tools (scripts/ci.d/30-media.sh)"]
fn user_edits_survive_rescans_and_follow_moved_files_and_deleted_files_keep_user_data() {
    let Some((tmp, dir, exp)) = corpus::corpus() else {
        return;
    };
    let db = Db::open(tmp.path().join("db")).unwrap();
    scan_dir(&db, &dir);
    let ogg = dir.join(exp[4].rel);
    let id = id_of(&db, &ogg);
    db.commit(vec![
        Op::AddProp {
            entry: id,
            key: "title".into(),
            source: "client/me".into(),
            value: Value::Str("My Title".into()),
        },
        Op::AddProp {
            entry: id,
            key: "rating".into(),
            source: "client/me".into(),
            value: Value::Int(5),
        },
    ])
    .unwrap();

    // Retag the file: the rescan reads it again, the tag value changes
    // underneath, the user's title still wins.
    let opts = lofty::config::WriteOptions::default();
    let mut tag = lofty::tag::Tag::new(lofty::tag::TagType::VorbisComments);
    use lofty::prelude::{Accessor, TagExt};
    tag.set_title("Retagged".into());
    tag.save_to_path(&ogg, opts).unwrap();
    let f = std::fs::File::options().write(true).open(&ogg).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    let r = scan_dir(&db, &dir);
    assert_eq!((r.updated, r.added), (1, 0), "{r:?}");
    assert_eq!(strs(&db, id, "title"), ["My Title"]);
    let lib = db.read();
    let tag_titles: Vec<String> = lib
        .get(id, "title", &SourcePref::parse("plugin/*"))
        .iter()
        .map(|v| v.to_string())
        .collect();
    drop(lib);
    assert_eq!(tag_titles, ["Retagged"]);
    assert!(
        strs(&db, id, "artist").is_empty(),
        "old tag values are replaced, not kept"
    );

    // Move it: same entry, rating and all.
    let moved = dir.join("Moved Here/renamed.ogg");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&ogg, &moved).unwrap();
    let r = scan_dir(&db, &dir);
    assert_eq!((r.moved, r.added, r.removed), (1, 0, 0), "{r:?}");
    assert_eq!(id_of(&db, &moved), id);
    assert_eq!(int(&db, id, "rating"), Some(5));

    // Delete it: kept, marked missing, with its rating.
    std::fs::remove_file(&moved).unwrap();
    // Delete a file nobody touched: its entry goes.
    let wav = dir.join(exp[7].rel);
    let wav_id = id_of(&db, &wav);
    std::fs::remove_file(&wav).unwrap();
    let r = scan_dir(&db, &dir);
    assert_eq!((r.marked_missing, r.removed), (1, 1), "{r:?}");
    assert!(!db.read().contains(wav_id));
    assert_eq!(int(&db, id, "status"), Some(STATUS_MISSING));
    assert_eq!(int(&db, id, "rating"), Some(5));
}
