# Storage tiers: unit tests (SigV4 against the AWS examples, failover
# mid-stream, hot-folder crash safety with kill -9, the byte budget, the
# weighted choice, config errors), a short device-choice benchmark, and
# the end-to-end test against a real three-node Garage cluster on
# loopback (scripts/garage-cluster.sh): upload through Spindle, stream
# through `spindle serve` with a hot folder, kill a node mid-stream.
#
# Garage is built from crates.io only when it is not already installed
# (on PATH or in cargo's bin folder): the build takes about 16 minutes on
# a 2-core machine, so it is cached in the usual cargo bin folder.
apt_install sox python3-venv
GARAGE_BIN=$(command -v garage || true)
if [[ -z "$GARAGE_BIN" ]]; then
    GARAGE_BIN="${CARGO_HOME:-$HOME/.cargo}/bin/garage"
    if [[ ! -x "$GARAGE_BIN" ]]; then
        echo "== building garage (cargo install garage --locked; about 16 minutes)"
        cargo install garage --locked --quiet
    fi
fi
export GARAGE_BIN
[[ -x "$ROOT/.venv/bin/pip" ]] || python3 -m venv "$ROOT/.venv"
"$ROOT/.venv/bin/pip" show -q pytest >/dev/null 2>&1 || "$ROOT/.venv/bin/pip" install -q pytest
"$ROOT/.venv/bin/pip" show -q boto3 >/dev/null 2>&1 || "$ROOT/.venv/bin/pip" install -q boto3
cargo test --locked -p spindle-tiers --lib
cargo build --release --locked -p spindle
"$ROOT/target/release/spindle" tiers bench-devices --requests 1000
SPINDLE_TIERS_TESTS=1 SPINDLE_BIN="$ROOT/target/release/spindle" \
    timeout 600 "$ROOT/.venv/bin/python" -m pytest -q "$ROOT/tests/tiers/test_tiers_garage.py"
SPINDLE_TIERS_TESTS=1 timeout 300 "$ROOT/.venv/bin/python" -m pytest -q -s "$ROOT/tests/tiers/test_garage_conditional.py"
