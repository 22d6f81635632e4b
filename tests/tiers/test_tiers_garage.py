"""Spindle's storage tiers against a real three-node Garage cluster.

`scripts/garage-cluster.sh` starts Garage on loopback (three zones,
replication factor 3, a bucket and a key). The music folder holds WAV
files made with sox; `spindle tiers upload` copies them to the bucket so
each has two copies (the music folder and Garage). `spindle serve` then
runs with a hot folder and the S3 cold tier, and the music folder marked
`down`, so every byte a client gets comes from Garage or the hot folder.
A real HTTP client streams every track and compares bytes; the popular
tracks must land in the hot folder and then be served from it; one Garage
node is killed (kill -9) in the middle of a stream, which must finish
byte-exact, and streaming goes on. A second server keeps copies on a
local folder device and the music folder; the folder is removed while it
runs, and the tracks are re-replicated to Garage in the background (then
streamed from Garage alone after a restart with the music folder down).
A third, without Garage, starts after listens were imported and must fill
its empty hot folder with the most played tracks before any request.

SPINDLE_BIN names the binary (default target/release/spindle); the test
runs only with SPINDLE_TIERS_TESTS=1 (scripts/ci.d/85-tiers.sh sets it).
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
CLUSTER = str(ROOT / "scripts/garage-cluster.sh")
PASSWORD = "correct horse"

pytestmark = pytest.mark.skipif(
    os.environ.get("SPINDLE_TIERS_TESTS") != "1",
    reason="set SPINDLE_TIERS_TESTS=1 (needs garage and sox)",
)


def cli(data_dir, *args, stdin=None, env=None):
    return subprocess.run(
        [BIN, "--data-dir", data_dir, *args],
        input=stdin, capture_output=True, text=True, check=True, env=env,
    ).stdout


def make_music(music):
    """Six small tracks and one long one (about 21 MB, larger than the hot
    budget, so it is always read from Garage)."""
    files = {}
    for i, hz in enumerate([220, 330, 440, 550, 660, 770]):
        p = Path(music) / "Artist" / f"{i + 1:02d} tone {hz}.wav"
        p.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(p),
                        "synth", "6", "sine", str(hz)], check=True)
        files[p.name] = p
    big = Path(music) / "Long" / "long noise.wav"
    big.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(big),
                    "synth", "120", "whitenoise"], check=True)
    files[big.name] = big
    return files


class Cluster:
    def __init__(self, path):
        self.path = path
        out = subprocess.run([CLUSTER, "start", path], capture_output=True, text=True)
        if out.returncode != 0:
            raise AssertionError(f"garage cluster did not start:\n{out.stdout}\n{out.stderr}")
        self.env = dict(line.split("=", 1) for line in out.stdout.strip().splitlines())

    def kill(self, n):
        subprocess.run([CLUSTER, "kill", self.path, str(n)], check=True)

    def stop(self):
        subprocess.run([CLUSTER, "stop", self.path], check=False)


def write_config(path, music, hot, cluster, hot_budget):
    e = cluster.env
    endpoints = ", ".join(f'"{x}"' for x in e["GARAGE_ENDPOINTS"].split(","))
    Path(path).write_text(f"""
[tiers]
mindevcount = 2
promote_bandwidth = "64MiB"
stall_timeout_ms = 3000
retry_after_secs = 60

[tiers.hot]
path = "{hot}"
budget = {hot_budget}

# The music folder itself: marked down, so reads come from Garage or hot.
[[tiers.cold]]
name = "music"
kind = "folder"
path = "{music}"
state = "down"

