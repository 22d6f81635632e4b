# Unit, integration, differential and crash tests of every crate.
cargo test --workspace --locked --release
