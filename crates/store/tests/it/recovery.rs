//! Recovery from damaged files and the process lock, at the `Db` level:
//! a log cut or bit-flipped anywhere in its last record reopens at the
//! last good commit (with a warning) and takes new commits; a record
//! damaged mid-log, with good ones after it, is refused with its offset
//! and nothing is cut; a damaged data file is refused; a compaction interrupted between its data file
//! and its new log loses nothing; a second writer process is told which
//! PID holds the lock, while readers work alongside.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use spindle_store::{Db, Op, OpenError, Value, DATA_FILE, LOG_FILE};

use crate::common::{dump, State};

fn add(entry: u32, key: &str, value: impl Into<Value>) -> Op {
    Op::AddProp {
        entry,
        key: key.into(),
        source: "plugin/test".into(),
        value: value.into(),
    }
}

/// Transaction `n`: creates entry `n` with a few properties, and retitles
/// entry `n - 1`; transaction 5 is larger, so it has many cut points.
fn txn(n: u32) -> Vec<Op> {
    let mut ops = vec![
        Op::CreateEntry(n),
        add(n, "title", format!("Song {n}")),
        add(n, "tracknr", i64::from(n)),
        add(n, "artist", "Motörhead"),
    ];
    if n > 1 {
        ops.push(Op::DelKey {
            entry: n - 1,
            key: "title".into(),
            source: None,
        });
        ops.push(add(
            n - 1,
            "title",
            format!("Song {} (retitled by {n})", n - 1),
        ));
    }
    if n == 5 {
        for i in 0..8 {
            ops.push(add(n, &format!("extra{i}"), format!("value {i} of {n}")));
        }
    }
    ops
}

fn log_len(dir: &Path) -> u64 {
    fs::metadata(dir.join(LOG_FILE)).unwrap().len()
}

/// A database with transactions 1–4 (a compaction after 2, so the data
/// file and the log both hold some), then transaction 5. Returns the log
/// length before transaction 5, the whole log, and the states before and
/// after transaction 5.
fn five_commits(dir: &Path) -> (u64, Vec<u8>, State, State) {
    let db = Db::open(dir).unwrap();
    for n in 1..=4 {
        db.commit(txn(n)).unwrap();
        if n == 2 {
            db.compact().unwrap();
        }
    }
    let before = dump(&db);
    let good_len = log_len(dir);
    db.commit(txn(5)).unwrap();
    let after = dump(&db);
    drop(db);
    let log = fs::read(dir.join(LOG_FILE)).unwrap();
    assert!(log.len() as u64 > good_len + 100, "transaction 5 is large");
    (good_len, log, before, after)
}

/// Reopen after damage: the state must be `expected` with a warning about
/// the dropped tail; then a new commit must work and survive a reopen.
fn check_recovers(dir: &Path, expected: &State, good_len: u64, what: &str) {
    let db = Db::open(dir).unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    assert_eq!(&dump(&db), expected, "{what}: not the last good commit");
    let warnings = &db.open_report().warnings;
    assert_eq!(
        warnings.len(),
        1,
        "{what}: expected one warning, got {warnings:?}"
    );
    assert!(
        warnings[0].contains("dropped") && warnings[0].contains("last good commit"),
        "{what}: {}",
        warnings[0]
    );
    assert_eq!(
        log_len(dir),
        good_len,
        "{what}: the damaged tail is truncated"
    );
    db.commit(vec![
        Op::CreateEntry(100),
        add(100, "title", "after recovery"),
    ])
    .unwrap();
    let mut later = expected.clone();
    later.insert(100, dump(&db)[&100].clone());
    drop(db);
    let db = Db::open(dir).unwrap_or_else(|e| panic!("{what}: reopen after the commit: {e}"));
    assert_eq!(
        dump(&db),
        later,
        "{what}: the commit after recovery was lost"
    );
    let warnings = &db.open_report().warnings;
    assert!(warnings.is_empty(), "{what}: {warnings:?}");
}

