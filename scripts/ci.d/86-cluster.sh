# Cluster (docs/cluster.md): the loopback test of tests/cluster/. A
# three-node Garage cluster (scripts/garage-cluster.sh), a primary and two
# replicas started from empty data dirs, nginx (Debian's) in front:
# scrobbles through any node (ListenBrainz, Subsonic, Last.fm 2.0 with
# pylast) read on every node; a stream through nginx resumed with Range
# after the replica serving it is SIGKILLed; the primary SIGKILLed under
# scrobble load, a replica promoted with `spindle cluster promote`, every
# acknowledged scrobble present once; the deposed primary rejoins as a
# replica (what it never shipped set aside); the primary restarted after
# a compaction still ships its library. It prints the failover counts.
#
# Garage comes from `ensure_garage` (scripts/test), as in stage 85-tiers.
apt_install nginx sox python3-venv
ensure_garage
[[ -x "$ROOT/.venv/bin/pip" ]] || python3 -m venv "$ROOT/.venv"
missing=()
for pkg in pytest requests pylast; do
    "$ROOT/.venv/bin/pip" show -q "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "== installing into .venv: ${missing[*]}"
    "$ROOT/.venv/bin/pip" install -q "${missing[@]}"
fi
release_build
# The whole test takes about a minute; the timeouts bound a hang (each
# wait inside the test is bounded too).
SPINDLE_CLUSTER_TESTS=1 SPINDLE_BIN="$ROOT/target/release/spindle" \
    timeout --kill-after=20 300 "$ROOT/.venv/bin/python" -m pytest -q -s \
    -p no:cacheprovider "$ROOT/tests/cluster/test_cluster.py"
