//! How often the engines enter the kernel: once per batch in batch mode,
//! and with SQPOLL only to wake the poller or to wait.

use crate::common;

use spindle_io::{
    open, open_file, Access, EngineConfig, EngineKind, IoEngine, Op, Request, Slot, SubmitMode,
    UringPolicy,
};

fn reads(
    kind: EngineKind,
    submit: SubmitMode,
) -> (Box<dyn IoEngine>, spindle_io::FileId, common::TempDir) {
    reads_spinning(kind, submit, spindle_io::DEFAULT_SQPOLL_SPIN_US)
}

fn reads_spinning(
    kind: EngineKind,
    submit: SubmitMode,
    spin_us: u32,
) -> (Box<dyn IoEngine>, spindle_io::FileId, common::TempDir) {
    let dir = common::TempDir::new(&format!("doorbell-{kind}-{submit:?}-{spin_us}"));
    let (path, _) = common::random_file(&dir, "data", 1 << 20, 11);
    let mut c = EngineConfig::new(kind, 8);
    c.uring = UringPolicy::Allow;
    c.submit = submit;
    c.sqpoll_idle_ms = 1000;
    c.sqpoll_policy = spindle_io::SqpollPolicy::Always;
    c.sqpoll_spin_us = spin_us;
    // These measure the poller itself: no hand-over to the plain ring.
    c.sqpoll_plain_above = 0;
    let mut e = open(&c).unwrap();
    let f = e
        .add_file(
            open_file(&path, Access::ReadOnly, false).unwrap(),
            Access::ReadOnly,
        )
        .unwrap();
    (e, f, dir)
}

fn submit_all(e: &mut dyn IoEngine, file: spindle_io::FileId) {
    for s in 0..8 {
        let req = Request {
            file,
            op: Op::Read,
            offset: s as u64 * 8192,
            len: 4096,
            slot: Slot(s),
        };
        e.submit(req).unwrap();
    }
}

#[test]
fn batch_mode_sends_eight_requests_and_waits_for_them_in_one_kernel_entry() {
    let (mut e, file, _dir) = reads(EngineKind::Uring, SubmitMode::Batch);
    submit_all(e.as_mut(), file);
    assert_eq!(
        e.stats().syscalls,
        0,
        "nothing reaches the kernel before wait"
    );
    let mut done = Vec::new();
    e.wait(8, &mut done).unwrap();
    assert_eq!(done.len(), 8);
    assert!(done.iter().all(|c| c.is_full()));
    assert_eq!(e.stats().syscalls, 1, "{:?}", e.stats());
}

#[test]
fn eager_mode_sends_each_request_while_others_are_in_flight() {
    let (mut e, file, _dir) = reads(EngineKind::Uring, SubmitMode::Eager);
    submit_all(e.as_mut(), file);
    // The first waits to share an entry with the wait; the other 7 go at once.
    assert_eq!(e.stats().syscalls, 7, "{:?}", e.stats());
    let mut done = Vec::new();
    while done.len() < 8 {
        e.wait(1, &mut done).unwrap();
    }
}

#[test]
fn sqpoll_submits_without_entering_the_kernel_while_the_poller_is_awake() {
    let (mut e, file, _dir) = reads(EngineKind::UringSqpoll, SubmitMode::Eager);
    // One round trip wakes the poller; with an idle time of 1 s it then
    // stays awake for what follows.
    let warm = Request {
        file,
        op: Op::Read,
        offset: 0,
        len: 4096,
        slot: Slot(0),
    };
    e.submit(warm).unwrap();
    let mut done = Vec::new();
    e.wait(1, &mut done).unwrap();
    let before = e.stats();
    submit_all(e.as_mut(), file);
    let after = e.stats();
    assert_eq!(
        after.sqpoll_wakeups, before.sqpoll_wakeups,
        "{before:?} -> {after:?}"
    );
    done.clear();
    while done.len() < 8 {
        e.wait(8 - done.len(), &mut done).unwrap();
    }
    assert!(done.iter().all(|c| c.is_full()));
}

