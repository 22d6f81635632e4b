//! The runtime's tests: failover, uploads, pins, prefill, re-replication,
//! shutdown.

use super::*;
use crate::device::{Throttle, Throttled};
use crate::placement::DecayedLfu;

fn throttled(root: &Path, fail_after: Option<u64>, per_chunk: Duration) -> Arc<dyn Backend> {
    Arc::new(Throttled::new(
        Arc::new(Folder::new("f", root.to_owned(), false)),
        Throttle {
            parallel: 4,
            service: Duration::ZERO,
            fail_after,
            per_chunk,
        },
    ))
}

async fn read_all(s: &mut TierStream) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(c) = s.next_chunk().await {
        out.extend_from_slice(&c?);
    }
    Ok(out)
}

#[tokio::test]
async fn a_stream_fails_over_mid_way_and_resumes_at_the_byte_it_reached() {
    let d = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..400_000u32).map(|i| (i * 7 % 251) as u8).collect();
    for dev in ["a", "b", "c"] {
        std::fs::create_dir_all(d.path().join(dev).join("x")).unwrap();
        std::fs::write(d.path().join(dev).join("x/t.flac"), &data).unwrap();
    }
    let mut failovers = 0;
    for round in 0..12 {
        let tiers = Arc::new(
            Tiers::with_devices(
                vec![
                    // Breaks after 100 000 bytes.
                    (
                        "a".into(),
                        throttled(&d.path().join("a"), Some(100_000), Duration::ZERO),
                    ),
                    // Stalls: each chunk takes longer than the stall timeout.
                    (
                        "b".into(),
                        throttled(&d.path().join("b"), None, Duration::from_millis(400)),
                    ),
                    (
                        "c".into(),
                        throttled(&d.path().join("c"), None, Duration::ZERO),
                    ),
                ],
                &d.path().join(format!("data{round}")),
                Box::new(DecayedLfu::new(0)),
            )
            .unwrap(),
        );
        let mut cfg = tiers.cfg.clone();
        cfg.stall_timeout_ms = 150;
        let tiers = Arc::new(Tiers {
            cfg,
            ..Arc::try_unwrap(tiers).ok().unwrap()
        });
        for name in ["a", "b", "c"] {
            tiers
                .index
                .add("x/t.flac", name, data.len() as u64)
                .unwrap();
        }
        let t = TrackRef {
            key: "x/t.flac".into(),
            folder: None,
        };
        let mut s = tiers.open(&t, 0).await.unwrap();
        assert_eq!(s.len(), 400_000);
        let got = read_all(&mut s).await.unwrap();
        assert!(
            got == data,
            "round {round}: bytes differ after {} failovers",
            s.failovers()
        );
        failovers += s.failovers();
        // A ranged read from the middle, ending early.
        let mut s = tiers.open(&t, 150_000).await.unwrap().limit(250_000);
        assert_eq!(read_all(&mut s).await.unwrap(), &data[150_000..250_000]);
    }
    assert!(failovers > 0, "no round ever failed over");
}

#[tokio::test]
async fn upload_fills_mindevcount_copies_and_skips_devices_marked_down() {
    use crate::config::{ColdConfig, HotConfig};
    let d = tempfile::tempdir().unwrap();
    let music = d.path().join("music");
    std::fs::create_dir_all(music.join("A")).unwrap();
    let src = music.join("A/t.flac");
    std::fs::write(&src, vec![5u8; 70_000]).unwrap();
    let folder = |name: &str, state| ColdConfig {
        name: name.into(),
        state,
        kind: ColdKind::Folder {
            path: d.path().join(name),
        },
    };
    let cfg = |b_state| TiersConfig {
        cold: vec![
            folder("a", DeviceState::Alive),
            folder("b", b_state),
            folder("c", DeviceState::Alive),
        ],
        hot: Some(HotConfig {
            path: d.path().join("hot"),
            budget: 1 << 20,
        }),
        mindevcount: 3,
        ..TiersConfig::default()
    };
    let data = d.path().join("data");
    let t = TrackRef {
        key: "A/t.flac".into(),
        folder: Some(0),
    };
    let tiers = Tiers::new(
        cfg(DeviceState::Alive),
        std::slice::from_ref(&music),
        &data,
        Box::new(DecayedLfu::new(1 << 20)),
    )
    .unwrap();
    assert_eq!(tiers.replicate(&t, &src).await.unwrap(), 3);
    let mut on: Vec<String> = tiers
        .index()
        .devices_of("A/t.flac")
        .into_iter()
        .map(|x| x.0)
        .collect();
    on.sort();
    assert_eq!(on, ["a", "b"]);
    assert_eq!(
        std::fs::read(d.path().join("b/A/t.flac")).unwrap().len(),
        70_000
    );
    drop(tiers);
    // b goes down: its copy no longer counts and c gets one.
    let tiers = Tiers::new(
        cfg(DeviceState::Down),
        std::slice::from_ref(&music),
        &data,
        Box::new(DecayedLfu::new(1 << 20)),
    )
    .unwrap();
    assert_eq!(tiers.replicate(&t, &src).await.unwrap(), 3);
    assert!(d.path().join("c/A/t.flac").exists());
    // Reads skip the down device and the music folder (named music1).
    let tiers = Arc::new(tiers);
    let s = tiers.open(&t, 0).await.unwrap();
    assert_ne!(s.device(), "b");
    let st = tiers.status();
    assert_eq!(
        st.devices
            .iter()
            .map(|x| x.name.as_str())
            .collect::<Vec<_>>(),
        ["hot", "music1", "a", "b", "c"]
    );
    assert_eq!(st.devices[3].state, "down");
}

