//! The checkpoint: a history opened from its checkpoint and the log's
//! tail answers every query exactly as one replaying the whole log, over
//! generated histories with repeats, loves, edits, deletes, merges and
//! undos; and a checkpoint that is torn, damaged, of another format, of
//! a longer log than the one beside it or of another log, or a crash
//! while one is written, is ignored: the history opens by full replay.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use spindle_listens::{Changes, Correction, Target};
use spindle_listens::{
    ChartKind, ChartQuery, CheckpointPolicy, CheckpointUse, Listen, Listens, Options, RecentQuery,
    Submitted, CHECKPOINT_FILE, CHECKPOINT_TEMP, LOG_FILE,
};

const USERS: [&str; 3] = ["ann", "bob", "cy"];
const ARTISTS: [&str; 6] = ["Abba", " abba", "Björk", "The Band", "Daft Punk", "AC/DC"];
const TITLES: [&str; 5] = ["SOS", "sos ", "Joga", "Weight", "One More Time"];
const BASE: i64 = 1_700_000_000;

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }
    fn pick<'a>(&mut self, of: &[&'a str]) -> &'a str {
        of[(self.next() % of.len() as u64) as usize]
    }
}

fn listen(r: &mut Lcg, user: &str) -> Listen {
    let ts = BASE + (r.next() % (40 * 86_400)) as i64;
    let mut l = Listen::new(user, ts, r.pick(&ARTISTS), r.pick(&TITLES));
    if r.one_in(2) {
        l.album = format!("Album {}", r.next() % 3);
    }
    if r.one_in(4) {
        l.album_artist = r.pick(&ARTISTS).into();
    }
    if r.one_in(3) {
        l.mbid = format!("mbid-{}", r.next() % 4);
    }
    if r.one_in(2) {
        l.duration = Some(100 + (r.next() % 300) as u32);
    }
    if r.one_in(6) {
        l.credit([r.pick(&ARTISTS), r.pick(&ARTISTS), "Guest"]);
    }
    l
}

/// One random change to `s`: listens (some repeats of earlier ones), a
/// love or unlove, a correction or an undo. Refused corrections are part
/// of the game.
fn change(s: &Listens, r: &mut Lcg, sent: &mut Vec<Listen>) {
    let user = r.pick(&USERS);
    let when = BASE + 50 * 86_400;
    match r.next() % 20 {
        0..=9 => {
            let mut batch: Vec<Listen> = (0..1 + r.next() % 4).map(|_| listen(r, user)).collect();
            if !sent.is_empty() && r.one_in(3) {
                batch.push(sent[(r.next() % sent.len() as u64) as usize].clone());
            }
            s.submit(&batch).unwrap();
            sent.extend(batch);
        }
        10 | 11 => {
            let loved = !r.one_in(3);
            s.love(user, r.pick(&ARTISTS), r.pick(&TITLES), BASE, loved)
                .unwrap();
        }
        12..=16 => {
            let recent = s.recent(
                user,
                &RecentQuery {
                    limit: 1000,
                    page: 1,
                    ..RecentQuery::default()
                },
            );
            let Some(l) = recent
                .listens
                .get((r.next() % recent.listens.len().max(1) as u64) as usize)
            else {
                return;
            };
            let what = match r.next() % 4 {
                0 => Correction::Delete {
                    timestamp: l.timestamp,
                    artist: l.artist.clone(),
                    title: l.title.clone(),
                },
                1 => Correction::Edit {
                    target: Target::Listen {
                        timestamp: l.timestamp,
                        artist: l.artist.clone(),
                        title: l.title.clone(),
                    },
                    changes: Changes {
                        title: Some(r.pick(&TITLES).into()),
                        ..Changes::default()
                    },
                },
                2 => Correction::Edit {
                    target: Target::Track {
                        artist: l.artist.clone(),
                        title: l.title.clone(),
                    },
                    changes: Changes {
                        artist: Some(r.pick(&ARTISTS).into()),
                        album: Some(String::new()),
                        ..Changes::default()
                    },
                },
                _ => Correction::MergeArtist {
                    from: l.artist.clone(),
                    to: r.pick(&ARTISTS).into(),
                },
            };
            let _ = s.correct(user, what, when);
        }
        17 | 18 => {
            let fixes = s.corrections(user);
            if let Some(f) = fixes.get((r.next() % fixes.len().max(1) as u64) as usize) {
                let _ = s.undo(user, f.id, when);
            }
        }
        _ => {
            s.checkpoint().unwrap();
        }
    }
}