[[tiers.cold]]
name = "garage"
kind = "s3"
endpoints = [{endpoints}]
region = "{e["GARAGE_REGION"]}"
bucket = "{e["GARAGE_BUCKET"]}"
access_key = "{e["GARAGE_ACCESS_KEY"]}"
secret_key = "{e["GARAGE_SECRET_KEY"]}"
path_style = true
""")


class Srv:
    def auth(self):
        return {"u": "ann", "p": "enc:" + PASSWORD.encode().hex(), "v": "1.16.1",
                "c": "tiers-test", "f": "json"}

    def url(self, method, **params):
        q = urllib.parse.urlencode({**self.auth(), **params})
        return f"{self.base}/rest/{method}?{q}"

    def get_json(self, method, **params):
        with urllib.request.urlopen(self.url(method, **params), timeout=30) as r:
            return json.loads(r.read())["subsonic-response"]

    def status(self):
        """The state the server writes every two seconds, once it is newer
        than this call (so it counts what happened before)."""
        since = time.time()
        path = Path(self.data_dir) / "tiers/status.json"
        deadline = since + 15
        while True:
            try:
                st = json.loads(path.read_text())
                if st["written"] > since:
                    return st
            except (FileNotFoundError, json.JSONDecodeError):
                pass
            assert time.time() < deadline, "the server wrote no tiers status"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def setup():
    if not shutil.which("sox"):
        pytest.fail("sox is not installed")
    tmp = tempfile.mkdtemp(prefix="spindle-tiers-")
    cluster = Cluster(os.path.join(tmp, "garage"))
    proc = None
    try:
        music = os.path.join(tmp, "music")
        data_dir = os.path.join(tmp, "data")
        hot = os.path.join(tmp, "hot")
        files = make_music(music)
        small = max(p.stat().st_size for n, p in files.items() if not n.startswith("long"))
        # Room for three small tracks, never the long one.
        budget = 3 * small + 1000
        cfg = os.path.join(tmp, "server.toml")
        write_config(cfg, os.path.realpath(music), hot, cluster, budget)
        env = {**os.environ, "SPINDLE_SERVER_CONFIG": cfg}
        cli(data_dir, "scan", music, env=env)
        up = cli(data_dir, "tiers", "upload", "--music", music, env=env)
        assert "7 tracks have 2 copies or more" in up, up
        proc = subprocess.Popen(
            [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0", "--music", music],
            stdout=subprocess.PIPE, text=True, env=env,
        )
        m = None
        for _ in range(5):
            line = proc.stdout.readline()
            m = re.search(r"serving http://([0-9.]+):(\d+)/", line)
            if m:
                break
        assert m, "the server printed no URL"
        cli(data_dir, "user", "add", "ann", stdin=PASSWORD + "\n")
        s = Srv()
        s.base = f"http://{m.group(1)}:{m.group(2)}"
        s.files, s.music, s.data_dir, s.hot, s.cluster, s.budget = files, music, data_dir, hot, cluster, budget
        songs = s.get_json("search3", query="", songCount=100)["searchResult3"]["song"]
        s.ids = {Path(x["path"]).name: x["id"] for x in songs}
        assert set(s.ids) == set(files), (sorted(s.ids), sorted(files))
        yield s
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=15)
        cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def fetch(s, name, rng=None):
    req = urllib.request.Request(s.url("stream", id=s.ids[name]))
    if rng:
        req.add_header("Range", rng)
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.status, r.headers.get("x-spindle-device"), r.read()


def test_every_track_streams_byte_exact_from_garage(setup):
    s = setup
    for name, p in s.files.items():
        status, device, body = fetch(s, name)
        assert status == 200
        assert device in ("garage", "hot"), device
        assert body == p.read_bytes(), name
    # A range, resumed in the middle.
    p = s.files["long noise.wav"]
    status, device, body = fetch(s, "long noise.wav", "bytes=1000000-1999999")
    assert (status, device) == (206, "garage")
    assert body == p.read_bytes()[1000000:2000000]
    st = s.status()
    music = next(d for d in st["devices"] if d["name"] == "music")
    assert music["state"] == "down" and music["reads"] == 0
    garage = next(d for d in st["devices"] if d["name"] == "garage")
    assert garage["reads"] >= 1 and garage["ewma_ttfb_ms"] is not None


def test_popular_tracks_fill_the_hot_folder_and_are_served_from_it(setup):
    s = setup
    popular = ["01 tone 220.wav", "02 tone 330.wav"]
    for _ in range(4):
        for name in popular:
            assert fetch(s, name)[2] == s.files[name].read_bytes()
    deadline = time.time() + 30
    while time.time() < deadline:
        st = s.status()
        if st["hot"]["files"] >= 2:
            break
        time.sleep(0.5)
    st = s.status()
    assert st["hot"]["used"] <= s.budget
    objects = [p for p in Path(s.hot, "objects").rglob("*") if p.is_file()]
    assert not [p for p in objects if p.name.endswith(".tmp")]
    assert sum(p.stat().st_size for p in objects if not p.name.endswith(".sum")) <= s.budget
    # Served from hot now (most of the time: reads are weighted by latency,
    # and the hot folder is local).
    seen = []
    for _ in range(5):
        for name in popular:
            status, device, body = fetch(s, name)
            assert body == s.files[name].read_bytes()
            seen.append(device)
    assert seen.count("hot") >= len(seen) // 2, seen
    st = s.status()
    assert st["hot"]["hits"] >= 1 and st["hot"]["bytes_from_hot"] > 0


def test_a_garage_node_dies_mid_stream_and_the_stream_finishes_byte_exact(setup):
    s = setup
    p = s.files["long noise.wav"]
    want = p.read_bytes()
    before = s.status()["failovers"]
    req = urllib.request.Request(s.url("stream", id=s.ids["long noise.wav"]))
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.headers.get("x-spindle-device") == "garage"
        got = bytearray(r.read(256 * 1024))
        # Node 1 is the first endpoint, the one serving now.
        s.cluster.kill(1)
        t0 = time.time()
        while True:
            chunk = r.read(256 * 1024)
            if not chunk:
                break
            got.extend(chunk)
    took = time.time() - t0
    assert bytes(got) == want
    assert took < 30, f"the rest of the stream took {took:.1f}s"
    deadline = time.time() + 10
    while time.time() < deadline and s.status()["failovers"] <= before:
        time.sleep(0.5)
    assert s.status()["failovers"] > before, "the stream never failed over"
    # Streaming goes on with the node dead.
    for name, f in s.files.items():
        status, device, body = fetch(s, name)
        assert status == 200 and body == f.read_bytes(), name
    out = cli(s.data_dir, "tiers", "status")
    assert "garage" in out and "hit ratio" in out, out


def test_the_access_log_replays_in_the_simulator(setup):
    """Every whole-track stream above left a line in the server's access
    log, and `spindle tiers simulate --replay` runs the policies over it."""
    s = setup
    for name in ["01 tone 220.wav", "02 tone 330.wav"]:
        fetch(s, name)
    log = Path(s.data_dir) / "tiers/access.log"
    lines = [l.split("\t") for l in log.read_text().splitlines()]
    assert len(lines) >= 2, lines
    sizes = {p.stat().st_size for p in s.files.values()}
    for ms, track, size in lines:
        assert int(ms) > 1_600_000_000_000 and int(track) >= 0
        assert int(size) in sizes, (size, sizes)
    out = subprocess.run(
        [BIN, "tiers", "simulate", "--replay", str(log), "--capacities", "20",
         "--policies", "lru,w-tinylfu,spindle", "--no-chart"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "replay" in out.stdout.lower() and "spindle" in out.stdout.lower(), out.stdout


def start_server(data_dir, music, env):
    """`spindle serve` on a free port: (process, base URL)."""
    proc = subprocess.Popen(
        [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0", "--music", music],
        stdout=subprocess.PIPE, text=True, env=env,
    )
    for _ in range(5):
        m = re.search(r"serving http://([0-9.]+):(\d+)/", proc.stdout.readline())
        if m:
            return proc, f"http://{m.group(1)}:{m.group(2)}"
    proc.terminate()
    raise AssertionError("the server printed no URL")


def write_rereplicate_config(path, cluster, archive, music, music_state):
    e = cluster.env
    endpoints = ", ".join(f'"{x}"' for x in e["GARAGE_ENDPOINTS"].split(","))
    Path(path).write_text(f"""