#[test]
fn a_log_cut_at_any_byte_of_its_last_record_reopens_at_the_previous_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (good_len, log, before, after) = five_commits(dir.path());
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(dump(&db), after, "the intact log replays all five commits");
    assert!(db.open_report().warnings.is_empty());
    drop(db);
    for cut in good_len + 1..log.len() as u64 {
        fs::write(dir.path().join(LOG_FILE), &log[..cut as usize]).unwrap();
        check_recovers(
            dir.path(),
            &before,
            good_len,
            &format!("log cut at byte {cut}"),
        );
    }
    // A cut exactly at a record boundary is a clean log, not damage.
    fs::write(dir.path().join(LOG_FILE), &log[..good_len as usize]).unwrap();
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(dump(&db), before);
    assert!(db.open_report().warnings.is_empty());
}

#[test]
fn bit_flips_in_the_last_log_record_reopen_at_the_previous_commit() {
    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let (good_len, log, before, _) = five_commits(dir.path());
    for trial in 0..150 {
        let mut damaged = log.clone();
        let flips = rng.gen_range(1..=3);
        let mut at = Vec::new();
        for _ in 0..flips {
            let byte = rng.gen_range(good_len as usize..log.len());
            let bit = rng.gen_range(0..8);
            damaged[byte] ^= 1 << bit;
            at.push((byte, bit));
        }
        if damaged == log {
            continue; // two flips of one bit cancelled out
        }
        fs::write(dir.path().join(LOG_FILE), &damaged).unwrap();
        check_recovers(
            dir.path(),
            &before,
            good_len,
            &format!("seed {seed}, trial {trial}: bits flipped at {at:?}"),
        );
    }
}

#[test]
fn a_damaged_record_mid_log_is_refused_with_its_offset_and_nothing_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let mut lens = vec![log_len(dir.path())];
    let mut states = vec![dump(&db)];
    for n in 1..=4 {
        let mut ops = txn(n);
        if n == 3 {
            // More than the torn window (4 MiB) of records after the
            // damage, so it cannot be the torn write of a power loss.
            ops.push(add(n, "comment", "x".repeat(5 << 20)));
        }
        db.commit(ops).unwrap();
        lens.push(log_len(dir.path()));
        states.push(dump(&db));
    }
    drop(db);
    let log = fs::read(dir.path().join(LOG_FILE)).unwrap();
    // Damage the payload of transaction 2 (the third record is intact):
    // cutting there would drop the acknowledged transactions 3 and 4.
    let mut damaged = log.clone();
    damaged[lens[1] as usize + 12] ^= 0x10;
    fs::write(dir.path().join(LOG_FILE), &damaged).unwrap();
    for read_only in [false, true] {
        let err = if read_only {
            Db::open_read_only(dir.path())
        } else {
            Db::open(dir.path())
        }
        .err()
        .expect("damage mid-log is refused");
        match &err {
            OpenError::Damaged { offset, detail, .. } => {
                assert_eq!(*offset, lens[1], "the offset of transaction 2's record");
                assert!(detail.contains("checksum"), "the cause: {detail}");
            }
            other => panic!("not a damage error: {other}"),
        }
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("byte {}", lens[1])) && msg.contains("truncate"),
            "{msg}"
        );
        assert_eq!(
            fs::read(dir.path().join(LOG_FILE)).unwrap(),
            damaged,
            "the log is left as it was"
        );
    }
    // Following the message (truncating at the offset) opens the library
    // at transaction 1; restoring the log brings all four back.
    fs::write(dir.path().join(LOG_FILE), &damaged[..lens[1] as usize]).unwrap();
    assert_eq!(dump(&Db::open(dir.path()).unwrap()), states[1]);
    fs::write(dir.path().join(LOG_FILE), &log).unwrap();
    assert_eq!(dump(&Db::open(dir.path()).unwrap()), states[4]);
}

#[test]
fn a_log_without_a_complete_header_is_replaced_and_the_data_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.commit(txn(1)).unwrap();
    db.compact().unwrap();
    let state = dump(&db);
    drop(db);
    let log = fs::read(dir.path().join(LOG_FILE)).unwrap();
    fs::write(dir.path().join(LOG_FILE), &log[..10]).unwrap();
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(dump(&db), state);
    assert!(db.open_report().warnings[0].contains("truncated"));
    db.commit(txn(2)).unwrap();
    let state = dump(&db);
    drop(db);
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(dump(&db), state, "a commit into the recreated log survives");
    assert!(db.open_report().warnings.is_empty());
}

