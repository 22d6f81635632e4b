"""Day one, as a newcomer meets it: a fresh `spindle serve` on an empty
data dir says what to do next; headless Chromium creates the first user
(the administrator) on the page, plays an album, stars and rates, makes a
playlist from the queue, adds a user on the admin page; the layout holds
at 1280×800 and 390×844 (screenshots in target/screenshots). The setup is
refused from another machine (a forwarded request) without the printed
code. Then a backup taken while ListenBrainz scrobbles and library writes
(ratings) run is restored into a fresh data dir: `spindle db check` is
clean and the counts hold everything acknowledged before the backup
started. Run by scripts/ci.d/80-server.sh."""

import asyncio
import os
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)
requests = pytest.importorskip("requests")

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
SHOTS = ROOT / "target" / "screenshots"
CSRF = {"X-Spindle-Csrf": "1"}


class Served:
    def __init__(self, data_dir):
        self.data_dir = data_dir
        env = dict(os.environ, HOME=data_dir, XDG_MUSIC_DIR="")
        self.proc = subprocess.Popen(
            [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        self.first = self.proc.stdout.readline()
        self.second = self.proc.stdout.readline()
        m = re.search(r"http://([0-9.]+:\d+)/", self.first)
        assert m, self.first
        self.base = f"http://{m.group(1)}/"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=15)


@pytest.fixture
def fresh():
    with tempfile.TemporaryDirectory() as d:
        s = Served(d)
        try:
            yield s
        finally:
            s.stop()


def cli(data_dir, *args, stdin=None, check=True):
    return subprocess.run([BIN, "--data-dir", data_dir, *args], input=stdin,
                          capture_output=True, text=True, check=check)


def test_serve_says_how_to_create_the_first_user_and_a_stranger_needs_the_code(fresh):
    m = re.search(r"no users yet: open (\S+) to create the administrator.*setup code ([0-9A-Z-]+)",
                  fresh.second)
    assert m, fresh.second
    code = m.group(2)
    assert re.fullmatch(r"[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}", code), code
    form = {"user": "root", "password": "pw"}
    # Through a proxy (as a stranger on the LAN would come), without the code.
    via_proxy = dict(CSRF, **{"X-Forwarded-For": "203.0.113.9"})
    r = requests.post(fresh.base + "ui/setup", json=form, headers=via_proxy, timeout=10)
    assert r.status_code == 403 and "setup code" in r.json()["error"], r.text
    r = requests.post(fresh.base + "ui/setup", json=dict(form, code="0000-0000-0000"),
                      headers=via_proxy, timeout=10)
    assert r.status_code == 403
    assert "root" not in cli(fresh.data_dir, "user", "list").stdout
    r = requests.post(fresh.base + "ui/setup", json=dict(form, code=code), headers=via_proxy,
                      timeout=10)
    assert r.status_code == 200, r.text
    out = cli(fresh.data_dir, "user", "list").stdout
    assert re.search(r"^root\tadmin", out, re.M), out
    # Once: the code is spent and the server has a user.
    r = requests.post(fresh.base + "ui/setup", json=dict(form, user="eve", code=code),
                      headers=CSRF, timeout=10)
    assert r.status_code == 409


def test_a_newcomer_creates_the_admin_in_the_browser_plays_and_manages_users(fresh):
    browser = pytest.importorskip("browser")
    if not browser.chromium_binary():
        pytest.skip("chromium is not installed")
    SHOTS.mkdir(parents=True, exist_ok=True)
    b = browser.Browser()

    async def size(p, w, h):
        await p.call("Emulation.setDeviceMetricsOverride", width=w, height=h,
                      deviceScaleFactor=1, mobile=w < 600)

    async def both(p, name):
        for w, h in ((1280, 800), (390, 844)):
            await size(p, w, h)
            await asyncio.sleep(0.3)
            # Nothing sticks out sideways at phone width.
            overflow = await p.eval("document.documentElement.scrollWidth")
            assert overflow <= w + 1, (name, w, overflow)
            await p.screenshot(str(SHOTS / f"first-run-{name}-{w}x{h}.png"))
        await size(p, 1280, 800)

    async def scenario(p):
        await size(p, 1280, 800)
        await p.call("Page.navigate", url=fresh.base)
        await p.wait_for("!document.getElementById('setup').hidden")
        # From this machine the code is not asked for.
        assert await p.eval("document.getElementById('setup-code-label').hidden")
        assert await p.eval("document.getElementById('login').hidden")
        await both(p, "setup")
        await p.eval("""(() => { const f = document.getElementById('setup-form');
            f.user.value = 'root'; f.password.value = 'secret'; f.again.value = 'secret';
            f.requestSubmit(); return true; })()""")
        await p.wait_for("!document.getElementById('app').hidden")
        await p.wait_for("!document.getElementById('nav-admin').hidden")
        # The album grid with covers, then an album: play it.
        await p.eval("location.hash = '#/albums'; true")
        await p.wait_for("document.querySelectorAll('#album-grid li img.cover').length > 0")
        await both(p, "albums")
        await p.eval("document.querySelector('#album-grid li a').click(); true")
        await p.wait_for("document.querySelectorAll('#tracks li').length > 0")
        await p.eval("document.getElementById('play-album').click(); true")
        await p.wait_for("document.getElementById('audio').currentTime > 0.5", timeout=30)
        # Star the first track and rate it 4.
        await p.eval("document.querySelector('#tracks li .star').click(); true")
        await p.wait_for("document.querySelector('#tracks li .star').textContent === '★'")
        await p.eval("document.querySelector('#tracks li [data-rating=\"4\"]').click(); true")
        await p.wait_for("document.querySelector('#tracks li [data-rating=\"4\"]')"
                         ".getAttribute('aria-pressed') === 'true'")
        await both(p, "album")
        # The ratings and stars are the server's: a reload shows them.
        await p.call("Page.reload")
        await p.wait_for("document.querySelectorAll('#tracks li').length > 0")
        assert await p.eval("document.querySelector('#tracks li .star').textContent") == "★"
        assert await p.eval("document.querySelector('#tracks li [data-rating=\"4\"]')"
                            ".getAttribute('aria-pressed')") == "true"
        await p.eval("document.getElementById('play-album').click(); true")
        await p.wait_for("document.querySelectorAll('#queue li').length > 1")
        # A playlist from the queue; remove a track; it plays.
        n = await p.eval("document.querySelectorAll('#queue li').length")
        await p.eval("location.hash = '#/playlists'; true")
        await p.wait_for("!document.getElementById('view-playlists').hidden")
        await p.eval("""(() => { document.querySelector('#playlist-form [name=name]').value = 'Road';
            document.getElementById('playlist-from-queue').click(); return true; })()""")
        await p.wait_for(f"document.querySelectorAll('#playlist-tracks li').length === {n}")
        assert await p.eval("document.getElementById('playlist-name').textContent") == "Road"
        await p.eval("[...document.querySelectorAll('#playlist-tracks li button')]"
                     ".find(b => b.textContent === '×').click(); true")
        await p.wait_for(f"document.querySelectorAll('#playlist-tracks li').length === {n - 1}")
        await p.eval("document.getElementById('play-playlist').click(); true")
        await p.wait_for("document.getElementById('audio').currentTime > 0.3", timeout=30)
        await both(p, "playlist")
        # The admin page: add a user.
        await p.eval("location.hash = '#/admin'; true")
        await p.wait_for("document.querySelectorAll('#admin-users tr.user-row').length === 1")
        await p.eval("""(() => { const f = document.getElementById('add-user-form');
            f.name.value = 'bob'; f.password.value = 'pw2'; f.requestSubmit(); return true; })()""")
        await p.wait_for("document.querySelectorAll('#admin-users tr.user-row').length === 2")
        await p.wait_for("document.querySelectorAll('#admin-sessions tbody tr').length === 1")
        await both(p, "admin")
        # Log out: now the login form, not the setup.
        await p.eval("document.getElementById('logout').click(); true")
        await p.wait_for("!document.getElementById('login').hidden")
        assert await p.eval("document.getElementById('setup').hidden")
        # bob is no administrator: no admin link.
        await p.eval("""document.querySelector('[name=user]').value='bob';
                        document.querySelector('[name=password]').value='pw2';
                        document.getElementById('login-form').requestSubmit(); true""")
        await p.wait_for("!document.getElementById('app').hidden")
        assert await p.eval("document.getElementById('nav-admin').hidden")

    try:
        asyncio.run(browser.with_page(b, scenario))
    finally:
        b.close()
    print(f"screenshots in {SHOTS}")


def test_a_backup_taken_during_scrobbles_and_library_writes_restores_clean(fresh):
    cli(fresh.data_dir, "user", "add", "ann", "--password-stdin", stdin="pw\n")
    token = cli(fresh.data_dir, "user", "token", "ann").stdout.strip()
    web = requests.Session()
    assert web.post(fresh.base + "ui/login", json={"user": "ann", "password": "pw"},
                    headers=CSRF, timeout=10).ok
    songs = [s["id"] for s in web.get(fresh.base + "ui/api/search?q=", timeout=10).json()["songs"]]
    assert len(songs) >= 4
    acked = {"listens": 0, "rated": set()}
    lock = threading.Lock()
    stop = threading.Event()

    def scrobble():
        n = 0
        while not stop.is_set():
            body = {"listen_type": "single", "payload": [{
                "listened_at": 1_700_000_000 + n,
                "track_metadata": {"artist_name": "Backup Band", "track_name": f"Take {n}"}}]}
            r = requests.post(fresh.base + "1/submit-listens", json=body, timeout=10,
                              headers={"Authorization": f"Token {token}"})
            assert r.status_code == 200, r.text
            with lock:
                acked["listens"] += 1
            n += 1

    def rate():
        k = 0
        while not stop.is_set():
            sid = songs[k % len(songs)]
            r = web.post(fresh.base + "ui/api/rating", json={"id": str(sid), "rating": 1 + k % 5},
                         headers=CSRF, timeout=10)
            assert r.ok, r.text
            with lock:
                acked["rated"].add(sid)
            k += 1
            time.sleep(0.05)

    threads = [threading.Thread(target=f) for f in (scrobble, rate)]
    for t in threads:
        t.start()
    try:
        while True:
            with lock:
                if acked["listens"] >= 50 and len(acked["rated"]) >= 2:
                    break
            time.sleep(0.05)
        with lock:
            before = (acked["listens"], set(acked["rated"]))
        with tempfile.TemporaryDirectory() as out:
            dest = os.path.join(out, "backup")
            done = cli(fresh.data_dir, "backup", dest)
            with lock:
                during = acked["listens"] - before[0]
            stop.set()
            for t in threads:
                t.join(timeout=30)
            assert during > 0, "the backup ran while scrobbles were acknowledged"
            assert "listens" in done.stdout, done.stdout
            new = os.path.join(out, "restored")
            os.mkdir(new)
            Path(new, "stray").write_text("x")
            refused = cli(new, "restore", dest, check=False)
            assert refused.returncode != 0 and "not empty" in refused.stderr, refused.stderr
            os.remove(os.path.join(new, "stray"))
            cli(new, "restore", dest)
            check = cli(new, "db", "check", check=False)
            assert check.returncode == 0 and check.stdout.startswith("ok:"), check.stdout
            rated = {int(x) for x in cli(new, "query", "rating>=1", "--format", "ids").stdout.split()}
            assert before[1] <= rated, (before[1], rated)
            restored = Served(new)
            try:
                m = re.search(r"(\d+) listens", restored.first)
                assert m and int(m.group(1)) >= before[0], (restored.first, before[0])
                assert "1 user;" in restored.second, restored.second
                s = requests.Session()
                assert s.post(restored.base + "ui/login", json={"user": "ann", "password": "pw"},
                              headers=CSRF, timeout=10).ok
            finally:
                restored.stop()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
