//! Dedupe against listens the indexes hold in other ways than counting
//! them: a deleted listen, an edited one, the same batch, and all of
//! them after a restart from the log or from a checkpoint.

use spindle_listens::{Changes, Listen, Listens, Options, Submitted, Target};

fn open(dir: &std::path::Path) -> Listens {
    Listens::open_with(dir, Options::default()).unwrap().0
}

/// What a listen sent again within the window is, in each state.
fn again(s: &Listens) -> Vec<Submitted> {
    [
        Listen::new("u", 1005, "Abba", "SOS"),
        Listen::new("u", 2010, "abba", "Waterloo"),
        Listen::new("u", 3003, "Beatles", "Help"),
    ]
    .iter()
    .map(|l| s.submit(std::slice::from_ref(l)).unwrap()[0])
    .collect()
}

#[test]
fn deleted_and_edited_listens_sent_again_stay_duplicates_after_a_restart_or_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let out = s
        .submit(&[
            Listen::new("u", 1000, "Abba", "SOS"),
            Listen::new("u", 1010, "ABBA", "sos"),
            Listen::new("u", 2000, "Abba", "Fernando"),
            Listen::new("u", 3000, "The Beatles", "Help"),
        ])
        .unwrap();
    use Submitted::{Accepted, Duplicate};
    assert_eq!(out, vec![Accepted, Duplicate, Accepted, Accepted]);
    s.delete("u", 1000, "Abba", "SOS", 1).unwrap();
    let new_title = Changes {
        title: Some("Waterloo".into()),
        ..Changes::default()
    };
    let at = Target::Listen {
        timestamp: 2000,
        artist: "Abba".into(),
        title: "Fernando".into(),
    };
    s.edit("u", at, new_title, 2).unwrap();
    assert_eq!(s.summary("u").playcount, 2);
    // Deleted: still known. Edited: its new identity is known. The
    // Beatles without "The" are another track.
    let want = vec![Duplicate, Duplicate, Accepted];
    assert_eq!(again(&s), want);
    drop(s);
    let s = open(dir.path());
    assert_eq!(again(&s), vec![Duplicate; 3], "after a replay");
    s.checkpoint().unwrap();
    drop(s);
    let (s, rep) = Listens::open_with(dir.path(), Options::default()).unwrap();
    assert!(
        matches!(
            rep.checkpoint,
            spindle_listens::CheckpointUse::Loaded { .. }
        ),
        "{:?}",
        rep.checkpoint
    );
    assert_eq!(again(&s), vec![Duplicate; 3], "after a checkpoint's load");
    assert_eq!(s.summary("u").playcount, 3);
}
