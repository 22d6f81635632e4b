# Server: streaming and the Subsonic/OpenSubsonic API against a real client
# library (py-opensonic from PyPI) and a fresh `spindle serve --music DIR`
# on a free loopback port, over FLAC files made with sox and tagged with
# mutagen: browsing, search3, byte-exact streaming and ranges, cover art,
# scrobble, stars, playlists, the folder watcher, refusals and path
# traversal in every id parameter. Then headless Chromium (Debian's, driven
# over the DevTools protocol) through the web UI: log in, search, open an
# album, play, and check the <audio> time advances; then an artist page,
# the queue, now playing, recent listens after a scrobble, and the SVG
# charts with their bars. Then the abuse load of tests/interop/test_abuse_load.py.
apt_install sox chromium python3-venv flac lame opus-tools nginx openssl curl wavpack
[[ -x "$ROOT/.venv/bin/pip" ]] || python3 -m venv "$ROOT/.venv"
missing=()
for pkg in py-opensonic mutagen pytest requests aiohttp pillow; do
    "$ROOT/.venv/bin/pip" show -q "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "== installing into .venv: ${missing[*]}"
    "$ROOT/.venv/bin/pip" install -q "${missing[@]}"
fi
release_build
# subsonic-api from npm (pinned in tests/interop/js/package-lock.json), for
# the Node tests below and the browser page of test_cors_browser.py.
command -v node >/dev/null || apt_install nodejs
command -v npm >/dev/null || apt_install npm
[[ -d "$ROOT/tests/interop/js/node_modules" ]] || npm ci --prefix "$ROOT/tests/interop/js"
# The Rust tests of these parts (accounts, shares, covers, the web UI,
# settings, TLS, proxies, the Subsonic API) ran in stage 20-unit.
SPINDLE_SUBSONIC_TESTS=1 SPINDLE_BIN="$ROOT/target/release/spindle" \
    "$ROOT/.venv/bin/python" -m pytest -q "$ROOT/tests/interop/test_tls_proxy.py"
SPINDLE_SUBSONIC_TESTS=1 SPINDLE_BIN="$ROOT/target/release/spindle" \
    "$ROOT/.venv/bin/python" -m pytest -q "$ROOT/tests/interop/test_subsonic.py" \
    "$ROOT/tests/interop/test_subsonic_metadata.py" \
    "$ROOT/tests/interop/test_subsonic_lists.py" \
    "$ROOT/tests/interop/test_covers.py" \
    "$ROOT/tests/interop/test_web_ui.py" \
    "$ROOT/tests/interop/test_cors_browser.py" \
    "$ROOT/tests/interop/test_review_page.py" \
    "$ROOT/tests/interop/test_web_transcode.py" \
    "$ROOT/tests/interop/test_first_run.py" \
    "$ROOT/tests/interop/test_accounts_cli.py" \
    "$ROOT/tests/interop/test_subsonic_userdata.py"
# The same API through a second ecosystem's client library, subsonic-api
# from npm: the request
# sequences apps make, then every method in XML and by form POST.
SPINDLE_BIN="$ROOT/target/release/spindle" node --test "$ROOT/tests/interop/js/"
# A third ecosystem: the Java client library net.beardbot:subsonic-client
# from Maven Central (pinned in tests/interop/java/pom.xml), each answer
# also validated against the Subsonic XSD its jar ships.
command -v java >/dev/null || apt_install default-jdk-headless
command -v mvn >/dev/null || apt_install maven
SPINDLE_SUBSONIC_TESTS=1 SPINDLE_BIN="$ROOT/target/release/spindle" \
SPINDLE_MVN_ARGS="-Dmaven.repo.local=$ROOT/target/m2" \
    "$ROOT/.venv/bin/python" -m pytest -q "$ROOT/tests/interop/test_java_client.py"
# The abuse load (docs/security.md): failed logins on every path and heavy
# queries from one address while a listener streams and scrobbles from
# another; p99 and the server's memory ceiling are asserted, the figures
# printed.
SPINDLE_SUBSONIC_TESTS=1 SPINDLE_BIN="$ROOT/target/release/spindle" \
    "$ROOT/.venv/bin/python" -m pytest -q -s "$ROOT/tests/interop/test_abuse_load.py"
