"""Fair shares under a flood of expensive jobs, on loopback: one user asks
for a large PNG cover at hundreds of distinct sizes and for a hundred
transcodes at once, while another user's getSong, 64 KiB stream ranges,
scrobbles and one transcode keep their p99 under 100 ms (the transcode is
served, not refused) and the server's memory stays under a stated
ceiling (docs/security.md, "Expensive jobs: fair shares").

The server is a real `spindle serve` with `[transcode] max_concurrent = 2`
and a queue of 64. The flooding user runs in its own process from
127.0.0.2, the listener from 127.0.0.3. Bounded: 600 cover requests in
about 2 s and 100 transcodes, a 15 s measurement; about 40 s in all.
Prints one summary line (and writes it to $SPINDLE_FAIR_REPORT when set)."""

import concurrent.futures
import http.client
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import struct
import subprocess
import tempfile
import time
import urllib.parse
import zlib
from pathlib import Path

import pytest

mutagen_flac = pytest.importorskip("mutagen.flac")

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run with the server tests (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
PASSWORD = "listener's password"
FLOODER_PASSWORD = "mallory's password"
MEASURE_SECONDS = float(os.environ.get("SPINDLE_FAIR_SECONDS", "15"))
COVER_REQUESTS = 600
TRANSCODES = 100
# The server with a 2400×2400 PNG being resized (about 23 MB decoded, once
# per worker), a few ffmpeg pipes and the listener's requests.
MEMORY_CEILING_MB = 300
P99_CEILING_MS = 100.0
COVER_SIDE = 2400


def png(side):
    """A side×side RGB PNG of noise, each row the one before shifted: as
    costly to decode as a scanned cover, quick to make."""
    rng = random.Random(1)
    base = bytes(rng.getrandbits(8) for _ in range(side * 3 + 4096))
    raw = bytearray()
    for y in range(side):
        raw.append(0)
        at = (y * 37) % 4096
        raw.extend(base[at:at + side * 3])
    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(bytes(raw), 6)) + chunk(b"IEND", b""))


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


def conn(host, port, source, timeout=30):
    return http.client.HTTPConnection(host, port, timeout=timeout, source_address=(source, 0))


def request(c, method, path, body=None, headers=None):
    """One request on a keep-alive connection; reconnects once if the
    server closed it. Returns (status, headers, body)."""
    for attempt in range(2):
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.headers, r.read()
        except (http.client.HTTPException, ConnectionError, OSError):
            c.close()
            if attempt:
                raise
    raise AssertionError("unreachable")


def subsonic(user, password):
    return urllib.parse.urlencode({"u": user, "p": password, "v": "1.16.1", "c": "t",
                                   "f": "json"})


def flooder(host, port, album, songs, counts):
    """The flooding user: COVER_REQUESTS cover sizes in about 2 s, and
    TRANSCODES transcodes at once, each read to its end."""
    auth = subsonic("mallory", FLOODER_PASSWORD)

    def one(path):
        c = conn(host, port, "127.0.0.2", timeout=60)
        try:
            status, _, _ = request(c, "GET", path)
            return status
        except (OSError, http.client.HTTPException):
            return "error"
        finally:
            c.close()

    statuses = {}
    # A thread per request: every one of them is in flight at once.
    with concurrent.futures.ThreadPoolExecutor(TRANSCODES) as tx, \
            concurrent.futures.ThreadPoolExecutor(COVER_REQUESTS) as cx:
        futures = []
        for n in range(TRANSCODES):
            futures.append(("transcode", tx.submit(
                one, f"/rest/stream?{auth}&id={songs[n % len(songs)]}&format=mp3"
                     f"&maxBitRate={96 + 32 * (n % 4)}")))
        start = time.time()
        for n in range(COVER_REQUESTS):
            # 300 a second.
            time.sleep(max(0.0, start + n / 300 - time.time()))
            futures.append(("cover", cx.submit(
                one, f"/rest/getCoverArt?{auth}&id={album}&size={100 + n}")))
        for kind, f in futures:
            key = f"{kind} {f.result()}"
            statuses[key] = statuses.get(key, 0) + 1
    counts.update(statuses)


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


