"""The cluster's measurements (docs/cluster.md, "Tests" and its
simulation and benchmark), on loopback, with a real three-node Garage
cluster (scripts/garage-cluster.sh), real Spindle nodes and Debian's nginx
and wrk:

1. Replica lag while the primary takes 20,000 scrobbles/s (ship = "async",
   ship_interval_ms 1000 and 200): the achieved rate, the replica's
   spindle_cluster_lag_seconds sampled every 150 ms, the visibility lag of
   a marker listen sent every second (from the primary's acknowledgement
   until the replica's ListenBrainz API returns it), and the time after
   the load stops until the replica has everything.
2. Acknowledged scrobbles lost at a failover, sync against async: scrobble
   load on the primary, SIGKILL, `spindle cluster promote` on the replica
   (retried until the heartbeat is stale), then acknowledged listens
   missing on the new primary and listens there twice.
3. Streaming, three nodes against one: wrk at 32 connections on one node,
   on nginx in front of three, and on each node in turn; requests/s, MB/s
   and server CPU per request of each node, nginx's own CPU.

A script, not a test (pytest does not collect it):

    .venv/bin/python tests/cluster/bench_cluster.py [--quick] [--json FILE]

SPINDLE_BIN names the binary (default target/release/spindle);
SPINDLE_CLUSTER_KEEP=1 keeps the temp dir. Prints what it does as it goes,
then the Markdown tables and a JSON summary.
"""

import argparse
import asyncio
import itertools
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (USER, PASSWORD, Garage, Nginx, Node, cli, children, cpu_secs,  # noqa: E402
                     lb_all_listens, lb_submit, metric, metrics, set_cluster,
                     subsonic, subsonic_auth)

