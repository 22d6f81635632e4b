//! Listens credited to several artists: the artist chart counts each of
//! them, corrections reach them, and the log's header says version 3 only
//! once such a listen is written (older logs open and read unchanged).

use std::path::Path;

use spindle_listens::{ChartKind, ChartQuery, Listen, Listens, RecentQuery, Submitted, LOG_FILE};

const T0: i64 = 1_700_000_000;

fn solo(ts: i64, artist: &str, title: &str) -> Listen {
    Listen::new("ann", ts, artist, title)
}

fn get_lucky(ts: i64) -> Listen {
    let mut l = solo(ts, "Daft Punk, Pharrell Williams", "Get Lucky");
    l.credit(["Daft Punk", "Pharrell Williams"]);
    l
}

fn open(dir: &Path) -> Listens {
    Listens::open(dir).unwrap().0
}

fn artists(s: &Listens) -> Vec<(String, u32)> {
    let mut v: Vec<_> = s
        .top("ann", ChartKind::Artists, None, 100, 1)
        .rows
        .into_iter()
        .map(|r| (r.name, r.playcount))
        .collect();
    v.sort();
    v
}

fn version(dir: &Path) -> u32 {
    let b = std::fs::read(dir.join(LOG_FILE)).unwrap();
    u32::from_le_bytes([b[8], b[9], b[10], b[11]])
}

fn s(x: &str) -> String {
    x.to_owned()
}

#[test]
fn each_credited_artist_counts_the_listen_in_the_artist_chart_and_the_track_chart_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let st = open(dir.path());
    st.submit(&[
        solo(T0, "Daft Punk", "One More Time"),
        solo(T0 + 300, "Daft Punk", "Aerodynamic"),
        get_lucky(T0 + 600),
    ])
    .unwrap();
    let want = vec![(s("Daft Punk"), 3), (s("Pharrell Williams"), 1)];
    assert_eq!(artists(&st), want);
    assert_eq!(st.summary("ann").artist_count, 2);
    // Charts over a range (partial days come from the listens) agree.
    let q = ChartQuery {
        from: Some(T0 + 1),
        to: Some(T0 + 601),
        limit: 10,
        page: 1,
        ..ChartQuery::default()
    };
    let mut rows: Vec<_> = st
        .chart("ann", ChartKind::Artists, &q)
        .rows
        .into_iter()
        .map(|r| (r.name, r.playcount))
        .collect();
    rows.sort();
    assert_eq!(rows, vec![(s("Daft Punk"), 2), (s("Pharrell Williams"), 1)]);
    let tracks = st.top("ann", ChartKind::Tracks, None, 10, 1);
    assert!(tracks
        .rows
        .iter()
        .any(|r| r.name == "Get Lucky" && r.artist == "Daft Punk, Pharrell Williams"));
    assert_eq!(tracks.rows.len(), 3);
    // The listen keeps its credit, and so does a reopened history.
    let recent = |st: &Listens| {
        st.recent(
            "ann",
            &RecentQuery {
                limit: 1,
                page: 1,
                ..RecentQuery::default()
            },
        )
        .listens
    };
    assert_eq!(recent(&st), vec![get_lucky(T0 + 600)]);
    drop(st);
    let st = open(dir.path());
    assert_eq!(artists(&st), want);
    assert_eq!(recent(&st), vec![get_lucky(T0 + 600)]);
}

#[test]
fn the_same_play_with_another_credit_is_still_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let st = open(dir.path());
    let mut plain = get_lucky(T0);
    plain.artists.clear();
    let out = st.submit(&[get_lucky(T0), plain]).unwrap();
    assert_eq!(out, vec![Submitted::Accepted, Submitted::Duplicate]);
}

#[test]
fn a_merge_rewrites_a_credited_artist_now_later_and_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let st = open(dir.path());
    let mut l = solo(T0, "Daft Punk feat. Pharrell", "Get Lucky");
    l.credit(["Daft Punk", "Pharrell"]);
    st.submit(&[l.clone(), solo(T0 + 300, "Pharrell Williams", "Happy")])
        .unwrap();
    let merge = st
        .merge_artist("ann", "pharrell", "Pharrell Williams", T0)
        .unwrap();
    assert_eq!(merge.changed(), 1);
    let want = vec![(s("Daft Punk"), 1), (s("Pharrell Williams"), 2)];
    assert_eq!(artists(&st), want);
    // A listen recorded after the merge follows it too.
    let mut later = l.clone();
    later.timestamp = T0 + 900;
    st.submit(&[later]).unwrap();
    let want = vec![(s("Daft Punk"), 2), (s("Pharrell Williams"), 3)];
    assert_eq!(artists(&st), want);
    let page = st.recent(
        "ann",
        &RecentQuery {
            limit: 10,
            page: 1,
            ..RecentQuery::default()
        },
    );
    assert_eq!(page.listens[0].artists, ["Daft Punk", "Pharrell Williams"]);
    drop(st);
    let st = open(dir.path());
    assert_eq!(artists(&st), want);
    // Undone, the credits are as they were sent.
    st.undo("ann", merge.id, T0).unwrap();
    let mut back = artists(&st);
    back.retain(|(n, _)| n.starts_with("Pharrell"));
    assert_eq!(back, vec![(s("Pharrell"), 2), (s("Pharrell Williams"), 1)]);
}

#[test]
fn a_merge_of_an_artist_only_credited_is_not_refused_as_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let st = open(dir.path());
    st.submit(&[get_lucky(T0)]).unwrap();
    st.merge_artist("ann", "Pharrell Williams", "Pharrell", T0)
        .unwrap();
    assert_eq!(artists(&st), vec![(s("Daft Punk"), 1), (s("Pharrell"), 1)]);
}