@pytest.fixture(scope="module")
def srv():
    if not shutil.which("sox") or not shutil.which("ffmpeg"):
        pytest.skip("sox and ffmpeg are needed")
    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as music:
        for artist, album, n in [("Listener", "Album", 3), ("Flood", "Big", 4)]:
            d = Path(music) / artist / album
            d.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                f = d / f"{i:02} Track.flac"
                subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", str(f),
                                "synth", "20", "sine", str(300 + 50 * i)], check=True)
                tags = mutagen_flac.FLAC(str(f))
                tags["artist"], tags["album"], tags["title"] = artist, album, f"Track {i}"
                tags.save()
        (Path(music) / "Flood" / "Big" / "cover.png").write_bytes(png(COVER_SIDE))
        cfg = Path(data_dir) / "server.toml"
        cfg.write_text("[transcode]\nmax_concurrent = 2\nqueue = 64\nqueue_timeout = 10\n")
        proc = subprocess.Popen(
            [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0",
             "--music", music, "--config", str(cfg)],
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
            cli(data_dir, "user", "add", "mallory", stdin=FLOODER_PASSWORD + "\n")
            token = cli(data_dir, "user", "token", "ann").strip()
            yield proc, m.group(1), int(m.group(2)), token
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def songs_of(c, auth, query):
    deadline = time.time() + 30
    while True:
        status, _, body = request(c, "GET", f"/rest/search3?{auth}&query={query}")
        assert status == 200, body
        songs = json.loads(body)["subsonic-response"]["searchResult3"].get("song", [])
        if songs or time.time() > deadline:
            assert songs, body
            return songs
        time.sleep(0.2)


def test_one_users_cover_and_transcode_flood_leaves_another_user_served(srv):
    proc, host, port = srv[0], srv[1], srv[2]
    token = srv[3]
    auth = subsonic("ann", PASSWORD)
    c = conn(host, port, "127.0.0.3")
    mine = songs_of(c, auth, "Listener")
    flood = songs_of(c, auth, "Flood")
    song = mine[0]["id"]
    album = flood[0]["albumId"]

    failures = []

    def timed(f):
        """The call's time in ms; a failure (a timeout, a wrong answer)
        counts with the time it took and is reported."""
        t0 = time.perf_counter()
        try:
            f()
        except (AssertionError, OSError, http.client.HTTPException) as e:
            failures.append(f"{f.__name__}: {e!r}"[:120])
        return (time.perf_counter() - t0) * 1000

    def get_song():
        status, _, data = request(c, "GET", f"/rest/getSong?{auth}&id={song}")
        assert status == 200, data

    def stream_range():
        status, _, data = request(c, "GET", f"/rest/stream?{auth}&id={song}",
                                  headers={"range": "bytes=0-65535"})
        assert status == 206 and len(data) == 65536, status

    ts = [int(time.time()) - 3600]

    def scrobble():
        ts[0] += 1
        doc = {"listen_type": "single", "payload": [{
            "listened_at": ts[0],
            "track_metadata": {"artist_name": "Listener", "track_name": "Track"}}]}
        status, _, data = request(c, "POST", "/1/submit-listens", json.dumps(doc),
                                  {"authorization": f"Token {token}",
                                   "content-type": "application/json"})
        assert status == 200, data

    transcode = {}

    def listener_transcode():
        t = conn(host, port, "127.0.0.3", timeout=60)
        t0 = time.perf_counter()
        status, headers, data = request(
            t, "GET", f"/rest/stream?{auth}&id={mine[1]['id']}&format=mp3&maxBitRate=128")
        transcode.update(status=status, bytes=len(data),
                         kind=headers.get("content-type", ""),
                         ms=(time.perf_counter() - t0) * 1000)
        t.close()

    base_rss = rss_mb(proc.pid)
    counts = mp.Manager().dict()
    attacker = mp.Process(target=flooder,
                          args=(host, port, album, [s["id"] for s in flood], counts))
    attacker.start()
    song_ms, stream_ms, scrobble_ms, peak, threads = [], [], [], base_rss, 0
    time.sleep(1.0)  # let the flood build up before measuring
    listener_t = None
    until = time.time() + MEASURE_SECONDS
    while time.time() < until:
        song_ms.append(timed(get_song))
        stream_ms.append(timed(stream_range))
        scrobble_ms.append(timed(scrobble))
        if listener_t is None:
            listener_t = concurrent.futures.ThreadPoolExecutor(1).submit(listener_transcode)
        peak = max(peak, rss_mb(proc.pid))
        threads = max(threads, status_field(proc.pid, "Threads"))
        time.sleep(0.02)
    try:
        listener_t.result(timeout=60)
    except Exception as e:  # reported below with the figures
        transcode.update(status=repr(e)[:80])
    attacker.join(timeout=60)
    flood_ended = not attacker.is_alive()
    if not flood_ended:
        attacker.terminate()
    after_rss = rss_mb(proc.pid)
    # A second later, once the last resize is done.
    time.sleep(1.0)
    settled_rss = rss_mb(proc.pid)
    summary = (
        f"fair load {MEASURE_SECONDS:.0f} s, flood {dict(sorted(counts.items()))}: "
        f"listener getSong p99 {percentile(song_ms, 0.99):.1f} ms "
        f"(p50 {percentile(song_ms, 0.5):.1f}, max {max(song_ms):.0f}, n={len(song_ms)}), "
        f"stream range p99 {percentile(stream_ms, 0.99):.1f} ms "
        f"(max {max(stream_ms):.0f}), scrobble p99 {percentile(scrobble_ms, 0.99):.1f} ms "
        f"(max {max(scrobble_ms):.0f}); listener transcode {transcode.get('status')} "
        f"{transcode.get('bytes')} bytes in {transcode.get('ms', 0):.0f} ms; "
        f"server RSS {base_rss:.0f} MB before, peak {peak:.0f} MB, {after_rss:.0f} MB after, "
        f"{settled_rss:.0f} MB a second later (ceiling {MEMORY_CEILING_MB} MB); "
        f"at most {threads} threads; flood ended in time: {flood_ended}; "
        f"listener failures: {len(failures)} {failures[:3]}"
    )
    print("\n" + summary)
    if os.environ.get("SPINDLE_FAIR_REPORT"):
        Path(os.environ["SPINDLE_FAIR_REPORT"]).write_text(summary + "\n")
    assert flood_ended and not failures, summary
    assert transcode.get("status") == 200 and transcode.get("kind") == "audio/mpeg", summary
    assert transcode.get("bytes", 0) > 100_000, summary
    assert counts.get("cover 200", 0) > 0 and counts.get("transcode 200", 0) > 0, summary
    assert peak < MEMORY_CEILING_MB, summary
    assert percentile(song_ms, 0.99) < P99_CEILING_MS, summary
    assert percentile(stream_ms, 0.99) < P99_CEILING_MS, summary
    assert percentile(scrobble_ms, 0.99) < P99_CEILING_MS, summary
