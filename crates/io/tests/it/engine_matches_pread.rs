//! The engines against plain `pread`: random offsets, lengths and depths,
//! every byte compared.

use crate::common;

use std::os::unix::fs::FileExt;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use spindle_io::{
    open, open_file, Access, Completion, EngineConfig, EngineKind, IoEngine, Op, Request, Slot,
};

const ENGINES: [EngineKind; 3] = [
    EngineKind::Psync,
    EngineKind::Uring,
    EngineKind::UringSqpoll,
];
const FILE_LEN: usize = 4 << 20;

fn engine(kind: EngineKind, depth: usize, buf: usize, direct: bool) -> Box<dyn IoEngine> {
    let mut c = EngineConfig::new(kind, depth);
    c.buf_size = buf;
    c.direct = direct;
    c.uring = spindle_io::UringPolicy::Allow;
    c.sqpoll_policy = spindle_io::SqpollPolicy::Always;
    open(&c).unwrap_or_else(|e| panic!("{kind} engine: {e}"))
}

/// Keeps `depth` random reads in flight until `total` are done and checks
/// each against the file's content.
fn check_reads(kind: EngineKind, depth: usize, direct: bool, seed: u64) {
    let dir = common::TempDir::new(&format!("pread-{kind}-{depth}-{direct}"));
    let (path, data) = common::random_file(&dir, "data", FILE_LEN, seed);
    let buf = 64 << 10;
    let mut e = engine(kind, depth, buf, direct);
    let file = e
        .add_file(
            open_file(&path, Access::ReadOnly, direct).unwrap(),
            Access::ReadOnly,
        )
        .unwrap();
    let reference = std::fs::File::open(&path).unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut random_req = |slot: usize| {
        let (offset, len) = if direct {
            let blocks = FILE_LEN / 4096;
            let len = rng.gen_range(1..=buf / 4096) * 4096;
            let off = rng.gen_range(0..=blocks - len / 4096) * 4096;
            (off as u64, len)
        } else {
            let len = rng.gen_range(1..=buf);
            (rng.gen_range(0..=FILE_LEN - len) as u64, len)
        };
        Request {
            file,
            op: Op::Read,
            offset,
            len,
            slot: Slot(slot),
        }
    };
    for s in 0..depth {
        e.submit(random_req(s)).unwrap();
    }
    let total = 400;
    let mut checked = 0;
    let mut submitted = depth;
    let mut done: Vec<Completion> = Vec::new();
    while e.in_flight() > 0 {
        done.clear();
        e.wait(1, &mut done).unwrap();
        for c in &done {
            assert!(c.is_full(), "seed {seed}: {kind} short/failed read {c:?}");
            let got = &e.buf(c.req.slot).expect("completed slot is idle")[..c.req.len];
            let mut want = vec![0u8; c.req.len];
            reference.read_exact_at(&mut want, c.req.offset).unwrap();
            assert_eq!(&want[..], &data[c.req.offset as usize..][..c.req.len]);
            assert!(
                got == &want[..],
                "seed {seed}: {kind} depth {depth} direct {direct}: data differs at offset {} len {}",
                c.req.offset,
                c.req.len
            );
            checked += 1;
            if submitted < total {
                e.submit(random_req(c.req.slot.0)).unwrap();
                submitted += 1;
            }
        }
    }
    assert_eq!(checked, total, "seed {seed}");
    assert_eq!(e.stats().completed, total as u64);
}

#[test]
fn every_engine_reads_what_pread_reads_at_random_offsets_and_depths() {
    let seed = common::seed();
    eprintln!("seed {seed} (set SPINDLE_TEST_SEED to repeat)");
    for kind in ENGINES {
        for depth in [1, 3, 8, 32] {
            for direct in [false, true] {
                check_reads(kind, depth, direct, seed ^ depth as u64);
            }
        }
    }
}

#[test]
fn writes_through_every_engine_are_read_back_by_pread() {
    let seed = common::seed();
    eprintln!("seed {seed}");
    for kind in ENGINES {
        for direct in [false, true] {
            let dir = common::TempDir::new(&format!("write-{kind}-{direct}"));
            let (path, mut data) = common::random_file(&dir, "data", 1 << 20, seed);
            let depth = 4;
            let mut e = engine(kind, depth, 8192, direct);
            let file = e
                .add_file(
                    open_file(&path, Access::ReadWrite, direct).unwrap(),
                    Access::ReadWrite,
                )
                .unwrap();
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut done = Vec::new();
            for round in 0..20 {
                // Distinct blocks per batch, so writes in flight never overlap.
                let mut blocks: Vec<u64> = (0..128).collect();
                for s in 0..depth {
                    let i = rng.gen_range(s..blocks.len());
                    blocks.swap(s, i);
                    let offset = blocks[s] * 8192;
                    let fill = (round * depth + s) as u8;
                    e.buf_mut(Slot(s)).unwrap().fill(fill);
                    data[offset as usize..][..8192].fill(fill);
                    e.submit(Request {
                        file,
                        op: Op::Write,
                        offset,
                        len: 8192,
                        slot: Slot(s),
                    })
                    .unwrap();
                }
                while e.in_flight() > 0 {
                    e.wait(1, &mut done).unwrap();
                }
            }
            assert_eq!(done.len(), 20 * depth);
            assert!(done.iter().all(Completion::is_full), "{kind}: {done:?}");
            drop(e);
            let back = std::fs::read(&path).unwrap();
            assert!(
                back == data,
                "seed {seed}: {kind} direct {direct}: file differs after writes"
            );
            let f = std::fs::File::open(&path).unwrap();
            let mut one = [0u8; 1];
            f.read_exact_at(&mut one, 0).unwrap();
            assert_eq!(one[0], data[0]);
        }
    }
}
