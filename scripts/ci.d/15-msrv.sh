# Minimum Rust version: checks the workspace with the toolchain named by
# `rust-version` in the root Cargo.toml, so code or a locked dependency that
# needs a newer compiler fails here rather than on a user's machine. Installs
# that toolchain (minimal profile) only when it is missing; `check`, not
# `build`, to keep the stage short.
msrv=$(sed -n 's/^rust-version = "\([0-9.]*\)"$/\1/p' "$ROOT/Cargo.toml")
if [[ -z "$msrv" ]]; then
    echo "== no rust-version in Cargo.toml" >&2
    exit 1
fi
if ! cargo "+$msrv" --version >/dev/null 2>&1; then
    echo "== installing Rust $msrv"
    rustup toolchain install "$msrv" --profile minimal
fi
cargo "+$msrv" check --workspace --locked
