//! With io_uring switched off, engines fall back to psync and the sweep
//! skips the io_uring engines but still measures psync.

use crate::common;

use std::time::Duration;

use spindle_io::bench::{self, BenchConfig, Progress, Target};
use spindle_io::{
    open, open_file, open_with_fallback, Access, EngineConfig, EngineKind, Op, Request, SetupError,
    Slot, UringPolicy,
};

fn denied(kind: EngineKind) -> EngineConfig {
    let mut c = EngineConfig::new(kind, 4);
    c.uring = UringPolicy::Deny("test".into());
    c
}

#[test]
fn a_disabled_uring_falls_back_to_psync_that_reads_correctly() {
    let dir = common::TempDir::new("fallback");
    let (path, data) = common::random_file(&dir, "data", 65536, 9);
    for kind in [EngineKind::Uring, EngineKind::UringSqpoll] {
        let err = open(&denied(kind)).map(|_| ()).unwrap_err();
        assert!(matches!(err, SetupError::UringDisabled { .. }), "{err}");
        let (mut e, why) = open_with_fallback(&denied(kind)).unwrap();
        assert_eq!(e.kind(), EngineKind::Psync);
        assert!(why
            .unwrap()
            .to_string()
            .contains("io_uring is disabled (test)"));
        let file = e
            .add_file(
                open_file(&path, Access::ReadOnly, false).unwrap(),
                Access::ReadOnly,
            )
            .unwrap();
        e.submit(Request {
            file,
            op: Op::Read,
            offset: 4096,
            len: 4096,
            slot: Slot(3),
        })
        .unwrap();
        let mut done = Vec::new();
        e.wait(1, &mut done).unwrap();
        assert!(done[0].is_full());
        assert_eq!(e.buf(Slot(3)).unwrap(), &data[4096..8192]);
    }
}

#[test]
fn the_sweep_skips_uring_engines_when_disabled_and_still_measures_psync() {
    let dir = common::TempDir::new("sweep-nouring");
    let mut cfg = BenchConfig::new(Target::TempFileIn(dir.0.clone()));
    cfg.size = Some(4 << 20);
    cfg.depths = vec![1, 2];
    cfg.runtime = Duration::from_millis(100);
    cfg.rounds = 1;
    cfg.uring = UringPolicy::Deny("--no-uring".into());
    let mut notes = Vec::new();
    let report = bench::run(&cfg, &mut |p| {
        if let Progress::Note(n) = p {
            notes.push(n)
        }
    })
    .unwrap();
    assert!(report.points.iter().all(|p| p.engine == EngineKind::Psync));
    assert_eq!(report.points.len(), 4, "2 depths x 2 patterns");
    assert!(report.points.iter().all(|p| p.spindle.median.iops() > 0.0));
    assert_eq!(report.skipped.len(), 2, "{:?}", report.skipped);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("skipping uring: io_uring is disabled (--no-uring)")),
        "{notes:?}"
    );
}
