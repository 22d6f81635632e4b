//! The iobench sweep end to end, on a small test file.

use crate::common;

use std::time::Duration;

use spindle_io::bench::{self, BenchConfig, Rw, Target};
use spindle_io::{BenchError, EngineKind, UringPolicy};

fn tiny(target: Target) -> BenchConfig {
    let mut cfg = BenchConfig::new(target);
    cfg.size = Some(8 << 20);
    cfg.depths = vec![1, 4];
    // Long enough that a disk stalled by other work still completes IOs
    // in every round (150 ms once measured none on a loaded machine).
    cfg.runtime = Duration::from_millis(500);
    cfg.rounds = 2;
    cfg.uring = UringPolicy::Allow;
    cfg
}

#[test]
fn a_small_sweep_measures_every_point_charts_it_and_removes_its_test_file() {
    let dir = common::TempDir::new("sweep");
    let mut cfg = tiny(Target::TempFileIn(dir.0.clone()));
    cfg.direct = true;
    let report = bench::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(
        report.points.len(),
        2 * 3 * 2,
        "2 patterns x 3 engines x 2 depths"
    );
    for p in &report.points {
        let m = &p.spindle.median;
        assert!(m.read_iops > 0.0, "{p:?}");
        assert_eq!(m.write_iops > 0.0, p.rw == Rw::RandRw, "{p:?}");
        assert!(
            m.lat_p50_us > 0.0 && m.lat_p50_us <= m.lat_p99_us && m.lat_p99_us <= m.lat_p999_us
        );
        assert!(m.cpu_us_per_io > 0.0);
        assert_eq!(p.spindle.rounds.len(), 2);
        assert!(p.fio.is_none() && p.ratio.is_none());
    }
    // psync makes one pread or pwrite per IO (plus the few still in flight
    // at the deadline, which are not counted as IOs).
    let psync4 = report
        .points
        .iter()
        .find(|p| p.engine == EngineKind::Psync && p.depth == 4 && p.rw == Rw::RandRw)
        .unwrap();
    let per_io = psync4.spindle.median.syscalls_per_io;
    assert!((1.0..1.01).contains(&per_io), "{per_io}");
    // The test file is gone.
    assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 0);

    let table = bench::report::table(&report);
    assert_eq!(table.lines().count(), 1 + 12);
    assert!(table.lines().next().unwrap().contains("p99_us"));
    let advice = bench::report::advice(&report);
    assert!(advice.contains("IOPS stops growing at depth"), "{advice}");
    assert!(advice.contains("SQPOLL"), "{advice}");
    let svg = bench::chart::svg(&report);
    assert!(svg.starts_with("<svg") && svg.contains("uring-sqpoll randrw"));
    let png = bench::chart::png(&report).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["points"][0]["engine"], "psync");
}

#[test]
fn a_read_only_target_is_read_and_left_unchanged() {
    let dir = common::TempDir::new("ro");
    let (path, data) = common::random_file(&dir, "existing", 2 << 20, 5);
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let mut cfg = tiny(Target::ReadOnly(path.clone()));
    cfg.size = None;
    cfg.rws = vec![Rw::RandRead];
    cfg.rounds = 1;
    let report = bench::run(&cfg, &mut |_| {}).unwrap();
    assert!(report.readonly);
    assert_eq!(report.size, 2 << 20);
    assert!(report
        .points
        .iter()
        .all(|p| p.spindle.median.read_iops > 0.0));
    assert_eq!(std::fs::read(&path).unwrap(), data);
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
    assert!(path.exists(), "a read-only target is never removed");

    cfg.rws = vec![Rw::RandRead, Rw::RandRw];
    let err = bench::run(&cfg, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("use --rw randread"), "{err}");
}

#[test]
fn a_target_shorter_than_the_size_asked_is_an_error_that_says_so() {
    let dir = common::TempDir::new("short");
    let (path, _) = common::random_file(&dir, "small", 1 << 20, 6);
    let mut cfg = tiny(Target::ReadOnly(path));
    cfg.rws = vec![Rw::RandRead];
    cfg.size = Some(4 << 20);
    let err = bench::run(&cfg, &mut |_| {}).unwrap_err();
    assert!(
        matches!(
            err,
            BenchError::TooShort {
                actual: 1048576,
                wanted: 4194304,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("pass a smaller --size"), "{err}");
}

#[test]
fn an_unwritable_directory_is_an_error_that_suggests_what_to_do() {
    // /proc refuses new files even to root.
    let mut cfg = tiny(Target::TempFileIn("/proc".into()));
    cfg.depths = vec![1];
    let err = bench::run(&cfg, &mut |_| {}).unwrap_err();
    assert!(matches!(err, BenchError::CreateTestFile { .. }), "{err}");
    assert!(
        err.to_string().contains("pass a writable directory"),
        "{err}"
    );

    // A file where a directory is expected points at --device-readonly.
    let dir = common::TempDir::new("notdir");
    let (path, _) = common::random_file(&dir, "f", 4096, 7);
    let err = bench::run(&tiny(Target::TempFileIn(path)), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("--device-readonly"), "{err}");
}

#[test]
fn with_sqpoll_auto_and_no_spare_core_the_report_says_sqpoll_did_not_poll() {
    // A thread allowed one CPU has no core to spare, whatever the machine has.
    std::thread::spawn(|| {
        let cpus = spindle_io::allowed_cpus().unwrap();
        spindle_io::pin_current_thread(&cpus[..1]).unwrap();
        let dir = common::TempDir::new("sqpoll-auto");
        let mut cfg = tiny(Target::TempFileIn(dir.0.clone()));
        cfg.engines = vec![EngineKind::Uring, EngineKind::UringSqpoll];
        cfg.rws = vec![Rw::RandRead];
        cfg.rounds = 1;
        cfg.sqpoll_policy = spindle_io::SqpollPolicy::IfSpareCore;
        let report = bench::run(&cfg, &mut |_| {}).unwrap();
        assert_eq!(report.sqpoll_polled, Some(false));
        let advice = bench::report::advice(&report);
        assert!(advice.contains("uring-sqpoll had no poller"), "{advice}");
        assert!(advice.contains("no spare core (1 CPUs)"), "{advice}");
    })
    .join()
    .unwrap();
}