#[test]
fn any_bit_flip_in_the_data_file_is_refused_with_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    for n in 1..=3 {
        db.commit(txn(n)).unwrap();
    }
    db.commit(vec![Op::CreateIndex("artist".into())]).unwrap();
    db.compact().unwrap();
    drop(db);
    let path = dir.path().join(DATA_FILE);
    let data = fs::read(&path).unwrap();
    for byte in 0..data.len() {
        for bit in 0..8 {
            let mut damaged = data.clone();
            damaged[byte] ^= 1 << bit;
            fs::write(&path, &damaged).unwrap();
            for read_only in [false, true] {
                let res = if read_only {
                    Db::open_read_only(dir.path())
                } else {
                    Db::open(dir.path())
                };
                let Err(e) = res else {
                    panic!("bit {bit} of byte {byte} flipped: the data file was loaded");
                };
                let msg = e.to_string();
                assert!(
                    msg.contains(DATA_FILE)
                        && ["checksum", "magic", "version", "truncated"]
                            .iter()
                            .any(|w| msg.contains(w)),
                    "bit {bit} of byte {byte}: unclear error: {msg}"
                );
            }
        }
    }
    for cut in [0, 10, 24, data.len() / 2, data.len() - 1] {
        fs::write(&path, &data[..cut]).unwrap();
        assert!(
            Db::open(dir.path()).is_err(),
            "a data file cut at {cut} was loaded"
        );
    }
    fs::write(&path, &data).unwrap();
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.read().len(), 3, "the intact file still opens");
    assert!(db.read().is_indexed("artist"));
}

#[test]
fn a_compaction_cut_off_before_its_new_log_loses_nothing() {
    // The crash window: the new data file is renamed in, but the log is
    // still the old generation's. Rebuild that state by putting the old
    // log back after a compaction.
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.commit(txn(1)).unwrap();
    db.commit(txn(2)).unwrap();
    let old_log = fs::read(dir.path().join(LOG_FILE)).unwrap();
    db.compact().unwrap();
    let state = dump(&db);
    assert_eq!(db.stats().generation, 1);
    drop(db);
    fs::write(dir.path().join(LOG_FILE), &old_log).unwrap();
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(
        dump(&db),
        state,
        "the data file holds everything the stale log did"
    );
    let w = &db.open_report().warnings;
    assert!(w.len() == 1 && w[0].contains("stale log"), "{w:?}");
    assert_eq!(
        db.open_report().replayed,
        0,
        "the stale log is not replayed on top"
    );
    db.commit(txn(3)).unwrap();
    let state = dump(&db);
    drop(db);
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(dump(&db), state, "commits after the repair survive");
    assert!(db.open_report().warnings.is_empty());
}

#[test]
fn ids_of_deleted_entries_are_not_handed_out_again_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    for _ in 0..3 {
        let id = db.reserve_id();
        db.commit(vec![Op::CreateEntry(id), add(id, "title", "x")])
            .unwrap();
    }
    db.commit(vec![Op::DeleteEntry(3)]).unwrap();
    db.compact().unwrap();
    drop(db);
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.reserve_id(), 4, "entry 3 was deleted; its id stays used");
}

// ---- the process lock -----------------------------------------------------

/// Set in a child process: the database directory it holds open.
const HOLDER_ENV: &str = "SPINDLE_TEST_LOCK_HOLDER";

/// The child's side: open `dir` for writing, commit entry 1, say READY,
/// then obey stdin: `commit N` commits entry N and answers `ACK N`;
/// `compact N` commits and compacts N times, then answers `DONE`. Exits
/// when stdin closes.
#[allow(
    clippy::exit,
    reason = "a crash test's child process: it must not outlive its parent, and it \
              ends without unwinding, as a killed server would"
)]
fn hold_lock(dir: &str) {
    // Never outlive a parent that stopped talking (generous: on a loaded
    // machine 150 fsynced compactions have taken over a minute).
    std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_secs(600));
        std::process::exit(2);
    });
    let db = Db::open(dir).unwrap();
    db.commit(vec![Op::CreateEntry(1), add(1, "title", "from the child")])
        .unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "READY").unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lines() {
        let line = line.unwrap();
        let (cmd, n) = line.split_once(' ').unwrap();
        let n: u32 = n.parse().unwrap();
        match cmd {
            "commit" => {
                db.commit(vec![Op::CreateEntry(n), add(n, "title", "later")])
                    .unwrap();
                writeln!(out, "ACK {n}").unwrap();
            }
            "compact" => {
                for i in 0..n {
                    let id = db.reserve_id();
                    db.commit(vec![Op::CreateEntry(id), add(id, "n", i64::from(i))])
                        .unwrap();
                    db.compact().unwrap();
                }
                writeln!(out, "DONE").unwrap();
            }
            _ => panic!("unknown command {line}"),
        }
        out.flush().unwrap();
    }
}

