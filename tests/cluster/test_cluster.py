"""A Spindle cluster on loopback (docs/cluster.md): a three-node Garage
cluster (scripts/garage-cluster.sh), a primary `a` shipping in `sync` mode
every 200 ms, two replicas `b` and `c` started from empty data dirs (only
the accounts' secret.key copied, as the operator does), and nginx (Debian's)
in front with the upstream settings of docs/cluster.md.

- Both replicas catch up from the bucket alone: the library and a listen
  made before they existed.
- Scrobbles through every node and through nginx, over ListenBrainz,
  Subsonic and Last.fm 2.0 (pylast), are read on every node within 10 s;
  `spindle cluster status --json` shows the replicas at the primary's seq;
  a replica's /metrics shows its lag.
- A slow stream through nginx survives the SIGKILL of the replica serving
  it: the client resumes with `Range` through nginx and the joined bytes
  equal the file; the replica restarts on its data dir and catches up.
- Under scrobble load (to the primary and through both replicas) the
  primary is SIGKILLed, `spindle cluster promote` makes `b` primary, and
  every acknowledged scrobble is on `b` exactly once; `c` follows `b`.
- The deposed `a` runs `spindle cluster rejoin`: what it committed after
  the cut (none of it acknowledged) is set aside as many lines as it says;
  started again with its old settings it follows `b` as a replica, holds
  b's listens, and forwards a scrobble to `b`.
- `b` stopped, compacted (`spindle db compact`) and restarted stays
  primary and ships its new library base: a Subsonic scrobble through `c`
  raises the song's playCount on every node; no node reports an error.

Runs only with SPINDLE_CLUSTER_TESTS=1 (scripts/ci.d/86-cluster.sh);
SPINDLE_BIN names the binary (default target/release/spindle);
SPINDLE_CLUSTER_KEEP=1 keeps the temp dir (logs, data dirs) for a look.
"""

import hashlib
import http.client
import itertools
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest
import requests

from harness import (LONG, PASSWORD, USER, Garage, Nginx, Node, SmallBuffer, cli,
                     lastfm_network, lb_all_listens, lb_submit, metric, metrics, make_music,
                     make_tagged_track, play_count, subsonic, subsonic_auth, unshipped_listens,
                     wait_until)

pytestmark = pytest.mark.skipif(
    os.environ.get("SPINDLE_CLUSTER_TESTS") != "1",
    reason="set SPINDLE_CLUSTER_TESTS=1 (needs garage, nginx and sox)",
)

# How long a write may take to be readable on every node.
READ_EVERYWHERE_SECS = 10
# Scrobbles the failover load sends at most (a bound on the test's time,
# far above what the load sends in its 2.5 s).
LOAD_MAX = 20_000
LOAD_BATCH = 20


class Ctx:
    """What the tests share: the nodes, nginx, the token and keys, the
    song ids, the files, and a source of unique listen timestamps."""

    def __init__(self):
        # Listens a few days back, 100 s apart: never within any dedupe
        # window of each other (docs/listens-format.md, "Duplicates").
        self._ts = itertools.count(int(time.time()) - 5 * 86400, 100)
        self._lock = threading.Lock()

    def ts(self):
        with self._lock:
            return next(self._ts)

    @property
    def nodes(self):
        return [self.a, self.b, self.c]

    def logs(self):
        """The tails of every node's log and nginx's, for failure messages."""
        parts = [n.log_tail() for n in (getattr(self, x, None) for x in "abc") if n]
        if getattr(self, "nginx", None):
            parts.append(self.nginx.log_tail())
        return "\n".join(parts)


