"""The pieces of the loopback cluster test (tests/cluster/test_cluster.py):
a three-node Garage cluster (scripts/garage-cluster.sh), Spindle nodes with
a [tiers] + [cluster] settings file each, nginx in front, sox music, and the
scrobble and read calls of the ListenBrainz, Subsonic and Last.fm APIs.

Every wait is bounded, and every failure message says what was expected,
what was seen, and ends with the tail of the nodes' logs."""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
GARAGE_SCRIPT = str(ROOT / "scripts/garage-cluster.sh")
NGINX_TEMPLATE = Path(__file__).resolve().parent / "nginx.conf.in"
USER = "alice"
PASSWORD = "correct horse battery"
LONG = "long noise.wav"


def free_port():
    """A loopback port free now (nodes restart on the same port, and nginx
    names them by port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, lines=40):
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return f"({path}: no such file)"
    return "\n".join(text.splitlines()[-lines:])


def cli(data_dir, *args, stdin=None, timeout=60, check=True):
    """`spindle --data-dir DATA_DIR ARGS…`; the CompletedProcess."""
    out = subprocess.run(
        [BIN, "--data-dir", str(data_dir), *args],
        input=stdin, capture_output=True, text=True, timeout=timeout,
    )
    if check and out.returncode != 0:
        raise AssertionError(
            f"`spindle {' '.join(args)}` exited {out.returncode}\n"
            f"stdout: {out.stdout}\nstderr: {out.stderr}")
    return out


def make_music(music):
    """Three short tones and one long noise track (300 s, 53 MB: a slow
    reader is still far from its end when the node serving it dies, even
    with every socket buffer between it and the node full)."""
    files = {}
    for i, hz in enumerate([220, 330, 440]):
        p = Path(music) / "Tones" / f"{i + 1:02d} tone {hz}.wav"
        p.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(p),
                        "synth", "4", "sine", str(hz)], check=True, timeout=60)
        files[p.name] = p
    big = Path(music) / "Long" / LONG
    big.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(big),
                    "synth", "300", "whitenoise"], check=True, timeout=120)
    files[big.name] = big
    return files


class Garage:
    """scripts/garage-cluster.sh on loopback: three nodes, a bucket and a key."""

    def __init__(self, path):
        self.path = str(path)
        out = subprocess.run([GARAGE_SCRIPT, "start", self.path],
                             capture_output=True, text=True, timeout=180)
        if out.returncode != 0:
            raise AssertionError(
                f"garage cluster did not start:\n{out.stdout}\n{out.stderr}")
        self.env = dict(line.split("=", 1) for line in out.stdout.strip().splitlines())

    def stop(self):
        subprocess.run([GARAGE_SCRIPT, "stop", self.path], check=False, timeout=60)


def node_config(garage, music, hot, *, role, node, url, ship="sync"):
    """The settings file of one node: the music folder and the Garage
    bucket as cold devices, a hot folder of its own, and [cluster] with
    short intervals so the test runs in seconds."""
    e = garage.env
    endpoints = ", ".join(f'"{x}"' for x in e["GARAGE_ENDPOINTS"].split(","))
    return f"""
[tiers]
mindevcount = 1

[tiers.hot]
path = "{hot}"
budget = 200000000

[[tiers.cold]]
name = "music"
kind = "folder"
path = "{music}"

[[tiers.cold]]
name = "garage"
kind = "s3"
endpoints = [{endpoints}]
region = "{e["GARAGE_REGION"]}"
bucket = "{e["GARAGE_BUCKET"]}"
access_key = "{e["GARAGE_ACCESS_KEY"]}"
secret_key = "{e["GARAGE_SECRET_KEY"]}"
path_style = true

[cluster]
role = "{role}"
node = "{node}"
advertise_url = "{url}"
store = "garage"
prefix = "cluster/"
ship_interval_ms = 200
ship = "{ship}"
snapshot_every = "6h"
poll_interval_ms = 200
lease_secs = 3
"""


class Node:
    """One `spindle serve` of the cluster on a fixed loopback port, its
    stdout and stderr in NAME.log beside its data dir."""

    def __init__(self, tmp, name, role, garage, music):
        self.name, self.role = name, role
        self.data_dir = Path(tmp) / f"data-{name}"
        self.hot = Path(tmp) / f"hot-{name}"
        self.config = Path(tmp) / f"{name}.toml"
        self.log = Path(tmp) / f"{name}.log"
        self.music = music
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config.write_text(node_config(garage, music, self.hot, role=role,
                                           node=name, url=self.url))
        self.proc = None

    def start(self, wait=90):
        """Starts the server and waits until it answers an authenticated
        Subsonic ping (a replica answers only once it holds a snapshot,
        which brings the accounts)."""
        out = open(self.log, "a")
        out.write(f"\n==== start {time.strftime('%H:%M:%S')}\n")
        out.flush()
        self.proc = subprocess.Popen(
            [BIN, "--data-dir", str(self.data_dir), "serve", "--config", str(self.config),
             "--music", str(self.music), "--listen", f"127.0.0.1:{self.port}"],
            stdout=out, stderr=subprocess.STDOUT, text=True,
        )
        out.close()
        deadline = time.time() + wait
        seen = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"node {self.name} exited {self.proc.returncode} at start\n{self.log_tail()}")
            try:
                r = requests.get(f"{self.url}/rest/ping", params=subsonic_auth(), timeout=3)
                seen = f"{r.status_code} {r.text[:200]}"
                if r.ok and r.json()["subsonic-response"]["status"] == "ok":
                    return
            except (requests.RequestException, ValueError, KeyError) as e:
                seen = repr(e)
            time.sleep(0.2)
        raise AssertionError(
            f"node {self.name} did not answer an authenticated ping within {wait}s "
            f"(last: {seen})\n{self.log_tail()}")

    def kill(self):
        """SIGKILL, as a crash."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines=40):
        return f"---- {self.name} ({self.role}) log tail:\n{tail(self.log, lines)}"

    def cluster(self, *args, timeout=60, check=True):
        """`spindle --data-dir D cluster ARGS… --config F` on this node."""
        return cli(self.data_dir, "cluster", *args, "--config", str(self.config),
                   timeout=timeout, check=check)

    def status(self):
        """`spindle cluster status --json`, parsed."""
        out = self.cluster("status", "--json", timeout=30).stdout
        try:
            return json.loads(out)
        except json.JSONDecodeError as e:
            raise AssertionError(f"`cluster status --json` printed no JSON ({e}):\n{out}")