[tiers]
mindevcount = 2
retry_after_secs = 2
rereplicate_after_secs = 1
rereplicate_bandwidth = "1MiB"

[[tiers.cold]]
name = "music"
kind = "folder"
path = "{music}"
state = "{music_state}"

[[tiers.cold]]
name = "archive"
kind = "folder"
path = "{archive}"

[[tiers.cold]]
name = "garage"
kind = "s3"
endpoints = [{endpoints}]
region = "{e["GARAGE_REGION"]}"
bucket = "{e["GARAGE_BUCKET"]}"
access_key = "{e["GARAGE_ACCESS_KEY"]}"
secret_key = "{e["GARAGE_SECRET_KEY"]}"
""")


def test_a_removed_folder_device_is_re_replicated_to_garage(setup):
    """Copies on the music folder and a local folder device ("archive");
    the folder disappears while the server runs; the tracks fall below
    mindevcount, are copied to Garage in the background (status says so)
    and recorded in the replica index; after a restart with the music
    folder marked down they stream byte-exact from Garage alone. Runs
    after a Garage node was killed: two of three nodes take the writes."""
    s = setup
    tmp = tempfile.mkdtemp(prefix="spindle-rerepl-")
    proc = None
    try:
        music = os.path.realpath(os.path.join(tmp, "music"))
        archive = os.path.join(tmp, "archive")
        data_dir = os.path.join(tmp, "data")
        files = {}
        for i, hz in enumerate([250, 350, 450]):
            p = Path(music) / "Rerepl" / f"{i + 1:02d} tone {hz}.wav"
            p.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(p),
                            "synth", "6", "sine", str(hz)], check=True)
            files[p.name] = p
        cfg = os.path.join(tmp, "server.toml")
        write_rereplicate_config(cfg, s.cluster, archive, music, "readonly")
        env = {**os.environ, "SPINDLE_SERVER_CONFIG": cfg}
        cli(data_dir, "scan", music, env=env)
        up = cli(data_dir, "tiers", "upload", "--music", music, env=env)
        assert "3 tracks have 2 copies or more" in up, up
        assert len(list(Path(archive).rglob("*.wav"))) == 3

        proc, base = start_server(data_dir, music, env)
        srv = Srv()
        srv.base, srv.data_dir = base, data_dir
        st = srv.status()
        assert st["replication"]["below_mindevcount"] == 0, st["replication"]
        assert st["replication"]["copies_made"] == 0, st["replication"]

        shutil.rmtree(archive)
        seen_below = False
        deadline = time.time() + 90
        while True:
            st = srv.status()
            r = st["replication"]
            seen_below |= r["below_mindevcount"] > 0
            if r["copies_made"] == 3 and r["below_mindevcount"] == 0:
                break
            assert time.time() < deadline, r
        assert seen_below, "the status never showed tracks below mindevcount"
        assert r["lost_devices"] == ["archive"] and r["failures"] == 0, r
        garage = next(d for d in st["devices"] if d["name"] == "garage")
        assert garage["copies"] == 3, garage
        out = cli(data_dir, "tiers", "status")
        assert "lost: archive" in out and "LOST" in out, out
        log = (Path(data_dir) / "tiers/replicas.log").read_text()
        for name in files:
            assert f"+\tgarage\t{files[name].stat().st_size}\tRerepl/{name}\t" in log, log
        proc.terminate()
        proc.wait(timeout=15)

        # Only Garage now: the music folder down, the archive gone.
        write_rereplicate_config(cfg, s.cluster, archive, music, "down")
        proc, base = start_server(data_dir, music, env)
        cli(data_dir, "user", "add", "ann", stdin=PASSWORD + "\n")
        srv.base = base
        songs = srv.get_json("search3", query="", songCount=100)["searchResult3"]["song"]
        ids = {Path(x["path"]).name: x["id"] for x in songs}
        assert set(ids) == set(files), ids
        for name, p in files.items():
            with urllib.request.urlopen(srv.url("stream", id=ids[name]), timeout=60) as r:
                assert r.headers.get("x-spindle-device") == "garage"
                assert r.read() == p.read_bytes(), name
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=15)
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_listening_history_fills_the_hot_folder_before_any_request():
    """Listens imported before the server starts: at start it replays them
    into the policy and fills the empty hot folder's free space with the
    tracks played most, without a single stream request. Needs sox only."""
    with tempfile.TemporaryDirectory() as tmp:
        music, data_dir, hot = (os.path.join(tmp, x) for x in ("music", "data", "hot"))
        Path(music, "Ann").mkdir(parents=True)
        for i in range(1, 5):
            subprocess.run(
                ["sox", "-n", "-r", "44100", "-c", "2", "-b", "16",
                 "--comment", "ARTIST=Ann", "--comment", f"TITLE=Tone {i}",
                 "--comment", "ALBUM=Tones", str(Path(music, "Ann", f"0{i} tone.flac")),
                 "synth", "3", "sine", str(200 * i)], check=True)
        sizes = {i: Path(music, "Ann", f"0{i} tone.flac").stat().st_size for i in range(1, 5)}
        cli(data_dir, "scan", music)
        cli(data_dir, "user", "add", "ann", stdin=PASSWORD + "\n")
        # Tone 2 played 8 times, 4 six, 3 three, 1 once, in the last days.
        plays = {1: 1, 2: 8, 3: 3, 4: 6}
        now = int(time.time())
        export = Path(tmp, "listens.jsonl")
        export.write_text("".join(
            json.dumps({"listened_at": now - 3600 * (k + 1) - i,
                        "track_metadata": {"artist_name": "Ann", "track_name": f"Tone {i}",
                                           "release_name": "Tones"}}) + "\n"
            for i, n in plays.items() for k in range(n)))
        out = cli(data_dir, "listens", "import", "--user", "ann", str(export))
        assert "18 of 18 listens added" in out, out
        # Room for the two most played (tones 2 and 4) and not a third.
        budget = sizes[2] + sizes[4] + min(sizes.values()) // 2
        cfg = Path(tmp, "server.toml")
        cfg.write_text(f"""