struct Holder {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Holder {
    /// Re-run this test binary, filtered to `test` (its full name, with
    /// the module), as the lock holder.
    fn spawn(test: &str, dir: &Path) -> Holder {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(HOLDER_ENV, dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut h = Holder {
            child,
            stdin,
            stdout,
        };
        h.expect("READY");
        h
    }

    /// Read lines until one equals `want` (skipping the test harness's).
    fn expect(&mut self, want: &str) {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the child exited before saying {want}");
            // The harness prints "test NAME ... " before the test runs,
            // so the first answer shares its line.
            if line.trim_end().ends_with(want) {
                return;
            }
        }
    }

    fn send(&mut self, cmd: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{cmd}").unwrap();
        stdin.flush().unwrap();
    }

    fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the child failed: {status}");
    }
}

#[test]
fn a_second_writer_process_is_told_the_pid_holding_the_lock() {
    if let Ok(dir) = std::env::var(HOLDER_ENV) {
        return hold_lock(&dir);
    }
    let dir = tempfile::tempdir().unwrap();
    let mut holder = Holder::spawn(
        "recovery::a_second_writer_process_is_told_the_pid_holding_the_lock",
        dir.path(),
    );
    let pid = holder.child.id();
    match Db::open(dir.path()) {
        Err(e @ OpenError::Locked { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("database is locked by PID {pid}")),
                "{msg}"
            );
        }
        Err(e) => panic!("expected the lock error, got: {e}"),
        Ok(_) => panic!("a second writer opened a locked database"),
    }
    // A reader works alongside, and sees what the writer committed.
    let reader = Db::open_read_only(dir.path()).unwrap();
    assert!(reader.is_read_only());
    assert_eq!(dump(&reader)[&1].len(), 1);
    holder.send("commit 2");
    holder.expect("ACK 2");
    let reader = Db::open_read_only(dir.path()).unwrap();
    assert_eq!(
        dump(&reader).keys().copied().collect::<Vec<_>>(),
        [1, 2],
        "a reader opened after a commit sees it"
    );
    holder.finish();
    // The lock dies with its process.
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.read().len(), 2);
}

#[test]
fn read_only_opens_succeed_while_another_process_compacts() {
    if let Ok(dir) = std::env::var(HOLDER_ENV) {
        return hold_lock(&dir);
    }
    let dir = tempfile::tempdir().unwrap();
    let mut holder = Holder::spawn(
        "recovery::read_only_opens_succeed_while_another_process_compacts",
        dir.path(),
    );
    holder.send("compact 150");
    let mut opens = 0;
    let mut last = 0;
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(20) {
        let reader = Db::open_read_only(dir.path())
            .unwrap_or_else(|e| panic!("read-only open {opens} during compactions: {e}"));
        let n = reader.read().len();
        assert!(n >= last, "a later reader saw fewer entries ({n} < {last})");
        last = n;
        opens += 1;
        if n == 151 {
            break;
        }
    }
    holder.expect("DONE");
    holder.finish();
    assert!(opens > 10, "only {opens} opens overlapped the compactions");
}

#[test]
fn a_second_writer_in_the_same_process_is_refused_too() {
    let dir = tempfile::tempdir().unwrap();
    let _db = Db::open(dir.path()).unwrap();
    let e = Db::open(dir.path())
        .err()
        .expect("the second open must fail");
    assert!(
        e.to_string()
            .contains(&format!("database is locked by PID {}", std::process::id())),
        "{e}"
    );
}