/// A started `Tiers` with Spindle's policy and a hot folder of
/// `budget` bytes, over `n` tracks `T/00.flac`… of 100,000 bytes
/// (track i filled with byte i) in a music folder under `d`.
fn spindle_hot_tier(d: &Path, n: u8, budget: u64) -> Arc<Tiers> {
    use crate::config::HotConfig;
    use crate::placement::FromPolicy;
    let music = d.join("music");
    std::fs::create_dir_all(music.join("T")).unwrap();
    for i in 0..n {
        std::fs::write(music.join(format!("T/{i:02}.flac")), vec![i; 100_000]).unwrap();
    }
    let cfg = TiersConfig {
        hot: Some(HotConfig {
            path: d.join("hot"),
            budget,
        }),
        ..TiersConfig::default()
    };
    let tiers = Arc::new(
        Tiers::new(
            cfg,
            std::slice::from_ref(&music),
            &d.join("data"),
            Box::new(FromPolicy(crate::policy::Spindle::new(budget))),
        )
        .unwrap(),
    );
    tiers.start_background();
    tiers
}

/// Track i of [`spindle_hot_tier`].
fn t(i: usize) -> TrackRef {
    TrackRef {
        key: format!("T/{i:02}.flac"),
        folder: Some(0),
    }
}

#[tokio::test]
async fn pins_and_the_policy_together_never_want_more_than_the_hot_budget() {
    let d = tempfile::tempdir().unwrap();
    let budget = 1_000_000;
    let tiers = spindle_hot_tier(d.path(), 20, budget);
    let hot = tiers.hot().unwrap().clone();
    let check = |when: &str| {
        let st = tiers.status();
        let h = st.hot.as_ref().unwrap();
        assert!(h.used <= budget, "{when}: {} of {budget} bytes", h.used);
        for i in 10..15 {
            assert!(
                hot.contains(&t(i).key).is_some(),
                "{when}: pinned track {i} is not hot"
            );
        }
        assert_eq!(h.promote_failures, 0, "{when}: promotions failed");
        assert_eq!((h.pinned, h.pinned_bytes), (5, 500_000), "{when}");
    };
    // The policy fills the hot folder first.
    for _ in 0..3 {
        for i in 0..10 {
            tiers.record_access(&t(i), 100_000);
        }
    }
    tiers.idle().await;
    assert!(hot.used() > budget / 2, "the policy filled {}", hot.used());
    // Five pins arrive: their bytes come out of the policy's budget,
    // so what it held beyond the rest is demoted first.
    tiers.set_pinned((10..15).map(t).collect());
    tiers.idle().await;
    check("after pinning");
    // Traffic over every track, pinned ones too: the pins stay, the
    // policy admits within what is left, nothing is refused.
    for round in 0..6 {
        for i in 0..20 {
            tiers.record_access(&t((i * 7 + round) % 20), 100_000);
        }
        tiers.idle().await;
        check(&format!("round {round}"));
    }
    // Unpinned, the bytes are the policy's again.
    tiers.set_pinned(Vec::new());
    tiers.idle().await;
    let st = tiers.status();
    assert_eq!(st.hot.as_ref().unwrap().pinned_bytes, 0);
    assert!(hot.used() <= budget);
}

