//! Random libraries for the catalog's tests and its measurement.

use rand::rngs::StdRng;
use rand::Rng;
use spindle_query::Value;
use spindle_store::{Db, Op};

pub const ROOT: &str = "/music";
const ARTISTS: &[&str] = &["Ann", "The Bees", "Cy", "Various Artists", "dee", "Dee"];
const ALBUMS: &[&str] = &["One", "Two", "two", "Three", "Hits"];
const GENRES: &[&str] = &["Rock", "Jazz", "rock", "Pop"];

/// The properties of a random song at `path`.
pub fn song_ops(rng: &mut StdRng, id: u32, path: &str) -> Vec<Op> {
    let mut ops = Vec::new();
    let mut add = |key: &str, value: Value| {
        ops.push(Op::AddProp {
            entry: id,
            key: key.into(),
            source: "plugin/test".into(),
            value,
        });
    };
    add("url", Value::Str(format!("file://{ROOT}/{path}")));
    let pick = |rng: &mut StdRng, from: &[&str]| from[rng.gen_range(0..from.len())].to_owned();
    for _ in 0..rng.gen_range(0..3) {
        add("artist", Value::Str(pick(rng, ARTISTS)));
    }
    if rng.gen_bool(0.4) {
        add("album_artist", Value::Str(pick(rng, ARTISTS)));
    }
    if rng.gen_bool(0.9) {
        add("album", Value::Str(pick(rng, ALBUMS)));
    }
    for _ in 0..rng.gen_range(0..3) {
        add("genre", Value::Str(pick(rng, GENRES)));
    }
    for (key, p, max) in [
        ("tracknr", 0.8, 12),
        ("partofset", 0.3, 3),
        ("year", 0.5, 4),
        ("timesplayed", 0.5, 9),
        ("duration", 0.7, 400_000),
        ("compilation", 0.1, 1),
    ] {
        if rng.gen_bool(p) {
            add(key, Value::Int(rng.gen_range(0..=max)));
        }
    }
    if rng.gen_bool(0.8) {
        add("title", Value::Str(format!("t{}", rng.gen_range(0..5))));
    }
    if rng.gen_bool(0.2) {
        add("discsubtitle", Value::Str(pick(rng, ALBUMS)));
    }
    if rng.gen_bool(0.2) {
        add("albumartistsort", Value::Str(pick(rng, ARTISTS)));
    }
    ops
}

/// Replaces entry `id`'s properties with a random song's.
pub fn rewrite(db: &Db, rng: &mut StdRng, id: u32, path: &str) {
    let mut ops = if db.read().contains(id) {
        vec![Op::DeleteEntry(id), Op::CreateEntry(id)]
    } else {
        vec![Op::CreateEntry(id)]
    };
    ops.extend(song_ops(rng, id, path));
    db.commit(ops).unwrap();
}

/// The properties of song `id` of a library shaped like a real one:
/// albums of a dozen songs, artists of five albums, a few genres.
pub fn real_ops(rng: &mut StdRng, id: u32, path: &str) -> Vec<Op> {
    let album = id / 12;
    let artist = album / 5;
    let mut ops = vec![];
    let mut add = |key: &str, value: Value| {
        ops.push(Op::AddProp {
            entry: id,
            key: key.into(),
            source: "plugin/test".into(),
            value,
        });
    };
    add("url", Value::Str(format!("file://{ROOT}/{path}")));
    add("title", Value::Str(format!("Song {id}")));
    add("artist", Value::Str(format!("The Artist {artist}")));
    if rng.gen_bool(0.1) {
        add(
            "artist",
            Value::Str(format!("Guest {}", rng.gen_range(0..500))),
        );
    }
    add("album", Value::Str(format!("Album {album}")));
    add(
        "genre",
        Value::Str(GENRES[(artist % 4) as usize].to_owned()),
    );
    add("tracknr", Value::Int(i64::from(id % 12 + 1)));
    add("year", Value::Int(1960 + i64::from(album % 60)));
    add("duration", Value::Int(rng.gen_range(60_000..400_000)));
    add("timesplayed", Value::Int(rng.gen_range(0..50)));
    add("bitrate", Value::Int(320_000));
    add("mime", Value::Str("audio/flac".into()));
    ops
}

/// A library of `n` songs shaped like a real one ([`real_ops`], entry
/// ids 1 to `n`), committed a thousand at a time.
pub fn library(db: &Db, rng: &mut StdRng, n: u32) {
    let mut ops = Vec::new();
    for id in 1..=n {
        ops.push(Op::CreateEntry(id));
        ops.extend(real_ops(rng, id, &format!("g/{}/{id}.flac", id / 12)));
        if id % 1000 == 0 || id == n {
            db.commit(std::mem::take(&mut ops)).unwrap();
        }
    }
}
