"""A web Subsonic client served from another origin (a second loopback
port) in headless Chromium: its script (hand-written fetch, tokens made
with an MD5 in the page, cors_page/) logs in with a salted token, reloads,
pings again, stars a song (with a preflight), makes a playlist by form
POST and reads a stream's Content-Range; the web UI's cookie API stays
unreadable to it. Run by scripts/ci.d/80-server.sh."""

import asyncio
import functools
import hashlib
import http.server
import json
import threading
import urllib.parse
from pathlib import Path

import pytest

from conftest import need_chromium

browser = need_chromium()

PAGE_DIR = Path(__file__).resolve().parent / "cors_page"


@pytest.fixture
def page_origin():
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(PAGE_DIR))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
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
