"""A bounded abuse load on loopback: while attackers flood failed logins on
every authentication path and send heavy queries, another user's streams
and scrobbles keep their p99 under 50 ms and the server's memory stays
under a stated ceiling (docs/security.md).

The server is a real `spindle serve` with a 20,000-entry library (imported
with `spindle db import-json`) and a music folder of FLAC files made with
sox. Attackers run in their own processes and connect from 127.0.0.2, the
listener from 127.0.0.3 (the whole of 127/8 is loopback on Linux), so the
throttle's per-address rules see them apart as they would on a network.

Run by scripts/ci.d/80-server.sh; prints one summary line and writes it to
$SPINDLE_ABUSE_REPORT when set."""

import hashlib
import http.client
import json
import multiprocessing as mp
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

mutagen_flac = pytest.importorskip("mutagen.flac")

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
PASSWORD = "listener's password"
ATTACKER_PASSWORD = "mallory's password"
ABUSE_SECONDS = float(os.environ.get("SPINDLE_ABUSE_SECONDS", "15"))
# What the server may grow to under this load: the library and indexes
# (~60 MB for 20,000 entries), two Argon2 blocks (19 MiB each), two query
# budgets and the body budget, with room to spare. Stated in
# docs/security.md.
MEMORY_CEILING_MB = 400
P99_CEILING_MS = 50.0
ENTRIES = 20_000


def cli(data_dir, *args, stdin=None):
    return subprocess.run(
        [BIN, "--data-dir", data_dir, *args],
        input=stdin, capture_output=True, text=True, check=True,
    ).stdout


def status_field(pid, name):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return 0


def rss_mb(pid):
    return status_field(pid, "VmRSS") / 1024


def conn(host, port, source):
    return http.client.HTTPConnection(host, port, timeout=30, source_address=(source, 0))


def request(c, method, path, body=None, headers=None):
    """One request on a keep-alive connection; reconnects once if the
    server closed it. Returns (status, body)."""
    for attempt in range(2):
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.read()
        except (http.client.HTTPException, ConnectionError, OSError):
            c.close()
            if attempt:
                raise
    raise AssertionError("unreachable")


def attacker(kind, host, port, until, counts):
    """One attacking process: `kind` picks what it floods."""
    c = conn(host, port, "127.0.0.2")
    n = 0
    words = " ".join(f"title~{chr(97 + i % 26)}*" for i in range(60_000))
    legal = " OR ".join(f"title~*{chr(97 + i % 26)}{chr(97 + (i * 7) % 26)}*" for i in range(60))
    while time.time() < until:
        n += 1
        wrong = f"guess{n}"
        try:
            if kind == "web":
                request(c, "POST", "/ui/login", json.dumps({"user": "ann", "password": wrong}),
                        {"content-type": "application/json", "x-spindle-csrf": "1"})
            elif kind == "subsonic":
                q = urllib.parse.urlencode({"u": "ann", "p": wrong, "v": "1.16.1", "c": "x"})
                request(c, "GET", f"/rest/ping?{q}")
            elif kind == "token":
                salt = f"s{n}"
                t = hashlib.md5(f"{wrong}{salt}".encode()).hexdigest()
                q = urllib.parse.urlencode({"u": "ann", "t": t, "s": salt, "v": "1.16.1", "c": "x"})
                request(c, "GET", f"/rest/ping?{q}")
            elif kind == "lastfm":
                body = urllib.parse.urlencode({"method": "auth.getMobileSession",
                                               "username": "ann", "password": wrong,
                                               "api_key": "0" * 32, "api_sig": "0" * 32})
                request(c, "POST", "/2.0/", body,
                        {"content-type": "application/x-www-form-urlencoded"})
            elif kind == "apiauth":
                body = urllib.parse.urlencode({"username": "ann", "password": wrong,
                                               "api_key": "k", "token": "t"})
                request(c, "POST", "/api/auth/", body,
                        {"content-type": "application/x-www-form-urlencoded"})
            elif kind == "query":
                q = words if n % 2 else legal
                body = urllib.parse.urlencode({"u": "mallory", "p": ATTACKER_PASSWORD,
                                               "v": "1.16.1", "c": "x", "query": q})
                request(c, "POST", "/rest/search3", body,
                        {"content-type": "application/x-www-form-urlencoded"})
        except (OSError, http.client.HTTPException):
            c = conn(host, port, "127.0.0.2")
    counts[kind] = n


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


