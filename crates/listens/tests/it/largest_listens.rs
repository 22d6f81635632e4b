//! The largest listens the limits accept survive a crash: written, the
//! log's tail then torn (bytes cut off the end, or garbage appended, as a
//! crash mid-write leaves it), reopened — every record written whole is
//! back, the tail is cut. Damage in the middle of the log, with good
//! records after it, is refused with the offset and leaves the file as
//! it was. Seeded: `SPINDLE_SEED` replays a run; the seed is printed.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use spindle_listens::fuzzing::encode_log;
use spindle_listens::limits::{
    MAX_ALBUM, MAX_ALBUM_ARTIST, MAX_ARTIST, MAX_CLIENT, MAX_CREDITED_ARTISTS, MAX_CREDITS_BYTES,
    MAX_MBID, MAX_TITLE, MAX_USER,
};
use spindle_listens::{AppendError, Event, Listen, Listens, OpenError, RecentQuery, LOG_FILE};

fn seed() -> u64 {
    let seed = std::env::var("SPINDLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("seed {seed} (replay with SPINDLE_SEED={seed})");
    seed
}

/// A string of exactly `len` bytes of 1- to 4-byte characters.
fn text(rng: &mut SmallRng, len: usize) -> String {
    let mut s = String::with_capacity(len);
    while s.len() < len {
        let c = match rng.gen_range(0..4) {
            0 => char::from(rng.gen_range(b' '..=b'~')),
            1 => char::from_u32(rng.gen_range(0xC0..0x100)).unwrap_or('é'),
            2 => char::from_u32(rng.gen_range(0x4E00..0x9FFF)).unwrap_or('中'),
            _ => char::from_u32(rng.gen_range(0x1F300..0x1F5FF)).unwrap_or('🎵'),
        };
        s.push(if c.len_utf8() <= len - s.len() {
            c
        } else {
            'x'
        });
    }
    s
}

/// A listen with every field at its limit; every other one with the most
/// credited artists, their names together at their limit.
fn largest(rng: &mut SmallRng, user: &str, timestamp: i64) -> Listen {
    let each = MAX_CREDITS_BYTES / MAX_CREDITED_ARTISTS;
    let artists = if rng.gen_bool(0.5) {
        (0..MAX_CREDITED_ARTISTS).map(|_| text(rng, each)).collect()
    } else {
        Vec::new()
    };
    Listen {
        user: user.to_owned(),
        timestamp,
        artist: text(rng, MAX_ARTIST),
        artists,
        title: text(rng, MAX_TITLE),
        album: text(rng, MAX_ALBUM),
        album_artist: text(rng, MAX_ALBUM_ARTIST),
        mbid: text(rng, MAX_MBID),
        duration: Some(rng.gen()),
        track_number: rng.gen_bool(0.5).then(|| rng.gen_range(0..u32::MAX)),
        client: text(rng, MAX_CLIENT),
    }
}

fn all_of(s: &Listens, user: &str) -> Vec<Listen> {
    s.recent(
        user,
        &RecentQuery {
            limit: usize::MAX,
            page: 1,
            ..RecentQuery::default()
        },
    )
    .listens
}

/// Writes random batches of largest listens (and loves) of three users
/// through the public API; returns the events in log order.
fn fill(rng: &mut SmallRng, dir: &Path, users: &[String]) -> Vec<Event> {
    let (s, _) = Listens::open(dir).unwrap();
    let mut events = Vec::new();
    let mut ts = 1_700_000_000;
    for _ in 0..rng.gen_range(2..8) {
        let batch: Vec<Listen> = (0..rng.gen_range(1..6))
            .map(|_| {
                ts += 7;
                let u = &users[rng.gen_range(0..users.len())];
                largest(rng, u, ts)
            })
            .collect();
        s.submit(&batch).unwrap();
        events.extend(batch.iter().cloned().map(Event::Listen));
        if rng.gen_bool(0.3) {
            let l = &batch[0];
            s.love(&l.user, &l.artist, &l.title, ts, true).unwrap();
            events.push(Event::Love {
                user: l.user.clone(),
                artist: l.artist.clone(),
                title: l.title.clone(),
                timestamp: ts,
                loved: true,
            });
        }
    }
    events
}

#[test]
fn the_largest_listens_survive_a_torn_tail_and_reopen_whole() {
    let seed = seed();
    let mut rng = SmallRng::seed_from_u64(seed);
    for round in 0..24 {
        let ctx = format!("seed {seed}, round {round}");
        let dir = tempfile::tempdir().unwrap();
        let users: Vec<String> = (0..3).map(|_| text(&mut rng, MAX_USER)).collect();
        let events = fill(&mut rng, dir.path(), &users);
        let path = dir.path().join(LOG_FILE);
        let full = std::fs::read(&path).unwrap();
        assert_eq!(
            full,
            encode_log(&events),
            "{ctx}: the log holds what was sent"
        );
        // Where each record ends.
        let ends: Vec<usize> = (1..=events.len())
            .map(|n| encode_log(&events[..n]).len())
            .collect();

        let (torn, whole) = if rng.gen_bool(0.5) {
            let cut = rng.gen_range(1..=full.len() - 16);
            let kept = full.len() - cut;
            let whole = ends.iter().take_while(|&&e| e <= kept).count();
            (full[..kept].to_vec(), whole)
        } else {
            let mut b = full.clone();
            let n = rng.gen_range(1..3000);
            if rng.gen_bool(0.3) {
                b.resize(b.len() + n, 0);
            } else {
                b.extend((0..n).map(|_| rng.gen::<u8>()));
            }
            (b, events.len())
        };
        std::fs::write(&path, &torn).unwrap();

        let (s, report) = Listens::open(dir.path()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let good_end = if whole == 0 { 16 } else { ends[whole - 1] };
        assert_eq!(
            report.truncated_bytes,
            (torn.len() - good_end) as u64,
            "{ctx}"
        );
        let kept = &events[..whole];
        for u in &users {
            let mut want: Vec<Listen> = kept
                .iter()
                .filter_map(|e| match e {
                    Event::Listen(l) if &l.user == u => Some(l.clone()),
                    _ => None,
                })
                .collect();
            want.sort_by_key(|l| std::cmp::Reverse(l.timestamp));
            assert_eq!(all_of(&s, u), want, "{ctx}: listens of a user");
        }
        for (i, e) in events.iter().enumerate() {
            if let Event::Love {
                user,
                artist,
                title,
                ..
            } = e
            {
                assert_eq!(
                    s.is_loved(user, artist, title),
                    i < whole,
                    "{ctx}: love {i}"
                );
            }
        }
        drop(s);
        assert_eq!(std::fs::read(&path).unwrap(), full[..good_end], "{ctx}");
    }
}

#[test]
fn a_flipped_byte_mid_log_is_refused_with_its_offset_and_the_file_is_kept() {
    let seed = seed();
    let mut rng = SmallRng::seed_from_u64(seed);
    for round in 0..16 {
        let ctx = format!("seed {seed}, round {round}");
        let dir = tempfile::tempdir().unwrap();
        let users: Vec<String> = (0..2).map(|_| text(&mut rng, MAX_USER)).collect();
        let mut events = fill(&mut rng, dir.path(), &users);
        if events.len() < 2 {
            let (s, _) = Listens::open(dir.path()).unwrap();
            let l = largest(&mut rng, &users[0], 1);
            s.submit(std::slice::from_ref(&l)).unwrap();
            events.push(Event::Listen(l));
        }
        // More than the torn window (4 MiB) of good records after the
        // victim: damage there is in acknowledged data, not a torn write.
        let victims = events.len() - 1;
        {
            let (s, _) = Listens::open(dir.path()).unwrap();
            let pad: Vec<Listen> = (0..1000)
                .map(|i| largest(&mut rng, &users[1], 1_800_000_000 + i))
                .collect();
            s.submit(&pad).unwrap();
        }
        let path = dir.path().join(LOG_FILE);
        let full = std::fs::read(&path).unwrap();
        let victim = rng.gen_range(0..victims);
        let start = encode_log(&events[..victim]).len();
        let end = encode_log(&events[..=victim]).len();
        let mut bad = full.clone();
        bad[rng.gen_range(start..end)] ^= 1 << rng.gen_range(0..8);
        std::fs::write(&path, &bad).unwrap();

        let err = Listens::open(dir.path()).err().expect("damage is refused");
        match &err {
            OpenError::Damaged { offset, .. } => assert_eq!(*offset, start as u64, "{ctx}"),
            other => panic!("{ctx}: {other}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(&format!("byte {start}")), "{ctx}: {msg}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bad,
            "{ctx}: the file changed"
        );
    }
}

#[test]
fn a_batch_with_one_listen_over_a_limit_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = Listens::open(dir.path()).unwrap();
    let before = std::fs::read(dir.path().join(LOG_FILE)).unwrap();
    let ok = Listen::new("ann", 1, "A", "T");
    let mut huge = Listen::new("ann", 2, &"a".repeat(3 << 19), "T");
    huge.client = "lastfm".into();
    let e = s.submit(&[ok.clone(), huge]).unwrap_err();
    assert!(
        matches!(
            e,
            AppendError::TooLarge {
                field: "artist",
                max: MAX_ARTIST,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.is_refusal());
    let e = s
        .love("ann", "A", &"t".repeat(MAX_TITLE + 1), 3, true)
        .unwrap_err();
    assert!(
        matches!(e, AppendError::TooLarge { field: "title", .. }),
        "{e}"
    );
    assert_eq!(
        std::fs::read(dir.path().join(LOG_FILE)).unwrap(),
        before,
        "nothing was written"
    );
    // The refused listen's twin in a good batch is new, not a duplicate.
    assert_eq!(
        s.submit(&[ok]).unwrap(),
        vec![spindle_listens::Submitted::Accepted]
    );
}

#[test]
fn a_new_history_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("data").join("listens");
    drop(Listens::open(&sub).unwrap());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&sub), 0o700);
    assert_eq!(mode(&sub.join(LOG_FILE)), 0o600);
}
