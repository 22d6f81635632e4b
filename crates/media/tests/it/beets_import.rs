//! A real beets library, built by `beet import -A -C` over the test
//! corpus, imported into Spindle. Needs beets (`SPINDLE_BEET`, else
//! `.venv/bin/beet` of the workspace) and the corpus tools; run by
//! `scripts/ci.d/30-media.sh`.

use std::path::{Path, PathBuf};
use std::process::Command;

use spindle_media::{import_beets, ImportOptions, BEETS_SOURCE};
use spindle_query::SourcePref;
use spindle_store::{Db, ValueRef};

use crate::corpus;

/// The beet executable, if there is one.
pub fn beet() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SPINDLE_BEET") {
        return Some(PathBuf::from(p));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/beet");
    venv.exists().then_some(venv)
}

/// Runs `beet import -A -C` over `music` into a library at `lib`.
pub fn beet_import(beet: &Path, home: &Path, lib: &Path, music: &Path) {
    let out = Command::new(beet)
        .env("HOME", home)
        .env("BEETSDIR", home)
        .arg("-l")
        .arg(lib)
        // A library directory apart from the music: beets 2 stores paths
        // under its directory relative to it, which a url cannot name.
        .arg("-d")
        .arg(home.join("beets-library-dir"))
        .args(["import", "-A", "-C", "-q"])
        .arg(music)
        .output()
        .expect("running beet");
    assert!(
        out.status.success(),
        "beet failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "needs beets and the corpus tools (scripts/ci.d/30-media.sh)"]
fn a_real_beets_library_imports_once_with_its_tags_and_flexible_attributes() {
    let Some(beet) = beet() else {
        assert!(
            std::env::var_os("SPINDLE_REQUIRE_MEDIA_TOOLS").is_none(),
            "no beet: set SPINDLE_BEET"
        );
        eprintln!("skipping: no beet (set SPINDLE_BEET or make .venv)");
        return;
    };
    let Some((tmp, dir, exp)) = corpus::corpus() else {
        return;
    };
    let lib = tmp.path().join("beets.db");
    beet_import(&beet, tmp.path(), &lib, &dir);
    // A flexible attribute, as a plugin (mpdstats, a rating) would set it.
    let c = rusqlite::Connection::open(&lib).unwrap();
    let item: i64 = c
        .query_row("SELECT id FROM items WHERE title = 'Duet'", [], |r| {
            r.get(0)
        })
        .unwrap();
    c.execute(
        "INSERT INTO item_attributes (entity_id, key, value) VALUES (?1, 'play_count', '42')",
        [item],
    )
    .unwrap();
    let items: i64 = c
        .query_row("SELECT count(*) FROM items", [], |r| r.get(0))
        .unwrap();
    drop(c);
    assert!(items >= 8, "beets read only {items} of the corpus files");

    let db = Db::open(tmp.path().join("db")).unwrap();
    let opts = ImportOptions::new("beets");
    let r = import_beets(&db, &lib, &opts, &mut |_| {}).unwrap();
    // One entry per beets item (beets itself skips some awkward files).
    assert_eq!(r.created, items as u64, "{r:?}");
    assert!(exp.len() >= items as usize);
    let again = import_beets(&db, &lib, &opts, &mut |_| {}).unwrap();
    assert_eq!(
        (again.created, again.updated),
        (0, 0),
        "importing twice adds nothing: {again:?}"
    );

    let l = db.read();
    let pref = SourcePref::parse(BEETS_SOURCE);
    let find = |title: &str| {
        l.ids()
            .find(|&id| l.get(id, "title", &pref).contains(&ValueRef::Str(title)))
            .unwrap_or_else(|| panic!("no entry titled {title}"))
    };
    let duet = find("Duet");
    let mut artists: Vec<String> = l
        .get(duet, "artist", &pref)
        .iter()
        .map(|v| v.to_string())
        .collect();
    artists.sort();
    // beets (mediafile) keeps only the first of several ARTIST comments
    // unless an ARTISTS field is there; the import brings what beets has.
    assert!(artists.first().is_some_and(|a| a == "Alice"), "{artists:?}");
    assert_eq!(l.get(duet, "play_count", &pref), [ValueRef::Int(42)]);
    assert_eq!(l.get(duet, "tracknr", &pref), [ValueRef::Int(1)]);
    let ms = match l.get(duet, "duration", &pref)[..] {
        [ValueRef::Int(ms)] => ms,
        ref other => panic!("duration {other:?}"),
    };
    assert!((900..=1200).contains(&ms));
    let url = l.get(duet, "url", &pref);
    assert!(
        matches!(url[..], [ValueRef::Str(u)] if u.starts_with("file:///") && u.ends_with("Mixed%20Case/Multi%20Artist.flac")),
        "{url:?}"
    );
    let uni = find("Ünïcødé Tïtle");
    assert_eq!(l.get(uni, "album", &pref), [ValueRef::Str("Vespertine")]);
}