@pytest.fixture(scope="module")
def srv():
    if not shutil.which("sox"):
        pytest.skip("sox is not installed")
    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as music:
        for i in range(3):
            d = Path(music) / "Listener" / "Album"
            d.mkdir(parents=True, exist_ok=True)
            f = d / f"{i:02} Track.flac"
            subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", str(f),
                            "synth", "20", "sine", str(300 + 50 * i)], check=True)
            tags = mutagen_flac.FLAC(str(f))
            tags["artist"], tags["album"], tags["title"] = "Listener", "Album", f"Track {i}"
            tags.save()
        lib = [{"artist": f"Artist {i % 900}", "album": f"Album {i % 2400}",
                "title": f"{chr(97 + i % 26)}{chr(97 + (i * 7) % 26)} title {i}",
                "tracknr": i % 14 + 1}
               for i in range(ENTRIES)]
        lib_file = Path(data_dir) / "lib.json"
        lib_file.write_text(json.dumps(lib))
        cli(data_dir, "db", "import-json", str(lib_file))
        proc = subprocess.Popen(
            [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0", "--music", music],
            stdout=subprocess.PIPE, text=True,
        )
        try:
            m = None
            for _ in range(10):
                m = re.search(r"serving http://([0-9.]+):(\d+)/", proc.stdout.readline())
                if m:
                    break
            assert m, "the server printed no URL"
            cli(data_dir, "user", "add", "ann", stdin=PASSWORD + "\n")
            cli(data_dir, "user", "add", "mallory", stdin=ATTACKER_PASSWORD + "\n")
            token = cli(data_dir, "user", "token", "ann").strip()
            yield proc, m.group(1), int(m.group(2)), token
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def test_a_listener_keeps_streaming_and_scrobbling_under_login_and_query_abuse(srv):
    proc, host, port, token = srv
    auth = urllib.parse.urlencode({"u": "ann", "p": PASSWORD, "v": "1.16.1", "c": "t",
                                   "f": "json"})
    c = conn(host, port, "127.0.0.3")
    status, body = request(c, "GET", f"/rest/search3?{auth}&query=Listener")
    assert status == 200, body
    songs = json.loads(body)["subsonic-response"]["searchResult3"].get("song", [])
    assert songs, body
    song = songs[0]["id"]

    def stream_once():
        t0 = time.perf_counter()
        status, data = request(c, "GET", f"/rest/stream?{auth}&id={song}",
                               headers={"range": "bytes=0-65535"})
        assert status == 206 and len(data) == 65536, status
        return (time.perf_counter() - t0) * 1000

    ts = [int(time.time()) - 3600]

    def scrobble_once():
        ts[0] += 1
        doc = {"listen_type": "single", "payload": [{
            "listened_at": ts[0],
            "track_metadata": {"artist_name": "Listener", "track_name": "Track"}}]}
        t0 = time.perf_counter()
        status, data = request(c, "POST", "/1/submit-listens", json.dumps(doc),
                               {"authorization": f"Token {token}",
                                "content-type": "application/json"})
        assert status == 200, data
        return (time.perf_counter() - t0) * 1000

    base_rss = rss_mb(proc.pid)
    until = time.time() + ABUSE_SECONDS
    counts = mp.Manager().dict()
    kinds = os.environ.get("SPINDLE_ABUSE_KINDS", "web,subsonic,token,lastfm,apiauth,query")
    kinds = kinds.split(",")
    attackers = [mp.Process(target=attacker, args=(k, host, port, until, counts))
                 for k in kinds for _ in range(3)]
    for a in attackers:
        a.start()
    stream_ms, scrobble_ms, peak, threads = [], [], base_rss, 0
    time.sleep(1.0)  # let the flood build up before measuring
    while time.time() < until:
        stream_ms.append(stream_once())
        scrobble_ms.append(scrobble_once())
        peak = max(peak, rss_mb(proc.pid))
        threads = max(threads, status_field(proc.pid, "Threads"))
        time.sleep(0.02)
    for a in attackers:
        a.join(timeout=60)
    # The listener still gets in, and the listens all arrived.
    status, _ = request(c, "GET", f"/rest/ping?{auth}")
    assert status == 200
    after_rss = rss_mb(proc.pid)
    summary = (
        f"abuse load {ABUSE_SECONDS:.0f} s, {sum(counts.values())} attacking requests "
        f"({dict(counts)}): listener stream p99 {percentile(stream_ms, 0.99):.1f} ms "
        f"(p50 {percentile(stream_ms, 0.5):.1f}, n={len(stream_ms)}), scrobble p99 "
        f"{percentile(scrobble_ms, 0.99):.1f} ms (p50 {percentile(scrobble_ms, 0.5):.1f}, "
        f"n={len(scrobble_ms)}); server RSS {base_rss:.0f} MB before, peak {peak:.0f} MB, "
        f"{after_rss:.0f} MB after (ceiling {MEMORY_CEILING_MB} MB); at most {threads} threads"
    )
    print("\n" + summary)
    if os.environ.get("SPINDLE_ABUSE_REPORT"):
        Path(os.environ["SPINDLE_ABUSE_REPORT"]).write_text(summary + "\n")
    assert peak < MEMORY_CEILING_MB, summary
    assert percentile(stream_ms, 0.99) < P99_CEILING_MS, summary
    assert percentile(scrobble_ms, 0.99) < P99_CEILING_MS, summary