#[test]
fn sqpoll_without_a_spare_core_submits_plainly_unless_told_to_poll_anyway() {
    // On one CPU there is no core to spare, whatever the machine has.
    std::thread::spawn(|| {
        let cpus = spindle_io::allowed_cpus().unwrap();
        spindle_io::pin_current_thread(&cpus[..1]).unwrap();
        let mut c = EngineConfig::new(EngineKind::UringSqpoll, 2);
        c.uring = UringPolicy::Allow;
        let auto = open(&c).unwrap();
        assert_eq!(auto.kind(), EngineKind::UringSqpoll);
        assert!(!auto.sqpoll_active());
        c.sqpoll_policy = spindle_io::SqpollPolicy::Always;
        assert!(open(&c).unwrap().sqpoll_active());
        c.kind = EngineKind::Uring;
        assert!(!open(&c).unwrap().sqpoll_active());
    })
    .join()
    .unwrap();
}

#[test]
fn sqpoll_waits_watch_the_completion_ring_before_they_sleep() {
    // Reads of a file in the page cache complete in the poller at once: a
    // wait that watches the ring (for up to a second here) sees them
    // without entering the kernel; one that does not watch enters it.
    for (spin_us, watches) in [(1_000_000, true), (0, false)] {
        let (mut e, file, _dir) =
            reads_spinning(EngineKind::UringSqpoll, SubmitMode::Eager, spin_us);
        let mut done = Vec::new();
        for round in 0..3 {
            let before = e.stats();
            submit_all(e.as_mut(), file);
            done.clear();
            while done.len() < 8 {
                e.wait(8 - done.len(), &mut done).unwrap();
            }
            assert!(done.iter().all(|c| c.is_full()));
            let after = e.stats();
            if round == 0 {
                continue; // the poller's first wake-up
            }
            let spun = after.sqpoll_spun - before.sqpoll_spun;
            let entries = after.syscalls - before.syscalls;
            if watches {
                assert!(spun >= 1, "{before:?} -> {after:?}");
                assert_eq!(
                    entries,
                    after.sqpoll_wakeups - before.sqpoll_wakeups,
                    "{after:?}"
                );
            } else {
                assert_eq!(spun, 0, "{after:?}");
                assert!(entries >= 1, "{before:?} -> {after:?}");
            }
        }
    }
}

#[test]
fn sqpoll_hands_a_deep_queue_to_a_plain_ring_and_takes_it_back_when_shallow() {
    let dir = common::TempDir::new("doorbell-plain-above");
    let (path, data) = common::random_file(&dir, "data", 1 << 20, 12);
    for (above, plain_expected) in [(8, 24), (0, 0)] {
        let mut c = EngineConfig::new(EngineKind::UringSqpoll, 32);
        c.uring = UringPolicy::Allow;
        c.sqpoll_policy = spindle_io::SqpollPolicy::Always;
        c.sqpoll_plain_above = above;
        let mut e = open(&c).unwrap();
        let file = e
            .add_file(
                open_file(&path, Access::ReadOnly, false).unwrap(),
                Access::ReadOnly,
            )
            .unwrap();
        let read = |s: usize| Request {
            file,
            op: Op::Read,
            offset: s as u64 * 16384 + 512,
            len: 4096,
            slot: Slot(s),
        };
        let drain = |e: &mut Box<dyn IoEngine>, n: usize| {
            let mut done = Vec::new();
            while done.len() < n {
                e.wait(n - done.len(), &mut done).unwrap();
            }
            for c in &done {
                assert!(c.is_full(), "{c:?}");
                let off = c.req.offset as usize;
                assert_eq!(e.buf(c.req.slot).unwrap(), &data[off..off + 4096]);
            }
        };
        // 32 at once: the first `above` go to the poller, the rest plainly.
        for s in 0..32 {
            e.submit(read(s)).unwrap();
        }
        drain(&mut e, 32);
        assert_eq!(
            e.stats().sqpoll_plain,
            plain_expected,
            "above {above}: {:?}",
            e.stats()
        );
        // A shallow queue goes back to the poller once a wait has seen it
        // shallow (right after a large reap a deep queue looks shallow, so
        // the first shallow batch may still go plainly).
        for s in 0..3 {
            e.submit(read(s)).unwrap();
        }
        drain(&mut e, 3);
        let settled = e.stats().sqpoll_plain;
        assert!(
            (plain_expected..=plain_expected + 3).contains(&settled),
            "above {above}: {:?}",
            e.stats()
        );
        for _ in 0..3 {
            for s in 0..3 {
                e.submit(read(s)).unwrap();
            }
            drain(&mut e, 3);
        }
        assert_eq!(
            e.stats().sqpoll_plain,
            settled,
            "above {above}: {:?}",
            e.stats()
        );
    }
}