@pytest.fixture(scope="module")
def ctx():
    for tool in ("sox", "nginx"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            pytest.fail(f"{tool} is not installed")
    tmp = tempfile.mkdtemp(prefix="spindle-cluster-")
    s = Ctx()
    garage, nodes, nginx = None, [], None
    try:
        garage = Garage(Path(tmp) / "garage")
        music = os.path.realpath(os.path.join(tmp, "music"))
        s.files = make_music(music)
        s.a = Node(tmp, "a", "primary", garage, music)
        nodes.append(s.a)
        # alice, her ListenBrainz token and a Last.fm API key, made with
        # the CLI before the primary starts: its first snapshot holds them.
        cli(s.a.data_dir, "user", "add", USER, stdin=PASSWORD + "\n")
        s.token = cli(s.a.data_dir, "user", "token", USER).stdout.strip()
        out = cli(s.a.data_dir, "apikey", "add", "--name", "cluster-test").stdout
        s.api_key = re.search(r"api_key (\w+)", out).group(1)
        s.secret = re.search(r"secret (\w+)", out).group(1)
        s.a.start()
        songs = subsonic(s.a.url, "search3", query="", songCount=100)["searchResult3"]["song"]
        s.ids = {Path(x["path"]).name: x["id"] for x in songs}
        assert set(s.ids) == set(s.files), (sorted(s.ids), sorted(s.files))
        # A listen the replicas can only know from the bucket.
        s.early = (s.ts(), "Early", "before the replicas")
        r = lb_submit(s.a.url, s.token, [s.early])
        assert r.ok, f"submit on the primary: {r.status_code} {r.text}\n{s.a.log_tail()}"

        s.b = Node(tmp, "b", "replica", garage, music)
        s.c = Node(tmp, "c", "replica", garage, music)
        nodes += [s.b, s.c]
        for n in (s.b, s.c):
            # Not shipped (docs/cluster.md, "What is shipped"): the key
            # that seals stored passwords is copied by the operator.
            (n.data_dir / "accounts").mkdir(parents=True)
            shutil.copy2(s.a.data_dir / "accounts/secret.key",
                         n.data_dir / "accounts/secret.key")
            n.start()
        nginx = Nginx(tmp, [f"127.0.0.1:{n.port}" for n in nodes])
        s.nginx = nginx
        yield s
    finally:
        if nginx:
            nginx.stop()
        for n in nodes:
            n.stop()
        if garage:
            garage.stop()
        if os.environ.get("SPINDLE_CLUSTER_KEEP") == "1":
            print(f"\nkept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def wait_for_listens(s, nodes, want, what, secs=READ_EVERYWHERE_SECS):
    """Polls each node until it holds every timestamp in WANT; returns the
    seconds each took. Fails naming the node, what is missing and the logs."""
    took, t0 = {}, time.time()
    deadline = t0 + secs
    pending = {n.name: n for n in nodes}
    seen = {}
    while pending:
        for name, n in list(pending.items()):
            try:
                have = {x[0] for x in lb_all_listens(n.url, s.token)}
            except (requests.RequestException, AssertionError) as e:
                seen[name] = repr(e)
                continue
            missing = want - have
            seen[name] = f"missing {sorted(missing)}"
            if not missing:
                took[name] = time.time() - t0
                del pending[name]
        if not pending:
            break
        assert time.time() < deadline, (
            f"{what}: expected every node to hold listens {sorted(want)} within {secs}s; "
            f"still: {seen}\n{s.logs()}")
        time.sleep(0.2)
    return took


def test_replicas_from_empty_data_dirs_catch_up_from_the_bucket(ctx):
    s = ctx
    for n in (s.b, s.c):
        songs = subsonic(n.url, "search3", query="", songCount=100)["searchResult3"]["song"]
        ids = {Path(x["path"]).name: x["id"] for x in songs}
        assert ids == s.ids, (
            f"replica {n.name}: expected the primary's library {s.ids}, got {ids}\n{n.log_tail()}")
    wait_for_listens(s, [s.b, s.c], {s.early[0]}, "a listen made before the replicas started")


def test_scrobbles_through_any_node_are_read_on_every_node(ctx):
    s = ctx
    want = set()
    song = s.ids["01 tone 220.wav"]
    targets = [(n.name, n.url, f"127.0.0.1:{n.port}") for n in s.nodes]
    targets.append(("nginx", s.nginx.url, f"127.0.0.1:{s.nginx.port}"))
    for name, url, host in targets:
        # ListenBrainz, with the user's token.
        ts = s.ts()
        r = lb_submit(url, s.token, [(ts, "Via", f"listenbrainz via {name}")])
        assert r.ok, (f"LB submit-listens via {name}: expected 200, got {r.status_code} "
                      f"node={r.headers.get('X-Spindle-Node')} {r.text[:300]}\n{s.logs()}")
        want.add(ts)
        # Subsonic scrobble of a library song.
        ts = s.ts()
        subsonic(url, "scrobble", id=song, time=ts * 1000, submission="true")
        want.add(ts)
        # Last.fm 2.0 through pylast: a session (auth.getMobileSession, a
        # write forwarded on a replica) and track.scrobble.
        import pylast

        net = lastfm_network(host, s.api_key, s.secret)
        try:
            net.session_key = pylast.SessionKeyGenerator(net).get_session_key(
                USER, pylast.md5(PASSWORD))
            ts = s.ts()
            net.scrobble(artist="Via", title=f"lastfm via {name}", timestamp=ts)
        except pylast.PyLastError as e:
            raise AssertionError(f"Last.fm 2.0 via {name}: {e!r}\n{s.logs()}")
        want.add(ts)
    took = wait_for_listens(s, s.nodes, want, "scrobbles through a, b, c and nginx")
    print("\nseconds until every scrobble was readable: "
          + ", ".join(f"{k} {v:.2f}" for k, v in sorted(took.items())))


def applied_seqs(st):
    return {n["node"]: n.get("applied_seq") for n in st.get("nodes", [])}


def wait_caught_up(s, names, secs=15):
    """Polls `cluster status --json` until the nodes NAMES are at the
    primary's applied_seq; returns the last status."""
    deadline = time.time() + secs
    while True:
        st = s.a.status() if s.a.alive() else s.b.status()
        seqs = applied_seqs(st)
        primary = st.get("primary", {}).get("node")
        if primary in seqs and all(seqs.get(n) == seqs[primary] for n in names):
            return st
        assert time.time() < deadline, (
            f"expected {names} at the primary's applied_seq within {secs}s; "
            f"cluster status --json: {st}\n{s.logs()}")
        time.sleep(0.5)


def test_cluster_status_lists_every_node_caught_up_and_metrics_show_lag(ctx):
    s = ctx
    st = wait_caught_up(s, ["b", "c"])
    assert {"a", "b", "c"} <= set(applied_seqs(st)), st
    assert st["primary"]["node"] == "a", st
    roles = {n["node"]: n.get("role") for n in st["nodes"]}
    assert roles == {"a": "primary", "b": "replica", "c": "replica"}, st
    print(f"\ncluster status: {st}")
    text = s.b.cluster("status").stdout
    for name in ("a", "b", "c"):
        assert re.search(rf"^\s*{name}\s+(primary|replica)", text, re.M), text
    page = metrics(s.b.url, s.token)
    lag = metric(page, "spindle_cluster_lag_seconds")
    assert lag is not None, f"no spindle_cluster_lag_seconds on b's /metrics:\n{page[-2000:]}"
    role = metric(page, 'spindle_cluster_role{role="replica"}')
    assert role == 1, f'expected spindle_cluster_role{{role="replica"}} 1 on b, got {role}'
    print(f"replica b: spindle_cluster_lag_seconds {lag}")


def read_slowly_until_broken(resp, got, length, kill):
    """Reads RESP 64 KiB at a time, 20 ms apart; after 1 MiB calls KILL
    once. Returns True when the body ended short of LENGTH (the connection
    broke; http.client's read(n) then returns b"" rather than raising)."""
    killed = False
    while True:
        try:
            chunk = resp.read(64 * 1024)
        except http.client.IncompleteRead as e:
            got.extend(e.partial)
            return True
        except OSError:
            return True
        if not chunk:
            return len(got) < length
        got.extend(chunk)
        if not killed and len(got) >= 1024 * 1024:
            kill()
            killed = True
        time.sleep(0.02)


def test_a_stream_through_nginx_survives_the_death_of_the_replica_serving_it(ctx):
    s = ctx
    want = s.files[LONG].read_bytes()
    query = "&".join(f"{k}={v}" for k, v in {**subsonic_auth(), "id": s.ids[LONG]}.items()
                     ).replace(" ", "%20")
    path = f"/rest/download?{query}"
    serving, victim, got, broke = [], None, bytearray(), False
    for _ in range(12):
        conn = SmallBuffer("127.0.0.1", s.nginx.port, timeout=30)
        conn.request("GET", path)
        resp = conn.getresponse()
        node = resp.getheader("X-Spindle-Node")
        serving.append(node)
        assert resp.status == 200, f"download via nginx: {resp.status} node={node} {resp.read(300)}"
        assert node in ("a", "b", "c"), f"expected X-Spindle-Node a, b or c, got {node!r}"
        assert int(resp.getheader("Content-Length")) == len(want)
        if node == "a":
            conn.close()  # the primary: ask again, nginx round-robins
            continue
        victim = {"b": s.b, "c": s.c}[node]
        broke = read_slowly_until_broken(resp, got, len(want), victim.kill)
        conn.close()
        break
    assert victim, f"no replica served the download in 12 tries: {serving}"
    assert not victim.alive(), "the replica was not killed"
    assert broke, (f"the stream from {victim.name} finished ({len(got)} bytes) although "
                   f"{victim.name} was killed after 1 MiB: the buffers held it all")
    assert 0 < len(got) < len(want)
    assert bytes(got) == want[:len(got)], "the bytes before the break differ from the file"
    # The client resumes where it was, through nginx, on a live node.
    had = len(got)
    resumed_on = None
    for _ in range(5):
        r = requests.get(s.nginx.url + path,
                         headers={"Range": f"bytes={had}-"}, timeout=60)
        resumed_on = r.headers.get("X-Spindle-Node")
        if r.status_code == 206:
            assert r.headers.get("Content-Range") == f"bytes {had}-{len(want) - 1}/{len(want)}", \
                r.headers
            got.extend(r.content)
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"resume with Range bytes={had}- via nginx: {r.status_code} "
                             f"node={resumed_on} {r.text[:300]}\n{s.logs()}")
    assert resumed_on != victim.name
    assert len(got) == len(want) and hashlib.sha256(got).digest() == hashlib.sha256(want).digest(), (
        f"joined stream: {len(got)} bytes, expected the file's {len(want)}")
    print(f"\nstream: {victim.name} served {had} bytes then died; {resumed_on} served the rest")

    # A write while it is down (nginx skips the dead node), then the
    # replica restarts on its data dir and catches up.
    ts = s.ts()
    r = lb_submit(s.nginx.url, s.token, [(ts, "Via", "while a replica was down")])
    assert r.ok, f"submit via nginx with {victim.name} down: {r.status_code} {r.text}\n{s.logs()}"
    victim.start()
    wait_for_listens(s, [victim], {ts}, f"{victim.name} after its restart")
    wait_caught_up(s, [victim.name])


def test_failover_loses_no_acknowledged_scrobble_and_doubles_none(ctx):
    s = ctx
    acked, sent, errors, acked_via = [], [], {}, {}
    lock, stop = threading.Lock(), threading.Event()
    counter = itertools.count()

    def load(node):
        while not stop.is_set():
            with lock:
                if len(sent) >= LOAD_MAX:
                    return
                batch = [(s.ts(), "Load", f"load {next(counter):05d}") for _ in range(LOAD_BATCH)]
                sent.extend(batch)
            try:
                r = lb_submit(node.url, s.token, batch, timeout=15)
                ok = r.status_code == 200 and r.json().get("status") == "ok"
                key = f"{node.name}:{r.status_code}"
            except (requests.RequestException, ValueError) as e:
                ok, key = False, f"{node.name}:{type(e).__name__}"
            with lock:
                if ok:
                    acked.extend(batch)
                    acked_via[node.name] = acked_via.get(node.name, 0) + len(batch)
                else:
                    errors[key] = errors.get(key, 0) + 1
            if not ok:
                time.sleep(0.2)  # a dead or refusing node: do not spin

    threads = [threading.Thread(target=load, args=(n,), daemon=True) for n in s.nodes]
    for t in threads:
        t.start()
    time.sleep(2)
    s.a.kill()
    killed_at = time.time()
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a load thread hangs"
    # For the rejoin test: which of a's listens after the cut were acknowledged.
    s.load_sent, s.load_acked = list(sent), list(acked)
    acked_before_kill = len(acked)
    assert acked_before_kill > 0, f"no scrobble was acknowledged before the kill: {errors}\n{s.logs()}"

    # Promote b. Until the heartbeat is lease_secs (3 s) old, promote
    # refuses; that refusal is expected and retried, no --force.
    refusals, out = [], None
    deadline = time.time() + 30
    while True:
        out = s.b.cluster("promote", timeout=60, check=False)
        if out.returncode == 0:
            break
        text = out.stdout + out.stderr
        assert "heartbeat" in text.lower(), (
            f"promote on b: exit {out.returncode}, expected success or a refusal naming the "
            f"heartbeat's age:\n{text}\n{s.logs()}")
        refusals.append(f"{time.time() - killed_at:.1f}s: {text.strip()}")
        assert time.time() < deadline, f"promote still refused 30 s after the kill: {refusals}"
        time.sleep(1)
    assert re.search(r"^promoted b: generation \d+", out.stdout, re.M), out.stdout + out.stderr
    promoted_after = time.time() - killed_at

    assert len(sent) < LOAD_MAX, f"the load reached its cap ({LOAD_MAX}) before it was stopped"
    assert all(acked_via.get(n) for n in "abc"), (
        f"expected scrobbles acknowledged through a, b and c, got {acked_via}; errors {errors}")
    listens = lb_all_listens(s.b.url, s.token)
    # The same read in small pages (max_ts), a check of the pager itself.
    small = lb_all_listens(s.b.url, s.token, page=97)
    assert sorted(small) == sorted(listens), (len(small), len(listens))
    on_b = {}
    for ts, artist, title in listens:
        if artist == "Load":
            on_b[(ts, title)] = on_b.get((ts, title), 0) + 1
    want = {(ts, title) for ts, _, title in acked}
    missing = sorted(want - set(on_b))
    dups = {k: v for k, v in on_b.items() if v > 1}
    unacked_present = len(set(on_b) - want)
    print(f"\nfailover: sent {len(sent)}, acknowledged {len(acked)} (through {acked_via}), present on b "
          f"{len(want & set(on_b))} of them, missing {len(missing)}, duplicates {len(dups)}, "
          f"present but never acknowledged {unacked_present}; errors {errors}; "
          f"promote refused {len(refusals)} times, succeeded {promoted_after:.1f}s after the kill")
    for line in refusals[:3]:
        print(f"  refused at {line}")
    assert not missing, (f"{len(missing)} acknowledged scrobbles are not on b, e.g. "
                         f"{missing[:5]}\n{s.logs()}")
    assert not dups, f"scrobbles on b more than once: {list(dups.items())[:5]}"

    # c follows b: it holds what b holds, and a scrobble through c lands on b and c.
    want_ts = {ts for ts, _ in on_b}
    wait_for_listens(s, [s.c], want_ts, "c after the promotion (what b holds)")
    ts = s.ts()
    deadline = time.time() + 15
    while True:
        r = lb_submit(s.c.url, s.token, [(ts, "Via", "through c after the promotion")])
        if r.ok:
            break
        assert r.status_code == 503 and time.time() < deadline, (
            f"submit through c after the promotion: expected 200 (or 503 while c learns the "
            f"new primary), got {r.status_code} node={r.headers.get('X-Spindle-Node')} "
            f"{r.text[:300]}\n{s.logs()}")
        time.sleep(0.5)
    wait_for_listens(s, [s.b, s.c], {ts}, "a scrobble through c after the promotion")
    st = s.b.status()
    assert st["primary"]["node"] == "b", st
    assert st["generation"] >= 2, st
    # And through nginx, with a dead.
    ts = s.ts()
    r = lb_submit(s.nginx.url, s.token, [(ts, "Via", "nginx after the promotion")])
    assert r.ok, f"submit via nginx after the promotion: {r.status_code} {r.text[:300]}\n{s.logs()}"
    wait_for_listens(s, [s.b, s.c], {ts}, "a scrobble through nginx after the promotion")


def test_deposed_primary_rejoins_as_a_replica(ctx):
    s = ctx
    assert not s.a.alive(), "a, killed by the failover test, should still be down"
    gen = s.b.status()["generation"]
    out = s.a.cluster("rejoin", timeout=60)
    print(f"\n{out.stdout.strip()}")
    m = re.search(r"^rejoined: (\d+) listens committed after the cut are in (.+?) \(import.*"
                  r"the old files are in (.+?); the next `spindle serve` starts from the newest "
                  r"snapshot as a replica of generation (\d+)$", out.stdout, re.M)
    assert m, f"`cluster rejoin` on a printed no `rejoined:` line:\n{out.stdout}\n{out.stderr}"
    n, unshipped_dir, old_dir, rejoin_gen = int(m[1]), Path(m[2]), Path(m[3]), int(m[4])
    assert rejoin_gen == gen, f"rejoin names generation {rejoin_gen}, the bucket's is {gen}"
    assert unshipped_dir == s.a.data_dir / "cluster" / "unshipped", unshipped_dir
    assert (old_dir / "listens").is_dir(), f"a's listens were not moved to {old_dir}"

    # The set-aside listens: exactly N lines, each a listen of the load
    # that a committed after the cut, none acknowledged to a client, none
    # on b.
    files = unshipped_listens(s.a.data_dir)
    lines = [x for v in files.values() for x in v]
    assert len(lines) == n, (f"rejoin said {n} listens, {unshipped_dir} holds {len(lines)} "
                             f"lines: {files}")
    assert all(name.startswith(f"{USER}-") for name in files), sorted(files)
    sent = {(ts, title) for ts, _, title in s.load_sent}
    acked = {(ts, title) for ts, _, title in s.load_acked}
    on_b = {(ts, title) for ts, _, title in lb_all_listens(s.b.url, s.token)}
    for x in lines:
        key = (x["listened_at"], x["track_metadata"]["track_name"])
        assert key in sent, f"an unshipped listen the load never sent: {x}"
        assert key not in acked, f"an acknowledged listen was not shipped before the cut: {x}"
        assert key not in on_b, f"an unshipped listen is on b (so it was before the cut): {x}"
    print(f"unshipped: {n} listens in {sorted(files)}")

    # Its settings still say primary, but generation {gen} names b: a
    # starts as a replica from the newest snapshot.
    s.a.role = "replica"
    s.a.start()

    def a_is_a_replica():
        st = s.b.status()
        mine = [x for x in st["nodes"] if x["node"] == "a"]
        ok = (st["primary"]["node"] == "b" and len(mine) == 1
              and mine[0]["role"] == "replica" and mine[0]["generation"] == st["generation"]
              and mine[0]["updated_age_secs"] < 10 and not mine[0].get("error"))
        return ok, st

    wait_until(a_is_a_replica, 15, "cluster status --json listing a as a replica of b's "
               "generation", s.logs)

    def same_listens():
        on_a = sorted(lb_all_listens(s.a.url, s.token))
        on_b = sorted(lb_all_listens(s.b.url, s.token))
        return on_a == on_b, f"a {len(on_a)}, b {len(on_b)} listens of {USER}"

    wait_until(same_listens, READ_EVERYWHERE_SECS, "a holding every listen b holds", s.logs)
    print(f"after rejoin: {same_listens()[1]}")

    # A scrobble through a goes to the primary b and is read everywhere.
    ts = s.ts()
    r = lb_submit(s.a.url, s.token, [(ts, "Via", "through a after its rejoin")])
    assert r.ok, (f"submit through a after its rejoin: {r.status_code} "
                  f"node={r.headers.get('X-Spindle-Node')} {r.text[:300]}\n{s.logs()}")
    assert r.headers.get("X-Spindle-Node") == "a", r.headers
    # Only a primary stamps a write with its shipping round: a forwarded it.
    assert r.headers.get("X-Spindle-Round"), f"no X-Spindle-Round: not forwarded? {r.headers}"
    wait_for_listens(s, s.nodes, {ts}, "a scrobble through a after its rejoin")


def test_primary_restarted_after_compaction_still_ships_the_library(ctx):
    s = ctx
    gen = s.b.status()["generation"]
    s.b.stop()
    assert s.b.proc.returncode == 0, (
        f"b exited {s.b.proc.returncode} on SIGTERM\n{s.b.log_tail()}")
    out = cli(s.b.data_dir, "db", "compact").stdout
    print(f"\n{out.strip()}")
    m = re.search(r"^compacted: data file (\d+) → (\d+) bytes, log (\d+) bytes → empty$",
                  out, re.M)
    assert m, f"`db compact` on b printed:\n{out}"
    # A tagged track (the linker matches listens by artist and title; the
    # tones have no tags), found by b's scan at its start: a library
    # change after the compaction.
    make_tagged_track(Path(s.b.music) / "Tagged" / "01 after compaction.flac", 550,
                      "Cluster", "After compaction", "Compacted")
    s.b.start()

    def b_is_primary():
        st = s.b.status()
        return (st["primary"]["node"] == "b" and st["generation"] == gen
                and (st["primary"].get("heartbeat_age_secs") or 99) < 3), st

    wait_until(b_is_primary, 15, f"b primary of generation {gen} again after its restart",
               s.logs)
    songs = subsonic(s.b.url, "search3", query="After compaction",
                     songCount=10)["searchResult3"].get("song", [])
    assert [x["title"] for x in songs] == ["After compaction"], (
        f"b's scan at its start: expected the tagged track, search3 found {songs}\n{s.b.log_tail()}")
    song = songs[0]["id"]

    def replicas_have_it():
        seen = {}
        for n in (s.a, s.c):
            r = requests.get(f"{n.url}/rest/getSong", params={**subsonic_auth(), "id": song},
                             timeout=10)
            seen[n.name] = r.json()["subsonic-response"].get("song", {}).get("title")
        return all(v == "After compaction" for v in seen.values()), seen

    wait_until(replicas_have_it, READ_EVERYWHERE_SECS,
               f"the track b added after its compaction (id {song}) on a and c", s.logs)
    before = play_count(s.b.url, song)

    # A Subsonic scrobble of the song through c: forwarded to b, whose
    # linker raises the song's timesplayed in the (new-generation) library log.
    ts = s.ts()
    params = {**subsonic_auth(), "id": song, "time": ts * 1000, "submission": "true"}
    deadline = time.time() + 15
    while True:
        r = requests.get(f"{s.c.url}/rest/scrobble", params=params, timeout=30)
        if r.status_code != 503:
            break
        assert time.time() < deadline, f"scrobble through c: 503 for 15 s\n{s.logs()}"
        time.sleep(0.5)
    body = r.json().get("subsonic-response", {}) if r.ok else {}
    assert r.ok and body.get("status") == "ok", (
        f"scrobble of {song} through c: {r.status_code} {r.text[:300]}\n{s.logs()}")

    counts = {}

    def b_counted():
        counts["b"] = play_count(s.b.url, song)
        return counts["b"] == before + 1, f"b playCount {counts['b']}, before {before}"

    wait_until(b_counted, READ_EVERYWHERE_SECS, "b's playCount rising by the scrobble", s.logs)
    took = {}
    for n in (s.a, s.c):
        def same(n=n):
            counts[n.name] = play_count(n.url, song)
            return counts[n.name] == counts["b"], f"{n.name} {counts[n.name]}, b {counts['b']}"
        took[n.name] = wait_until(same, READ_EVERYWHERE_SECS,
                                  f"{n.name}'s playCount of {song} equal to b's", s.logs)
    print(f"playCount of {song}: {counts}; equal on a after {took['a']:.2f}s, "
          f"on c after {took['c']:.2f}s")

    def no_errors():
        st = s.b.status()
        nodes = {x["node"]: x for x in st["nodes"]}
        ok = (set(nodes) == {"a", "b", "c"}
              and all(not x.get("error") and x["generation"] == gen
                      and x["updated_age_secs"] < 10 for x in nodes.values()))
        return ok, st

    wait_until(no_errors, 10, "every node in generation, recent and without an error in "
               "`cluster status --json`", s.logs)