/// Everything the history answers about `user`, in a form two stores can
/// be compared by (rows of a chart with equal counts in any order).
fn answers(s: &Listens, user: &str) -> String {
    let mut out = Vec::new();
    let all = RecentQuery {
        limit: 100_000,
        page: 1,
        ..RecentQuery::default()
    };
    out.push(format!("{:?}", s.recent(user, &all)));
    out.push(format!("{:?}", s.summary(user)));
    out.push(format!("{:?}", s.per_day(user, None)));
    out.push(format!("{:?}", s.loved(user)));
    out.push(format!("{:?}", s.corrections(user)));
    out.push(format!("{:?}", s.plays(user, None, None)));
    let mut tallies = s.track_tallies(user);
    tallies.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    out.push(format!("{tallies:?}"));
    for kind in [ChartKind::Artists, ChartKind::Albums, ChartKind::Tracks] {
        for (from, to, artist) in [
            (None, None, None),
            (
                Some(BASE + 86_400 * 3 + 77),
                Some(BASE + 86_400 * 20 - 5),
                None,
            ),
            (Some(BASE + 86_400 * 7), None, Some("abba")),
        ] {
            let q = ChartQuery {
                from,
                to,
                artist,
                limit: 1000,
                page: 1,
            };
            let c = s.chart(user, kind, &q);
            let mut rows: Vec<_> = c
                .rows
                .iter()
                .map(|r| (r.playcount, r.name.clone(), r.artist.clone()))
                .collect();
            rows.sort();
            out.push(format!("{kind:?} {from:?} {to:?}: {} {rows:?}", c.total));
        }
    }
    for a in ARTISTS {
        for t in TITLES {
            out.push(format!("{}", s.is_loved(user, a, t)));
        }
    }
    out.join("\n")
}

fn same_answers(a: &Listens, b: &Listens) {
    for u in USERS {
        let (x, y) = (answers(a, u), answers(b, u));
        if x != y {
            for (l, m) in x.lines().zip(y.lines()) {
                if l != m {
                    let at = l.bytes().zip(m.bytes()).take_while(|(a, b)| a == b).count();
                    let from = at.saturating_sub(300);
                    panic!(
                        "{u}: differs at {at}:\n{}\n{}",
                        &l[from..(at + 300).min(l.len())],
                        &m[from..(at + 300).min(m.len())]
                    );
                }
            }
            assert_eq!(x, y, "{u}");
        }
    }
}

/// A history of `ops` random changes in `dir`, written with checkpoints
/// at random points; returns the listens sent.
fn history(dir: &Path, seed: u64, ops: usize) -> Vec<Listen> {
    let (s, _) = Listens::open_with(dir, Options::default()).unwrap();
    let mut r = Lcg(seed);
    let mut sent = Vec::new();
    for _ in 0..ops {
        change(&s, &mut r, &mut sent);
    }
    sent
}

/// Opens a copy of `dir`'s log alone: the history by full replay.
fn replayed(dir: &Path) -> (tempfile::TempDir, Listens) {
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(dir.join(LOG_FILE), copy.path().join(LOG_FILE)).unwrap();
    let (s, rep) = Listens::open_with(copy.path(), Options::default()).unwrap();
    assert_eq!(rep.checkpoint, CheckpointUse::Absent);
    (copy, s)
}

#[test]
fn a_history_opened_from_its_checkpoint_answers_as_a_full_replay_does() {
    for seed in 1..=6 {
        let dir = tempfile::tempdir().unwrap();
        let sent = history(dir.path(), seed, 300);
        let (s, rep) = Listens::open_with(dir.path(), Options::default()).unwrap();
        assert!(
            matches!(rep.checkpoint, CheckpointUse::Loaded { .. }),
            "seed {seed}: {:?}",
            rep.checkpoint
        );
        let (_copy, full) = replayed(dir.path());
        same_answers(&s, &full);
        // The dedupe set came back too: every listen sent before is a
        // duplicate for both, a new one new for both, and what follows
        // stays the same.
        let mut r = Lcg(seed * 1000);
        let mut again: Vec<Listen> = sent.iter().step_by(7).cloned().collect();
        again.extend((0..20).map(|_| listen(&mut r, "ann")));
        let mut near = sent[0].clone();
        near.timestamp += 5;
        again.push(near);
        let (x, y) = (s.submit(&again).unwrap(), full.submit(&again).unwrap());
        assert_eq!(x, y, "seed {seed}");
        assert!(x[..sent.len().div_ceil(7)]
            .iter()
            .all(|o| *o == Submitted::Duplicate));
        assert_eq!(x.last(), Some(&Submitted::Duplicate), "within the window");
        same_answers(&s, &full);
    }
}

