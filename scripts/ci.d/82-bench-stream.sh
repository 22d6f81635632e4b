# Streaming benchmark smoke run: a small corpus served by `spindle serve`
# (io_uring engine) and by Debian's nginx in the same run, wrk fetching
# whole files and 64 KiB ranges for 2 s each, then 200 paced 320 kbit/s
# listeners for 5 s against each. The run fails if a server sends wrong
# bytes, wrk sees errors from Spindle, a listener connection fails, or
# Spindle's server CPU per request is over 1.8x nginx's in the same run
# (scripts/bench-floors.py says why that floor: noise passes, a path
# twice as costly fails). Requests/s ratios are printed, not enforced.
# The full benchmark (docs/bench-stream.md) stays out of CI.
apt_install nginx wrk
release_build
out=$(mktemp "$ROOT/target/bench-stream-ci.XXXXXX")
target/release/spindle bench stream --files 8 --min-mb 1 --max-mb 3 \
    --duration 2 --rounds 1 --connections 32 --io-engines uring \
    --listeners 200 --listen-seconds 5 | tee "$out"
grep -q '^| whole files | 32 | Spindle (uring) | ' "$out"
grep -q '^| 64 KiB ranges | 32 | nginx | ' "$out"
# No wrk errors against Spindle (last column).
if grep -E '^\| [^|]+ \| 32 \| Spindle \(uring\) \|.*\| [1-9][0-9]* \|$' "$out"; then
    echo "== wrk saw errors from Spindle"
    false
fi
# Every listener connected, none failed.
grep -Eq '^\| Spindle \(uring\) \| 200 \| [0-9]+ \| 0 \| ' "$out"
scripts/bench-floors.py stream "$out"
rm -f "$out"
echo "== bench stream smoke run passed"
