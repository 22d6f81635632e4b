//! A quick engine profile: generates N entries of ~50 properties, then
//! times the seven queries of `spindle bench library` (parse + evaluate +
//! fetch 5 fields).
//! `cargo run --release -p spindle-store --example perf -- 100000`

use std::error::Error;
use std::time::Instant;

use spindle_query::{parse, SourcePref, Value};
use spindle_store::{Db, Op};

fn main() -> Result<(), Box<dyn Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let dir = std::env::temp_dir().join(format!("spindle-perf-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Db::open(&dir)?;
    let t = Instant::now();
    let mut ops = Vec::new();
    let mut x: u64 = 42;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for i in 0..n {
        let id = db.reserve_id();
        ops.push(Op::CreateEntry(id));
        let artist = match rnd(100) {
            0 => "Metallica".to_owned(),
            1 => "Weezer".to_owned(),
            2 => format!("Foofighters {}", rnd(10)),
            _ => format!("Artist {}", (rnd(1000) * rnd(1000)) / 1000),
        };
        let mut add = |k: &str, v: Value, s: &str| {
            ops.push(Op::AddProp {
                entry: id,
                key: k.into(),
                source: s.into(),
                value: v,
            })
        };
        add("artist", artist.into(), "plugin/id3v2");
        add(
            "album",
            format!("Album {}", rnd(n as u64 / 10)).into(),
            "plugin/id3v2",
        );
        let title = match rnd(50) {
            0 => "One".to_owned(),
            1 => "The One".to_owned(),
            2 => "Someone".to_owned(),
            _ => format!("Title {i} of {}", rnd(1000)),
        };
        add("title", title.into(), "plugin/id3v2");
        add(
            "tracknr",
            Value::Int(rnd(25) as i64 + 1 + if rnd(30) == 0 { 10 } else { 0 }),
            "plugin/id3v2",
        );
        add("duration", Value::Int(rnd(400_000) as i64), "plugin/id3v2");
        if rnd(3) == 0 {
            add("comment", format!("comment {i}").into(), "plugin/id3v2");
        }
        add(
            "url",
            format!("file:///music/{i}.mp3").into(),
            "plugin/id3v2",
        );
        for k in 0..43 {
            add(
                &format!("key{k}"),
                Value::Int(rnd(1000) as i64),
                "plugin/id3v2",
            );
        }
        if i % 5000 == 4999 {
            db.commit(std::mem::take(&mut ops))?;
        }
    }
    db.commit(ops)?;
    for k in ["artist", "album", "title", "tracknr", "comment"] {
        db.commit(vec![Op::CreateIndex(k.into())])?;
    }
    eprintln!("load {:?}", t.elapsed());
    db.compact()?;
    drop(db);
    let t = Instant::now();
    let db = Db::open(&dir)?;
    let r = db.open_report();
    eprintln!(
        "reopen {:?} (read {:?}, indexes {:?}), data file {} bytes",
        t.elapsed(),
        r.read_time,
        r.index_time,
        db.stats().data_file_bytes
    );
    let lib = db.read();
    let pref = SourcePref::default();
    let fields = ["artist", "album", "title", "tracknr", "duration"];
    for q in [
        "one",
        "*",
        "artist:metallica",
        "tracknr>20",
        "tracknr>30",
        "+comment",
        "tracknr:4 OR artist~foo AND NOT artist:weezer",
    ] {
        let mut times = Vec::new();
        let mut evals = Vec::new();
        let mut count = 0;
        for _ in 0..7 {
            let t = Instant::now();
            let c = parse(q)?.coll;
            let ids = lib.query_ids(&c, &pref)?;
            evals.push(t.elapsed().as_micros());
            let rows = lib.fetch_rows(&ids.ids, &fields, &pref);
            count = rows.len();
            times.push(t.elapsed().as_micros());
        }
        times.sort();
        evals.sort();
        eprintln!(
            "{q:50} {count:7} rows  min {:8} µs (eval {:8} µs)",
            times[0], evals[0]
        );
    }
    drop(lib);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