#[test]
fn an_undo_after_the_checkpoint_rebuilds_from_the_checkpointed_state() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = Listens::open(dir.path()).unwrap();
    let l = |ts, a: &str, t: &str| Listen::new("ann", ts, a, t);
    s.submit(&[l(10, "A", "x"), l(20, "A", "y"), l(30, "B", "x")])
        .unwrap();
    let merge = s.merge_artist("ann", "A", "B", 40).unwrap();
    let del = s.delete("ann", 30, "B", "x", 41).unwrap();
    s.love("ann", "A", "x", 42, true).unwrap();
    s.checkpoint().unwrap();
    s.undo("ann", merge.id, 50).unwrap();
    s.submit(&[l(60, "A", "z")]).unwrap();
    s.undo("ann", del.id, 51).unwrap();
    drop(s);
    let (s, rep) = Listens::open(dir.path()).unwrap();
    assert!(matches!(rep.checkpoint, CheckpointUse::Loaded { .. }));
    assert_eq!((rep.listens, rep.love_events, rep.corrections), (4, 1, 4));
    let (_copy, full) = replayed(dir.path());
    same_answers(&s, &full);
    assert_eq!(s.summary("ann").playcount, 4);
}

/// A history with a checkpoint in the middle of its log.
fn checkpointed(dir: &Path) -> u64 {
    history(dir, 99, 150);
    let (s, _) = Listens::open_with(dir, Options::default()).unwrap();
    let covers = s.checkpoint().unwrap();
    let mut r = Lcg(7);
    let mut sent = Vec::new();
    for _ in 0..20 {
        change(&s, &mut r, &mut sent);
    }
    covers
}

/// Opens `dir`: the checkpoint must have been ignored (and why says
/// `why`), and the answers are those of a full replay.
fn opens_by_full_replay(dir: &Path, why: &str) {
    let (s, rep) = Listens::open_with(dir, Options::default()).unwrap();
    match &rep.checkpoint {
        CheckpointUse::Ignored { reason } => assert!(reason.contains(why), "{reason}"),
        other => panic!("expected the checkpoint ignored ({why}), got {other:?}"),
    }
    let (_copy, full) = replayed(dir);
    same_answers(&s, &full);
    // A new checkpoint can be written, and the next open uses it.
    s.checkpoint().unwrap();
    drop(s);
    let (s, rep) = Listens::open_with(dir, Options::default()).unwrap();
    assert!(matches!(rep.checkpoint, CheckpointUse::Loaded { .. }));
    same_answers(&s, &full);
}

#[test]
fn a_torn_checkpoint_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    checkpointed(dir.path());
    let path = dir.path().join(CHECKPOINT_FILE);
    let whole = std::fs::read(&path).unwrap();
    for cut in [0, 1, 8, 47, 48, 49, 200, whole.len() / 2, whole.len() - 1] {
        std::fs::write(&path, &whole[..cut]).unwrap();
        let why = if cut < 48 { "header" } else { "cut short" };
        opens_by_full_replay(dir.path(), why);
        std::fs::write(&path, &whole).unwrap();
    }
}

#[test]
fn a_checkpoint_with_a_flipped_byte_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    checkpointed(dir.path());
    let path = dir.path().join(CHECKPOINT_FILE);
    let whole = std::fs::read(&path).unwrap();
    for (at, why) in [
        (0, "magic"),
        (9, "header"),
        (17, "header"),
        (30, "header"),
        (47, "header"),
        (48, "damaged"),
        (whole.len() / 3, "damaged"),
        (whole.len() - 1, "damaged"),
    ] {
        let mut bad = whole.clone();
        bad[at] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        opens_by_full_replay(dir.path(), why);
        std::fs::write(&path, &whole).unwrap();
    }
}

#[test]
fn a_checkpoint_of_another_format_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    checkpointed(dir.path());
    let path = dir.path().join(CHECKPOINT_FILE);
    let mut b = std::fs::read(&path).unwrap();
    b[8..12].copy_from_slice(&2u32.to_le_bytes());
    let crc = crc32(&b[..44]);
    b[44..48].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &b).unwrap();
    opens_by_full_replay(dir.path(), "format 2");
}

