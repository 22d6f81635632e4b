"""Transcoding through `stream` against a fresh `spindle serve --music DIR`
with Debian's ffmpeg: every input format × every output format × two
bitrates gives the asked codec (ffprobe) at the asked bitrate (within
10 %); `timeOffset` seeks; a client that disconnects leaves no ffmpeg
behind; 20 concurrent transcodes with a cap of 2 all complete; `raw` and
a track already within the limit are the original bytes; a cached
transcode answers ranges; a file ffmpeg cannot decode is a Subsonic error.

Inputs are 20 s of noise (so that bitrates settle) made with sox, flac,
lame, opusenc, wavpack and ffmpeg. APE is not among them: Debian packages
no APE encoder (monkeys-audio is not in Debian) and ffmpeg only decodes
it. Run by scripts/ci.d/83-transcode.sh."""

import concurrent.futures
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/83-transcode.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)
for tool in ("sox", "flac", "lame", "opusenc", "ffmpeg", "ffprobe"):
    if not shutil.which(tool):
        pytest.skip(f"{tool} is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
PASSWORD = "s3cret horse"
SECS = 20
OUTPUTS = {
    # format parameter: (ffprobe codec, lossy)
    "mp3": ("mp3", True),
    "opus": ("opus", True),
    "aac": ("aac", True),
    "m4a": ("aac", True),
    "ogg": ("vorbis", True),
    "flac": ("flac", False),
}
BITRATES = (96, 160)


def sh(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_corpus(music):
    """{title: path} of the inputs; the title is the file's stem."""
    d = Path(music) / "Noise Band" / "Test Tones"
    d.mkdir(parents=True)
    tmp = Path(music).parent / (Path(music).name + "-wav")
    tmp.mkdir()
    wav = tmp / "noise.wav"
    sh("sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(wav),
       "synth", str(SECS), "pinknoise", "vol", "0.5")
    files = {}

    def out(name):
        p = d / name
        files[p.stem] = p
        return str(p)

    sh("flac", "-s", str(wav), "-o", out("in-flac.flac"))
    sh("lame", "--silent", "-b", "320", "--cbr", str(wav), out("in-mp3.mp3"))
    sh("opusenc", "--quiet", "--bitrate", "256", str(wav), out("in-opus.opus"))
    sh("sox", str(wav), out("in-aiff.aiff"))
    sh("sox", str(wav), out("in-wav.wav"))
    ff = ["ffmpeg", "-v", "error", "-y", "-i", str(wav)]
    sh(*ff, "-c:a", "libvorbis", "-b:a", "256k", out("in-vorbis.ogg"))
    sh(*ff, "-c:a", "aac", "-b:a", "256k", out("in-aac.m4a"))
    sh(*ff, "-c:a", "alac", out("in-alac.m4a"))
    if shutil.which("wavpack"):
        sh("wavpack", "-q", "-y", str(wav), "-o", out("in-wavpack.wv"))
    else:
        sh(*ff, "-c:a", "wavpack", out("in-wavpack.wv"))
    # For seeks: 12 s of silence, then 8 s of noise.
    seek = tmp / "seek.wav"
    sh("sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(seek),
       "synth", "8", "pinknoise", "vol", "0.5", "pad", "12", "0")
    sh("flac", "-s", str(seek), "-o", out("seek.flac"))
    # A long one for the client that leaves.
    long_wav = tmp / "long.wav"
    sh("sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(long_wav),
       "synth", "90", "whitenoise", "vol", "0.3")
    sh("flac", "-s", str(long_wav), "-o", out("long.flac"))
    # A FLAC header over noise: the scanner reads it, ffmpeg decodes nothing.
    broken = d / "broken.flac"
    head = files["in-flac"].read_bytes()[:9000]
    broken.write_bytes(head + os.urandom(300_000))
    files["broken"] = broken
    shutil.rmtree(tmp)
    return files


class Srv:
    pass


def start(data_dir, music, config):
    cfg = Path(data_dir) / "server.toml"
    cfg.write_text(config)
    proc = subprocess.Popen(
        [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0",
         "--music", music, "--config", str(cfg)],
        stdout=subprocess.PIPE, text=True,
    )
    for _ in range(10):
        line = proc.stdout.readline()
        m = re.search(r"serving https?://([0-9.]+):(\d+)/", line)
        if m:
            return proc, m.group(1), int(m.group(2))
    proc.terminate()
    raise AssertionError("the server printed no URL")


@pytest.fixture(scope="module")
def srv():
    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as top:
        music = str(Path(top) / "music")
        Path(music).mkdir()
        files = make_corpus(music)
        proc, host, port = start(data_dir, music,
                                 "[transcode]\nmax_concurrent = 2\nqueue = 64\n")
        try:
            subprocess.run([BIN, "--data-dir", data_dir, "user", "add", "ann"],
                           input=PASSWORD + "\n", text=True, check=True, capture_output=True)
            s = Srv()
            s.proc, s.host, s.port = proc, host, port
            s.base = f"http://{host}:{port}"
            s.files, s.data_dir, s.music = files, data_dir, music
            s.ids = song_ids(s)
            yield s
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def auth():
    return {"u": "ann", "p": PASSWORD, "v": "1.16.1", "c": "transcode-tests", "f": "json"}


def url(s, method, **params):
    return f"{s.base}/rest/{method}?" + urllib.parse.urlencode({**auth(), **params})


def get(s, method, headers=None, **params):
    req = urllib.request.Request(url(s, method, **params), headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def song_ids(s):
    deadline = time.time() + 30
    while True:
        _, _, body = get(s, "search3", query="", songCount=100)
        songs = json.loads(body)["subsonic-response"].get("searchResult3", {}).get("song", [])
        ids = {x["title"]: x["id"] for x in songs}
        if all(t in ids for t in s.files) or time.time() > deadline:
            assert all(t in ids for t in s.files), f"scanned {sorted(ids)}"
            return ids
        time.sleep(0.5)


def probe(data):
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        out = subprocess.run(
            ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name",
             "-of", "json", f.name], capture_output=True, text=True, check=True).stdout
        codec = json.loads(out)["streams"][0]["codec_name"]
        dec = subprocess.run(["ffmpeg", "-v", "error", "-i", f.name, "-f", "null", "-"],
                             capture_output=True, text=True)
        assert dec.returncode == 0 and not dec.stderr.strip(), dec.stderr
        return codec


def decoded_secs(data):
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        out = subprocess.run(["ffmpeg", "-v", "info", "-i", f.name, "-f", "null", "-"],
                             capture_output=True, text=True).stderr
        times = re.findall(r"time=(\d+):(\d+):([\d.]+)", out)
        h, m, sec = times[-1]
        return int(h) * 3600 + int(m) * 60 + float(sec), out


INPUTS = ["in-flac", "in-mp3", "in-opus", "in-aiff", "in-wav", "in-vorbis", "in-aac",
          "in-alac", "in-wavpack"]


def test_every_input_to_every_output_at_two_bitrates(srv):
    cases = [(i, o, b) for i in INPUTS for o in OUTPUTS for b in BITRATES]

    def one(case):
        inp, fmt, br = case
        st, h, body = get(srv, "stream", id=srv.ids[inp], format=fmt, maxBitRate=br)
        assert st == 200 and h["Content-Type"].startswith("audio/"), (case, st, body[:300])
        codec = probe(body)
        want, lossy = OUTPUTS[fmt]
        assert codec == want, (case, codec)
        kbps = len(body) * 8 / SECS / 1000
        if lossy:
            assert abs(kbps - br) <= 0.1 * br, (case, kbps)
        return case, kbps

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        got = list(ex.map(one, cases))
    print("\n".join(f"{i} -> {o} @{b}: {k:.1f} kbit/s" for (i, o, b), k in got))


def test_raw_and_a_track_within_the_limit_are_the_original_bytes(srv):
    for title, params in [
        ("in-flac", {"format": "raw", "maxBitRate": 96}),
        ("in-flac", {}),
        ("in-mp3", {"format": "mp3", "maxBitRate": 320}),
        ("in-mp3", {"maxBitRate": 320}),
        ("in-flac", {"format": "flac"}),
    ]:
        st, h, body = get(srv, "stream", id=srv.ids[title], **params)
        assert st == 200 and body == srv.files[title].read_bytes(), (title, params)
        assert "x-spindle-transcode" not in h


def test_a_time_offset_seek_starts_within_a_second(srv):
    for fmt in ("mp3", "opus"):
        st, _, body = get(srv, "stream", id=srv.ids["seek"], format=fmt,
                          maxBitRate=128, timeOffset=6)
        assert st == 200
        secs, _ = decoded_secs(body)
        assert abs(secs - 14) <= 1.0, (fmt, secs)
        with tempfile.NamedTemporaryFile() as f:
            f.write(body)
            f.flush()
            err = subprocess.run(
                ["ffmpeg", "-i", f.name, "-af", "silencedetect=n=-50dB:d=0.5", "-f", "null", "-"],
                capture_output=True, text=True).stderr
        end = float(re.search(r"silence_end: ([\d.]+)", err).group(1))
        # The silence ran to 12 s in the file: 6 s after a seek to 6 s.
        assert abs(end - 6) <= 1.0, (fmt, end)
    # OpenSubsonic's transcodeOffset, on a file that would be sent as is.
    st, h, body = get(srv, "stream", id=srv.ids["seek"], timeOffset=10)
    secs, _ = decoded_secs(body)
    assert st == 200 and h["x-spindle-transcode"] == "flac-0" and abs(secs - 10) <= 1.0


def ffmpeg_children(pid):
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids += (task / "children").read_text().split()
        except OSError:
            pass
    out = []
    for k in kids:
        try:
            stat = Path(f"/proc/{k}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        state = stat[stat.rindex(")") + 2]
        if "ffmpeg" in name:
            out.append((k, state))
    return out


def ffmpeg_reading(pid, name):
    """The ffmpeg children of `pid` whose input (stdin: the server hands
    ffmpeg the opened file) is the file `name`; an album's next track
    may be prepared by another ffmpeg at the same time, so counting all
    of them says nothing."""
    out = []
    for k, state in ffmpeg_children(pid):
        try:
            src = os.readlink(f"/proc/{k}/fd/0")
        except OSError:
            continue
        if src.endswith("/" + name):
            out.append((k, state))
    return out


def wait_until(cond, secs, what):
    deadline = time.time() + secs
    while not cond():
        assert time.time() < deadline, f"not within {secs} s: {what}"
        time.sleep(0.05)


def test_a_client_that_disconnects_leaves_no_ffmpeg(srv):
    pid = srv.proc.pid
    # Encodes of earlier tests (and their preparations ahead) end first.
    wait_until(lambda: ffmpeg_children(pid) == [], 60, "earlier encodes end")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    sock.connect((srv.host, srv.port))
    path = url(srv, "stream", id=srv.ids["long"], format="mp3", maxBitRate=320).split(str(srv.port), 1)[1]
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    got = sock.recv(65536)
    assert b" 200 " in got.split(b"\r\n")[0], got[:200]
    # The encode waits for the client: it is still running while the
    # client reads nothing (polled: a loaded machine starts it late).
    wait_until(lambda: len(ffmpeg_reading(pid, "long.flac")) == 1, 30,
               f"one ffmpeg reading long.flac: {ffmpeg_children(pid)}")
    time.sleep(0.5)
    assert len(ffmpeg_reading(pid, "long.flac")) == 1, "the encode should wait for the client"
    sock.close()
    wait_until(lambda: ffmpeg_reading(pid, "long.flac") == [], 30,
               "ffmpeg outlived its client (or is a zombie)")
    # A preparation ahead started beside it ends on its own.
    wait_until(lambda: ffmpeg_children(pid) == [], 60, "every ffmpeg ends")


def test_twenty_concurrent_transcodes_with_a_cap_of_two_all_complete(srv):
    peak = [0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], len(ffmpeg_children(srv.proc.pid)))
            time.sleep(0.01)

    w = threading.Thread(target=watch)
    w.start()
    # Distinct bitrates: none is a cached copy of another.
    cases = [(INPUTS[n % len(INPUTS)], 64 + 8 * n) for n in range(20)]

    def one(case):
        title, br = case
        st, _, body = get(srv, "stream", id=srv.ids[title], format="mp3", maxBitRate=br)
        assert st == 200, (case, body[:300])
        assert probe(body) == "mp3"
        kbps = len(body) * 8 / SECS / 1000
        # MP3 bitrates are LAME's steps: the nearest at or under the asked.
        assert kbps <= br * 1.1, (case, kbps)
        return case

    try:
        with concurrent.futures.ThreadPoolExecutor(20) as ex:
            done = list(ex.map(one, cases))
    finally:
        stop.set()
        w.join()
    assert len(done) == 20
    assert 1 <= peak[0] <= 2, f"{peak[0]} ffmpeg processes at once with a cap of 2"


def test_estimated_length_and_the_cached_copy_answers_ranges(srv):
    sid = srv.ids["in-wav"]
    st, h, body = get(srv, "stream", id=sid, format="opus", maxBitRate=112,
                      estimateContentLength="true")
    want = SECS * 112_000 // 8
    assert st == 200 and int(h["Content-Length"]) == want == len(body)
    # The same transcode again: the hot copy, a file with ranges.
    deadline = time.time() + 5
    while True:
        st, h, full = get(srv, "stream", id=sid, format="opus", maxBitRate=112)
        if h.get("Accept-Ranges") == "bytes" or time.time() > deadline:
            break
        time.sleep(0.2)
    assert st == 200 and h.get("Accept-Ranges") == "bytes" and "ETag" in h, dict(h)
    assert probe(full) == "opus"
    st, h2, part = get(srv, "stream", headers={"Range": "bytes=100-199"}, id=sid,
                       format="opus", maxBitRate=112)
    assert st == 206 and part == full[100:200]
    st, _, _ = get(srv, "stream", headers={"If-None-Match": h["ETag"]}, id=sid,
                   format="opus", maxBitRate=112)
    assert st == 304
    assert any(Path(srv.data_dir, "transcode-cache", "objects").rglob("*.sum"))


def test_a_file_ffmpeg_cannot_decode_is_a_subsonic_error(srv):
    st, h, body = get(srv, "stream", id=srv.ids["broken"], format="mp3", maxBitRate=128)
    assert st == 200 and h["Content-Type"].startswith("application/json"), body[:200]
    err = json.loads(body)["subsonic-response"]["error"]
    assert "broken.flac" in err["message"] and "mp3" in err["message"], err
    # Vorbis's headers alone are 4 KiB: still an error, not a stream.
    st, h, body = get(srv, "stream", id=srv.ids["broken"], format="ogg", maxBitRate=128)
    assert h["Content-Type"].startswith("application/json"), body[:200]
    assert "decoded 0.0 s of the 20 s" in json.loads(body)["subsonic-response"]["error"]["message"]


def test_an_unknown_format_and_a_missing_ffmpeg_are_clear_errors(srv):
    st, _, body = get(srv, "stream", id=srv.ids["in-flac"], format="wma")
    assert "unknown format" in json.loads(body)["subsonic-response"]["error"]["message"]
    with tempfile.TemporaryDirectory() as data_dir:
        proc, host, port = start(data_dir, srv.music,
                                 '[transcode]\nffmpeg = "/nonexistent/ffmpeg"\n')
        try:
            subprocess.run([BIN, "--data-dir", data_dir, "user", "add", "ann"],
                           input=PASSWORD + "\n", text=True, check=True, capture_output=True)
            other = Srv()
            other.base = f"http://{host}:{port}"
            other.files = srv.files
            ids = song_ids(other)
            st, _, body = get(other, "stream", id=ids["in-flac"], format="opus")
            msg = json.loads(body)["subsonic-response"]["error"]["message"]
            assert "ffmpeg" in msg and "/nonexistent/ffmpeg" in msg, msg
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def test_the_next_track_of_an_album_is_prepared_ahead(srv):
    _, _, body = get(srv, "getSong", id=srv.ids["in-flac"])
    album = json.loads(body)["subsonic-response"]["song"]["albumId"]
    _, _, body = get(srv, "getAlbum", id=album)
    songs = [(x["title"], x["id"]) for x in json.loads(body)["subsonic-response"]["album"]["song"]]
    first, second = next((a[1], b[1]) for a, b in zip(songs, songs[1:])
                         if a[0].startswith("in-") and b[0].startswith("in-"))
    params = {"format": "ogg", "maxBitRate": 136}
    # A preparation takes only a free encode slot: earlier tests' encodes
    # end first, or it would be skipped.
    wait_until(lambda: ffmpeg_children(srv.proc.pid) == [], 60, "earlier encodes end")
    st, h, _ = get(srv, "stream", id=first, **params)
    assert st == 200 and h.get("Accept-Ranges") == "none"
    # The next track is transcoded meanwhile (HEAD starts no encode): its
    # first GET is a hit.
    deadline = time.time() + 60
    while True:
        req = urllib.request.Request(url(srv, "stream", id=second, **params), method="HEAD")
        with urllib.request.urlopen(req, timeout=10) as r:
            if r.headers.get("Accept-Ranges") == "bytes" or time.time() > deadline:
                break
        time.sleep(0.1)
    st, h, body = get(srv, "stream", id=second, **params)
    assert st == 200 and h.get("Accept-Ranges") == "bytes", dict(h)
    assert probe(body) == "vorbis"