class Nginx:
    """nginx (Debian's) in front of the nodes, from nginx.conf.in."""

    def __init__(self, tmp, upstreams):
        self.dir = Path(tmp) / "nginx"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        servers = "\n".join(
            f"        server {u} max_fails=2 fail_timeout=5s;" for u in upstreams)
        conf = (NGINX_TEMPLATE.read_text().replace("@DIR@", str(self.dir))
                .replace("@LISTEN@", f"127.0.0.1:{self.port}").replace("@SERVERS@", servers))
        self.conf = self.dir / "nginx.conf"
        self.conf.write_text(conf)
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen(
            [nginx, "-p", str(self.dir), "-c", str(self.conf), "-e", str(self.dir / "error.log"),
             "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=open(self.dir / "stderr.log", "w"),
        )
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"nginx exited {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"nginx did not listen on {self.port}\n{self.log_tail()}")

    def log_tail(self, lines=20):
        return (f"---- nginx stderr:\n{tail(self.dir / 'stderr.log', lines)}\n"
                f"---- nginx error.log:\n{tail(self.dir / 'error.log', lines)}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


# ---- the APIs -------------------------------------------------------------

def subsonic_auth():
    return {"u": USER, "p": "enc:" + PASSWORD.encode().hex(), "v": "1.16.1",
            "c": "cluster-test", "f": "json"}


def subsonic(base, method, timeout=30, **params):
    """A Subsonic call; the parsed subsonic-response, or AssertionError
    naming the request and the answer."""
    r = requests.get(f"{base}/rest/{method}", params={**subsonic_auth(), **params},
                     timeout=timeout)
    try:
        body = r.json()["subsonic-response"]
    except (ValueError, KeyError):
        raise AssertionError(f"{method} on {base}: {r.status_code} {r.text[:300]}")
    assert r.ok and body.get("status") == "ok", (
        f"{method} {params} on {base}: expected status ok, got {r.status_code} "
        f"node={r.headers.get('X-Spindle-Node')} {json.dumps(body)[:300]}")
    return body


def lb_submit(base, token, listens, timeout=30):
    """POST /1/submit-listens (an "import" of LISTENS, each (ts, artist,
    title)); the response."""
    payload = [{"listened_at": ts,
                "track_metadata": {"artist_name": artist, "track_name": title}}
               for ts, artist, title in listens]
    return requests.post(
        f"{base}/1/submit-listens",
        headers={"Authorization": f"Token {token}"},
        json={"listen_type": "import" if len(payload) > 1 else "single", "payload": payload},
        timeout=timeout,
    )


def lb_listens(base, token, count=1000, max_ts=None, timeout=30):
    """One page of alice's listens on the node at BASE (up to COUNT, newest
    first, before MAX_TS): a list of (listened_at, artist, title)."""
    params = {"count": count}
    if max_ts is not None:
        params["max_ts"] = max_ts
    r = requests.get(f"{base}/1/user/{USER}/listens", params=params,
                     headers={"Authorization": f"Token {token}"}, timeout=timeout)
    assert r.ok, (f"GET /1/user/{USER}/listens on {base}: {r.status_code} "
                  f"node={r.headers.get('X-Spindle-Node')} {r.text[:300]}")
    out = []
    for x in r.json()["payload"]["listens"]:
        m = x["track_metadata"]
        out.append((x["listened_at"], m.get("artist_name"), m.get("track_name")))
    return out


def lb_all_listens(base, token, page=1000):
    """Every listen of alice on the node at BASE, duplicates included,
    page by page. Each next page asks for max_ts = the oldest second seen
    + 1 (max_ts is exclusive) and replaces that second's listens, so
    listens sharing the second at a page's edge are neither lost nor
    counted twice."""
    by_ts, max_ts = {}, None
    while True:
        got = lb_listens(base, token, count=page, max_ts=max_ts)
        if not got:
            break
        groups = {}
        for x in got:
            groups.setdefault(x[0], []).append(x)
        by_ts.update(groups)
        oldest = min(groups)
        if len(got) < page:
            break
        assert max_ts is None or oldest + 1 < max_ts, (
            f"a page of {page} listens all at second {oldest}: cannot page past it")
        max_ts = oldest + 1
    return [x for ts in sorted(by_ts, reverse=True) for x in by_ts[ts]]


def metrics(base, token):
    r = requests.get(f"{base}/metrics", headers={"Authorization": f"Bearer {token}"},
                     timeout=10)
    assert r.ok, f"GET /metrics on {base}: {r.status_code} {r.text[:300]}"
    return r.text


def metric(text, name):
    """The value of the first sample of NAME in a Prometheus text page."""
    m = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})?\s+(\S+)$", text, re.M)
    return float(m.group(1)) if m else None


