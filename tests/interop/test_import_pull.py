"""Imports while the server runs, and live pulls between two servers
(docs/scrobble-hub.md section 2).

Server B holds bob's history (submitted through its ListenBrainz API) and
a larger one for bo3k; a fresh server C pulls them with `spindle listens
pull` into its users through B's Last.fm API (`/2.0/`, an API key made
with `spindle apikey add`; the histories are public on B) and B's
ListenBrainz API, and must end up with exactly B's history, a second
pull adding nothing. C is restarted in the middle of a pull, which then
resumes from its saved page and completes. A Rockbox log and a Spotify
history are imported while C runs, by the CLI and by the admin upload.
"""

import json
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

from conftest import BIN, cli

PASSWORD = "correct horse"


# The servers here link and pull to each other on 127.0.0.1 (conftest).
pytestmark = pytest.mark.usefixtures("allow_loopback_services")
CSRF = {"X-Spindle-Csrf": "1"}
T0 = int(time.time()) - 10 * 86400


def start(data_dir):
    proc = subprocess.Popen(
        [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, text=True,
    )
    for _ in range(5):
        m = re.search(r"http://([0-9.]+:\d+)/", proc.stdout.readline())
        if m:
            return proc, f"http://{m.group(1)}"
    proc.kill()
    raise AssertionError("the server printed no URL")


def stop(proc):
    proc.terminate()
    proc.wait(timeout=30)


def add_user(data_dir, name):
    cli(data_dir, "user", "add", name, stdin=PASSWORD + "\n")
    return cli(data_dir, "user", "token", name).strip()


def history(i):
    """Listen i of a history: a few artists and albums, and every tenth
    listen in the same second as the one before (page boundaries)."""
    ts = T0 - (i - i // 10) * 97
    return {
        "listened_at": ts,
        "track_metadata": {
            "artist_name": f"Artist {i % 7}",
            "track_name": f"Track {i}",
            "release_name": f"Album {i % 13}",
        },
    }


def submit(url, token, listens):
    for k in range(0, len(listens), 500):
        r = requests.post(url + "/1/submit-listens",
                          json={"listen_type": "import", "payload": listens[k:k + 500]},
                          headers={"Authorization": f"Token {token}"}, timeout=30)
        assert r.status_code == 200, r.text


def listens_of(url, user, token):
    """The whole history of `user`, newest first, as (time, artist, title,
    album), read back through the ListenBrainz API."""
    out, max_ts = [], None
    while True:
        params = {"count": 1000}
        if max_ts is not None:
            params["max_ts"] = max_ts
        r = requests.get(f"{url}/1/user/{user}/listens", params=params,
                         headers={"Authorization": f"Token {token}"}, timeout=30)
        assert r.status_code == 200, r.text
        page = r.json()["payload"]["listens"]
        out += [(x["listened_at"], x["track_metadata"]["artist_name"],
                 x["track_metadata"]["track_name"], x["track_metadata"].get("release_name", ""))
                for x in page]
        if len(page) < 1000:
            break
        # Exclusive: the listens of the oldest second may straddle pages.
        max_ts = page[-1]["listened_at"] + 1
        out = [x for x in out if x[0] > page[-1]["listened_at"]]
    return sorted(set(out), key=lambda x: (-x[0], x[2]))


def pull(data_dir, *args):
    return subprocess.run([BIN, "--data-dir", data_dir, "listens", "pull", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def b():
    with tempfile.TemporaryDirectory() as data_dir:
        proc, url = start(data_dir)
        try:
            tokens = {u: add_user(data_dir, u) for u in ("bob", "bo3k")}
            for u in tokens:
                cli(data_dir, "user", "privacy", u, "public")
            api_key = re.search(r"api_key (\w+)",
                                cli(data_dir, "apikey", "add", "--name", "pull")).group(1)
            submit(url, tokens["bob"], [history(i) for i in range(400)])
            submit(url, tokens["bo3k"], [history(i) for i in range(3000)])
            yield {"url": url, "data_dir": data_dir, "tokens": tokens, "api_key": api_key,
                   "proc": proc}
        finally:
            stop(proc)


@pytest.fixture(scope="module")
def c():
    with tempfile.TemporaryDirectory() as data_dir:
        proc, url = start(data_dir)
        state = {"data_dir": data_dir, "proc": proc, "url": url, "tokens": {}}
        try:
            for u in ("ann", "cy", "dee"):
                state["tokens"][u] = add_user(data_dir, u)
            yield state
        finally:
            stop(state["proc"])


def test_a_pull_from_the_lastfm_api_copies_the_history_once(b, c):
    want = listens_of(b["url"], "bob", b["tokens"]["bob"])
    assert len(want) == 400
    args = ["--user", "ann", "--lastfm", b["url"] + "/2.0/", "--api-key", b["api_key"],
            "--remote-user", "bob"]
    first = pull(c["data_dir"], *args)
    assert first.returncode == 0, first.stderr
    assert "the server is running" in first.stdout
    assert re.search(r"^400 of \d+ listens added", first.stdout, re.M), first.stdout
    assert listens_of(c["url"], "ann", c["tokens"]["ann"]) == want
    again = pull(c["data_dir"], *args)
    assert again.returncode == 0, again.stderr
    assert re.search(r"^0 of \d+ listens added", again.stdout, re.M), again.stdout
    assert listens_of(c["url"], "ann", c["tokens"]["ann"]) == want


def test_a_pull_from_the_listenbrainz_api_copies_the_history_once(b, c):
    want = listens_of(b["url"], "bob", b["tokens"]["bob"])
    args = ["--user", "cy", "--listenbrainz", b["url"], "--token", b["tokens"]["bob"],
            "--remote-user", "bob"]
    first = pull(c["data_dir"], *args)
    assert first.returncode == 0, first.stderr
    assert re.search(r"^400 of \d+ listens added", first.stdout, re.M), first.stdout
    assert listens_of(c["url"], "cy", c["tokens"]["cy"]) == want
    again = pull(c["data_dir"], *args)
    assert re.search(r"^0 of \d+ listens added", again.stdout, re.M), again.stdout
    assert listens_of(c["url"], "cy", c["tokens"]["cy"]) == want


def test_a_pull_cut_by_a_restart_resumes_and_completes(b, c):
    want = listens_of(b["url"], "bo3k", b["tokens"]["bo3k"])
    assert len(want) == 3000
    follower = subprocess.Popen(
        [BIN, "--data-dir", c["data_dir"], "listens", "pull", "--user", "dee",
         "--lastfm", b["url"] + "/2.0/", "--api-key", b["api_key"], "--remote-user", "bo3k"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    imports = Path(c["data_dir"]) / "imports"
    job, deadline = None, time.time() + 60
    try:
        # Once the first page is saved, B stops answering, so that C is
        # restarted with the pull half done.
        while time.time() < deadline:
            for f in imports.glob("*.json"):
                try:
                    j = json.loads(f.read_text())
                except (ValueError, OSError):
                    continue
                if j["user"] == "dee" and j["source"].get("pages", 0) >= 1:
                    job = j
            if job:
                break
            time.sleep(0.002)
        assert job, "the pull saved no page"
        os.kill(b["proc"].pid, signal.SIGSTOP)
        stop(c["proc"])
        cut = json.loads((imports / f"{job['id']}.json").read_text())
        assert cut["state"] == "running", cut
        assert cut["source"]["pages"] < 15, cut
        os.kill(b["proc"].pid, signal.SIGCONT)
        c["proc"], c["url"] = start(c["data_dir"])
        out, err = follower.communicate(timeout=120)
    finally:
        os.kill(b["proc"].pid, signal.SIGCONT)
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, err
    assert re.search(r"^3000 of \d+ listens added", out, re.M), out
    done = json.loads((imports / f"{job['id']}.json").read_text())
    assert done["state"] == "done"
    # Resumed from its page, not started again: at most one page of
    # overlap was fetched twice.
    assert done["total"] < 3000 + 200, done
    assert listens_of(c["url"], "dee", c["tokens"]["dee"]) == want


ROCKBOX = """#AUDIOSCROBBLER/1.1
#TZ/UNKNOWN
#CLIENT/Rockbox ipodvideo $Revision$
Boards of Canada\tMusic Has the Right to Children\tRoygbiv\t6\t151\tL\t{t}\t
Boards of Canada\tMusic Has the Right to Children\tTelephasic Workshop\t9\t395\tS\t{t2}\t
Boards of Canada\tMusic Has the Right to Children\tAquarius\t5\t352\tL\t{t3}\t
"""


def test_a_rockbox_log_and_a_spotify_history_import_while_the_server_runs(c, tmp_path):
    log = tmp_path / ".scrobbler.log"
    log.write_text(ROCKBOX.format(t=T0 + 100, t2=T0 + 300, t3=T0 + 700))
    r = subprocess.run([BIN, "--data-dir", c["data_dir"], "listens", "import", str(log),
                        "--user", "ann"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "the server is running" in r.stdout
    assert "#TZ/UNKNOWN" in r.stdout
    assert re.search(r"^2 of 2 listens added", r.stdout, re.M), r.stdout
    end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(T0 + 2000))
    spotify = tmp_path / "Streaming_History_Audio_2024.json"
    spotify.write_text(json.dumps([
        {"ts": end, "ms_played": 200500, "master_metadata_track_name": "Windowlicker",
         "master_metadata_album_artist_name": "Aphex Twin",
         "master_metadata_album_album_name": "Windowlicker",
         "spotify_track_uri": "spotify:track:x", "episode_name": None},
        {"ts": end, "ms_played": 3000, "master_metadata_track_name": "Flim",
         "master_metadata_album_artist_name": "Aphex Twin",
         "master_metadata_album_album_name": "Come to Daddy",
         "spotify_track_uri": "spotify:track:y", "episode_name": None},
        {"ts": end, "ms_played": 900000, "master_metadata_track_name": None,
         "master_metadata_album_artist_name": None, "master_metadata_album_album_name": None,
         "spotify_track_uri": None, "episode_name": "A podcast"},
    ]))
    r = subprocess.run([BIN, "--data-dir", c["data_dir"], "listens", "import", str(spotify),
                        "--user", "ann"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^1 of 1 listens added", r.stdout, re.M), r.stdout
    got = {(t, a, ti) for t, a, ti, _ in listens_of(c["url"], "ann", c["tokens"]["ann"])}
    assert (T0 + 100, "Boards of Canada", "Roygbiv") in got
    assert (T0 + 700, "Boards of Canada", "Aquarius") in got
    assert not any(ti == "Telephasic Workshop" for _, _, ti in got)
    assert (T0 + 2000 - 200, "Aphex Twin", "Windowlicker") in got
    assert not any(ti == "Flim" for _, _, ti in got)


def test_an_admin_uploads_an_export_on_the_web(c):
    web = requests.Session()
    assert web.post(c["url"] + "/ui/login", json={"user": "ann", "password": PASSWORD},
                    headers=CSRF, timeout=10).ok
    maloja = {"scrobbles": [{"time": T0 + 5000, "track": {
        "artists": ["Daft Punk", "Pharrell Williams"], "title": "Get Lucky",
        "album": {"albumtitle": "Random Access Memories", "artists": ["Daft Punk"]},
        "length": 369}, "duration": 300, "origin": "client:x"}]}
    r = web.post(c["url"] + "/ui/api/admin/imports", params={"user": "cy", "name": "maloja.json"},
                 data=json.dumps(maloja).encode(), headers=CSRF, timeout=30)
    assert r.status_code == 202, r.text
    job = r.json()["id"]
    for _ in range(100):
        j = web.get(f"{c['url']}/ui/api/admin/imports/{job}", timeout=10).json()
        if j["state"] in ("done", "failed"):
            break
        time.sleep(0.1)
    assert (j["state"], j["format"], j["added"]) == ("done", "maloja", 1), j
    got = listens_of(c["url"], "cy", c["tokens"]["cy"])
    assert (T0 + 5000, "Daft Punk, Pharrell Williams", "Get Lucky", "Random Access Memories") in got
    # A user who is not an administrator may not.
    other = requests.Session()
    assert other.post(c["url"] + "/ui/login", json={"user": "dee", "password": PASSWORD},
                      headers=CSRF, timeout=10).ok
    r = other.post(c["url"] + "/ui/api/admin/imports", params={"user": "dee"}, data=b"x",
                   headers=CSRF, timeout=10)
    assert r.status_code == 403
