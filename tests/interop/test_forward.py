"""Forwarding (docs/scrobble-hub.md section 1) between two real Spindle
servers on loopback: alice on A links B's Last.fm 2.0 API (the desktop
flow, approved on B's own page as bob) and B's ListenBrainz API (carol's
token). Plays reach A by the Subsonic API, the ListenBrainz API and the
web player; B is stopped for part of the run and started again, A is
restarted once. Every play reaches B exactly once per service, in order,
and now playing reaches B too."""

import json
import re
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

from conftest import BIN, Node, cli

PASSWORD = "correct horse"


# The servers here link and pull to each other on 127.0.0.1 (conftest).
pytestmark = pytest.mark.usefixtures("allow_loopback_services")


def read_log(data_dir):
    """B's listens log, parsed: (user, timestamp, title) in log order
    (docs/listens-format.md: a 16-byte header, then length, CRC-32 and
    payload per record; kind 1 is a listen)."""
    b = (Path(data_dir) / "listens" / "listens.log").read_bytes()
    at, out = 16, []
    while at + 8 <= len(b):
        (n,) = struct.unpack_from("<I", b, at)
        p = b[at + 8:at + 8 + n]
        at += 8 + n
        if not p or p[0] != 1:
            continue
        (ts,) = struct.unpack_from("<q", p, 1)
        pos, strs = 17, []
        for _ in range(7):
            (k,) = struct.unpack_from("<I", p, pos)
            strs.append(p[pos + 4:pos + 4 + k].decode())
            pos += 4 + k
        out.append((strs[0], ts, strs[2]))
    return out


def b_listens(b, user, token):
    r = requests.get(f"{b.url}/1/user/{user}/listens", params={"count": 100},
                     headers={"Authorization": f"Token {token}"}, timeout=10)
    r.raise_for_status()
    return [(l["listened_at"], l["track_metadata"]["track_name"])
            for l in r.json()["payload"]["listens"]]


