"""Headless Chromium against the web UI of a fresh `spindle serve` (its
generated demo library): log in, search with the query language (and see
a parse error at its column), open an album, press play and check that the
<audio> element's time advances; screenshots go to SPINDLE_SCREENSHOTS if
set. Run by scripts/ci.d/80-server.sh."""

import asyncio
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)
pytest.importorskip("aiohttp")
import browser  # noqa: E402  (beside this file)

if not browser.chromium_binary():
    pytest.skip("chromium is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
SHOTS = os.environ.get("SPINDLE_SCREENSHOTS")


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
    return os.path.join(SHOTS, name) if SHOTS else None


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
        await p.wait_for("document.getElementById('audio').currentTime > 0.5", timeout=15)
        if shot("album.png"):
            await p.screenshot(shot("album.png"))

    try:
        asyncio.run(browser.with_page(b, scenario))
    finally:
        b.close()
