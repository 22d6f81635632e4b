# Storage tiers: (the unit tests — SigV4 against the AWS examples,
# failover mid-stream, hot-folder crash safety with kill -9, the byte
# budget, the weighted choice, config errors — ran in stage 20-unit) a
# short device-choice benchmark, and
# the end-to-end test against a real three-node Garage cluster on
# loopback (scripts/garage-cluster.sh): upload through Spindle, stream
# through `spindle serve` with a hot folder, kill a node mid-stream.
#
# Garage comes from `ensure_garage` (scripts/test): built from crates.io
# into cargo's bin folder only when it is not already there.
apt_install sox python3-venv
ensure_garage
[[ -x "$ROOT/.venv/bin/pip" ]] || python3 -m venv "$ROOT/.venv"
"$ROOT/.venv/bin/pip" show -q pytest >/dev/null 2>&1 || "$ROOT/.venv/bin/pip" install -q pytest
"$ROOT/.venv/bin/pip" show -q boto3 >/dev/null 2>&1 || "$ROOT/.venv/bin/pip" install -q boto3
release_build
"$ROOT/target/release/spindle" tiers bench-devices --requests 1000
SPINDLE_TIERS_TESTS=1 SPINDLE_BIN="$ROOT/target/release/spindle" \
    timeout 600 "$ROOT/.venv/bin/python" -m pytest -q "$ROOT/tests/tiers/test_tiers_garage.py"
SPINDLE_TIERS_TESTS=1 timeout 300 "$ROOT/.venv/bin/python" -m pytest -q -s "$ROOT/tests/tiers/test_garage_conditional.py"
