//! SPINDLE_IO_URING=0 switches io_uring off. Its own test binary, since it
//! changes the process environment.

use spindle_io::{open_with_fallback, EngineConfig, EngineKind, UringPolicy, URING_ENV};

#[test]
fn spindle_io_uring_0_in_the_environment_switches_io_uring_off() {
    std::env::set_var(URING_ENV, "0");
    let cfg = EngineConfig::new(EngineKind::Uring, 2);
    assert_eq!(cfg.uring, UringPolicy::Deny("SPINDLE_IO_URING=0".into()));
    let (engine, why) = open_with_fallback(&cfg).unwrap();
    assert_eq!(engine.kind(), EngineKind::Psync);
    assert!(why.unwrap().to_string().contains("SPINDLE_IO_URING=0"));
    std::env::set_var(URING_ENV, "1");
    assert_eq!(UringPolicy::from_env(), UringPolicy::Allow);
}
