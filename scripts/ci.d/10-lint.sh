# Formatting, lints, docs and the minimum Rust version in one check build:
# cargo fmt --check (stable), then clippy -D warnings and rustdoc -D
# warnings (broken or private intra-doc links) with the toolchain named by
# `rust-version` in the root Cargo.toml. Clippy type-checks every target,
# so running it on that toolchain is also the minimum-version check (code
# or a locked dependency that needs a newer compiler fails here rather
# than on a user's machine), and rustdoc reuses the same checked
# dependencies: one check build of the workspace instead of three.
# Installs that toolchain (minimal profile, with clippy) only when missing.
rustup component list --installed 2>/dev/null | grep -q rustfmt || rustup component add rustfmt clippy
cargo fmt --all -- --check
msrv=$(sed -n 's/^rust-version = "\([0-9.]*\)"$/\1/p' "$ROOT/Cargo.toml")
if [[ -z "$msrv" ]]; then
    echo "== no rust-version in Cargo.toml" >&2
    exit 1
fi
if ! cargo "+$msrv" clippy --version >/dev/null 2>&1; then
    echo "== installing Rust $msrv with clippy"
    rustup toolchain install "$msrv" --profile minimal --component clippy
fi
cargo "+$msrv" clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo "+$msrv" doc --workspace --no-deps --locked
