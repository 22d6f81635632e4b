# Scrobble server: real clients against a fresh `spindle serve` on a free
# loopback port (pylast for Last.fm 2.0, liblistenbrainz for ListenBrainz,
# py-sonic posting forms to the Subsonic `.view` URLs with Python booleans,
# raw HTTP for Audioscrobbler 1.2 and the bad-input list, a real Maloja
# (malojaserver) as a forwarding target), plus a tiny
# smoke run of `spindle bench scrobble` (Spindle only; Maloja is left to
# the full benchmark, which is not run in CI).
apt_install python3-venv
[[ -x "$ROOT/.venv/bin/pip" ]] || python3 -m venv "$ROOT/.venv"
missing=()
for pkg in pylast liblistenbrainz pytest requests py-sonic malojaserver; do
    "$ROOT/.venv/bin/pip" show -q "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "== installing into .venv: ${missing[*]}"
    "$ROOT/.venv/bin/pip" install -q "${missing[@]}"
fi
release_build
SPINDLE_BIN="$ROOT/target/release/spindle" "$ROOT/.venv/bin/python" -m pytest -q "$ROOT/tests/interop"
# The smoke run: Spindle only (--no-maloja), small counts. The bench fails
# if a scrobble is not accepted; the greps check the tables are printed.
smoke="$("$ROOT/target/release/spindle" bench scrobble --scrobbles 2000 --clients 4 \
    --chart-listens 20000 --no-maloja)"
echo "$smoke"
grep -q '^| Spindle, .* | 2000 | ' <<<"$smoke"
grep -q '^| opening the history' <<<"$smoke"