[tiers]
mindevcount = 1

[tiers.hot]
path = "{hot}"
budget = {budget}
""")
        env = {**os.environ, "SPINDLE_SERVER_CONFIG": str(cfg)}
        err = open(Path(tmp, "serve.err"), "w+")
        proc = subprocess.Popen(
            [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0", "--music", music],
            stdout=subprocess.DEVNULL, stderr=err, text=True, env=env)
        try:
            objects = lambda: sorted(p for p in Path(hot, "objects").rglob("*")
                                     if p.is_file() and p.suffix == "")
            deadline = time.time() + 60
            while time.time() < deadline and len(objects()) < 2:
                time.sleep(0.2)
            time.sleep(1)  # anything more would come now
            name = lambda i: hashlib.sha256(f"Ann/0{i} tone.flac".encode()).hexdigest()[:32]
            assert [p.name for p in objects()] == sorted([name(2), name(4)]), objects()
            for i in (2, 4):
                copy = Path(hot, "objects", name(i)[:2], name(i))
                assert copy.read_bytes() == Path(music, "Ann", f"0{i} tone.flac").read_bytes()
            access = Path(data_dir, "tiers", "access.log")
            assert not access.exists() or access.read_text() == "", "a stream was requested"
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        err.seek(0)
        log = err.read()
        assert "replayed 18 listens" in log, log
        assert "promoting 2 tracks the history plays most" in log, log
