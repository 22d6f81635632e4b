# Library benchmark smoke run: a 2,000-entry library loaded into Spindle and
# both SQLite layouts, two rounds of the seven queries. The run fails if the
# three contestants return different rows; performance targets are reported,
# not enforced (CI machines are too noisy for that).
cargo build --release --locked -p spindle
out=$(mktemp "$ROOT/target/bench-library-ci.XXXXXX")
target/release/spindle bench library --entries 2000 --rounds 2 | tee "$out"
grep -q '^| `artist:metallica` | ' "$out"
grep -q '^| `tracknr:4 OR artist~foo AND NOT artist:weezer` | ' "$out"
grep -Eq '^\| Spindle peak RSS under 400 MiB \| .* \| (PASS|MISS) \|$' "$out"
rm -f "$out"
echo "== bench library smoke run passed"

# Hot-tier policy simulation smoke run (`--quick`: 10,000 tracks, 300,000
# requests, every policy, both workloads). The run fails if a policy ever
# holds more bytes than its budget (the simulator asserts it) or if the
# tables or the target report are missing; the targets themselves are
# measured on the full run (docs/tiers-policy.md), not enforced here.
out=$(mktemp "$ROOT/target/tiers-sim-ci.XXXXXX")
target/release/spindle tiers simulate --quick --no-chart | tee "$out"
grep -q '^stationary workload, byte hit ratio' "$out"
grep -q '^shifting workload, object hit ratio' "$out"
grep -Eq '^\| 0\.8 \| 10% \| [0-9.]+ \|' "$out"
grep -Eq '^- (PASS|MISS): Spindle ≥ W-TinyLFU at every point \(byte hit ratio\)' "$out"
rm -f "$out"
echo "== tiers simulate smoke run passed"
