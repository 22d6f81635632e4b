"""Forwarding to a real Maloja (malojaserver from PyPI) linked as a
ListenBrainz-type service: plays reach Spindle through its Subsonic,
ListenBrainz and Last.fm 2.0 APIs, Maloja is stopped for part of the run
and started again, Spindle is killed (SIGKILL) once, and at the end every
play is in Maloja's history exactly once.

Maloja keeps one scrobble per second (its table's key is the timestamp)
and only logs "have not been written to database (already exist)" for a
second copy, so the test also reads Maloja's output: a play sent twice
would show there even though the table cannot hold it twice."""

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

from conftest import Node, cli, free_port

PASSWORD = "correct horse"
# The link points at Maloja on 127.0.0.1 (conftest).
pytestmark = pytest.mark.usefixtures("allow_loopback_services")


def maloja_exe():
    """Maloja's command: MALOJA_BIN, else `maloja` beside this Python."""
    exe = os.environ.get("MALOJA_BIN") or str(Path(sys.executable).parent / "maloja")
    if not Path(exe).is_file():
        if os.environ.get("CI"):
            raise AssertionError(f"maloja not installed at {exe}")
        pytest.skip("malojaserver is not installed (pip install malojaserver)")
    return exe


class Maloja:
    """Maloja over its own data dir on a fixed loopback port, with one API
    key, started and stopped at will (the settings Maloja reads from its
    environment for an unattended start)."""

    def __init__(self, data_dir):
        self.dir = Path(data_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.key = hashlib.sha256(os.urandom(16)).hexdigest()[:32]
        (self.dir / "apikeys.yml").write_text(f"spindle: {self.key}\n")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def start(self):
        env = {**os.environ, "MALOJA_DATA_DIRECTORY": str(self.dir),
               "MALOJA_HOST": "127.0.0.1", "MALOJA_PORT": str(self.port),
               "MALOJA_SKIP_SETUP": "yes", "MALOJA_FORCE_PASSWORD": self.key,
               "MALOJA_LOGGING": "false"}
        out = open(self.dir / "maloja.out", "a")
        self.proc = subprocess.Popen([maloja_exe(), "run"], cwd=self.dir, env=env,
                                     stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        deadline = time.time() + 120
        while time.time() < deadline:
            assert self.proc.poll() is None, self.output()
            try:
                if requests.get(f"{self.url}/apis/mlj_1/serverinfo", timeout=2).ok:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"maloja did not answer:\n{self.output()}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def output(self):
        p = self.dir / "maloja.out"
        return p.read_text(errors="replace") if p.exists() else ""

    def history(self):
        """(timestamp, title) of every scrobble in Maloja's database."""
        db = self.dir / "malojadb.sqlite"
        if not db.exists():
            return []
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return sorted(c.execute(
                "select s.timestamp, t.title from scrobbles s join tracks t on t.id = s.track_id"
            ).fetchall())
        except sqlite3.OperationalError:  # tables not made yet
            return []
        finally:
            c.close()


def wait_for(pred, what, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def signed(params, secret):
    """A Last.fm 2.0 call's parameters with their api_sig."""
    raw = "".join(k + params[k] for k in sorted(params) if k not in ("format", "callback"))
    return {**params, "api_sig": hashlib.md5((raw + secret).encode()).hexdigest()}


def test_every_play_reaches_maloja_once_through_its_outage_and_a_killed_spindle():
    with tempfile.TemporaryDirectory() as tmp:
        mal = Maloja(Path(tmp) / "maloja")
        a = Node(str(Path(tmp) / "a"), "a")
        mal.start()
        a.start()
        try:
            run(a, mal)
        finally:
            if a.proc and a.proc.poll() is None:
                a.stop()
            if mal.proc and mal.proc.poll() is None:
                mal.stop()


def run(a, mal):
    cli(a.data_dir, "user", "add", "alice", stdin=PASSWORD + "\n")
    token = cli(a.data_dir, "user", "token", "alice").strip()
    out = cli(a.data_dir, "apikey", "add", "--name", "maloja test")
    api_key = out.split("api_key ")[1].split()[0]
    secret = out.split("secret ")[1].split()[0]

    # Maloja's ListenBrainz API, checked with its validate-token on linking.
    out = cli(a.data_dir, "forward", "link", "alice", "listenbrainz", "--name", "maloja",
              "--url", f"{mal.url}/apis/listenbrainz", "--token", mal.key)
    assert "linked" in out.lower() or "as " in out, out

    sub = {"u": "alice", "p": PASSWORD, "v": "1.16.1", "c": "maloja-test", "f": "json"}
    songs = requests.get(f"{a.url}/rest/getRandomSongs", params={**sub, "size": 50},
                         timeout=10).json()["subsonic-response"]["randomSongs"]["song"]
    songs = sorted(songs, key=lambda s: s["id"])
    assert len(songs) >= 3, songs

    def session():
        r = requests.post(f"{a.url}/2.0/", timeout=10, data=signed({
            "method": "auth.getMobileSession", "username": "alice", "password": PASSWORD,
            "api_key": api_key}, secret) | {"format": "json"})
        assert r.ok, r.text
        return r.json()["session"]["key"]

    sk = session()
    start = int(time.time()) - 6 * 3600
    plays = []  # (timestamp, title)

    def play(i):
        """Play number i, by the three APIs in turn."""
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
                              headers={"Authorization": f"Token {token}"},
                              json={"listen_type": "single", "payload": [{
                                  "listened_at": ts,
                                  "track_metadata": {"artist_name": "Forwarded",
                                                     "track_name": title}}]})
            assert r.ok, r.text
            plays.append((ts, title))
        else:
            title = f"Last.fm play {i}"
            r = requests.post(f"{a.url}/2.0/", timeout=10, data=signed({
                "method": "track.scrobble", "artist[0]": "Forwarded", "track[0]": title,
                "timestamp[0]": str(ts), "api_key": api_key, "sk": sk}, secret) | {"format": "json"})
            assert r.ok and r.json()["scrobbles"]["@attr"]["accepted"] == 1, r.text
            plays.append((ts, title))

    def arrived(n):
        return len(mal.history()) >= n

    for i in range(3):
        play(i)
    wait_for(lambda: arrived(3), "the first plays in Maloja")

    # Maloja down: plays wait in Spindle's journal; then Spindle is killed.
    mal.stop()
    for i in range(3, 6):
        play(i)
    # The status file (saved every 2 s) says 3 sent before the kill.
    wait_for(lambda: "pending 3\tsent 3\t" in cli(a.data_dir, "forward", "status", "alice"),
             "three plays pending while Maloja is down", timeout=60)
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait()
    a.start()
    sk = session()
    for i in range(6, 9):
        play(i)
    mal.start()
    wait_for(lambda: arrived(9), "every play in Maloja after its outage")

    want = sorted(plays)
    # Anything sent twice would be logged by Maloja within a few seconds
    # of the last play arriving: wait until the journal is empty.
    wait_for(lambda: "pending 0" in cli(a.data_dir, "forward", "status", "alice"),
             "an empty journal", timeout=60)
    assert mal.history() == want, (mal.history(), want)
    assert "already exist" not in mal.output(), mal.output()[-2000:]
    # The status file the CLI reads is saved by the server every 2 s.
    def settled():
        row = cli(a.data_dir, "forward", "status", "alice").strip().split("\t")
        # The count goes on from the 3 sent before the kill.
        return row[1] == "maloja" and row[5:8] == ["pending 0", "sent 9", "ok"]

    wait_for(settled, "the link's status to say ok", timeout=30)
    print(cli(a.data_dir, "forward", "status", "alice"))
