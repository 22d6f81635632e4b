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