/// The CRC-32 (IEEE) of `b`, as the checkpoint's header has it.
fn crc32(b: &[u8]) -> u32 {
    let mut c = !0u32;
    for &x in b {
        c ^= u32::from(x);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

#[test]
fn a_checkpoint_of_more_log_than_there_is_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let covers = checkpointed(dir.path());
    let log = dir.path().join(LOG_FILE);
    let bytes = std::fs::read(&log).unwrap();
    // The log cut back before the checkpoint's end (a crash of the disk
    // cache, a repair): a record boundary well before it.
    let cut = boundary_before(dir.path(), covers / 2);
    std::fs::write(&log, &bytes[..cut as usize]).unwrap();
    opens_by_full_replay(dir.path(), "log is");
}

#[test]
fn a_checkpoint_of_another_log_is_ignored() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    checkpointed(a.path());
    // Another history, longer than the part the checkpoint covers.
    history(b.path(), 5, 400);
    assert!(
        std::fs::metadata(b.path().join(LOG_FILE)).unwrap().len()
            > std::fs::metadata(a.path().join(LOG_FILE)).unwrap().len()
    );
    std::fs::copy(
        a.path().join(CHECKPOINT_FILE),
        b.path().join(CHECKPOINT_FILE),
    )
    .unwrap();
    opens_by_full_replay(b.path(), "another log");
    // The same log's start with other records after it, the checkpoint's
    // end among them, is another log too.
    let dir = a.path();
    let covers = std::fs::read(dir.join(CHECKPOINT_FILE)).unwrap();
    let cut = boundary_before(
        dir,
        u64::from_le_bytes(covers[16..24].try_into().unwrap()) / 2,
    );
    let log = dir.join(LOG_FILE);
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..cut as usize]).unwrap();
    let (s, _) = Listens::open_with(dir, Options::default()).unwrap();
    let mut r = Lcg(12345);
    while s.committed_end() <= bytes.len() as u64 {
        s.submit(&[listen(&mut r, "cy")]).unwrap();
    }
    drop(s);
    opens_by_full_replay(dir, "another log");
}

/// The offset of the last record boundary at or before `at` in `dir`'s
/// log (records are framed by a u32 length and a u32 CRC after a 16-byte
/// header, `docs/listens-format.md`).
fn boundary_before(dir: &Path, at: u64) -> u64 {
    let bytes = std::fs::read(dir.join(LOG_FILE)).unwrap();
    let mut end = spindle_listens::tail::log_start() as usize;
    loop {
        let len = u32::from_le_bytes(bytes[end..end + 4].try_into().unwrap()) as usize;
        let next = end + 8 + len;
        if next as u64 > at {
            return end as u64;
        }
        end = next;
    }
}

#[test]
fn a_crash_while_a_checkpoint_is_written_leaves_the_last_one_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let covers = checkpointed(dir.path());
    // What a crash leaves: the temporary file, half written.
    let whole = std::fs::read(dir.path().join(CHECKPOINT_FILE)).unwrap();
    let temp = dir.path().join(CHECKPOINT_TEMP);
    std::fs::write(&temp, &whole[..whole.len() / 2]).unwrap();
    let (s, rep) = Listens::open_with(dir.path(), Options::default()).unwrap();
    assert_eq!(rep.checkpoint, CheckpointUse::Loaded { covers });
    let (_copy, full) = replayed(dir.path());
    same_answers(&s, &full);
    // The next write replaces it.
    let now = s.checkpoint().unwrap();
    assert!(now > covers);
    assert!(!temp.exists());
    drop(s);
    // With no checkpoint at all, only the temporary file: full replay.
    std::fs::remove_file(dir.path().join(CHECKPOINT_FILE)).unwrap();
    std::fs::write(&temp, &whole).unwrap();
    let (s, rep) = Listens::open_with(dir.path(), Options::default()).unwrap();
    assert_eq!(rep.checkpoint, CheckpointUse::Absent);
    same_answers(&s, &full);
}

#[test]
fn a_read_only_open_uses_the_checkpoint_and_writes_none() {
    let dir = tempfile::tempdir().unwrap();
    let covers = checkpointed(dir.path());
    let before = std::fs::read(dir.path().join(CHECKPOINT_FILE)).unwrap();
    let (s, rep) = Listens::open_read_only(dir.path(), Options::default()).unwrap();
    assert_eq!(rep.checkpoint, CheckpointUse::Loaded { covers });
    assert!(s.checkpoint().is_err());
    let (_copy, full) = replayed(dir.path());
    same_answers(&s, &full);
    assert_eq!(
        std::fs::read(dir.path().join(CHECKPOINT_FILE)).unwrap(),
        before
    );
}