#[tokio::test]
async fn the_listening_history_fills_an_empty_hot_tier_before_any_request() {
    let d = tempfile::tempdir().unwrap();
    // Room for three tracks and a half.
    let tiers = spindle_hot_tier(d.path(), 10, 350_000);
    // Track i was played i times; 9 is pinned, so it is hot already
    // and its bytes are the pins'.
    tiers.set_pinned(vec![t(9)]);
    for i in 1..10 {
        tiers.record_listen(&t(i), i as f64);
    }
    let queued = tokio::task::spawn_blocking({
        let tiers = tiers.clone();
        move || tiers.prefill_hot()
    })
    .await
    .unwrap();
    assert_eq!(queued, 2, "the pin leaves room for two");
    tiers.idle().await;
    let hot = tiers.hot().unwrap().clone();
    let hot_now: Vec<usize> = (0..10)
        .filter(|&i| hot.contains(&t(i).key).is_some())
        .collect();
    assert_eq!(hot_now, [7, 8, 9]);
    let (shard, name) = crate::hot::object_name(&t(8).key);
    assert_eq!(
        std::fs::read(hot.root().join("objects").join(shard).join(name)).unwrap(),
        vec![8u8; 100_000]
    );
    // Full now: a second call promotes nothing and demotes nothing.
    let again = tokio::task::spawn_blocking({
        let tiers = tiers.clone();
        move || tiers.prefill_hot()
    })
    .await
    .unwrap();
    assert_eq!(again, 0);
    let st = tiers.status();
    assert_eq!(st.hot.as_ref().unwrap().promote_failures, 0);
}

#[tokio::test]
async fn a_lost_device_s_copies_are_made_again_elsewhere_at_bounded_bandwidth() {
    use crate::config::ColdConfig;
    let d = tempfile::tempdir().unwrap();
    let music = d.path().join("music");
    std::fs::create_dir_all(music.join("A")).unwrap();
    let keys: Vec<String> = (0..3).map(|i| format!("A/{i}.flac")).collect();
    for (i, k) in keys.iter().enumerate() {
        let data: Vec<u8> = (0..70_000u32)
            .map(|x| (x * (i as u32 + 3) % 251) as u8)
            .collect();
        std::fs::write(music.join(k), data).unwrap();
    }
    let folder = |name: &str| ColdConfig {
        name: name.into(),
        state: DeviceState::Alive,
        kind: ColdKind::Folder {
            path: d.path().join(name),
        },
    };
    let cfg = TiersConfig {
        cold: vec![folder("a"), folder("b")],
        mindevcount: 2,
        rereplicate_after_secs: 0,
        rereplicate_bandwidth: 150_000,
        ..TiersConfig::default()
    };
    let mut tiers = Tiers::new(
        cfg,
        std::slice::from_ref(&music),
        &d.path().join("data"),
        Box::new(DecayedLfu::new(0)),
    )
    .unwrap();
    let track = |k: &str| TrackRef {
        key: k.to_owned(),
        folder: Some(0),
    };
    for k in &keys {
        // The music folder and a.
        assert_eq!(tiers.replicate(&track(k), &music.join(k)).await.unwrap(), 2);
    }
    tiers.set_repair_every(Some(Duration::from_millis(50)));
    let tiers = Arc::new(tiers);
    tiers.start_background();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let st = tiers.status().replication;
    assert_eq!((st.below_mindevcount, st.copies_made), (0, 0), "{st:?}");
    assert!(st.lost_devices.is_empty());
    // Device a disappears.
    std::fs::remove_dir_all(d.path().join("a")).unwrap();
    let t0 = Instant::now();
    let mut seen_below = false;
    loop {
        let st = tiers.status().replication;
        seen_below |= st.below_mindevcount > 0 && st.rereplicating;
        if st.copies_made == 3 && st.below_mindevcount == 0 && !st.rereplicating {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "{st:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = t0.elapsed();
    // 210 000 bytes at 150 000 bytes/s.
    assert!(took >= Duration::from_millis(1300), "took {took:?}");
    assert!(seen_below, "the status never showed the tracks below");
    for k in &keys {
        assert_eq!(
            std::fs::read(d.path().join("b").join(k)).unwrap(),
            std::fs::read(music.join(k)).unwrap()
        );
        let on: Vec<String> = tiers
            .index()
            .devices_of(k)
            .into_iter()
            .map(|x| x.0)
            .collect();
        assert!(on.contains(&"b".to_owned()), "{k}: {on:?}");
    }
    let st = tiers.status();
    assert_eq!(st.replication.lost_devices, ["a"]);
    assert!(st.devices.iter().any(|x| x.name == "a" && x.lost));
    assert_eq!(st.replication.failures, 0);
}

#[tokio::test]
async fn a_track_with_no_working_copy_is_an_error_not_a_hang() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("a/x")).unwrap();
    std::fs::write(d.path().join("a/x/t.flac"), vec![1u8; 200_000]).unwrap();
    let tiers = Arc::new(
        Tiers::with_devices(
            vec![(
                "a".into(),
                throttled(&d.path().join("a"), Some(70_000), Duration::ZERO),
            )],
            &d.path().join("data"),
            Box::new(DecayedLfu::new(0)),
        )
        .unwrap(),
    );
    tiers.index.add("x/t.flac", "a", 200_000).unwrap();
    let t = TrackRef {
        key: "x/t.flac".into(),
        folder: None,
    };
    let mut s = tiers.open(&t, 0).await.unwrap();
    let e = read_all(&mut s).await.unwrap_err();
    assert!(
        e.to_string().contains("every copy failed at byte 70000"),
        "{e}"
    );
    let missing = TrackRef {
        key: "nope".into(),
        folder: None,
    };
    assert!(matches!(
        tiers.open(&missing, 0).await,
        Err(OpenError::NoCopy { .. })
    ));
    let st = tiers.status();
    assert_eq!(st.devices[0].name, "a");
    assert!(st.devices[0].errors >= 1);
}

