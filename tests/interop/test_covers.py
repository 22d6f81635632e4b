"""Cover art through a fresh `spindle serve --music DIR` on a free
loopback port: Subsonic's getCoverArt (as apps call it) and the web UI's
/ui/cover/ID.

The music folder holds FLAC files made with sox and tagged with mutagen,
with images made by Pillow: a 1500x1000 folder cover (`Cover.JPG`), a
corrupt embedded picture beside a `folder.png`, a small embedded PNG,
and an `artist.jpg`. Checked: covers at 64, 300 and 1024 px have those
dimensions (longer side) and other sizes snap up to a standard one
(250 → 256, 1200 → 2048: the source), a corrupt embedded picture falls back to the
folder image, If-None-Match gives 304, an artist id gets the artist
image, and a size above the source's gives the source's size. Run by
scripts/ci.d/80-server.sh."""

import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import cli, music_server

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)
mutagen_flac = pytest.importorskip("mutagen.flac")
Image = pytest.importorskip("PIL.Image")

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
PASSWORD = "cover s3cret"

RED = (220, 30, 30)
BLUE = (30, 60, 220)


def image_bytes(w, h, color, fmt):
    """A picture of one main colour with a light gradient (so it is not
    flat), as `fmt` (JPEG, PNG)."""
    img = Image.new("RGB", (w, h), color)
    px = img.load()
    for x in range(0, w, 7):
        for y in range(0, h, 7):
            r, g, b = color
            px[x, y] = (r, min(255, g + x * 40 // w), b)
    out = io.BytesIO()
    img.save(out, fmt, quality=90) if fmt == "JPEG" else img.save(out, fmt)
    return out.getvalue()


def flac(path, artist, album, title, picture=None, mime="image/jpeg"):
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["sox", "-n", "-r", "22050", "-c", "1", str(path), "synth", "1", "sine", "440"],
        check=True,
    )
    f = mutagen_flac.FLAC(str(path))
    f["artist"], f["albumartist"], f["album"], f["title"] = artist, artist, album, title
    f["tracknumber"] = "1"
    if picture is not None:
        pic = mutagen_flac.Picture()
        pic.type, pic.mime, pic.data = 3, mime, picture
        f.add_picture(pic)
    f.save()


def make_corpus(music):
    if not shutil.which("sox"):
        pytest.skip("sox is not installed")
    m = Path(music)
    files = {}
    flac(m / "Cover Artist/Wide Album/01 Wide.flac", "Cover Artist", "Wide Album", "Wide")
    files["wide"] = image_bytes(1500, 1000, BLUE, "JPEG")
    (m / "Cover Artist/Wide Album/Cover.JPG").write_bytes(files["wide"])
    # A picture that says it is a JPEG and is not one.
    flac(m / "Cover Artist/Broken Album/01 Broken.flac", "Cover Artist", "Broken Album",
         "Broken", picture=b"\xff\xd8\xff\xe0 this is not a JPEG at all" * 20)
    files["folder"] = image_bytes(1500, 1000, RED, "PNG")
    (m / "Cover Artist/Broken Album/folder.png").write_bytes(files["folder"])
    files["artist"] = image_bytes(400, 400, (30, 200, 30), "JPEG")
    (m / "Cover Artist/artist.jpg").write_bytes(files["artist"])
    files["small"] = image_bytes(200, 100, BLUE, "PNG")
    flac(m / "Small Artist/Tiny/01 Tiny.flac", "Small Artist", "Tiny", "Tiny",
         picture=files["small"], mime="image/png")
    return files




@pytest.fixture(scope="module")
def srv():
    with tempfile.TemporaryDirectory() as music:
        files = make_corpus(music)
        with music_server(music, PASSWORD) as s:
            s.files, s.music, s.data_dir = files, Path(music), Path(s.data_dir)
            yield s


def get(s, path, headers=None):
    """(status, headers, body) of a GET; 3xx and 4xx are answers too."""
    req = urllib.request.Request(f"{s.base}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def rest(s, method, **params):
    q = urllib.parse.urlencode({"u": "ann", "p": PASSWORD, "c": "tests", "v": "1.16.1",
                                **params})
    return get(s, f"/rest/{method}?{q}")


def api(s, method, **params):
    st, _, body = rest(s, method, f="json", **params)
    assert st == 200
    r = json.loads(body)["subsonic-response"]
    assert r["status"] == "ok", r
    return r


def song(s, title):
    songs = api(s, "search3", query=title)["searchResult3"]["song"]
    return next(x for x in songs if x["title"] == title)


def cover(s, id, size=None, headers=None):
    params = {"id": id} if size is None else {"id": id, "size": size}
    q = urllib.parse.urlencode({"u": "ann", "p": PASSWORD, "c": "tests", "v": "1.16.1",
                                **params})
    return get(s, f"/rest/getCoverArt?{q}", headers)


def picture(body):
    img = Image.open(io.BytesIO(body))
    img.load()
    return img


def test_covers_at_standard_sizes_have_those_dimensions_and_others_snap_up(srv):
    album = song(srv, "Wide")["coverArt"]
    assert album.startswith("al-")
    # 250 is served at the next standard size, 256.
    for size, want in [(64, (64, 43)), (300, (300, 200)), (1024, (1024, 683)),
                       (250, (256, 171))]:
        st, headers, body = cover(srv, album, size)
        assert st == 200, body
        assert headers["Content-Type"] == "image/jpeg"
        img = picture(body)
        assert (img.format, img.size) == ("JPEG", want), size
        # The blue folder cover, not some other picture.
        r, g, b = img.convert("RGB").getpixel((want[0] // 2, want[1] // 2))
        assert b > 150 and r < 100, (size, (r, g, b))
    # Without a size, or one that snaps above the source (1200 → 2048),
    # the file as it is.
    st, headers, body = cover(srv, album)
    assert (st, body) == (200, srv.files["wide"])
    st, headers, body = cover(srv, album, 1200)
    assert (st, body) == (200, srv.files["wide"])


def test_a_corrupt_embedded_picture_falls_back_to_the_folder_image(srv):
    sid = song(srv, "Broken")["id"]
    st, headers, body = cover(srv, sid, 300)
    assert st == 200, body
    img = picture(body)
    assert img.size == (300, 200)
    r, g, b = img.convert("RGB").getpixel((150, 100))
    assert r > 150 and b < 100, (r, g, b)
    st, headers, body = cover(srv, sid)
    assert (st, headers["Content-Type"]) == (200, "image/png")
    assert body == srv.files["folder"]


def test_if_none_match_gives_304_until_the_cover_changes(srv):
    album = song(srv, "Wide")["coverArt"]
    st, headers, body = cover(srv, album, 300)
    etag = headers["ETag"]
    assert st == 200 and etag.startswith('"') and "max-age" in headers["Cache-Control"]
    st, headers2, body2 = cover(srv, album, 300, {"If-None-Match": etag})
    assert (st, body2) == (304, b"")
    assert headers2["ETag"] == etag
    # Another size is another tag; a stale tag gets the picture.
    st, headers3, _ = cover(srv, album, 64, {"If-None-Match": etag})
    assert st == 200 and headers3["ETag"] != etag
    # The resized cover was kept in the disk cache under the data dir.
    cached = list((srv.data_dir / "covers").glob("*.jpg"))
    assert f"{etag.strip(chr(34))}.jpg" in [p.name for p in cached]
    # A new cover.jpg changes the tag.
    path = srv.music / "Cover Artist/Wide Album/Cover.JPG"
    path.unlink()
    path.write_bytes(image_bytes(1500, 1000, (40, 70, 200), "JPEG"))
    st, headers4, _ = cover(srv, album, 300, {"If-None-Match": etag})
    assert st == 200 and headers4["ETag"] != etag


def test_an_artist_id_gets_the_artist_image(srv):
    index = api(srv, "getArtists")["artists"]["index"]
    artist = next(a for i in index for a in i["artist"] if a["name"] == "Cover Artist")
    assert artist["id"].startswith("ar-")
    st, headers, body = cover(srv, artist["id"])
    assert (st, body) == (200, srv.files["artist"])
    st, _, body = cover(srv, artist["id"], 100)
    assert st == 200 and picture(body).size == (128, 128)


def test_a_size_above_the_source_gives_the_source_size(srv):
    sid = song(srv, "Tiny")["id"]
    st, headers, body = cover(srv, sid, 1200)
    assert st == 200
    assert picture(body).size == (200, 100)
    assert body == srv.files["small"]


def test_unknown_ids_are_error_70(srv):
    for id in ["al-0000000000000000", "999999", "../../etc/passwd"]:
        st, _, body = rest(srv, "getCoverArt", id=id, f="json")
        err = json.loads(body)["subsonic-response"]["error"]
        assert err["code"] == 70, (id, err)


def test_the_web_ui_route_needs_a_session_and_resizes(srv):
    album = song(srv, "Wide")["coverArt"]
    st, _, _ = get(srv, f"/ui/cover/{album}?size=64")
    assert st == 401
    req = urllib.request.Request(
        f"{srv.base}/ui/login", method="POST",
        data=json.dumps({"user": "ann", "password": PASSWORD}).encode(),
        headers={"Content-Type": "application/json", "X-Spindle-Csrf": "1"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        cookie = r.headers["Set-Cookie"].split(";")[0]
    st, headers, body = get(srv, f"/ui/cover/{album}?size=64", {"Cookie": cookie})
    assert st == 200 and headers["Content-Type"] == "image/jpeg"
    assert picture(body).size == (64, 43)
    st, _, _ = get(srv, f"/ui/cover/{album}?size=64",
                   {"Cookie": cookie, "If-None-Match": headers["ETag"]})
    assert st == 304
    st, _, _ = get(srv, "/ui/cover/al-0000000000000000", {"Cookie": cookie})
    assert st == 404
