# Library benchmark smoke run: a 2,000-entry library loaded into Spindle and
# both SQLite layouts, two rounds of the seven queries. The run fails if the
# three contestants return different rows, or if Spindle's speed-up over
# tuned SQLite, measured in the same run, falls under its floor (geometric
# mean of the seven queries >= 5x, each >= 1x: scripts/bench-floors.py);
# the full targets (100,000 entries) are measured outside CI.
release_build
out=$(mktemp "$ROOT/target/bench-library-ci.XXXXXX")
target/release/spindle bench library --entries 2000 --rounds 2 | tee "$out"
grep -q '^| `artist:metallica` | ' "$out"
grep -q '^| `tracknr:4 OR artist~foo AND NOT artist:weezer` | ' "$out"
grep -Eq '^\| Spindle peak RSS under 400 MiB \| .* \| (PASS|MISS) \|$' "$out"
scripts/bench-floors.py library "$out"
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

# Subsonic latency smoke run: a 3,000-track library served in-process, 30
# requests of each method. The run fails if any method answers an error,
# the table is missing, or a method's median or slowest answer is over its
# generous floor (20 ms, 100 ms: scripts/bench-floors.py); the 5 ms p99
# target is measured on the full run (100,000 tracks, docs/benchmarks.md).
out=$(mktemp "$ROOT/target/bench-subsonic-ci.XXXXXX")
target/release/spindle bench subsonic --tracks 3000 --requests 30 | tee "$out"
grep -q '^| getAlbumList2 byGenre | 30 | ' "$out"
grep -q '^| search3 "" (500 per page) | 30 | ' "$out"
grep -q '^| getMusicDirectory | 30 | ' "$out"
scripts/bench-floors.py subsonic "$out"
rm -f "$out"
echo "== bench subsonic smoke run passed"

# Cover resize smoke run: a 1500×1500 JPEG to 300 px, 5 rounds, cold and
# cached. The run fails if the pipeline fails or the table is missing; the
# 30 ms target is measured on the full run (3000×3000, docs/benchmarks.md),
# not enforced here.
out=$(mktemp "$ROOT/target/bench-covers-ci.XXXXXX")
target/release/spindle bench covers --source 1500 --rounds 5 | tee "$out"
grep -q '^| Spindle, cold (no cache)' "$out"
grep -q '^| Spindle, cached hit' "$out"
rm -f "$out"
echo "== bench covers smoke run passed"

# Transcoding smoke run (docs/transcoding.md): four 20 s FLAC files to Opus
# through `stream` and through the same ffmpeg command run directly. The
# run fails if a transcode fails or a repeated one is not served from the
# cache; the throughput and time-to-first-byte targets are reported, not
# enforced.
apt_install ffmpeg
out=$(mktemp "$ROOT/target/bench-transcode-ci.XXXXXX")
target/release/spindle bench transcode --tracks 4 --seconds 20 --ttfb-rounds 3 | tee "$out"
grep -q '^| transcodes per second | ' "$out"
grep -Eq '^- (PASS|MISS): time to first byte under 5 ms cached' "$out"
rm -f "$out"
echo "== bench transcode smoke run passed"

# Cluster capacity simulation smoke run (crates/capacity): a small and a
# large population, the table, the JSON and the chart. The run fails if the
# model refuses its defaults or a table row or the chart is missing; the
# model's figures are checked by `cargo test -p spindle-capacity`.
out=$(mktemp "$ROOT/target/cluster-sim-ci.XXXXXX")
target/release/spindle cluster simulate --listeners 1000,1000000 --chart "$out.svg" | tee "$out"
grep -Eq '^\| 1,000 \| 1 \| network \| ' "$out"
grep -Eq '^\| 1,000,000 \| 40 \| network \| ' "$out"
grep -q '</svg>' "$out.svg"
target/release/spindle cluster simulate --json >/dev/null
rm -f "$out" "$out.svg"
echo "== cluster simulate smoke run passed"