def wait_for(pred, what, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_every_play_reaches_both_services_of_b_once_in_order_through_outages_and_a_restart():
    with tempfile.TemporaryDirectory() as tmp:
        a = Node(str(Path(tmp) / "a"), "a")
        b = Node(str(Path(tmp) / "b"), "b")
        b.start()
        a.start()
        try:
            run(a, b)
        finally:
            for n in (a, b):
                if n.proc and n.proc.poll() is None:
                    n.stop()


def run(a, b):
    # B: bob (for the Last.fm link), carol (for the ListenBrainz link),
    # an API key pair for A's desktop flow.
    for u in ("bob", "carol"):
        cli(b.data_dir, "user", "add", u, stdin=PASSWORD + "\n")
    out = cli(b.data_dir, "apikey", "add", "--name", "spindle A")
    api_key = re.search(r"api_key (\w+)", out).group(1)
    secret = re.search(r"secret (\w+)", out).group(1)
    bob_token = cli(b.data_dir, "user", "token", "bob").strip()
    carol_token = cli(b.data_dir, "user", "token", "carol").strip()
    # A: alice.
    cli(a.data_dir, "user", "add", "alice", stdin=PASSWORD + "\n")
    alice_token = cli(a.data_dir, "user", "token", "alice").strip()

    # Last.fm desktop flow: the CLI prints B's approval page and waits;
    # bob approves on B's real page.
    link = subprocess.Popen(
        [BIN, "--data-dir", a.data_dir, "forward", "link", "alice", "lastfm",
         "--name", "b-lastfm", "--url", f"{b.url}/2.0/",
         "--api-key", api_key, "--api-secret", secret, "--wait", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    page = None
    for _ in range(5):
        line = link.stdout.readline()
        if line.startswith("http"):
            page = line.strip()
            break
    assert page and page.startswith(f"{b.url}/api/auth/?"), page
    token = re.search(r"token=(\w+)", page).group(1)
    assert requests.get(page, timeout=10).ok
    r = requests.post(f"{b.url}/api/auth/", data={
        "api_key": api_key, "token": token, "username": "bob", "password": PASSWORD, "cb": "",
    }, timeout=10)
    assert r.status_code < 400, r.text
    rest, err = link.communicate(timeout=60)
    assert link.returncode == 0, err
    assert "as bob" in rest, rest

    # ListenBrainz: carol's token, checked by B.
    out = cli(a.data_dir, "forward", "link", "alice", "listenbrainz", "--name", "b-lb",
              "--url", b.url, "--token", carol_token)
    assert "as carol" in out, out
    bad = subprocess.run(
        [BIN, "--data-dir", a.data_dir, "forward", "link", "alice", "listenbrainz",
         "--name", "bad", "--url", b.url, "--token", "not-a-token"],
        capture_output=True, text=True,
    )
    assert bad.returncode != 0 and "token" in bad.stderr, bad.stderr

    sub = {"u": "alice", "p": PASSWORD, "v": "1.16.1", "c": "forward-test", "f": "json"}
    songs = requests.get(f"{a.url}/rest/getRandomSongs", params={**sub, "size": 50},
                         timeout=10).json()["subsonic-response"]["randomSongs"]["song"]
    songs = sorted(songs, key=lambda s: s["id"])
    assert len(songs) >= 3, songs
    web = requests.Session()
    web.headers["x-spindle-csrf"] = "1"

    def web_login():
        web.cookies.clear()
        r = web.post(f"{a.url}/ui/login", json={"user": "alice", "password": PASSWORD}, timeout=10)
        assert r.ok, r.text

    web_login()
    start = int(time.time()) - 6 * 3600
    plays = []  # (timestamp, title), in the order they were played

    def play(i):
        """Play number i, by the three routes in turn."""
        ts = start + i * 600
        how = i % 3
        if how == 0:
            s = songs[i % len(songs)]
            r = requests.get(f"{a.url}/rest/scrobble", timeout=10, params={
                **sub, "id": s["id"], "submission": "true", "time": ts * 1000})
            assert r.json()["subsonic-response"]["status"] == "ok", r.text
            plays.append((ts, s["title"]))
        elif how == 1:
            title = f"LB play {i}"
            r = requests.post(f"{a.url}/1/submit-listens", timeout=10,
                              headers={"Authorization": f"Token {alice_token}"},
                              json={"listen_type": "single", "payload": [{
                                  "listened_at": ts,
                                  "track_metadata": {"artist_name": "Forwarded", "track_name": title}}]})
            assert r.ok, r.text
            plays.append((ts, title))
        else:
            s = songs[(i + 1) % len(songs)]
            r = web.post(f"{a.url}/ui/api/playing", json={"id": int(s["id"]), "scrobble": True, "at": ts},
                         timeout=10)
            assert r.ok, r.text
            plays.append((ts, s["title"]))

    def arrived(n):
        return (len(b_listens(b, "bob", bob_token)) >= n
                and len(b_listens(b, "carol", carol_token)) >= n)

    # B up.
    for i in range(3):
        play(i)
    wait_for(lambda: arrived(3), "the first plays on B")
    # Now playing, by the Subsonic API.
    np_song = songs[0]
    r = requests.get(f"{a.url}/rest/scrobble", timeout=10,
                     params={**sub, "id": np_song["id"], "submission": "false"})
    assert r.json()["subsonic-response"]["status"] == "ok"

    def np_on_b():
        # B's ListenBrainz playing-now: bob's came through B's Last.fm API
        # (track.updateNowPlaying), carol's through its ListenBrainz API.
        got = []
        for user, tok in (("bob", bob_token), ("carol", carol_token)):
            r = requests.get(f"{b.url}/1/user/{user}/playing-now", timeout=10,
                             headers={"Authorization": f"Token {tok}"}).json()
            got.append([l["track_metadata"]["track_name"] for l in r["payload"]["listens"]])
        return got == [[np_song["title"]]] * 2

    wait_for(np_on_b, "now playing on B", timeout=30)

    # B down: plays queue on A; A restarts in the middle.
    b.stop()
    for i in range(3, 6):
        play(i)
    time.sleep(1)
    a.stop()
    a.start()
    web_login()
    for i in range(6, 9):
        play(i)
    status = cli(a.data_dir, "forward", "status", "alice")
    print(status)
    assert "b-lastfm" in status and "b-lb" in status, status
    b.start()
    wait_for(lambda: arrived(9), "every play on B after the outage")
    time.sleep(3)  # anything sent twice would land by now

    want = sorted(plays)
    for user, token in (("bob", bob_token), ("carol", carol_token)):
        got = sorted(b_listens(b, user, token))
        assert got == want, (user, got, want)
    # In order: B recorded each user's listens oldest first.
    log = read_log(b.data_dir)
    for user in ("bob", "carol"):
        mine = [(ts, t) for (u, ts, t) in log if u == user]
        assert mine == want, (user, mine)

    # What A says about it.
    out = cli(a.data_dir, "forward", "status", "alice")
    print(out)
    rows = [l.split("\t") for l in out.strip().splitlines()]
    assert {r[1] for r in rows} == {"b-lastfm", "b-lb"}, out
    for r in rows:
        assert r[5] == "pending 0", out
        assert r[7] == "ok", out
    js = json.loads(cli(a.data_dir, "forward", "status", "alice", "--json"))
    assert {(l["name"], l["remote_user"], l["kind"]) for l in js} == {
        ("b-lastfm", "bob", "lastfm"), ("b-lb", "carol", "listenbrainz")}
    # Metrics on A.
    m = requests.get(f"{a.url}/metrics", headers={"Authorization": f"Bearer {alice_token}"},
                     timeout=10).text
    assert 'spindle_forward_pending{user="alice",service="b-lb"} 0' in m, m
    # Unlinking removes the link and its queue.
    cli(a.data_dir, "forward", "unlink", "alice", "b-lb")
    assert "b-lb" not in cli(a.data_dir, "forward", "status", "alice")
