//! The fio JSON parser on real fio output (saved from fio 3.33 runs with the
//! arguments `spindle iobench --fio` uses).

use spindle_io::bench::fio;

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

#[test]
fn fio_psync_group_report_parses_into_iops_latency_and_cpu() {
    let m = fio::parse(&fixture("fio-3.33-psync-randread-numjobs2.json")).unwrap();
    assert!(close(m.read_iops, 30822.177822), "{m:?}");
    assert_eq!(m.write_iops, 0.0);
    assert!(close(m.read_bw, 126247640.0));
    assert!(close(m.lat_mean_us, 64.599108644));
    assert!(close(m.lat_p99_us, 118.272));
    assert!(m.lat_p50_us > 0.0 && m.lat_p50_us <= m.lat_p99_us && m.lat_p99_us <= m.lat_p999_us);
    assert_eq!(m.ios, 30853);
    // (1.4% + 21.7%) of 2000 ms of job time over 30853 IOs.
    assert!(
        close(m.cpu_us_per_io, 0.231 * 2.0 * 1e6 / 30853.0),
        "{}",
        m.cpu_us_per_io
    );
}

#[test]
fn fio_io_uring_sqpoll_randrw_parses_reads_and_writes() {
    let m = fio::parse(&fixture("fio-3.33-io_uring-sqpoll-randrw-qd16.json")).unwrap();
    assert!(close(m.read_iops, 47381.618382));
    assert!(close(m.write_iops, 20497.502498));
    assert!(close(m.iops(), 47381.618382 + 20497.502498));
    assert!(close(m.write_bw, 83957770.0));
    assert!(close(m.lat_p99_us, 362.496));
    assert_eq!(m.ios, 47429 + 20518);
}

#[test]
fn warnings_before_the_json_are_skipped() {
    let text = format!(
        "fio: file hash not empty on exit\n{}",
        fixture("fio-3.33-psync-randread-numjobs2.json")
    );
    assert!(close(fio::parse(&text).unwrap().read_iops, 30822.177822));
}
