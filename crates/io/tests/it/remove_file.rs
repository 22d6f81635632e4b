//! Files come and go while an engine runs (the server registers each
//! streamed file and removes it when the stream ends): a removed file's id
//! is refused, then handed to the next file, and a file with a request in
//! flight cannot be removed.

use spindle_io::{
    open_with_fallback, Access, EngineConfig, EngineKind, Op, Request, Slot, SubmitError,
};

#[test]
fn a_removed_file_frees_its_id_for_the_next_file_and_busy_files_stay() {
    let dir = std::env::temp_dir().join(format!("spindle-io-remove-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a"), dir.join("b"));
    std::fs::write(&a, vec![1u8; 8192]).unwrap();
    std::fs::write(&b, vec![2u8; 8192]).unwrap();
    for kind in [EngineKind::Psync, EngineKind::Uring] {
        let mut cfg = EngineConfig::new(kind, 2);
        cfg.max_files = 1;
        let (mut e, _) = open_with_fallback(&cfg).unwrap();
        let read = |file, slot| Request {
            file,
            op: Op::Read,
            offset: 4096,
            len: 4096,
            slot: Slot(slot),
        };
        let fa = e
            .add_file(std::fs::File::open(&a).unwrap(), Access::ReadOnly)
            .unwrap();
        // The table is full.
        assert!(e
            .add_file(std::fs::File::open(&b).unwrap(), Access::ReadOnly)
            .is_err());
        e.submit(read(fa, 0)).unwrap();
        if e.kind() == EngineKind::Uring && e.in_flight() > 0 {
            // io_uring may still own the request: removal must wait.
            match e.remove_file(fa) {
                Err(SubmitError::FileBusy { .. }) | Ok(()) => {}
                other => panic!("{kind}: {other:?}"),
            }
        }
        let mut done = Vec::new();
        while e.in_flight() > 0 {
            e.wait(1, &mut done).unwrap();
        }
        assert!(done[0].is_full(), "{kind}");
        let _ = e.remove_file(fa);
        assert!(
            matches!(e.remove_file(fa), Err(SubmitError::UnknownFile { .. })),
            "{kind}"
        );
        assert!(
            matches!(e.submit(read(fa, 1)), Err(SubmitError::UnknownFile { .. })),
            "{kind}"
        );
        let fb = e
            .add_file(std::fs::File::open(&b).unwrap(), Access::ReadOnly)
            .unwrap();
        assert_eq!(fb.index(), fa.index(), "{kind}: the id is reused");
        e.submit(read(fb, 1)).unwrap();
        done.clear();
        while e.in_flight() > 0 {
            e.wait(1, &mut done).unwrap();
        }
        assert!(done[0].is_full(), "{kind}");
        assert!(
            e.buf(Slot(1)).unwrap()[..4096].iter().all(|&x| x == 2),
            "{kind}: the new file's bytes"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
