"""A minimal Chrome DevTools Protocol driver for headless Chromium (Debian's
`chromium`), over aiohttp's websocket client: enough to load a page, run
JavaScript in it, and take a screenshot."""

import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import aiohttp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium_binary():
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    def __init__(self):
        self.port = free_port()
        self.profile = tempfile.TemporaryDirectory()
        self.proc = subprocess.Popen(
            [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu",
             "--mute-audio", "--autoplay-policy=no-user-gesture-required",
             f"--remote-debugging-port={self.port}", "--remote-debugging-address=127.0.0.1",
             f"--user-data-dir={self.profile.name}", "--window-size=1100,700", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # Its own process group, so close() reaches the renderer and
            # GPU processes too, not only the browser process.
            start_new_session=True,
        )
        self.ws_url = None
        # A loaded machine (parallel builds) can take a while to start it.
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=2) as r:
                    pages = [p for p in json.load(r) if p.get("type") == "page"]
                if pages:
                    self.ws_url = pages[0]["webSocketDebuggerUrl"]
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if not self.ws_url:
            self.close()
            raise AssertionError("chromium did not start its DevTools endpoint")

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        # Helpers of a browser that exited first may still be around.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.profile.cleanup()


class Page:
    def __init__(self, ws):
        self.ws, self.next_id = ws, 0

    async def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        await self.ws.send_json({"id": mid, "method": method, "params": params})
        while True:
            msg = await asyncio.wait_for(self.ws.receive_json(), timeout=30)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    async def eval(self, expr):
        r = await self.call("Runtime.evaluate", expression=expr, awaitPromise=True,
                            returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    async def wait_for(self, expr, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if await self.eval(expr):
                    return True
            except RuntimeError:
                pass  # the page is still loading
            await asyncio.sleep(0.1)
        raise AssertionError(f"timed out waiting for {expr}")

    async def screenshot(self, path, full=False):
        """Saves a PNG of the viewport, or of the whole page if `full`."""
        params = {"format": "png"}
        if full:
            m = await self.call("Page.getLayoutMetrics")
            size = m.get("cssContentSize") or m["contentSize"]
            params.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        r = await self.call("Page.captureScreenshot", **params)
        data = base64.b64decode(r["data"])
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000, "not a screenshot"
        with open(path, "wb") as f:
            f.write(data)


async def with_page(browser, fn):
    async with aiohttp.ClientSession() as s:
        async with s.ws_connect(browser.ws_url, max_msg_size=64 << 20) as ws:
            page = Page(ws)
            await page.call("Page.enable")
            await page.call("Runtime.enable")
            return await fn(page)
