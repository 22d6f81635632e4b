//! Requests the engines refuse before they reach the disk, with messages a
//! user can act on; files shorter than asked; read-only files.

use crate::common;

use spindle_io::{
    open, open_file, Access, EngineConfig, EngineKind, IoEngine, Op, Request, Slot, SubmitError,
    UringPolicy,
};

fn engine(kind: EngineKind, depth: usize, direct: bool) -> Box<dyn IoEngine> {
    let mut c = EngineConfig::new(kind, depth);
    c.buf_size = 16384;
    c.direct = direct;
    c.uring = UringPolicy::Allow;
    c.sqpoll_policy = spindle_io::SqpollPolicy::Always;
    open(&c).unwrap()
}

const ENGINES: [EngineKind; 3] = [
    EngineKind::Psync,
    EngineKind::Uring,
    EngineKind::UringSqpoll,
];

#[test]
fn misaligned_direct_requests_are_rejected_with_the_alignment_in_the_message() {
    let dir = common::TempDir::new("misaligned");
    let (path, _) = common::random_file(&dir, "data", 65536, 1);
    for kind in ENGINES {
        let mut e = engine(kind, 2, true);
        let file = e
            .add_file(
                open_file(&path, Access::ReadOnly, true).unwrap(),
                Access::ReadOnly,
            )
            .unwrap();
        let err = e
            .submit(Request {
                file,
                op: Op::Read,
                offset: 100,
                len: 4096,
                slot: Slot(0),
            })
            .unwrap_err();
        assert_eq!(
            err,
            SubmitError::Misaligned {
                align: 4096,
                offset: 100,
                len: 4096
            }
        );
        assert_eq!(
            err.to_string(),
            "O_DIRECT needs offset and length aligned to 4096 bytes; got offset 100, length 4096"
        );
        let err = e
            .submit(Request {
                file,
                op: Op::Read,
                offset: 4096,
                len: 1000,
                slot: Slot(0),
            })
            .unwrap_err();
        assert!(err.to_string().contains("length 1000"), "{err}");
        // Nothing was queued: the slot is still free and nothing is in flight.
        assert_eq!(e.in_flight(), 0);
        assert!(e.buf(Slot(0)).is_some());
    }
}

#[test]
fn bad_slots_lengths_and_files_are_refused() {
    let dir = common::TempDir::new("refused");
    let (path, _) = common::random_file(&dir, "data", 65536, 2);
    for kind in ENGINES {
        let mut e = engine(kind, 2, false);
        let file = e
            .add_file(
                open_file(&path, Access::ReadOnly, false).unwrap(),
                Access::ReadOnly,
            )
            .unwrap();
        let req = Request {
            file,
            op: Op::Read,
            offset: 0,
            len: 4096,
            slot: Slot(0),
        };
        let too_long = e.submit(Request { len: 20000, ..req }).unwrap_err();
        assert!(matches!(
            too_long,
            SubmitError::TooLong {
                len: 20000,
                buf_size: 16384
            }
        ));
        let no_slot = e
            .submit(Request {
                slot: Slot(2),
                ..req
            })
            .unwrap_err();
        assert!(
            no_slot.to_string().contains("the engine has 2 slots"),
            "{no_slot}"
        );
        assert_eq!(
            e.submit(Request { len: 0, ..req }).unwrap_err(),
            SubmitError::Empty
        );
        if kind != EngineKind::Psync {
            // psync runs a request inside submit; io_uring keeps it in flight.
            e.submit(req).unwrap();
            assert_eq!(
                e.submit(req).unwrap_err(),
                SubmitError::SlotBusy { slot: 0 }
            );
            assert!(
                e.buf(Slot(0)).is_none(),
                "{kind}: buffer visible while in flight"
            );
            let mut done = Vec::new();
            e.wait(1, &mut done).unwrap();
            assert_eq!(done.len(), 1);
        }
    }
}

#[test]
fn writes_to_a_file_registered_read_only_are_refused() {
    let dir = common::TempDir::new("readonly");
    let (path, data) = common::random_file(&dir, "data", 65536, 3);
    for kind in ENGINES {
        let mut e = engine(kind, 1, false);
        let file = e
            .add_file(
                open_file(&path, Access::ReadOnly, false).unwrap(),
                Access::ReadOnly,
            )
            .unwrap();
        let err = e
            .submit(Request {
                file,
                op: Op::Write,
                offset: 0,
                len: 4096,
                slot: Slot(0),
            })
            .unwrap_err();
        assert_eq!(err, SubmitError::ReadOnly { id: file.index() });
        assert!(err.to_string().contains("read-only"), "{err}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), data);
}

#[test]
fn reads_past_the_end_of_a_short_file_come_back_short_not_as_errors() {
    let dir = common::TempDir::new("short");
    let (path, data) = common::random_file(&dir, "data", 10_000, 4);
    for kind in ENGINES {
        let mut e = engine(kind, 2, false);
        let file = e
            .add_file(
                open_file(&path, Access::ReadOnly, false).unwrap(),
                Access::ReadOnly,
            )
            .unwrap();
        e.submit(Request {
            file,
            op: Op::Read,
            offset: 8192,
            len: 4096,
            slot: Slot(0),
        })
        .unwrap();
        e.submit(Request {
            file,
            op: Op::Read,
            offset: 16384,
            len: 4096,
            slot: Slot(1),
        })
        .unwrap();
        let mut done = Vec::new();
        while e.in_flight() > 0 {
            e.wait(2, &mut done).unwrap();
        }
        done.sort_by_key(|c| c.req.slot);
        assert_eq!(done[0].result, Ok(10_000 - 8192), "{kind}");
        assert!(!done[0].is_full());
        assert_eq!(&e.buf(Slot(0)).unwrap()[..10_000 - 8192], &data[8192..]);
        assert_eq!(done[1].result, Ok(0), "{kind}: read past the end");
    }
}
