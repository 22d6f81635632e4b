//! A catalog of a few songs for tests, built by [`Catalog::build`] from a
//! real library (the `testkit` feature, for other crates' tests).
#![allow(
    clippy::unwrap_used,
    reason = "test fixtures: a failure is the test's failure"
)]
use std::path::PathBuf;

use spindle_query::Value;
use spindle_store::{Db, Op};

use crate::catalog::Catalog;

/// The music folder the songs lie in (nothing is read from it).
pub const ROOT: &str = "/music";

/// (path below [`ROOT`], artist, album, title, genre, plays); an
/// empty genre is none.
pub type Row<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str, i64);

pub fn catalog(rows: &[Row<'_>]) -> Catalog {
    let (_dir, db) = library(rows);
    let lib = db.read();
    Catalog::build(&lib, &[PathBuf::from(ROOT)])
}

/// The library of `rows` (entry ids 1, 2, …), in a folder that lasts
/// as long as the returned guard.
pub fn library(rows: &[Row<'_>]) -> (tempfile::TempDir, Db) {
    let entries = rows.iter().enumerate().map(|(n, row)| {
        let (path, artist, album, title, genre, plays) = *row;
        let id = n as i64 + 1;
        let mut props = vec![
            ("url", "server", Value::Str(format!("file://{ROOT}/{path}"))),
            ("added", "server", Value::Int(1000 + id)),
            ("timesplayed", "server", Value::Int(plays)),
            ("artist", "plugin/id3v2", Value::Str(artist.into())),
            ("album", "plugin/id3v2", Value::Str(album.into())),
            ("title", "plugin/id3v2", Value::Str(title.into())),
            ("tracknr", "plugin/id3v2", Value::Int(id)),
        ];
        if !genre.is_empty() {
            props.push(("genre", "plugin/id3v2", Value::Str(genre.into())));
        }
        props
    });
    library_of(entries)
}

/// A library of entries 1, 2, … with their `(key, source, value)`
/// properties, in a folder that lasts as long as the returned guard.
pub fn library_of<'k>(
    entries: impl IntoIterator<Item = Vec<(&'k str, &'k str, Value)>>,
) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let mut ops = Vec::new();
    for (n, props) in entries.into_iter().enumerate() {
        let entry = n as u32 + 1;
        ops.push(Op::CreateEntry(entry));
        ops.extend(props.into_iter().map(|(key, source, value)| Op::AddProp {
            entry,
            key: key.into(),
            source: source.into(),
            value,
        }));
    }
    db.commit(ops).unwrap();
    (dir, db)
}

/// A core over the demo music (scanned) with a manual clock and the
/// users `ann` and `bob` (password [`DEMO_PASSWORD`]).
pub struct Demo {
    pub app: crate::App,
    pub clock: std::sync::Arc<crate::clock::ManualClock>,
    /// The demo songs' ids, in scan order.
    pub songs: Vec<String>,
    _data: tempfile::TempDir,
    _music: tempfile::TempDir,
}

/// The [`Demo`] users' password.
pub const DEMO_PASSWORD: &str = "pw";

impl Demo {
    pub fn new() -> Demo {
        use std::sync::Arc;
        let data = tempfile::tempdir().unwrap();
        let music = tempfile::tempdir().unwrap();
        spindle_media::demo::generate_demo(music.path()).unwrap();
        let db = Arc::new(Db::open(data.path().join("lib")).unwrap());
        spindle_media::scan(
            &db,
            &[music.path().to_owned()],
            &spindle_media::ScanOptions::default(),
            &mut spindle_media::scan::Quiet,
        )
        .unwrap();
        let accounts = crate::accounts::Accounts::open(&data.path().join("accounts")).unwrap();
        accounts.add_user_cheaply("ann", DEMO_PASSWORD);
        accounts.add_user_cheaply("bob", DEMO_PASSWORD);
        let (listens, _) = spindle_listens::Listens::open(&data.path().join("listens")).unwrap();
        let clock = Arc::new(crate::clock::ManualClock::new(1_750_000_000));
        let app = crate::App::new(
            db,
            Arc::new(accounts),
            Arc::new(listens),
            crate::CoreConfig::default(),
            clock.clone(),
        )
        .with_music(crate::music::Music::new(&[music.path().to_owned()], data.path()).unwrap())
        .started();
        let cat = app.music.catalog(&app.db);
        let songs = cat.songs.iter().map(|s| s.id.to_string()).collect();
        Demo {
            app,
            clock,
            songs,
            _data: data,
            _music: music,
        }
    }
}

impl Default for Demo {
    fn default() -> Self {
        Demo::new()
    }
}
