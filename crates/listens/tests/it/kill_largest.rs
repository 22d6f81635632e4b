//! `kill -9` of a real process writing the largest listens the limits
//! accept, then reopen: the history opens (a write cut by the kill is a
//! torn tail, never taken for damage), every acknowledged listen is there
//! byte for byte, and of the batch in flight at most a prefix.
//!
//! The test re-runs its own binary as the writer (selected by an
//! environment variable): a few threads, so appends share fsyncs, each
//! printing `ACK <thread> <n>` once its batch n returned. Batch n of a
//! thread is a pure function of (thread, n). `SPINDLE_CRASH_SEED` replays
//! the kill delays; `SPINDLE_LISTENS_KILLS` sets the number of kills
//! (default 30).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use spindle_listens::limits::{
    MAX_ALBUM, MAX_ALBUM_ARTIST, MAX_ARTIST, MAX_CLIENT, MAX_MBID, MAX_TITLE, MAX_USER,
};
use spindle_listens::{Listen, Listens, RecentQuery};

const WRITER_ENV: &str = "SPINDLE_LISTENS_KILL_WRITER";
const START_ENV: &str = "SPINDLE_LISTENS_KILL_START";
const THREADS: usize = 3;

/// Exactly `len` bytes: `seed`'s digits, then two-byte characters.
fn text(seed: &str, len: usize) -> String {
    let mut s = String::from(seed);
    while s.len() + 2 <= len {
        s.push('ø');
    }
    while s.len() < len {
        s.push('x');
    }
    s
}

fn user(t: usize) -> String {
    text(&format!("w{t}"), MAX_USER)
}

/// Batch `n` (from 1) of thread `t`: one to three listens, every field at
/// its limit.
fn batch(t: usize, n: u32) -> Vec<Listen> {
    (0..1 + n % 3)
        .map(|i| {
            let tag = format!("{t}.{n}.{i}");
            Listen {
                user: user(t),
                timestamp: 1_600_000_000
                    + t as i64 * 100_000_000
                    + i64::from(n) * 10
                    + i64::from(i),
                artist: text(&tag, MAX_ARTIST),
                artists: Vec::new(),
                title: text(&tag, MAX_TITLE),
                album: text(&tag, MAX_ALBUM),
                album_artist: text(&tag, MAX_ALBUM_ARTIST),
                mbid: text(&tag, MAX_MBID),
                duration: Some(n),
                track_number: Some(i),
                client: text(&tag, MAX_CLIENT),
            }
        })
        .collect()
}

#[allow(
    clippy::exit,
    reason = "a crash test's child process: it must not outlive its parent, and it \
              ends without unwinding, as a killed server would"
)]
fn writer(dir: &str) {
    let starts: Vec<u32> = std::env::var(START_ENV)
        .expect("start counts")
        .split(',')
        .map(|s| s.parse().expect("a count"))
        .collect();
    // Never outlive a parent that failed to kill us.
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(60));
        std::process::exit(2);
    });
    let say = |line: String| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    };
    let (store, _) = match Listens::open(std::path::Path::new(dir)) {
        Ok(x) => x,
        Err(e) => {
            say(format!("ERR open: {e}"));
            std::process::exit(3)
        }
    };
    let store = Arc::new(store);
    say("READY".into());
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = Arc::clone(&store);
            let start = starts[t];
            std::thread::spawn(move || {
                for n in start + 1.. {
                    if let Err(e) = store.submit(&batch(t, n)) {
                        say(format!("ERR submit {t} {n}: {e}"));
                        std::process::exit(3)
                    }
                    say(format!("ACK {t} {n}"));
                }
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
}

#[test]
fn acknowledged_largest_listens_survive_sigkill_at_random_moments() {
    if let Ok(dir) = std::env::var(WRITER_ENV) {
        return writer(&dir);
    }
    let seed: u64 = std::env::var("SPINDLE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let kills: usize = std::env::var("SPINDLE_LISTENS_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    println!("seed {seed} (SPINDLE_CRASH_SEED={seed} to replay)");
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut done = [0u32; THREADS];
    let mut cut_total = 0;
    for round in 0..kills {
        let ctx = format!("seed {seed}, round {round}");
        let starts: Vec<String> = done.iter().map(u32::to_string).collect();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "kill_largest::acknowledged_largest_listens_survive_sigkill_at_random_moments",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(WRITER_ENV, dir.path())
            .env(START_ENV, starts.join(","))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        // The test harness prints its own lines first.
        loop {
            let line = rx.recv_timeout(Duration::from_secs(30));
            let line = line.unwrap_or_else(|e| panic!("{ctx}: no READY: {e}"));
            assert!(!line.starts_with("ERR"), "{ctx}: {line}");
            if line.ends_with("READY") {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(rng.gen_range(1..40)));
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        let mut acked = done;
        for line in rx.try_iter() {
            assert!(!line.starts_with("ERR"), "{ctx}: {line}");
            let f: Vec<&str> = line.split(' ').collect();
            if f.len() != 3 || f[0] != "ACK" {
                continue;
            }
            let (t, n): (usize, u32) = (f[1].parse().unwrap(), f[2].parse().unwrap());
            acked[t] = acked[t].max(n);
        }

        let (store, report) = Listens::open(dir.path())
            .unwrap_or_else(|e| panic!("{ctx}: a kill left damage, not a torn tail: {e}"));
        cut_total += report.truncated_bytes;
        for (t, &acked) in acked.iter().enumerate() {
            let mut got = store
                .recent(
                    &user(t),
                    &RecentQuery {
                        limit: usize::MAX,
                        page: 1,
                        ..RecentQuery::default()
                    },
                )
                .listens;
            got.reverse();
            let want: Vec<Listen> = (1..=acked).flat_map(|n| batch(t, n)).collect();
            assert!(
                got.len() >= want.len(),
                "{ctx}: thread {t} lost acknowledged listens"
            );
            assert_eq!(got[..want.len()], want[..], "{ctx}: thread {t}");
            let in_flight = batch(t, acked + 1);
            let extra = &got[want.len()..];
            assert!(
                extra.len() <= in_flight.len() && extra[..] == in_flight[..extra.len()],
                "{ctx}: thread {t}: {} listens beyond the acknowledged ones",
                extra.len()
            );
        }
        done = acked;
    }
    println!("{kills} kills, {cut_total} bytes of torn tails cut, batches {done:?}");
    assert!(done.iter().all(|&n| n > 0), "the writer made progress");
}
