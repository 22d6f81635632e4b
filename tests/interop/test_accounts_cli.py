"""Accounts from the command line beside a running server, checked through
a real client library: `spindle user apikey add NAME --app LABEL` prints an
OpenSubsonic API key that py-opensonic logs in with (`apiKey`, and
`tokenInfo` names its user); `spindle user sessions NAME` lists it with the
user's Last.fm session keys and token; `spindle user revoke NAME ID` ends
it and the client gets error 44 within the server's refresh interval
(one second). `spindle user token NAME --reset` replaces the token (the old
one stops working as an `apiKey` too) and `spindle user set NAME timezone
ZONE` checks the zone. Run by scripts/ci.d/80-server.sh."""

import asyncio
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)
libopensonic = pytest.importorskip("libopensonic")
from libopensonic.errors import SonicError  # noqa: E402
requests = pytest.importorskip("requests")

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
PASSWORD = "correct horse"
# The server notices another process's change to the accounts file within
# this long (spindle_server::accounts::REFRESH_INTERVAL is 1 s).
REFRESH = 1.5


def cli(data_dir, *args, stdin=None, check=True):
    return subprocess.run([BIN, "--data-dir", data_dir, *args], input=stdin,
                          capture_output=True, text=True, check=check)


@pytest.fixture(scope="module")
def srv():
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, HOME=d, XDG_MUSIC_DIR="")
        proc = subprocess.Popen([BIN, "--data-dir", d, "serve", "--listen", "127.0.0.1:0"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=env)
        try:
            m = re.search(r"http://([0-9.]+):(\d+)/", proc.stdout.readline())
            assert m, "the server printed no URL"
            cli(d, "user", "add", "ann", "--password-stdin", stdin=PASSWORD + "\n")
            cli(d, "user", "add", "bob", "--password-stdin", stdin=PASSWORD + "\n")
            yield {"dir": d, "host": m.group(1), "port": int(m.group(2)),
                   "base": f"http://{m.group(1)}:{m.group(2)}"}
        finally:
            proc.terminate()
            proc.wait(timeout=15)


async def with_key(s, key, fn):
    conn = libopensonic.AsyncConnection(f"http://{s['host']}", port=s["port"], api_key=key,
                                        app_name="spindle-tests")
    try:
        return await fn(conn)
    finally:
        await conn.cleanup()


def error_code(s, key):
    """The Subsonic error code of a ping with `key`, or None if it worked."""
    try:
        ok = asyncio.run(with_key(s, key, lambda c: c.ping()))
    except SonicError:
        ok = False
    if ok:
        return None
    # The library answers by kind; the code itself, from the wire.
    r = requests.get(f"{s['base']}/rest/ping",
                     params={"apiKey": key, "v": "1.16.1", "c": "t", "f": "json"}, timeout=10)
    return r.json()["subsonic-response"]["error"]["code"]


def test_an_app_key_from_the_cli_logs_in_as_its_user_until_revoked(srv):
    d = srv["dir"]
    out = cli(d, "user", "apikey", "add", "bob", "--app", "py-opensonic on CI")
    key = out.stdout.strip()
    assert key.startswith("spk_"), out.stdout
    id_ = re.search(r"API key ([0-9a-f]{12})", out.stderr).group(1)

    # The real client library: apiKey only, no user name.
    assert asyncio.run(with_key(srv, key, lambda c: c.ping()))
    info = asyncio.run(with_key(srv, key, lambda c: c.token_info()))
    assert info.username == "bob"
    # A key with a user name is error 43 (OpenSubsonic).
    r = requests.get(f"{srv['base']}/rest/ping", params={
        "apiKey": key, "u": "ann", "v": "1.16.1", "c": "t", "f": "json"}, timeout=10)
    assert r.json()["subsonic-response"]["error"]["code"] == 43

    listed = cli(d, "user", "sessions", "bob").stdout
    assert id_ in listed and "py-opensonic on CI" in listed, listed
    assert "ListenBrainz token: none yet" in listed
    assert "web sessions: see the admin page" in listed
    assert key not in listed, "the key itself is never listed"
    assert id_ in cli(d, "user", "apikey", "list", "bob").stdout
    assert id_ not in cli(d, "user", "apikey", "list", "ann").stdout

    # ann cannot revoke bob's key; bob's revocation works by 8 digits.
    refused = cli(d, "user", "revoke", "ann", id_, check=False)
    assert refused.returncode != 0 and "lists them" in refused.stderr, refused.stderr
    assert error_code(srv, key) is None
    done = cli(d, "user", "revoke", "bob", id_[:8])
    assert f"API key {id_}" in done.stdout, done.stdout
    time.sleep(REFRESH)
    assert error_code(srv, key) == 44
    assert id_ not in cli(d, "user", "sessions", "bob").stdout


def test_a_reset_token_stops_the_old_one_working_as_an_api_key(srv):
    d = srv["dir"]
    old = cli(d, "user", "token", "ann").stdout.strip()
    assert error_code(srv, old) is None
    assert "ListenBrainz token: yes" in cli(d, "user", "sessions", "ann").stdout
    new = cli(d, "user", "token", "ann", "--reset").stdout.strip()
    assert new and new != old
    time.sleep(REFRESH)
    assert error_code(srv, old) == 44
    assert error_code(srv, new) is None
    assert cli(d, "user", "token", "ann").stdout.strip() == new


def test_a_time_zone_is_checked_and_kept(srv):
    d = srv["dir"]
    bad = cli(d, "user", "set", "ann", "timezone", "Mars/Olympus", check=False)
    assert bad.returncode != 0 and "unknown time zone" in bad.stderr, bad.stderr
    ok = cli(d, "user", "set", "ann", "timezone", "Europe/Paris")
    assert "Europe/Paris" in ok.stdout
    # The web UI reads it back.
    s = requests.Session()
    r = s.post(f"{srv['base']}/ui/login", json={"user": "ann", "password": PASSWORD},
               headers={"X-Spindle-Csrf": "1"}, timeout=10)
    assert r.status_code == 200, r.text
    assert s.get(f"{srv['base']}/ui/api/me/settings", timeout=10).json()["timezone"] == "Europe/Paris"
