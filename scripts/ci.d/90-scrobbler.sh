# Scrobbler end to end: a private session bus (dbus-run-session), real mpv
# with mpv-mpris playing generated, tagged tones (sox + metaflac), the
# `spindle scrobble run` daemon, and `spindle serve` on loopback as the
# target (a user authorised through the desktop token flow and a
# ListenBrainz token). Prints the now-playing latency. Under ~2 minutes.
apt_install mpv mpv-mpris dbus dbus-bin dbus-daemon sox flac python3
cargo build --release --locked -p spindle
MPRIS_PLUGIN=$(dpkg -L mpv-mpris | grep -m1 '/mpris\.so$')
SPINDLE_BIN="$ROOT/target/release/spindle" MPRIS_PLUGIN="$MPRIS_PLUGIN" \
    timeout 300 dbus-run-session -- python3 -u "$ROOT/tests/scrobbler/e2e.py"
