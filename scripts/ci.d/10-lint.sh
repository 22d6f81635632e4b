# Formatting and lints, as CI demands: cargo fmt --check and clippy -D warnings.
rustup component list --installed 2>/dev/null | grep -q rustfmt || rustup component add rustfmt clippy
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
