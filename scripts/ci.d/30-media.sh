# Media: scanning real files of every format and importing a real beets
# library. Installs the encoders that write the test corpus and beets (from
# PyPI, into .venv), then runs the tests that need them (#[ignore]d in the
# plain unit stage): the scan_corpus and beets_import modules of the media
# crate's test binary `it`. (`--workspace`, not `-p spindle-media`, so the
# build is stage 20's; the other crates' `it` binaries match no test here.)
apt_install sox libsox-fmt-mp3 lame flac vorbis-tools opus-tools ffmpeg python3-venv
if [[ ! -x "$ROOT/.venv/bin/beet" ]]; then
    echo "== installing beets into .venv"
    [[ -x "$ROOT/.venv/bin/pip" ]] || python3 -m venv "$ROOT/.venv"
    "$ROOT/.venv/bin/pip" install -q beets
fi
SPINDLE_BEET="$ROOT/.venv/bin/beet" SPINDLE_REQUIRE_MEDIA_TOOLS=1 \
    cargo test --workspace --release --locked --test it \
        -- --include-ignored scan_corpus:: beets_import::
