# Formatting, lints and docs, as CI demands: cargo fmt --check, clippy
# -D warnings, and rustdoc -D warnings (broken or private intra-doc links).
rustup component list --installed 2>/dev/null | grep -q rustfmt || rustup component add rustfmt clippy
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