#[test]
fn the_background_checkpointer_follows_the_log_and_writes_a_last_one_when_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = Listens::open(dir.path()).unwrap();
    let s = Arc::new(s);
    let policy = CheckpointPolicy {
        every_bytes: 1000,
        every: Duration::from_secs(3600),
        tick: Duration::from_millis(10),
    };
    let cp = s.start_checkpoints(policy).unwrap();
    let mut r = Lcg(3);
    let batch: Vec<Listen> = (0..30).map(|_| listen(&mut r, "ann")).collect();
    s.submit(&batch).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.checkpointed_end() < s.committed_end() {
        assert!(Instant::now() < deadline, "no checkpoint written");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Less than `every_bytes` more: written only when stopped.
    s.submit(&[listen(&mut r, "bob")]).unwrap();
    assert_eq!(cp.stop(), None);
    assert_eq!(s.checkpointed_end(), s.committed_end());
    let covers = s.committed_end();
    drop(s);
    let (s, rep) = Listens::open(dir.path()).unwrap();
    assert_eq!(rep.checkpoint, CheckpointUse::Loaded { covers });
    assert_eq!(rep.listens, s.summary("ann").playcount + 1);
}

#[test]
fn checkpoints_taken_while_listens_are_submitted_are_exactly_the_log_up_to_their_end() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = Listens::open_with(dir.path(), Options::default()).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        for t in 0..3u64 {
            let (s, done) = (&s, &done);
            sc.spawn(move || {
                // Each thread sends some of the same listens as another,
                // so reservations of twins race too.
                let mut r = Lcg(t % 2);
                for i in 0..60 {
                    let mut batch: Vec<Listen> = (0..5)
                        .map(|_| listen(&mut r, USERS[(i % 3) as usize]))
                        .collect();
                    batch[0].timestamp = BASE + i64::from(i);
                    s.submit(&batch).unwrap();
                    if i % 10 == 0 {
                        s.love(USERS[t as usize], "Abba", "SOS", BASE, i % 20 == 0)
                            .unwrap();
                    }
                }
                done.store(true, std::sync::atomic::Ordering::SeqCst);
            });
        }
        let mut taken = 0;
        while !done.load(std::sync::atomic::Ordering::SeqCst) || taken < 3 {
            s.checkpoint().unwrap();
            taken += 1;
            // Each checkpoint, as taken, opens to what the log up to its
            // end replays to.
            let snap = tempfile::tempdir().unwrap();
            std::fs::copy(
                dir.path().join(CHECKPOINT_FILE),
                snap.path().join(CHECKPOINT_FILE),
            )
            .unwrap();
            let covers = std::fs::read(snap.path().join(CHECKPOINT_FILE)).unwrap()[16..24]
                .try_into()
                .map(u64::from_le_bytes)
                .unwrap();
            let log = std::fs::read(dir.path().join(LOG_FILE)).unwrap();
            std::fs::write(snap.path().join(LOG_FILE), &log[..covers as usize]).unwrap();
            let (a, rep) = Listens::open_with(snap.path(), Options::default()).unwrap();
            assert_eq!(rep.checkpoint, CheckpointUse::Loaded { covers });
            let (_copy, full) = replayed(snap.path());
            same_answers(&a, &full);
        }
    });
    // And the store that took them answers as a replay of its log does:
    // the indexes took the listens in log order (listens of the same
    // second in the same order), whichever writer woke first.
    let (_copy, full) = replayed(dir.path());
    same_answers(&s, &full);
}

#[test]
fn a_long_log_with_its_start_kept_and_other_records_after_it_is_another_log() {
    // More than twice the 64 KiB each print covers, so the two differ.
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = Listens::open_with(dir.path(), Options::default()).unwrap();
    let mut r = Lcg(11);
    while s.committed_end() < 400 * 1024 {
        let batch: Vec<Listen> = (0..200).map(|_| listen(&mut r, "ann")).collect();
        s.submit(&batch).unwrap();
    }
    let covers = s.checkpoint().unwrap();
    drop(s);
    // The first 300 KiB kept (the head print's bytes among them), the
    // rest other listens, past the checkpoint's end.
    let log = dir.path().join(LOG_FILE);
    let bytes = std::fs::read(&log).unwrap();
    let cut = boundary_before(dir.path(), 300 * 1024);
    std::fs::write(&log, &bytes[..cut as usize]).unwrap();
    let (s, rep) = Listens::open_with(dir.path(), Options::default()).unwrap();
    assert!(matches!(rep.checkpoint, CheckpointUse::Ignored { .. }));
    let mut r = Lcg(12);
    while s.committed_end() <= covers {
        s.submit(&[listen(&mut r, "bob")]).unwrap();
    }
    drop(s);
    opens_by_full_replay(dir.path(), "another log");
}
