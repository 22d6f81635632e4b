//! How long catalog work takes and holds the library's lock, at 100,000
//! songs: `cargo test -p spindle-app --lib catalog::measure -- --ignored
//! --nocapture` (a debug build unless `--release` is given; compare the
//! figures with each other, not with a release build's).

use std::path::PathBuf;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spindle_store::{Db, Op};

use super::gen::{library, real_ops, ROOT};
use super::saved::{self, SavedOf};
use super::{read_in_batches, Catalog, CatalogOptions};

const SONGS: u32 = 100_000;
const TOUCHED: u32 = 1_000;

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

#[test]
#[ignore = "a measurement of minutes in a debug build"]
fn measure_a_full_build_against_an_update_of_a_thousand_songs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let mut rng = StdRng::seed_from_u64(11);
    let t = Instant::now();
    library(&db, &mut rng, SONGS);
    eprintln!("library of {SONGS} songs made in {:.1} s", secs(t));
    let roots = [PathBuf::from(ROOT)];
    let opts = CatalogOptions::default();

    // The whole build under one hold of the lock, as before.
    let t = Instant::now();
    let whole = {
        let lib = db.read();
        Catalog::build_with(&lib, &roots, &opts)
    };
    eprintln!(
        "full build under one lock: {:.2} s, the lock held all of it ({} songs, {} albums, {} artists)",
        secs(t),
        whole.songs.len(),
        whole.albums.len(),
        whole.artists.len()
    );

    // The same in batches.
    let t = Instant::now();
    let (ids, since) = {
        let lib = db.read();
        (lib.ids().collect(), lib.change_stamp())
    };
    let read = read_in_batches(&db, ids, since, &roots, &opts.ignored_articles).unwrap();
    let (holds, longest, mean) = (read.holds, read.longest_hold, read.held / read.holds as u32);
    let songs = read.songs.into_iter().filter_map(|(_, s)| s).collect();
    let batched = Catalog::from_songs(songs, opts.ignored_articles.clone());
    eprintln!(
        "full build in batches: {:.2} s, the lock held {holds} times, at most {:.1} ms, {:.1} ms on average",
        secs(t),
        longest.as_secs_f64() * 1000.0,
        mean.as_secs_f64() * 1000.0
    );
    assert!(batched == whole);

    // A rescan touching a thousand files: new tags on some, a play on
    // the others.
    let since = db.read().change_stamp();
    let mut ops = Vec::new();
    for _ in 0..TOUCHED {
        let id = rng.gen_range(1..=SONGS);
        ops.push(Op::DeleteEntry(id));
        ops.push(Op::CreateEntry(id));
        let album = if rng.gen_bool(0.5) {
            id / 12
        } else {
            id / 12 + 1
        };
        ops.extend(real_ops(&mut rng, id, &format!("g/{album}/{id}.flac")));
    }
    db.commit(ops).unwrap();
    let t = Instant::now();
    let changed = db.read().changed_since(since).unwrap();
    let read = read_in_batches(&db, changed, since, &roots, &opts.ignored_articles).unwrap();
    let (holds, longest, n) = (read.holds, read.longest_hold, read.songs.len());
    let read_time = secs(t);
    let u = Instant::now();
    let updated = batched.updated(read.songs);
    eprintln!(
        "update of {n} changed songs: {:.2} s (reading {read_time:.3} s, the lock held {holds} times, at most {:.1} ms; the update {:.2} s)",
        secs(t),
        longest.as_secs_f64() * 1000.0,
        secs(u)
    );
    let t = Instant::now();
    let full = Catalog::build_with(&db.read(), &roots, &opts);
    eprintln!("the full build it equals: {:.2} s", secs(t));
    assert!(updated == full);

    // Saved and loaded.
    let of = SavedOf::new(&db.position().unwrap(), &roots, &opts.ignored_articles);
    let t = Instant::now();
    let bytes = saved::encode(&updated, &of);
    eprintln!("saved: {} bytes in {:.2} s", bytes.len(), secs(t));
    let t = Instant::now();
    let songs = saved::decode(&bytes, &of).unwrap();
    let loaded = Catalog::from_songs(songs, opts.ignored_articles.clone());
    eprintln!("loaded: {:.2} s", secs(t));
    assert!(loaded == updated);
}
