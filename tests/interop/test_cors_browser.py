"""Web Subsonic clients served from another origin (a second loopback
port) in headless Chromium, two of them (cors_page/):

- a hand-written one (fetch, tokens made with an MD5 in the page): logs in
  with a salted token, reloads, pings again, stars a song (with a
  preflight), makes a playlist by form POST and reads a stream's
  Content-Range; the web UI's cookie API stays unreadable to it;
- one built on the npm library subsonic-api (tests/interop/js, its
  browser build served by the page's origin): login, reload, play (a
  ranged stream, now playing, a scrobble), star, a playlist by form POST.

Run by scripts/ci.d/80-server.sh."""

import asyncio
import hashlib
import http.server
import json
import os
import threading
import urllib.parse
from pathlib import Path

import pytest

from conftest import need_chromium

browser = need_chromium()

PAGE_DIR = Path(__file__).resolve().parent / "cors_page"
LIBRARY = Path(__file__).resolve().parent / "js" / "node_modules" / "subsonic-api" / "lib" / "index.js"


class PageHandler(http.server.SimpleHTTPRequestHandler):
    """The page's origin: cors_page/, and subsonic-api's browser build as
    /vendor/subsonic-api.js."""

    def __init__(self, *a, **kw):
        super().__init__(*a, directory=str(PAGE_DIR), **kw)

    def do_GET(self):
        if self.path == "/vendor/subsonic-api.js":
            body = LIBRARY.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "text/javascript")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, *a):
        pass


@pytest.fixture
def page_origin():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PageHandler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_page_of_another_origin_logs_in_stars_and_makes_a_playlist(server, page_origin):
    q = urllib.parse.urlencode(
        {"server": server.url, "user": server.user, "password": server.password})
    b = browser.Browser()

    async def scenario(p):
        await p.call("Page.navigate", url=f"{page_origin}/index.html?{q}")
        await p.wait_for("document.getElementById('out').textContent.length > 0", timeout=60)
        return json.loads(await p.eval("document.getElementById('out').textContent"))

    try:
        out = asyncio.run(browser.with_page(b, scenario))
    finally:
        b.close()
    assert "error" not in out, out
    assert out["md5abc"] == hashlib.md5(b"abc").hexdigest()
    assert out["first"] == "ok" and out["ping"] == "ok", out
    assert out["star"] == "ok" and out["starred"] is True, out
    assert out["playlist"] == 1, out
    assert out["streamStatus"] == 206 and out["contentRange"].startswith("bytes 0-9/"), out
    assert out["bytes"] == 10, out
    assert out["webUi"] == "refused", out


def test_a_page_of_another_origin_on_the_npm_library_logs_in_plays_stars_and_makes_a_playlist(
        server, page_origin):
    if not LIBRARY.is_file():
        assert not os.environ.get("CI"), f"{LIBRARY} missing: npm ci did not run"
        pytest.skip("npm ci --prefix tests/interop/js first")
    q = urllib.parse.urlencode(
        {"server": server.url, "user": server.user, "password": server.password})
    b = browser.Browser()

    async def scenario(p):
        await p.call("Page.navigate", url=f"{page_origin}/lib.html?{q}")
        await p.wait_for("document.getElementById('out').textContent.length > 0", timeout=60)
        return json.loads(await p.eval("document.getElementById('out').textContent"))

    try:
        out = asyncio.run(browser.with_page(b, scenario))
    finally:
        b.close()
    assert "error" not in out, out
    assert out["first"] == "ok" and out["ping"] == "ok", out
    assert out["streamStatus"] == 206 and out["contentRange"].startswith("bytes 0-9/"), out
    assert out["bytes"] == 10, out
    assert out["nowPlaying"] == "ok" and out["scrobble"] == "ok", out
    assert out["played"] >= 1, out
    assert out["star"] == "ok" and out["starred"] is True, out
    assert out["playlist"] == 1, out