class SmallBuffer(http.client.HTTPConnection):
    """An HTTP connection with a small receive buffer: a slow reader stays
    slow (the kernel does not take megabytes ahead of it)."""

    def connect(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 128 * 1024)
        s.settimeout(self.timeout)
        s.connect((self.host, self.port))
        self.sock = s


def lastfm_network(host, api_key, secret):
    """pylast pointed at HOST (127.0.0.1:PORT) over plain HTTP, as in
    tests/interop/test_pylast.py."""
    import httpx2 as httpx
    import pylast

    class PlainHttp(httpx.HTTPTransport):
        def handle_request(self, request):
            request.url = request.url.copy_with(scheme="http")
            return super().handle_request(request)

    net = pylast.LibreFMNetwork(api_key=api_key, api_secret=secret)
    net.ws_server = (host, "/2.0/")
    net.homepage = f"http://{host}"
    net.proxy = {"https://": PlainHttp()}
    return net


# ---- for the benchmark (tests/cluster/bench_cluster.py) --------------------

def set_cluster(node, **keys):
    """Rewrites keys of NODE's [cluster] section before it starts, e.g.
    set_cluster(n, ship="async", ship_interval_ms=1000, prefix="bench-1/").
    Strings are quoted, numbers written as they are; a key the file does
    not have yet is added at the end of the section."""
    text = node.config.read_text()
    head, sep, section = text.partition("[cluster]\n")
    assert sep, f"{node.config} has no [cluster] section"
    for k, v in keys.items():
        value = f'"{v}"' if isinstance(v, str) else str(v)
        section, n = re.subn(rf"^{re.escape(k)} = .*$", f"{k} = {value}", section, flags=re.M)
        if n == 0:
            section = section.rstrip("\n") + f"\n{k} = {value}\n"
    node.config.write_text(head + sep + section)


def cpu_secs(pid):
    """utime + stime of process PID in seconds, from /proc/PID/stat; None
    once it has gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    # After "pid (comm)": fields[0] is state, utime and stime are the 14th
    # and 15th fields of the line, [11] and [12] here.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid):
    """The pids whose parent is PID (e.g. nginx's workers)."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(p.name))
    return out


# ---- for rejoin and compaction (the last tests of test_cluster.py) ---------

def unshipped_listens(data_dir):
    """What `spindle cluster rejoin` set aside in DATA_DIR/cluster/unshipped/:
    {file name: [parsed JSON line, …]} (ListenBrainz JSON lines, one file
    per user)."""
    d = Path(data_dir) / "cluster" / "unshipped"
    if not d.is_dir():
        return {}
    return {f.name: [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
            for f in sorted(d.glob("*.jsonl"))}


def play_count(base, song_id):
    """Subsonic getSong's playCount of SONG_ID on the node at BASE (0 when
    the song was never played: the field may be absent)."""
    return subsonic(base, "getSong", id=song_id)["song"].get("playCount", 0)


def wait_until(check, secs, what, logs=None):
    """Calls CHECK (which returns (done, seen)) every 0.2 s until done, at
    most SECS; returns the seconds it took, or fails with WHAT, the last
    thing seen and LOGS() (the nodes' log tails, read at the failure)."""
    t0 = time.time()
    while True:
        try:
            done, seen = check()
        except (requests.RequestException, AssertionError, ValueError, KeyError) as e:
            done, seen = False, repr(e)
        if done:
            return time.time() - t0
        if time.time() - t0 >= secs:
            raise AssertionError(f"{what}: not within {secs}s; last seen: {seen}\n"
                                 + (logs() if logs else ""))
        time.sleep(0.2)


def make_tagged_track(path, hz, artist, title, album):
    """A 4 s FLAC tone with artist, title and album tags (Vorbis comments
    written by sox): the library linker counts a play of it (it matches
    listens by artist and title; make_music's WAVs have no tags)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16",
                    "--comment", f"ARTIST={artist}", "--add-comment", f"TITLE={title}",
                    "--add-comment", f"ALBUM={album}", str(path),
                    "synth", "4", "sine", str(hz)], check=True, timeout=60)
    return path