#[tokio::test]
async fn a_music_folder_key_that_is_a_symlink_out_of_the_folder_is_not_served() {
    let d = tempfile::tempdir().unwrap();
    let music = d.path().join("music");
    std::fs::create_dir_all(music.join("A")).unwrap();
    std::fs::write(music.join("A/t.flac"), vec![3u8; 1000]).unwrap();
    std::fs::write(d.path().join("secret"), b"not music").unwrap();
    std::os::unix::fs::symlink("../../secret", music.join("A/out.flac")).unwrap();
    std::os::unix::fs::symlink("t.flac", music.join("A/in.flac")).unwrap();
    let tiers = Arc::new(
        Tiers::new(
            TiersConfig::default(),
            std::slice::from_ref(&music),
            &d.path().join("data"),
            Box::new(DecayedLfu::new(0)),
        )
        .unwrap(),
    );
    let track = |k: &str| TrackRef {
        key: k.to_owned(),
        folder: Some(0),
    };
    let mut s = tiers.open(&track("A/in.flac"), 0).await.unwrap();
    assert_eq!(read_all(&mut s).await.unwrap(), vec![3u8; 1000]);
    match tiers.open(&track("A/out.flac"), 0).await {
        Err(OpenError::AllFailed { errors, .. }) => {
            assert!(errors.iter().all(|e| e.contains("outside")), "{errors:?}")
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a link out of the music folder was served"),
    }
}

#[tokio::test]
async fn shutdown_stops_every_task_mid_promotion_and_waits_for_them() {
    use crate::config::HotConfig;
    use crate::placement::FromPolicy;
    let d = tempfile::tempdir().unwrap();
    let music = d.path().join("music");
    std::fs::create_dir_all(music.join("T")).unwrap();
    std::fs::write(music.join("T/00.flac"), vec![1u8; 200_000]).unwrap();
    let budget = 1_000_000;
    let cfg = TiersConfig {
        hot: Some(HotConfig {
            path: d.path().join("hot"),
            budget,
        }),
        // 200 000 bytes at 20 000 bytes/s: ten seconds in flight.
        promote_bandwidth: 20_000,
        ..TiersConfig::default()
    };
    let mut tiers = Tiers::new(
        cfg,
        std::slice::from_ref(&music),
        &d.path().join("data"),
        Box::new(FromPolicy(crate::policy::Spindle::new(budget))),
    )
    .unwrap();
    tiers.set_repair_every(Some(Duration::from_millis(20)));
    tiers.set_sample_every(Duration::from_millis(20));
    let tiers = Arc::new(tiers);
    tiers.start_background();
    let hot = tiers.hot().unwrap().clone();
    tiers.record_access(&t(0), 200_000);
    let t0 = Instant::now();
    while hot.used() == 0 {
        assert!(t0.elapsed() < Duration::from_secs(5), "no promotion began");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Every task has run at least once: the status file is there.
    while !tiers.status_path.exists() {
        assert!(t0.elapsed() < Duration::from_secs(5), "no status written");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let t1 = Instant::now();
    tokio::time::timeout(Duration::from_secs(2), tiers.shutdown())
        .await
        .expect("shutdown waits for no paced copy");
    assert!(t1.elapsed() < Duration::from_secs(1), "{:?}", t1.elapsed());
    // The promotion cut short left nothing behind, and no task holds the
    // tiers any more.
    assert_eq!((hot.used(), hot.len()), (0, 0));
    let leftovers: Vec<_> = walk(&d.path().join("hot"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert_eq!(Arc::strong_count(&tiers), 1);
    assert_eq!(tiers.status().hot.unwrap().promotions, 0);
    // Nothing runs: queueing does nothing and waiting returns at once.
    tiers.record_access(&t(0), 200_000);
    tokio::time::timeout(Duration::from_millis(100), tiers.idle())
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_millis(100), tiers.shutdown())
        .await
        .unwrap();
    // Reads still work.
    let mut s = tiers.open(&t(0), 0).await.unwrap();
    assert_eq!(read_all(&mut s).await.unwrap().len(), 200_000);
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
