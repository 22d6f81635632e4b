"""Corrections of the listening history (docs/scrobble-hub.md section 3)
on a real server with the demo library: listens arrive by the Last.fm
API (pylast) and the ListenBrainz API (liblistenbrainz); an edit, a
delete and a merge made through the web UI's JSON routes change
user.getTopArtists, user.getTopTracks, the user's play count and the
library's play counts (Subsonic getSong), survive a restart, and undoing
them restores everything. The same play sent by two clients 5 s apart
counts once. With the server stopped, `spindle listens corrections`
lists them; while it runs, the command says to use the web UI."""

import subprocess
import tempfile
import time
from pathlib import Path

import liblistenbrainz
import pylast
import requests

from conftest import BIN, Node, cli, listenbrainz_client, now
from test_pylast import network

PASSWORD = "correct horse"
USER = "cora"


def eventually(check, what, timeout=15):
    """Polls `check` until it returns a true value (the library's play
    counts follow on a thread of their own)."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what}: still {last!r}")


def test_edit_delete_merge_change_the_charts_survive_a_restart_and_undo_restores():
    with tempfile.TemporaryDirectory() as root:
        data = str(Path(root) / "data")
        node = Node(data)
        node.start()
        try:
            run(node, data)
        finally:
            if node.proc.poll() is None:
                node.stop()


def run(node, data):
    cli(data, "user", "add", USER, stdin=PASSWORD + "\n")
    out = cli(data, "apikey", "add", "--name", "corrections")
    node.api_key = out.split("api_key ")[1].split()[0]
    node.secret = out.split("secret ")[1].split()[0]
    node.password = PASSWORD
    token = cli(data, "user", "token", USER).strip()

    def lastfm():
        n = network(node)
        n.session_key = pylast.SessionKeyGenerator(n).get_session_key(USER, pylast.md5(PASSWORD))
        n.username = USER
        return n

    def listenbrainz():
        return listenbrainz_client(node.url, token)

    sub = {"u": USER, "p": PASSWORD, "v": "1.16.1", "c": "corrections-test", "f": "json"}
    songs = requests.get(f"{node.url}/rest/getRandomSongs", params={**sub, "size": 50},
                         timeout=10).json()["subsonic-response"]["randomSongs"]["song"]
    songs = sorted(songs, key=lambda s: s["id"])
    x, y = songs[0], songs[1]
    assert (x["artist"], x["title"]) != (y["artist"], y["title"])

    def play_count(song):
        r = requests.get(f"{node.url}/rest/getSong", params={**sub, "id": song["id"]}, timeout=10)
        return r.json()["subsonic-response"]["song"].get("playCount", 0)

    fm, lb = lastfm(), listenbrainz()
    t0 = now() - 3 * 86400
    # x three times by Last.fm, y twice by ListenBrainz.
    for i in range(3):
        fm.scrobble(artist=x["artist"], title=x["title"], album=x.get("album"), timestamp=t0 + 1000 * i)
    lb.submit_multiple_listens([
        liblistenbrainz.Listen(track_name=y["title"], artist_name=y["artist"], release_name=y.get("album"),
                               listened_at=t0 + 5000 + 1000 * i)
        for i in range(2)
    ])
    # Two spellings of one band: "Beatles" twice, "The Beatles" once.
    lb.submit_multiple_listens([
        liblistenbrainz.Listen(track_name="Help", artist_name="Beatles", listened_at=t0 + 9000 + 1000 * i)
        for i in range(2)
    ])
    fm.scrobble(artist="The Beatles", title="Help", timestamp=t0 + 12000)
    # The same play from two clients, 5 s apart: it counts once.
    fm.scrobble(artist="Twice Sent", title="Once Played", timestamp=t0 + 20000)
    lb.submit_single_listen(liblistenbrainz.Listen(
        track_name="once played", artist_name="twice sent", listened_at=t0 + 20005))

    def charts(n):
        user = n.get_user(USER)
        artists = {a.item.get_name(): int(a.weight) for a in user.get_top_artists(limit=50)}
        tracks = {(t.item.get_artist().get_name(), t.item.get_title()): int(t.weight)
                  for t in user.get_top_tracks(limit=50)}
        return artists, tracks, user.get_playcount()

    artists, tracks, total = charts(fm)
    assert total == 9, (artists, tracks)
    assert artists["Twice Sent"] == 1
    assert artists["Beatles"] == 2 and artists["The Beatles"] == 1
    assert tracks[(x["artist"], x["title"])] == 3
    eventually(lambda: play_count(x) == 3 and play_count(y) == 2, "library play counts")
    before = (artists, tracks, total)

    web = requests.Session()
    web.headers["x-spindle-csrf"] = "1"

    def login():
        web.cookies.clear()
        r = web.post(f"{node.url}/ui/login", json={"user": USER, "password": PASSWORD}, timeout=10)
        assert r.status_code == 200, r.text

    login()
    # An edit: the first listen of x becomes a listen of y.
    r = web.post(f"{node.url}/ui/api/listens/edit", timeout=10, json={
        "at": t0, "artist": x["artist"], "title": x["title"],
        "new_artist": y["artist"], "new_title": y["title"], "new_album": y.get("album", ""),
    })
    assert r.status_code == 200, r.text
    edit_id = r.json()["id"]
    # A delete: one listen of y.
    r = web.post(f"{node.url}/ui/api/listens/delete", timeout=10, json={
        "at": t0 + 5000, "artist": y["artist"], "title": y["title"]})
    assert r.status_code == 200, r.text
    delete_id = r.json()["id"]
    # A merge: "Beatles" counts as "The Beatles".
    r = web.post(f"{node.url}/ui/api/artists/merge", timeout=10, json={"from": "Beatles", "to": "The Beatles"})
    assert r.status_code == 200, r.text
    merge_id = r.json()["id"]
    # Refusals: a listen that is not there, another user's history.
    r = web.post(f"{node.url}/ui/api/listens/delete", timeout=10, json={
        "at": t0 + 1, "artist": y["artist"], "title": y["title"]})
    assert r.status_code == 404, r.text
    r = web.post(f"{node.url}/ui/api/listens/delete", timeout=10, json={
        "user": "nobody", "at": t0 + 5000, "artist": y["artist"], "title": y["title"]})
    assert r.status_code in (403, 404), r.text

    def corrected():
        artists, tracks, total = charts(fm)
        assert total == 8, (artists, tracks)
        assert "Beatles" not in artists and artists["The Beatles"] == 3
        assert tracks[(x["artist"], x["title"])] == 2
        assert tracks[(y["artist"], y["title"])] == 2
        eventually(lambda: (play_count(x), play_count(y)) == (2, 2), "library play counts after the edit")

    corrected()
    listed = web.get(f"{node.url}/ui/api/corrections", timeout=10).json()["corrections"]
    assert [c["id"] for c in listed] == [edit_id, delete_id, merge_id]
    assert [c["what"]["kind"] for c in listed] == ["edit", "delete", "merge"]

    # A restart keeps them.
    node.stop()
    # The CLI lists them from the stopped server's data dir...
    listing = subprocess.run([BIN, "--data-dir", data, "listens", "corrections", "--user", USER],
                             capture_output=True, text=True)
    assert listing.returncode == 0, listing.stderr
    assert "merge Beatles into The Beatles" in listing.stdout, listing.stdout
    node.start()
    fm = lastfm()
    corrected()
    # ... and while the server runs, reads the same list (the history
    # log is read, never written, beside the running server).
    running = subprocess.run([BIN, "--data-dir", data, "listens", "corrections", "--user", USER],
                             capture_output=True, text=True)
    assert running.returncode == 0, running.stderr
    assert "merge Beatles into The Beatles" in running.stdout, running.stdout

    # Undo restores every chart and count.
    login()
    for cid in (merge_id, delete_id, edit_id):
        r = web.post(f"{node.url}/ui/api/corrections/{cid}/undo", json={}, timeout=10)
        assert r.status_code == 200, r.text
    r = web.post(f"{node.url}/ui/api/corrections/{merge_id}/undo", json={}, timeout=10)
    assert r.status_code == 400, r.text
    assert charts(fm) == before
    eventually(lambda: (play_count(x), play_count(y)) == (3, 2), "library play counts after undo")
    listed = web.get(f"{node.url}/ui/api/corrections", timeout=10).json()["corrections"]
    assert all(c["undone"] for c in listed)
    node.stop()
    node.start()
    assert charts(lastfm()) == before
