//! Transactions: all or nothing, and refusals that leave nothing behind.

use spindle_query::{parse, SourcePref, Value};
use spindle_store::{CommitError, Db, Op};

fn add(entry: u32, key: &str, value: impl Into<Value>) -> Op {
    Op::AddProp {
        entry,
        key: key.into(),
        source: "client/test".into(),
        value: value.into(),
    }
}

#[test]
fn a_failing_op_leaves_the_whole_transaction_unapplied() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.commit(vec![Op::CreateEntry(1), add(1, "artist", "A")])
        .unwrap();
    let err = db
        .commit(vec![
            add(1, "title", "T"),
            Op::CreateEntry(2),
            add(2, "artist", "B"),
            Op::DeleteEntry(99),
        ])
        .unwrap_err();
    assert!(matches!(err, CommitError::NoSuchEntry(99)), "{err}");
    let lib = db.read();
    assert_eq!(lib.len(), 1);
    assert!(lib.get(1, "title", &SourcePref::default()).is_empty());
    drop(lib);
    drop(db);
    // Nothing of it reached the log either.
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.read().len(), 1);
}

#[test]
fn a_huge_entry_id_is_refused_instead_of_allocating_a_huge_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let err = db.commit(vec![Op::CreateEntry(4_000_000_000)]).unwrap_err();
    assert!(matches!(err, CommitError::IdOutOfRange { .. }), "{err}");
    assert!(err.to_string().contains("next free id is 1"), "{err}");
    db.commit(vec![Op::CreateEntry(1000)]).unwrap();
    assert_eq!(db.read().len(), 1);
}

#[test]
fn the_parent_key_cannot_be_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.commit(vec![Op::CreateEntry(1)]).unwrap();
    let err = db.commit(vec![add(1, "song_id", 5)]).unwrap_err();
    assert!(matches!(err, CommitError::ReservedKey(_)), "{err}");
}

#[test]
fn user_edits_win_by_source_preference_and_indexes_follow_updates() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.commit(vec![Op::CreateIndex("title".into())]).unwrap();
    db.commit(vec![
        Op::CreateEntry(1),
        Op::AddProp {
            entry: 1,
            key: "title".into(),
            source: "plugin/id3v2".into(),
            value: "Incorrect Title".into(),
        },
    ])
    .unwrap();
    let q = |p: &str| {
        let coll = parse(p).unwrap().coll;
        db.read()
            .query_ids(&coll, &SourcePref::default())
            .unwrap()
            .ids
    };
    assert_eq!(q("title:'incorrect title'"), vec![1]);
    db.commit(vec![add(1, "title", "Correct Title")]).unwrap();
    // client/* beats plugin/* in the default preference.
    assert_eq!(q("title:'incorrect title'"), Vec::<u32>::new());
    assert_eq!(q("title:'correct title'"), vec![1]);
    assert_eq!(q("correct"), vec![1]);
    db.commit(vec![Op::DelKey {
        entry: 1,
        key: "title".into(),
        source: Some("client/test".into()),
    }])
    .unwrap();
    assert_eq!(q("title:'incorrect title'"), vec![1]);
    assert!(db.read().check().is_empty());
}
