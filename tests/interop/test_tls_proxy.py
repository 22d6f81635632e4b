"""HTTPS and reverse proxies, end to end, against real clients.

- TLS: `spindle serve --tls-cert --tls-key` with a certificate from a
  throw-away CA made with the openssl CLI; curl and requests (verify= the
  CA file) and py-opensonic (its aiohttp trusting the CA through
  SSL_CERT_FILE) talk to it; a streamed file arrives byte for byte (over
  TLS the read path replaces sendfile); a client that does not trust the
  CA is refused. SIGHUP with a new certificate on disk: new connections
  get it, a keep-alive connection opened before goes on working.
- Debian's nginx in front, under /music, with X-Forwarded-For/-Proto/-Host:
  every API answers under the prefix (requests, py-opensonic with its
  server_path), the page points its links under it, and the server sees
  the client's address (curl binds 127.0.0.2) from X-Forwarded-For only
  because nginx's address (127.0.0.1) is trusted: a forged header sent
  straight to the server, or through nginx to a server that does not
  trust it, changes nothing.

Run by scripts/ci.d/80-server.sh (SPINDLE_SUBSONIC_TESTS=1)."""

import functools
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)
requests = pytest.importorskip("requests")

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
PASSWORD = "s3cret horse"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca_and_certs(d):
    """A CA, and two certificates for 127.0.0.1/localhost signed by it."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=Spindle test CA", cwd=d)
    ext = d / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("one", "two"):
        # EC and RSA keys: both kinds load.
        if name == "one":
            openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key", cwd=d)
        else:
            openssl("genrsa", "-out", f"{name}.key", "2048", cwd=d)
        openssl("req", "-new", "-key", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN=spindle {name}", cwd=d)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", f"{name}.pem", cwd=d)


def cli(data_dir, *args, stdin=None):
    return subprocess.run([BIN, "--data-dir", data_dir, *args], input=stdin,
                          capture_output=True, text=True, check=True).stdout


class Spindle:
    """A `spindle serve` with its own data dir; stderr (the log) to a file."""

    def __init__(self, tmp, name, *flags):
        self.data_dir = str(tmp / f"data-{name}")
        self.log_path = tmp / f"{name}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [BIN, "--data-dir", self.data_dir, "serve", "--listen", "127.0.0.1:0", *flags],
            stdout=subprocess.PIPE, stderr=self.log, text=True,
        )
        line = self.proc.stdout.readline()
        m = re.search(r"serving (https?)://127\.0\.0\.1:(\d+)(/\S*)", line)
        assert m, f"no URL in {line!r}; log: {self.log_path.read_text()}"
        self.scheme, self.port, self.path = m.group(1), int(m.group(2)), m.group(3)
        self.url = f"{self.scheme}://127.0.0.1:{self.port}{self.path}"
        cli(self.data_dir, "user", "add", "ann", stdin=PASSWORD + "\n")

    def logged(self):
        return self.log_path.read_text()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


def ping_params(**extra):
    return dict(u="ann", p=PASSWORD, v="1.16.1", c="tests", f="json", **extra)


@pytest.fixture(scope="module")
def tmp():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


@pytest.fixture(scope="module")
def tls(tmp):
    make_ca_and_certs(tmp)
    live_cert, live_key = tmp / "live.pem", tmp / "live.key"
    shutil.copy(tmp / "one.pem", live_cert)
    shutil.copy(tmp / "one.key", live_key)
    s = Spindle(tmp, "tls", "--tls-cert", str(live_cert), "--tls-key", str(live_key))
    s.ca = str(tmp / "ca.pem")
    s.tmp = tmp
    yield s
    s.stop()


def test_the_server_says_https_and_curl_trusting_the_ca_gets_an_answer(tls):
    assert tls.url == f"https://127.0.0.1:{tls.port}/"
    out = subprocess.run(
        ["curl", "-sS", "--cacert", tls.ca,
         f"https://127.0.0.1:{tls.port}/rest/ping?u=ann&p={PASSWORD.replace(' ', '%20')}"
         "&v=1.16.1&c=curl&f=json"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert '"status":"ok"' in out, out
    # A client that does not trust the CA refuses the server.
    r = subprocess.run(["curl", "-sS", f"https://127.0.0.1:{tls.port}/rest/ping"],
                       capture_output=True, text=True)
    assert r.returncode == 60, (r.returncode, r.stderr)
    # Plain HTTP to the HTTPS port gets no answer.
    r = subprocess.run(["curl", "-sS", "-m", "5", f"http://127.0.0.1:{tls.port}/rest/ping"],
                       capture_output=True, text=True)
    assert r.returncode != 0


def test_requests_streams_a_file_byte_for_byte_over_tls(tls):
    base = f"https://127.0.0.1:{tls.port}/rest"
    with requests.Session() as s:
        # verify= per request: a session's is overridden by REQUESTS_CA_BUNDLE.
        s.get = functools.partial(s.get, verify=tls.ca)
        r = s.get(f"{base}/getRandomSongs", params=ping_params(size=1), timeout=10)
        song = r.json()["subsonic-response"]["randomSongs"]["song"][0]
        on_disk = (Path(tls.data_dir) / "demo-music" / song["path"]).read_bytes()
        r = s.get(f"{base}/stream", params=ping_params(id=song["id"]), timeout=30)
        assert r.status_code == 200
        assert hashlib.sha256(r.content).digest() == hashlib.sha256(on_disk).digest()
        # A range, through the same read path.
        r = s.get(f"{base}/stream", params=ping_params(id=song["id"]),
                  headers={"Range": "bytes=100-1099"}, timeout=30)
        assert r.status_code == 206 and r.content == on_disk[100:1100]


OPENSONIC = """
import sys, libopensonic
c = libopensonic.Connection(sys.argv[1], "ann", sys.argv[2], port=int(sys.argv[3]),
                            server_path=sys.argv[4], app_name="spindle-tests")