# The rate the lag benchmark aims at, listens per second.
TARGET_RATE = 20_000
# The target of the run that looks for the primary's ceiling (full run only).
CEILING_RATE = 200_000
# Listens per submit-listens request of the lag load (the API takes 1000).
LAG_BATCH = 500
# Requests of the lag load in flight at once.
LAG_CONCURRENCY = 8
# How often the replica's /metrics is sampled, seconds.
METRICS_EVERY = 0.15
# How often the replica is asked for its newest listen, seconds.
VISIBLE_POLL = 0.02
# Failover load: listens per second aimed at, per request, workers.
FAILOVER_RATE = 300
FAILOVER_BATCH = 15
FAILOVER_WORKERS = 16
# Streaming: wrk connections and threads.
WRK_CONNECTIONS = 32
WRK_THREADS = 2


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def cpu_busy(since=None):
    """Without SINCE: the machine's CPU counters from /proc/stat. With
    SINCE (earlier counters): the percentage of all CPUs busy since then
    (100 = every CPU busy), which shows what else ran beside the bench."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, total = f[3] + f[4], sum(f[:8])
    if since is None:
        return idle, total
    d_total = total - since[1]
    return round(100 * (1 - (idle - since[0]) / d_total), 1) if d_total else None


def pct(xs, p):
    """The P-th percentile of XS (nearest rank), None when empty."""
    if not xs:
        return None
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100 * len(xs) + 0.5)) - 1))
    return xs[k]


def fmt(x, digits=2):
    if x is None:
        return "-"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:,.{digits}f}"


# ---- the cluster ----------------------------------------------------------

class Bench:
    """One Garage for every scenario; each scenario gets its own nodes,
    data dirs and key prefix in the bucket."""

    def __init__(self, tmp):
        self.tmp = Path(tmp)
        self.nodes = []
        self.extra = []  # nginx instances
        self.garage = None
        self._scenario = itertools.count(1)

    def setup(self, tracks, track_secs):
        log("starting a three-node Garage cluster")
        self.garage = Garage(self.tmp / "garage")
        self.music = os.path.realpath(self.tmp / "music")
        self.files = make_tracks(self.music, tracks, track_secs)
        # alice and her token, once; each primary starts from a copy.
        self.template = self.tmp / "template"
        cli(self.template, "user", "add", USER, stdin=PASSWORD + "\n")
        self.token = cli(self.template, "user", "token", USER).stdout.strip()

    def cluster(self, replicas, **keys):
        """A primary `a` and REPLICAS replicas (b, c) with the [cluster]
        KEYS, under a key prefix of their own; returns the nodes once
        every one answers and the replicas hold the snapshot."""
        n = next(self._scenario)
        d = self.tmp / f"scenario-{n}"
        d.mkdir()
        keys = {"prefix": f"bench-{n}/", **keys}
        a = Node(d, "a", "primary", self.garage, self.music)
        set_cluster(a, **keys)
        shutil.copytree(self.template, a.data_dir)
        a.start()
        self.nodes.append(a)
        out = [a]
        for name in "bc"[:replicas]:
            r = Node(d, name, "replica", self.garage, self.music)
            set_cluster(r, **keys)
            (r.data_dir / "accounts").mkdir(parents=True)
            shutil.copy2(a.data_dir / "accounts/secret.key", r.data_dir / "accounts/secret.key")
            r.start()
            self.nodes.append(r)
            out.append(r)
        return out

    def stop_nodes(self):
        for x in self.extra:
            x.stop()
        self.extra = []
        for n in self.nodes:
            n.stop()
        self.nodes = []

    def close(self):
        self.stop_nodes()
        if self.garage:
            self.garage.stop()


def make_tracks(music, n, secs):
    """N sox WAV files of SECS seconds (44.1 kHz stereo 16-bit: 176 kB/s)."""
    files = {}
    for i in range(n):
        p = Path(music) / "Bench" / f"{i + 1:02d} noise {i + 1}.wav"
        p.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(p),
                        "synth", str(secs), "pinknoise", "vol", "0.5"], check=True, timeout=120)
        files[p.name] = p
    return files


# ---- 1. lag under 20,000 scrobbles/s ---------------------------------------

class LagLoad:
    """Open-loop load: a batch of LAG_BATCH listens every LAG_BATCH/rate
    seconds, at most LAG_CONCURRENCY in flight (so a slow server lowers
    the achieved rate rather than queueing without end). Each listen has
    a title of its own, so none is a duplicate."""

    def __init__(self, url, token, rate, secs, batch=LAG_BATCH):
        self.url, self.token, self.rate, self.secs = url, token, rate, secs
        self.batch = batch
        self.acked = 0
        self.sent = 0
        self.errors = {}
        self.per_second = []
        self.latencies = []
        self.started = self.stopped = None
        self.base_ts = int(time.time()) - 60 * 86400

    def body(self, k):
        first = k * self.batch
        payload = [{"listened_at": self.base_ts + i,
                    "track_metadata": {"artist_name": "Load", "track_name": f"load {i}"}}
                   for i in range(first, first + self.batch)]
        return json.dumps({"listen_type": "import", "payload": payload}).encode()

    async def run(self):
        import aiohttp
        headers = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        sem = asyncio.Semaphore(LAG_CONCURRENCY)
        period = self.batch / self.rate
        conn = aiohttp.TCPConnector(limit=LAG_CONCURRENCY)
        tasks = []
        async with aiohttp.ClientSession(connector=conn, headers=headers) as http:
            async def one(k):
                body = self.body(k)
                t0 = time.time()
                try:
                    async with http.post(f"{self.url}/1/submit-listens", data=body,
                                         timeout=aiohttp.ClientTimeout(total=60)) as r:
                        text = await r.text()
                        ok = r.status == 200 and '"ok"' in text
                        key = str(r.status)
                except (aiohttp.ClientError, asyncio.TimeoutError) as e:
                    ok, key = False, type(e).__name__
                finally:
                    sem.release()
                now = time.time()
                if ok:
                    self.acked += self.batch
                    self.latencies.append(now - t0)
                    sec = int(now - self.started)
                    while len(self.per_second) <= sec:
                        self.per_second.append(0)
                    self.per_second[sec] += self.batch
                else:
                    self.errors[key] = self.errors.get(key, 0) + 1

            self.started = time.time()
            k = 0
            end = self.started + self.secs
            while True:
                due = self.started + k * period
                if due >= end or time.time() >= end:
                    break
                delay = due - time.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                await sem.acquire()
                self.sent += self.batch
                tasks.append(asyncio.ensure_future(one(k)))
                k += 1
            await asyncio.gather(*tasks)
            self.stopped = time.time()

    def thread(self):
        return threading.Thread(target=lambda: asyncio.run(self.run()), daemon=True)


class Markers:
    """A marker listen to the primary every second (its timestamp is now,
    newer than any load listen), and a poller asking the replica for its
    newest listen every VISIBLE_POLL s: the seconds from each marker's
    acknowledgement until the replica returns it."""

    def __init__(self, primary, replica, token):
        self.primary, self.replica, self.token = primary, replica, token
        self.sent = []  # (ts, acked_at)
        self.seen = {}  # ts -> seen_at
        self.errors = 0
        self.stop_send = threading.Event()
        self.stop_poll = threading.Event()
        self.last_ts = 0
        self.lock = threading.Lock()

    def send_one(self, label):
        ts = max(self.last_ts + 1, int(time.time()))
        self.last_ts = ts
        r = lb_submit(self.primary, self.token, [(ts, "Marker", f"{label} {ts}")])
        acked = time.time()
        if r.ok:
            with self.lock:
                self.sent.append((ts, acked))
            return ts
        self.errors += 1
        return None

    def sender(self):
        while not self.stop_send.is_set():
            t0 = time.time()
            try:
                self.send_one("marker")
            except requests.RequestException:
                self.errors += 1
            self.stop_send.wait(max(0.0, 1.0 - (time.time() - t0)))

    def poller(self):
        s = requests.Session()
        s.headers["Authorization"] = f"Token {self.token}"
        while not self.stop_poll.is_set():
            try:
                r = s.get(f"{self.replica}/1/user/{USER}/listens", params={"count": 1},
                          timeout=10)
                top = r.json()["payload"]["listens"]
                now = time.time()
                newest = top[0]["listened_at"] if top else 0
                with self.lock:
                    for ts, _ in self.sent:
                        if ts <= newest and ts not in self.seen:
                            self.seen[ts] = now
            except (requests.RequestException, ValueError, KeyError, IndexError):
                pass
            time.sleep(VISIBLE_POLL)

    def lags(self, but=None):
        with self.lock:
            return [self.seen[ts] - acked for ts, acked in self.sent
                    if ts in self.seen and ts != but]

    def unseen(self, but=None):
        with self.lock:
            return [ts for ts, _ in self.sent if ts not in self.seen and ts != but]


def sample_metrics(url, token, stop, out):
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {token}"
    while not stop.is_set():
        try:
            page = s.get(f"{url}/metrics", timeout=5).text
            lag = metric(page, "spindle_cluster_lag_seconds")
            if lag is not None and lag == lag:  # not NaN
                out.append((time.time(), lag))
        except requests.RequestException:
            pass
        stop.wait(METRICS_EVERY)


def count_load(url, token):
    """Load listens on the node at URL, by paging through every listen."""
    return sum(1 for x in lb_all_listens(url, token) if x[1] == "Load")


def bench_lag(b, interval_ms, secs, verify, rate=TARGET_RATE, batch=LAG_BATCH):
    log(f"lag: cluster a (primary) + b (replica), ship async every {interval_ms} ms, "
        f"replica polls every {interval_ms} ms")
    a, r = b.cluster(1, ship="async", ship_interval_ms=interval_ms,
                     poll_interval_ms=interval_ms, lease_secs=10)
    cpu0 = {n.name: cpu_secs(n.proc.pid) for n in (a, r)}
    own0 = resource.getrusage(resource.RUSAGE_SELF)
    load = LagLoad(a.url, b.token, rate, secs, batch)
    busy0 = cpu_busy()
    marks = Markers(a.url, r.url, b.token)
    samples, stop_metrics = [], threading.Event()
    threads = [load.thread(), threading.Thread(target=marks.sender, daemon=True),
               threading.Thread(target=marks.poller, daemon=True),
               threading.Thread(target=sample_metrics, args=(r.url, b.token, stop_metrics, samples),
                                daemon=True)]
    log(f"lag: {secs} s of load at a target of {rate:,} listens/s "
        f"({batch} a request, {LAG_CONCURRENCY} in flight)")
    for t in threads:
        t.start()
    threads[0].join(timeout=secs + 120)
    load_end = time.time()
    own1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu1 = {n.name: cpu_secs(n.proc.pid) for n in (a, r)}
    busy = cpu_busy(busy0)
    marks.stop_send.set()
    threads[1].join(timeout=15)
    # The last marker, sent once the load is acknowledged: the replica has
    # everything once it returns it (the log is applied in order).
    last_ts = marks.send_one("final")
    deadline = time.time() + 120
    while last_ts not in marks.seen and time.time() < deadline:
        time.sleep(0.02)
    caught_up = marks.seen[last_ts] - load_end if last_ts in marks.seen else None
    marks.stop_poll.set()
    stop_metrics.set()
    threads[2].join(timeout=15)
    threads[3].join(timeout=15)
    elapsed = load.stopped - load.started
    achieved = load.acked / elapsed
    steady = load.per_second[1:-1] or load.per_second
    vis = marks.lags(but=last_ts)
    lags = [x for _, x in samples]
    res = {
        "ship_interval_ms": interval_ms, "secs": round(elapsed, 1),
        "target_rate": rate, "batch": batch, "acked": load.acked, "rate": round(achieved),
        "rate_steady_median": statistics.median(steady) if steady else None,
        "errors": load.errors,
        "request_latency_p50": pct(load.latencies, 50), "request_latency_p95": pct(load.latencies, 95),
        "lag_metric_samples": len(lags),
        "lag_metric_p50": pct(lags, 50), "lag_metric_p95": pct(lags, 95),
        "lag_metric_max": max(lags) if lags else None,
        "visible_markers": len(vis), "markers_unseen": len(marks.unseen(but=last_ts)),
        "visible_p50": pct(vis, 50), "visible_p95": pct(vis, 95), "visible_max": max(vis) if vis else None,
        "caught_up_after_load_secs": caught_up,
        "cpu_primary_secs": round(cpu1["a"] - cpu0["a"], 2),
        "cpu_replica_secs": round(cpu1["b"] - cpu0["b"], 2),
        "cpu_loadgen_secs": round((own1.ru_utime + own1.ru_stime) - (own0.ru_utime + own0.ru_stime), 2),
        "machine_busy_pct": busy,
    }
    if verify:
        t0 = time.time()
        on_a, on_b = count_load(a.url, b.token), count_load(r.url, b.token)
        res.update({"count_primary": on_a, "count_replica": on_b})
        log(f"lag: counted {on_a:,} load listens on a, {on_b:,} on b "
            f"(acknowledged {load.acked:,}) in {time.time() - t0:.1f} s")
    log(f"lag: {json.dumps(res)}")
    b.stop_nodes()
    return res


# ---- 2. loss at failover --------------------------------------------------

def bench_failover(b, ship, interval_ms, run, load_secs=3.0):
    a, r = b.cluster(1, ship=ship, ship_interval_ms=interval_ms, poll_interval_ms=200,
                     lease_secs=3)
    ts_next = itertools.count(int(time.time()) - 10 * 86400, 100)
    lock = threading.Lock()
    acked, sent, errors = [], [], {}
    last_ack = [0.0]
    latencies = []
    sess = threading.local()

    def one(batch):
        s = getattr(sess, "s", None) or requests.Session()
        sess.s = s
        t0 = time.time()
        try:
            rr = s.post(f"{a.url}/1/submit-listens", headers={"Authorization": f"Token {b.token}"},
                        json={"listen_type": "import", "payload": [
                            {"listened_at": ts, "track_metadata": {"artist_name": "Load",
                                                                    "track_name": title}}
                            for ts, title in batch]}, timeout=15)
            ok = rr.status_code == 200 and rr.json().get("status") == "ok"
            key = str(rr.status_code)
        except (requests.RequestException, ValueError) as e:
            ok, key = False, type(e).__name__
        now = time.time()
        with lock:
            if ok:
                acked.extend(batch)
                last_ack[0] = max(last_ack[0], now)
                latencies.append(now - t0)
            else:
                errors[key] = errors.get(key, 0) + 1

    pool = ThreadPoolExecutor(FAILOVER_WORKERS)
    period = FAILOVER_BATCH / FAILOVER_RATE
    t_start = time.time()
    kill_at = t_start + load_secs
    k = 0
    while True:
        due = t_start + k * period
        if due >= kill_at:
            break
        time.sleep(max(0.0, due - time.time()))
        with lock:
            batch = [(next(ts_next), f"load {k} {i}") for i in range(FAILOVER_BATCH)]
            sent.extend(batch)
        pool.submit(one, batch)
        k += 1
    a.kill()
    killed_at = time.time()
    pool.shutdown(wait=True)
    refusals = 0
    deadline = time.time() + 60
    while True:
        out = r.cluster("promote", timeout=60, check=False)
        if out.returncode == 0:
            break
        if time.time() > deadline:
            raise AssertionError(f"promote still refused 60 s after the kill: {out.stdout}{out.stderr}")
        refusals += 1
        time.sleep(0.5)
    promoted_after = time.time() - killed_at
    m = re.search(r"^promoted \S+: generation (\d+)", out.stdout, re.M)
    listens = lb_all_listens(r.url, b.token)
    on_b = {}
    for ts, artist, title in listens:
        if artist == "Load":
            on_b[(ts, title)] = on_b.get((ts, title), 0) + 1
    want = set(acked)
    lost = want - set(on_b)
    dups = sum(1 for v in on_b.values() if v > 1)
    unacked_present = len(set(on_b) - want)
    rate = len(acked) / max(0.001, last_ack[0] - t_start) if acked else 0
    res = {
        "ship": ship, "ship_interval_ms": interval_ms, "run": run,
        "sent": len(sent), "acked": len(acked), "lost": len(lost), "duplicates": dups,
        "present_unacked": unacked_present,
        "ack_rate": round(rate), "lost_secs": round(len(lost) / rate, 3) if rate else None,
        "last_ack_before_kill_ms": round((killed_at - last_ack[0]) * 1000) if acked else None,
        "ack_latency_p50_ms": round(pct(latencies, 50) * 1000) if latencies else None,
        "errors": errors, "promote_refusals": refusals,
        "promoted_after_secs": round(promoted_after, 1),
        "generation": int(m.group(1)) if m else None,
    }
    log(f"failover: {json.dumps(res)}")
    b.stop_nodes()
    return res


# ---- 3. streaming ---------------------------------------------------------

WRK_LUA = """
paths = { %s }
n = 0
request = function()
  n = n + 1
  return wrk.format("GET", paths[(n %% #paths) + 1])
end
"""


def node_counters(n, token):
    page = metrics(n.url, token)
    return {"requests": metric(page, "spindle_http_requests_total") or 0,
            "streams": metric(page, "spindle_streams_total") or 0,
            "sendfile": metric(page, "spindle_stream_sendfile_bytes_total") or 0}


def run_wrk(targets, secs, lua, conns=WRK_CONNECTIONS):
    """wrk on each URL in TARGETS at once (connections split between
    them); a list of (stdout, rusage) per wrk."""
    procs = []
    per = max(WRK_THREADS, conns // len(targets))
    for url in targets:
        outf = tempfile.TemporaryFile(mode="w+")
        p = subprocess.Popen(["wrk", "-t", str(WRK_THREADS), "-c", str(per), "-d", f"{secs}s",
                              "--latency", "-s", lua, url], stdout=outf, stderr=subprocess.STDOUT)
        procs.append((p, outf))
    res = []
    for p, outf in procs:
        _, _, ru = os.wait4(p.pid, 0)
        p.returncode = 0
        outf.seek(0)
        res.append((outf.read(), ru.ru_utime + ru.ru_stime))
    return res


def parse_wrk(text):
    def num(pat):
        m = re.search(pat, text)
        return float(m.group(1)) if m else None
    m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", text)
    reqs = int(m.group(1)) if m else 0
    mb = re.search(r"Transfer/sec:\s+([\d.]+)([KMG]B)", text)
    mbs = float(mb.group(1)) * {"KB": 1 / 1024, "MB": 1, "GB": 1024}[mb.group(2)] if mb else None
    lat = {}
    for q in ("50", "99"):
        mm = re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)", text, re.M)
        if mm:
            lat[q] = float(mm.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[mm.group(2)]
    non2xx = num(r"Non-2xx or 3xx responses: (\d+)")
    errs = re.search(r"Socket errors: (.*)", text)
    return {"requests": reqs, "rps": num(r"Requests/sec:\s+([\d.]+)"), "mb_s": mbs,
            "lat_p50_ms": lat.get("50"), "lat_p99_ms": lat.get("99"),
            "non2xx": int(non2xx) if non2xx else 0,
            "socket_errors": errs.group(1).strip() if errs else None}


BUFFER_LINES = ("proxy_buffer_size", "proxy_buffers", "proxy_busy_buffers_size")


def start_nginx(b, nodes, name, small_buffers=False):
    """nginx from tests/cluster/nginx.conf.in in front of NODES; with
    SMALL_BUFFERS, without its 256 KiB proxy buffers (nginx's default of
    one page, to show what they save)."""
    import harness
    template = harness.NGINX_TEMPLATE
    if small_buffers:
        variant = b.tmp / f"{name}.conf.in"
        lines = [line for line in template.read_text().splitlines()
                 if not line.strip().startswith(BUFFER_LINES)]
        variant.write_text("\n".join(lines) + "\n")
        harness.NGINX_TEMPLATE = variant
    try:
        return Nginx(b.tmp / name, [f"127.0.0.1:{n.port}" for n in nodes])
    finally:
        harness.NGINX_TEMPLATE = template


def bench_streaming(b, secs):
    log("streaming: cluster a (primary) + b, c (replicas), nginx in front of all three")
    nodes = b.cluster(2, ship="async", ship_interval_ms=1000, poll_interval_ms=1000, lease_secs=10)
    # The same nginx with nginx's default one-page buffer: unbuffered
    # proxying reads the upstream in proxy_buffer_size pieces.
    ngx = start_nginx(b, nodes, "nginx-default", small_buffers=True)
    ngx_big = start_nginx(b, nodes, "nginx")
    b.extra = [ngx, ngx_big]
    songs = subsonic(nodes[0].url, "search3", query="", songCount=100)["searchResult3"]["song"]
    ids = [x["id"] for x in songs if x["path"].endswith(".wav")]
    auth = "&".join(f"{k}={v}" for k, v in subsonic_auth().items()).replace(" ", "%20")
    paths = [f"/rest/download?{auth}&id={i}" for i in ids]
    sizes = [int(x.get("size") or 0) for x in songs]
    lua = b.tmp / "bench.lua"
    lua.write_text(WRK_LUA % ", ".join(f'"{p}"' for p in paths))
    for n in nodes:  # each node has read each file once (page cache, hot tier)
        for p in paths:
            requests.get(n.url + p, timeout=60).raise_for_status()
    runs = [("one node (a) directly", [nodes[0].url], None),
            ("nginx (default one-page proxy buffer) in front of a, b, c", [ngx.url], ngx),
            ("nginx (proxy_buffer_size 256k, docs/cluster.md) in front of a, b, c", [ngx_big.url], ngx_big),
            ("b directly", [nodes[1].url], None),
            ("c directly", [nodes[2].url], None),
            ("a, b, c directly at once (3 wrk)", [n.url for n in nodes], None)]
    out = []
    for label, targets, proxy in runs:
        time.sleep(1)
        ngx_pids = [proxy.proc.pid] + children(proxy.proc.pid) if proxy else []
        before = {n.name: (cpu_secs(n.proc.pid), node_counters(n, b.token)) for n in nodes}
        ngx0 = sum(cpu_secs(p) or 0 for p in ngx_pids)
        busy0 = cpu_busy()
        t0 = time.time()
        got = run_wrk(targets, secs, str(lua))
        wall = time.time() - t0
        busy = cpu_busy(busy0)
        ngx1 = sum(cpu_secs(p) or 0 for p in ngx_pids)
        after = {n.name: (cpu_secs(n.proc.pid), node_counters(n, b.token)) for n in nodes}
        parsed = [parse_wrk(t) for t, _ in got]
        total = sum(p["requests"] for p in parsed)
        per_node = {}
        for n in nodes:
            cpu = after[n.name][0] - before[n.name][0]
            # Streams started (wrk counts those finished, a few fewer).
            streams = after[n.name][1]["streams"] - before[n.name][1]["streams"]
            sf = after[n.name][1]["sendfile"] - before[n.name][1]["sendfile"]
            if not streams:
                continue
            per_node[n.name] = {
                "streams": int(streams), "cpu_secs": round(cpu, 2),
                "cpu_pct": round(100 * cpu / wall, 1),
                "cpu_ms_per_request": round(1000 * cpu / streams, 3),
                "sendfile_mb": round(sf / 2**20, 1)}
        row = {"run": label, "secs": secs, "requests": total,
               "rps": round(sum(p["rps"] or 0 for p in parsed), 1),
               "mb_s": round(sum(p["mb_s"] or 0 for p in parsed), 1),
               "lat_p50_ms": parsed[0]["lat_p50_ms"], "lat_p99_ms": parsed[0]["lat_p99_ms"],
               "non2xx": sum(p["non2xx"] for p in parsed),
               "socket_errors": [p["socket_errors"] for p in parsed if p["socket_errors"]],
               "nodes": per_node,
               "nginx_cpu_secs": round(ngx1 - ngx0, 2) if proxy else None,
               "nginx_cpu_pct": round(100 * (ngx1 - ngx0) / wall, 1) if proxy else None,
               "nginx_cpu_ms_per_request": (round(1000 * (ngx1 - ngx0) / total, 3)
                                            if proxy and total else None),
               "wrk_cpu_secs": round(sum(c for _, c in got), 2),
               "machine_busy_pct": busy}
        log(f"streaming: {json.dumps(row)}")
        out.append(row)
    b.stop_nodes()
    return out, (sum(sizes) / len(sizes) if sizes else None)


# ---- the report -----------------------------------------------------------

def tables(res):
    lines = []
    env = res["env"]
    lines.append(f"Machine: {env['cpus']} CPUs, {env['cpu_model']}; loopback; Garage 3 nodes "
                 f"({env['garage']}); spindle {env['spindle']}.")
    lines.append("")
    lines.append("### Replica lag under scrobble load (ship = \"async\")")
    lines.append("")
    lines.append("| ship interval | target listens/s | achieved listens/s (median second) | "
                 "acked | lag metric p50 / p95 / max (s) | visible on replica p50 / p95 / max (s) | "
                 "replica has all, after load stops (s) | CPU s: primary / replica / load generator | "
                 "machine busy |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for r in res["lag"]:
        lines.append(
            f"| {r['ship_interval_ms']} ms | {r['target_rate']:,} | {fmt(r['rate'])} "
            f"({fmt(r['rate_steady_median'])}) | {r['acked']:,} | "
            f"{fmt(r['lag_metric_p50'])} / {fmt(r['lag_metric_p95'])} / {fmt(r['lag_metric_max'])} | "
            f"{fmt(r['visible_p50'])} / {fmt(r['visible_p95'])} / {fmt(r['visible_max'])} "
            f"({r['visible_markers']} markers) | {fmt(r['caught_up_after_load_secs'])} | "
            f"{r['cpu_primary_secs']} / {r['cpu_replica_secs']} / {r['cpu_loadgen_secs']} | "
            f"{r['machine_busy_pct']} % |")
    counts = [r for r in res["lag"] if "count_replica" in r]
    if counts:
        lines.append("")
        lines.append("Counted afterwards: " + "; ".join(
            f"{r['ship_interval_ms']} ms: acked {r['acked']:,}, on primary {r['count_primary']:,}, "
            f"on replica {r['count_replica']:,}" for r in counts) + ".")
    lines.append("")
    lines.append("### Acknowledged scrobbles lost at a failover (SIGKILL of the primary, promote)")
    lines.append("")
    lines.append("| ship | interval | run | acked | lost | lost as seconds of load | duplicates | "
                 "acked listens/s | ack latency p50 | last ack before kill | promoted after kill |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in res["failover"]:
        lines.append(
            f"| {r['ship']} | {r['ship_interval_ms']} ms | {r['run']} | {r['acked']:,} | {r['lost']:,} | "
            f"{fmt(r['lost_secs'])} | {r['duplicates']} | {r['ack_rate']} | "
            f"{r['ack_latency_p50_ms']} ms | {r['last_ack_before_kill_ms']} ms | "
            f"{r['promoted_after_secs']} s |")
    lines.append("")
    lines.append(f"### Streaming: three nodes against one (wrk, {WRK_CONNECTIONS} connections, "
                 f"/rest/download of WAV files of {fmt(res.get('stream_mean_mb'), 1)} MB)")
    lines.append("")
    lines.append("| run | requests/s | MB/s | p50 / p99 latency (ms) | per node: streams, CPU %, "
                 "CPU ms/request | nginx CPU %, ms/request | wrk CPU s | machine busy |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for r in res.get("streaming", []):
        per = "; ".join(f"{k}: {v['streams']}, {v['cpu_pct']} %, {fmt(v['cpu_ms_per_request'], 3)}"
                        for k, v in sorted(r["nodes"].items()))
        ngx = (f"{r['nginx_cpu_pct']} %, {fmt(r['nginx_cpu_ms_per_request'], 3)}"
               if r["nginx_cpu_secs"] is not None else "-")
        lines.append(f"| {r['run']} | {fmt(r['rps'], 1)} | {fmt(r['mb_s'], 1)} | "
                     f"{fmt(r['lat_p50_ms'], 1)} / {fmt(r['lat_p99_ms'], 1)} | {per} | "
                     f"{ngx} | {r['wrk_cpu_secs']} | {r['machine_busy_pct']} % |")
    return "\n".join(lines)


def environment():
    model = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    garage = subprocess.run([shutil.which("garage") or "garage", "--version"], capture_output=True,
                            text=True).stdout.strip() if shutil.which("garage") else "?"
    from harness import BIN
    ver = subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout.strip()
    return {"cpus": os.cpu_count(), "cpu_model": model, "garage": garage, "spindle": ver,
            "load_avg_at_start": os.getloadavg()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short runs (about 2 minutes)")
    ap.add_argument("--json", help="also write the JSON summary to this file")
    ap.add_argument("--only", choices=["lag", "failover", "streaming"], action="append",
                    help="run only these parts (repeatable; default: all)")
    args = ap.parse_args()
    only = set(args.only or ["lag", "failover", "streaming"])
    for tool in ("sox", "nginx", "wrk"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            sys.exit(f"{tool} is not installed (Debian: apt-get install -y {tool})")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    quick = args.quick
    t_all = time.time()
    tmp = tempfile.mkdtemp(prefix="spindle-bench-")
    b = Bench(tmp)
    res = {"quick": quick, "env": environment()}
    try:
        b.setup(tracks=4, track_secs=20 if quick else 45)
        res["lag"] = [bench_lag(b, ms, 8 if quick else 20, verify=not quick)
                      for ms in ([1000] if quick else [1000, 200]) if "lag" in only]
        if not quick and "lag" in only:
            # How far past 20,000/s one primary goes: 1000 listens a
            # request (the API's most), as fast as the generator can.
            res["lag"].append(bench_lag(b, 1000, 10, verify=False, rate=CEILING_RATE, batch=1000))
        modes = [("sync", 1000), ("async", 1000)] + ([] if quick else [("async", 200)])
        res["failover"] = [bench_failover(b, ship, ms, run)
                           for ship, ms in modes for run in range(1, (1 if quick else 3) + 1)
                           if "failover" in only]
        if "streaming" in only:
            res["streaming"], mean = bench_streaming(b, 3 if quick else 10)
            res["stream_mean_mb"] = mean / 1e6 if mean else None
    finally:
        b.close()
        if os.environ.get("SPINDLE_CLUSTER_KEEP") == "1":
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    res["total_secs"] = round(time.time() - t_all)
    print()
    print(tables(res))
    print()
    print("```json")
    print(json.dumps(res, indent=1))
    print("```")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