#[test]
fn an_edit_of_the_artist_credits_the_listen_to_the_new_artist_alone() {
    let dir = tempfile::tempdir().unwrap();
    let st = open(dir.path());
    st.submit(&[get_lucky(T0)]).unwrap();
    let target = spindle_listens::Target::Listen {
        timestamp: T0,
        artist: s("Daft Punk, Pharrell Williams"),
        title: s("Get Lucky"),
    };
    let changes = spindle_listens::Changes {
        artist: Some(s("Daft Punk")),
        ..Default::default()
    };
    st.edit("ann", target, changes, T0).unwrap();
    assert_eq!(artists(&st), vec![(s("Daft Punk"), 1)]);
    drop(st);
    assert_eq!(artists(&open(dir.path())), vec![(s("Daft Punk"), 1)]);
}

#[test]
fn the_header_says_version_3_only_once_a_credited_listen_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let st = open(dir.path());
    let mut one = solo(T0, "Björk", "Jóga");
    one.artists = vec![s("Björk")];
    st.submit(&[solo(T0 - 1, "A", "x"), one]).unwrap();
    assert_eq!(version(dir.path()), 1, "no list: still readable by 1");
    st.submit(&[get_lucky(T0 + 10)]).unwrap();
    assert_eq!(version(dir.path()), 3);
    // A correction does not take it back to 2.
    st.delete("ann", T0 - 1, "A", "x", T0).unwrap();
    assert_eq!(version(dir.path()), 3);
    drop(st);
    assert_eq!(open(dir.path()).summary("ann").playcount, 2);

    // A version 2 log (a correction, no list) becomes 3 the same way.
    let dir = tempfile::tempdir().unwrap();
    let st = open(dir.path());
    st.submit(&[solo(T0, "A", "x"), solo(T0 + 1, "A", "y")])
        .unwrap();
    st.delete("ann", T0, "A", "x", T0).unwrap();
    assert_eq!(version(dir.path()), 2);
    st.submit(&[get_lucky(T0 + 10)]).unwrap();
    assert_eq!(version(dir.path()), 3);
}

/// A `str` of the log: u32 length, then the bytes.
fn put(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

/// A framed record: length, CRC-32, payload.
fn frame(b: &mut Vec<u8>, payload: &[u8]) {
    b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    b.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    b.extend_from_slice(payload);
}

/// A kind 1 listen of ann, written field by field as the format says.
fn kind1(ts: i64, artist: &str, title: &str) -> Vec<u8> {
    let mut p = vec![1];
    p.extend_from_slice(&ts.to_le_bytes());
    p.extend_from_slice(&200u32.to_le_bytes());
    p.extend_from_slice(&u32::MAX.to_le_bytes());
    for s in ["ann", artist, title, "Album", "", "", "lastfm"] {
        put(&mut p, s);
    }
    p
}

fn log_of(version: u32, payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut b = b"SPNDLSTN".to_vec();
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    for p in payloads {
        frame(&mut b, p);
    }
    b
}

#[test]
fn version_1_and_2_logs_written_byte_by_byte_read_unchanged() {
    // Version 1: two listens and a love (kind 2: i64, user, artist, title).
    let mut love = vec![2];
    love.extend_from_slice(&(T0 + 5).to_le_bytes());
    for s in ["ann", "Abba", "SOS"] {
        put(&mut love, s);
    }
    let v1 = log_of(
        1,
        &[
            kind1(T0, "Abba", "SOS"),
            kind1(T0 + 300, "Cher", "Believe"),
            love,
        ],
    );
    // Version 2: the same listens, then a merge (kind 6: i64 when, user,
    // from, to).
    let mut merge = vec![6];
    merge.extend_from_slice(&(T0 + 9).to_le_bytes());
    for s in ["ann", "Cher", "Abba"] {
        put(&mut merge, s);
    }
    let v2 = log_of(
        2,
        &[
            kind1(T0, "Abba", "SOS"),
            kind1(T0 + 300, "Cher", "Believe"),
            merge,
        ],
    );
    for (bytes, want) in [
        (&v1, vec![(s("Abba"), 1), (s("Cher"), 1)]),
        (&v2, vec![(s("Abba"), 2)]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        std::fs::write(&path, bytes).unwrap();
        let (st, report) = Listens::open(dir.path()).unwrap();
        assert_eq!((report.listens, report.truncated_bytes), (2, 0));
        assert_eq!(artists(&st), want);
        let page = st.recent(
            "ann",
            &RecentQuery {
                limit: 10,
                page: 1,
                ..RecentQuery::default()
            },
        );
        let first = &page.listens[1];
        assert_eq!(
            (first.timestamp, first.duration, first.album.as_str()),
            (T0, Some(200), "Album")
        );
        assert!(first.artists.is_empty());
        assert_eq!(
            std::fs::read(&path).unwrap(),
            *bytes,
            "opening changed nothing"
        );
        // A plain listen is appended as kind 1 and keeps the version.
        st.submit(&[solo(T0 + 600, "Abba", "Waterloo")]).unwrap();
        let now = std::fs::read(&path).unwrap();
        assert_eq!(now[..bytes.len()], bytes[..]);
        assert_eq!(now[8..12], bytes[8..12]);
        // Without a duration or client: unknowns and empty strings.
        let mut p = vec![1];
        p.extend_from_slice(&(T0 + 600).to_le_bytes());
        p.extend_from_slice(&[0xFF; 8]);
        for s in ["ann", "Abba", "Waterloo", "", "", "", ""] {
            put(&mut p, s);
        }
        let mut tail = Vec::new();
        frame(&mut tail, &p);
        assert_eq!(now[bytes.len()..], tail[..]);
    }
}