try:
    assert c.ping(), "ping failed"
    artists = c.get_artists()
    print("artists", sum(len(i.artist or []) for i in artists.index))
finally:
    c.cleanup()
"""


def opensonic(url, port, path="", ca=None):
    env = dict(os.environ)
    if ca:
        env["SSL_CERT_FILE"] = ca
    r = subprocess.run([sys_python(), "-c", OPENSONIC, url, PASSWORD, str(port), path],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    n = int(re.search(r"artists (\d+)", r.stdout).group(1))
    assert n > 0, r.stdout


def sys_python():
    import sys
    return sys.executable


def test_py_opensonic_talks_to_the_https_server(tls):
    opensonic("https://127.0.0.1", tls.port, ca=tls.ca)


def peer_cert(port):
    """The certificate a new connection gets (PEM), unverified."""
    return ssl.get_server_certificate(("127.0.0.1", port))


def same_cert(pem_a, pem_b):
    der = ssl.PEM_cert_to_DER_cert
    return der(pem_a) == der(pem_b)


def test_sighup_reloads_the_certificate_without_dropping_connections(tls):
    one = (tls.tmp / "one.pem").read_text()
    two = (tls.tmp / "two.pem").read_text()
    assert same_cert(peer_cert(tls.port), one)
    ctx = ssl.create_default_context(cafile=tls.ca)
    conn = http.client.HTTPSConnection("127.0.0.1", tls.port, context=ctx, timeout=10)
    query = urllib.parse.urlencode(ping_params())

    def ping():
        conn.request("GET", f"/rest/ping?{query}")
        return json.loads(conn.getresponse().read())["subsonic-response"]["status"]

    assert ping() == "ok"
    sock_before = conn.sock
    # A broken file first: the old certificate stays.
    (tls.tmp / "live.pem").write_text("not a certificate\n")
    tls.proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    assert same_cert(peer_cert(tls.port), one)
    assert "keeping the TLS certificate in effect" in tls.logged()
    shutil.copy(tls.tmp / "two.pem", tls.tmp / "live.pem")
    shutil.copy(tls.tmp / "two.key", tls.tmp / "live.key")
    tls.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 5
    while not same_cert(peer_cert(tls.port), two):
        assert time.time() < deadline, "the new certificate was not served"
        time.sleep(0.1)
    assert "reloaded the TLS certificate" in tls.logged()
    # The keep-alive connection opened before the reload goes on, on the
    # old certificate.
    assert ping() == "ok"
    assert conn.sock is sock_before, "the connection was replaced"
    assert same_cert(ssl.DER_cert_to_PEM_cert(conn.sock.getpeercert(True)), one)
    conn.close()
    # New clients verify the new certificate against the same CA.
    opensonic("https://127.0.0.1", tls.port, ca=tls.ca)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


NGINX_CONF = """
daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/nginx-body;
    proxy_temp_path {tmp}/nginx-proxy;
    fastcgi_temp_path {tmp}/nginx-fastcgi;
    uwsgi_temp_path {tmp}/nginx-uwsgi;
    scgi_temp_path {tmp}/nginx-scgi;
    server {{
        listen 127.0.0.1:{port};
        location /music/ {{
            proxy_pass http://127.0.0.1:{trusting};
            proxy_set_header Host $host:$server_port;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-Host $host:$server_port;
        }}
        location /untrusting/ {{
            proxy_pass http://127.0.0.1:{untrusting}/music/;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }}
    }}
}}
"""


@pytest.fixture(scope="module")
def proxied(tmp):
    trusting = Spindle(tmp, "trusting", "--base-path", "/music", "--trusted-proxy", "127.0.0.1")
    untrusting = Spindle(tmp, "untrusting", "--base-path", "/music")
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, port=port, trusting=trusting.port,
                                      untrusting=untrusting.port))
    nginx = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(tmp)],
                             stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert nginx.poll() is None, nginx.stderr.read()
            assert time.time() < deadline, "nginx did not start"
            time.sleep(0.1)
    yield port, trusting, untrusting
    nginx.terminate()
    nginx.wait(timeout=10)
    trusting.stop()
    untrusting.stop()


def curl_from(ip, url):
    """curl from the source address `ip`: the status code."""
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                        "--interface", ip, "-H", "X-Forwarded-For: 198.51.100.77", url],
                       capture_output=True, text=True, check=True)
    return r.stdout


def test_every_api_answers_under_the_prefix_through_nginx(proxied):
    port, trusting, _ = proxied
    assert trusting.url.endswith("/music/")
    base = f"http://127.0.0.1:{port}/music"
    r = requests.get(f"{base}/rest/ping", params=ping_params(), timeout=10)
    assert r.json()["subsonic-response"]["status"] == "ok"
    token = cli(trusting.data_dir, "user", "token", "ann").strip()
    r = requests.get(f"{base}/1/validate-token", headers={"Authorization": f"Token {token}"},
                     timeout=10)
    assert r.json()["valid"] is True
    r = requests.get(f"{base}/2.0/", params={"method": "auth.getToken"}, timeout=10)
    assert "<lfm" in r.text
    assert requests.get(f"{base}/metrics", timeout=10).status_code == 401
    page = requests.get(f"{base}/", timeout=10)
    assert '<meta name="spindle-base" content="/music">' in page.text
    # Every script and style sheet the page names loads under the prefix,
    # as a browser resolves it against the page's URL.
    refs = [u for u in re.findall(r'(?:src|href)="([^"#][^"]*)"', page.text)]
    assert any("app.js" in u for u in refs), refs
    for ref in refs:
        url = urllib.parse.urljoin(page.url, ref)
        assert urllib.parse.urlparse(url).path.startswith("/music/"), url
        assert requests.get(url, timeout=10).status_code == 200, url
    # A web login through the proxy: the cookie is scoped to the prefix.
    r = requests.post(f"{base}/ui/login", json={"user": "ann", "password": PASSWORD},
                      headers={"X-Spindle-Csrf": "1", "Origin": f"http://127.0.0.1:{port}"},
                      timeout=10)
    assert r.status_code == 200, r.text
    assert "Path=/music" in r.headers["Set-Cookie"]
    opensonic("http://127.0.0.1", port, path="music")


def auth_failures(server):
    return re.findall(r"auth failure for user 'ann' from (\S+) via subsonic", server.logged())


def wrong_ping(url):
    return f"{url}rest/ping?u=ann&p=wrong&v=1.16.1&c=curl"


def test_the_client_address_comes_from_x_forwarded_for_only_through_a_trusted_proxy(proxied):
    port, trusting, untrusting = proxied
    # Through nginx (trusted): the client's own address, not the proxy's
    # and not the one the client forged.
    curl_from("127.0.0.2", wrong_ping(f"http://127.0.0.1:{port}/music/"))
    # Straight to the same server with a forged header: the peer.
    curl_from("127.0.0.3", wrong_ping(trusting.url))
    # Through nginx to a server that trusts no proxy: nginx's address.
    curl_from("127.0.0.2", wrong_ping(f"http://127.0.0.1:{port}/untrusting/"))
    time.sleep(0.3)
    assert auth_failures(trusting) == ["127.0.0.2", "127.0.0.3"], trusting.logged()
    assert auth_failures(untrusting) == ["127.0.0.1"], untrusting.logged()
