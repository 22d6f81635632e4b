# Scrobbler end to end: a private session bus (dbus-run-session), real mpv
# with mpv-mpris playing generated, tagged tones (sox + metaflac), the
# `spindle scrobble run` daemon, and `spindle serve` on loopback as the
# target (a user authorised through the desktop token flow and a
# ListenBrainz token). Prints the now-playing latency and idle figures.
# About 80 s plus the build.
apt_install mpv mpv-mpris dbus dbus-bin dbus-daemon sox flac python3
release_build
# Debian's mpv-mpris puts the plugin in /usr/lib/mpv-mpris/ (and links it
# into /etc/mpv/scripts/); the test loads it explicitly with --no-config.
MPRIS_PLUGIN=$(dpkg -L mpv-mpris | grep '/mpris\.so$' || true)
MPRIS_PLUGIN=${MPRIS_PLUGIN%%$'\n'*}
SPINDLE_BIN="$ROOT/target/release/spindle" MPRIS_PLUGIN="$MPRIS_PLUGIN" \
    timeout 300 dbus-run-session -- python3 -u "$ROOT/tests/scrobbler/e2e.py"
