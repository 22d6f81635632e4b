"""Starts a fresh `spindle serve` on a free loopback port with a temp data
dir, and makes a user, an API key and a ListenBrainz token with the CLI.

SPINDLE_BIN names the binary (default: target/release/spindle)."""

import contextlib
import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
USER = "ann"
# pylast's tests read back exact histories and charts, so they get a user
# of their own.
PYLAST_USER = "pat"
PASSWORD = "correct horse"


class Server:
    def __init__(self, url, host, data_dir, api_key, secret, token):
        self.url, self.host, self.data_dir = url, host, data_dir
        self.api_key, self.secret, self.token = api_key, secret, token
        self.user, self.password = USER, PASSWORD


def cli(data_dir, *args, stdin=None):
    return subprocess.run(
        [BIN, "--data-dir", data_dir, *args],
        input=stdin, capture_output=True, text=True, check=True,
    ).stdout


@pytest.fixture(scope="session")
def server():
    with tempfile.TemporaryDirectory() as data_dir:
        proc = subprocess.Popen(
            [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE, text=True,
        )
        line = proc.stdout.readline()
        m = re.search(r"http://([0-9.:]+)/", line)
        assert m, f"no URL in {line!r}"
        host = m.group(1)
        # Accounts are made while the server runs, as a user would.
        cli(data_dir, "user", "add", USER, stdin=PASSWORD + "\n")
        cli(data_dir, "user", "add", PYLAST_USER, stdin=PASSWORD + "\n")
        out = cli(data_dir, "apikey", "add", "--name", "tests")
        api_key = re.search(r"api_key (\w+)", out).group(1)
        secret = re.search(r"secret (\w+)", out).group(1)
        token = cli(data_dir, "user", "token", USER).strip()
        yield Server(f"http://{host}", host, data_dir, api_key, secret, token)
        proc.terminate()
        proc.wait(timeout=10)


def now():
    return int(time.time())


class MusicServer:
    """A running `spindle serve --music DIR`: host, port, base URL, the
    music folder and data dir (as given)."""


@contextlib.contextmanager
def music_server(music, password, users=("ann",), data_dir=None):
    """Starts `spindle serve --music MUSIC` on a free loopback port with a
    fresh data dir (or DATA_DIR), adds `users` with `password` through the
    CLI while it runs (the first one administers the server), yields a
    MusicServer, and stops the server afterwards."""
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory())
        proc = subprocess.Popen(
            [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0", "--music", music],
            stdout=subprocess.PIPE, text=True,
        )
        try:
            url = None
            for _ in range(5):
                url = re.search(r"serving http://([0-9.]+):(\d+)/", proc.stdout.readline())
                if url:
                    break
            assert url, "the server printed no URL"
            for user in users:
                cli(data_dir, "user", "add", user, stdin=password + "\n")
            s = MusicServer()
            s.host, s.port = url.group(1), int(url.group(2))
            s.base = f"http://{s.host}:{s.port}"
            s.music, s.data_dir = music, data_dir
            yield s
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def free_port():
    """A loopback port free now (for a server that restarts on the same
    port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """`spindle serve` over DATA_DIR on a fixed loopback port (the demo
    library: no --music), stopped and started again at will; its log goes
    to NAME.log beside the data dir. `host` is 127.0.0.1:PORT, `url` the
    base URL."""

    def __init__(self, data_dir, name="server"):
        self.data_dir, self.name = data_dir, name
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.host}"
        self.proc = None

    def start(self):
        log = open(Path(self.data_dir).parent / f"{self.name}.log", "a")
        self.proc = subprocess.Popen(
            [BIN, "--data-dir", self.data_dir, "serve", "--listen", self.host],
            stdout=subprocess.PIPE, stderr=log, text=True,
        )
        for _ in range(10):
            if "http://" in self.proc.stdout.readline():
                break
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if requests.get(f"{self.url}/healthz", timeout=2).ok:
                    return
            except requests.ConnectionError:
                time.sleep(0.1)
        raise AssertionError(f"{self.name} did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def listenbrainz_client(url, token):
    """A liblistenbrainz client of the server at URL, authenticated by a
    user token (older liblistenbrainz versions take the URL only as a
    module global)."""
    import liblistenbrainz
    import liblistenbrainz.client as lbclient

    lbclient.API_BASE_URL = url
    try:
        c = liblistenbrainz.ListenBrainz(api_base_url=url)
    except TypeError:
        c = liblistenbrainz.ListenBrainz()
    c.set_auth_token(token)
    return c


def need_chromium():
    """Skips the calling test module unless scripts/ci.d/80-server.sh runs
    it (SPINDLE_SUBSONIC_TESTS=1; the stage installs Chromium) and aiohttp
    and Chromium are there; returns the `browser` module (browser.py)."""
    if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
        pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                    allow_module_level=True)
    pytest.importorskip("aiohttp")
    import browser

    if not browser.chromium_binary():
        pytest.skip("chromium is not installed", allow_module_level=True)
    return browser


@pytest.fixture(scope="module")
def allow_loopback_services():
    """For a module whose servers link and pull to each other on
    127.0.0.1, which the outbound rule refuses unless an administrator
    allows it: allows it as `[outbound] allow` would (docs/security.md)."""
    old = os.environ.get("SPINDLE_OUTBOUND_ALLOW")
    os.environ["SPINDLE_OUTBOUND_ALLOW"] = "127.0.0.1"
    yield
    if old is None:
        os.environ.pop("SPINDLE_OUTBOUND_ALLOW", None)
    else:
        os.environ["SPINDLE_OUTBOUND_ALLOW"] = old
