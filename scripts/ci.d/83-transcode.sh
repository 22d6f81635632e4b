# Transcoding (docs/transcoding.md): the transcode unit tests (plans,
# rules, the encode slots, the cache) ran in stage 20-unit; here
# tests/interop/test_transcode.py
# against a fresh `spindle serve` and Debian's ffmpeg: every input format
# (FLAC, MP3, Opus, Vorbis, AAC, ALAC, AIFF, WAV, WavPack; made with sox,
# flac, lame, opusenc, wavpack and ffmpeg) to every output format at two
# bitrates, checked with ffprobe; seeks; a client that disconnects; 20
# concurrent transcodes under a cap of 2; the cached copy's ranges. Then
# tests/interop/test_fair_load.py (docs/security.md): one user floods
# covers at hundreds of sizes and a hundred transcodes while a second
# user's requests keep p99 under 100 ms and its transcode is served.
apt_install ffmpeg sox flac lame opus-tools wavpack python3-venv
[[ -x "$ROOT/.venv/bin/pip" ]] || python3 -m venv "$ROOT/.venv"
for pkg in pytest mutagen; do
    "$ROOT/.venv/bin/pip" show -q "$pkg" >/dev/null 2>&1 || "$ROOT/.venv/bin/pip" install -q "$pkg"
done
release_build
SPINDLE_SUBSONIC_TESTS=1 SPINDLE_BIN="$ROOT/target/release/spindle" \
    timeout 600 "$ROOT/.venv/bin/python" -m pytest -q "$ROOT/tests/interop/test_transcode.py"
SPINDLE_SUBSONIC_TESTS=1 SPINDLE_BIN="$ROOT/target/release/spindle" \
    timeout 300 "$ROOT/.venv/bin/python" -m pytest -q -s "$ROOT/tests/interop/test_fair_load.py"
