"""Headless Chromium against the web UI of a fresh `spindle serve` (its
generated demo library): log in, search with the query language (and see
a parse error at its column), open an album, press play and check that the
<audio> element's time advances; open the artists and an artist page, build
a queue (add, remove, next), see the player's now playing, scrobble through
the Subsonic API and see the recent listens and the artist's top tracks,
then load the charts page and check the SVG pictures and their bars for
several periods. Screenshots go to SPINDLE_SCREENSHOTS, or to a fresh
temporary folder (printed). Run by scripts/ci.d/80-server.sh."""

import asyncio
import datetime
import json
import os
import re
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import need_chromium

browser = need_chromium()

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
SHOTS = os.environ.get("SPINDLE_SCREENSHOTS") or tempfile.mkdtemp(prefix="spindle-ui-shots-")
print(f"screenshots in {SHOTS}")


@pytest.fixture(scope="module")
def base():
    with tempfile.TemporaryDirectory() as data_dir:
        env = dict(os.environ, HOME=data_dir, XDG_MUSIC_DIR="")
        proc = subprocess.Popen(
            [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )
        try:
            m = re.search(r"http://([0-9.]+:\d+)/", proc.stdout.readline())
            assert m
            subprocess.run([BIN, "--data-dir", data_dir, "user", "add", "ann"],
                           input="pw\n", text=True, check=True, capture_output=True)
            yield f"http://{m.group(1)}/"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def shot(name):
    return os.path.join(SHOTS, name)


async def log_in(p, base):
    await p.call("Page.navigate", url=base)
    await p.wait_for("!document.getElementById('login').hidden")
    await p.eval("""document.querySelector('[name=user]').value='ann';
                    document.querySelector('[name=password]').value='pw';
                    document.getElementById('login-form').requestSubmit(); true""")
    await p.wait_for("!document.getElementById('app').hidden")


def subsonic(base, method, **params):
    q = urllib.parse.urlencode(
        dict(u="ann", p="pw", v="1.16.1", c="chromium-test", f="json", **params), doseq=True)
    with urllib.request.urlopen(f"{base}rest/{method}?{q}", timeout=10) as r:
        body = json.load(r)["subsonic-response"]
    assert body["status"] == "ok", body
    return body


def test_log_in_search_open_an_album_and_play(base):
    b = browser.Browser()

    async def scenario(p):
        await p.call("Page.navigate", url=base)
        await p.wait_for("!document.getElementById('login').hidden")
        if shot("login.png"):
            await p.screenshot(shot("login.png"))
        await p.eval("""document.querySelector('[name=user]').value='ann';
                        document.querySelector('[name=password]').value='pw';
                        document.getElementById('login-form').requestSubmit(); true""")
        await p.wait_for("!document.getElementById('app').hidden")
        await p.wait_for("document.querySelectorAll('#songs li').length === 8")
        # The query language, and an error shown at its column.
        await p.eval("""document.getElementById('q').value='artist:';
                        document.getElementById('search-form').requestSubmit(); true""")
        await p.wait_for("!document.getElementById('query-error').hidden")
        err = await p.eval("document.getElementById('query-error').textContent")
        assert err.splitlines()[1].startswith(" " * 7 + "^"), err
        await p.eval("""document.getElementById('q').value='artist~sine AND tracknr<3';
                        document.getElementById('search-form').requestSubmit(); true""")
        await p.wait_for("document.getElementById('query-error').hidden")
        await p.wait_for("document.querySelectorAll('#songs li').length === 4")
        await p.eval("document.querySelector('#albums li').click(); true")
        await p.wait_for("!document.getElementById('album').hidden")
        await p.wait_for("document.querySelectorAll('#tracks li').length > 0")
        await p.eval("document.getElementById('play-album').click(); true")
        await p.wait_for("document.getElementById('audio').currentTime > 0.5", timeout=30)
        if shot("album.png"):
            await p.screenshot(shot("album.png"))

    try:
        asyncio.run(browser.with_page(b, scenario))
    finally:
        b.close()


def test_artist_page_queue_now_playing_recent_listens_and_charts(base):
    b = browser.Browser()
    count = "document.querySelectorAll({!r}).length"

    async def scenario(p):
        await log_in(p, base)
        # Artists, then an artist page.
        await p.eval("document.querySelector('a[href=\"#/artists\"]').click(); true")
        await p.wait_for(count.format("#artists li") + " === 2")
        names = await p.eval("[...document.querySelectorAll('#artists li a')].map(a => a.textContent)")
        assert names == ["Björk Generator", "The Sine Waves"], names
        await p.eval("document.querySelector('#artists li a').click(); true")
        await p.wait_for("!document.getElementById('artist').hidden")
        assert await p.eval("document.getElementById('artist-name').textContent") == "Björk Generator"
        await p.wait_for(count.format("#artist-albums li") + " === 1")
        assert "No listens yet" in await p.eval("document.getElementById('artist-top').textContent")

        # The queue: add the album (3 tracks), remove the second, play with Next.
        await p.eval("document.getElementById('clear-queue').click(); true")
        await p.eval("[...document.querySelectorAll('#artist-albums button')]"
                     ".find(b => b.textContent.includes('Queue')).click(); true")
        await p.wait_for(count.format("#queue li") + " === 3")
        queued = await p.eval("[...document.querySelectorAll('#queue li .name')].map(e => e.textContent)")
        await p.eval("document.querySelectorAll('#queue li button')[1].click(); true")
        await p.wait_for(count.format("#queue li") + " === 2")
        left = await p.eval("[...document.querySelectorAll('#queue li .name')].map(e => e.textContent)")
        assert left == [queued[0], queued[2]], (queued, left)
        await p.eval("document.getElementById('next').click(); true")
        await p.wait_for("document.getElementById('audio').currentTime > 0.3", timeout=30)
        first_title = queued[0].split(" — ")[0]
        assert await p.eval("document.querySelector('#queue li.playing .name').textContent") == queued[0]
        # The player told the server; now playing comes back from it.
        await p.wait_for(f"document.getElementById('now-playing').textContent.startsWith({first_title!r})",
                         timeout=30)
        assert "Spindle web" in await p.eval("document.getElementById('now-playing').textContent")
        await p.eval("document.getElementById('next').click(); true")
        await p.wait_for("document.querySelector('#queue li.playing .name').textContent === "
                         f"{queued[2]!r}")
        await p.screenshot(shot("artist-queue.png"))

        # Scrobbles through the Subsonic API, as another player would send
        # them: the recent listens and the artist's top tracks follow.
        ids = await p.eval("queue.map(s => s.id)")
        now_ms = int(time.time() * 1000)
        day = 86_400_000
        # (Two minutes apart: the same track within the dedupe window,
        # 30 s by default, is one play sent twice.)
        plays = [(ids[0], now_ms - k * day - 60_000 - j * 120_000)
                 for j, k in enumerate((0, 1, 1, 3, 9, 40))]
        plays += [(ids[1], now_ms - k * day - 120_000) for k in (0, 2, 200)]
        subsonic(base, "scrobble", id=[i for i, _ in plays], time=[t for _, t in plays])
        await p.wait_for(count.format("#recent li") + " === 9", timeout=30)
        assert first_title in await p.eval("document.querySelector('#recent li').textContent")
        await p.eval("location.hash = '#/artists'; true")
        await p.wait_for(count.format("#artists li") + " === 2")
        await p.eval("document.querySelector('#artists li a').click(); true")
        await p.wait_for(count.format("#artist-top li.song") + " === 2")
        top = await p.eval("[...document.querySelectorAll('#artist-top li')]"
                           ".map(li => [li.querySelector('.name').textContent, li.querySelector('.count').textContent])")
        assert top[0] == [first_title, "6"], top
        assert top[1][1] == "3", top
        await p.screenshot(shot("artist.png"))

        # Charts: SVG pictures inline, with titles and bars.
        await p.eval("document.querySelector('a[href=\"#/charts\"]').click(); true")
        await p.wait_for(count.format("#chart-listens svg rect.bar") + " > 0")
        await p.wait_for(count.format("#chart-artists svg rect.bar") + " > 0")
        await p.wait_for(count.format("#chart-albums svg rect.bar") + " > 0")
        info = await p.eval("""(() => {
            const svg = document.querySelector('#chart-listens svg');
            return [svg.namespaceURI, svg.getAttribute('role'), svg.querySelector('title').textContent,
                    document.querySelectorAll('#chart-listens rect.bar').length,
                    document.querySelector('#chart-artists rect.bar').getBBox().width,
                    document.querySelector('#chart-artists svg').textContent];
        })()""")
        assert info[0] == "http://www.w3.org/2000/svg", info
        assert info[1] == "img"
        assert info[2] == "Listens per day, the last 7 days", info
        # 7 days: today, yesterday, 2 and 3 days ago have listens.
        assert info[3] == 4, info
        assert info[4] > 100, info
        assert "Björk Generator" in info[5] and "6" in info[5], info
        await p.screenshot(shot("charts.png"), full=True)

        # Other periods redraw: all time has more bars in the artists' chart total.
        await p.eval("document.querySelector('#period-form [value=overall]').click(); true")
        await p.wait_for("document.querySelector('#chart-listens svg title').textContent"
                         " === 'Listens per week, all time'")
        # A from/to range of one day, 40 days ago: one bar, one listen.
        d = datetime.datetime.fromtimestamp((now_ms - 40 * day - 65_000) / 1000,
                                            datetime.timezone.utc).date().isoformat()
        await p.eval(f"""(() => {{
            const f = document.getElementById('period-form');
            f.querySelector('[value=range]').checked = true;
            f.querySelector('[name=from]').value = {d!r};
            f.querySelector('[name=to]').value = {d!r};
            f.requestSubmit(); return true; }})()""")
        await p.wait_for(f"document.querySelector('#chart-listens svg title').textContent"
                         f" === 'Listens per day, {d} to {d}'")
        assert await p.eval(count.format("#chart-listens rect.bar")) == 1
        assert await p.eval(count.format("#chart-artists rect.bar")) == 1
        tip = await p.eval("document.querySelector('#chart-listens rect.bar title').textContent")
        assert tip == f"{d}: 1 listen", tip

    try:
        asyncio.run(browser.with_page(b, scenario))
    finally:
        b.close()
