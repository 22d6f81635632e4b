"""Lists, search, folder browsing, local artist/album info, similar and top
songs, and `.m3u` playlist files, against a fresh `spindle serve --music
DIR`: py-opensonic (a real client library) for what apps call on first
connect, and `requests` for every method in XML and JSON, by GET and by
form POST.

The music folder holds FLAC files made with sox and tagged with mutagen,
an `artist.png` and `artist.txt` beside one artist's albums, album notes,
and two playlist files (`.m3u` with CRLF and a BOM, `.m3u8` with
`#EXTINF`). Two users scrobble on the same days, so the history has
co-listening for the similar artists and plays for the top songs. Run by
scripts/ci.d/80-server.sh."""

import asyncio
import os
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)
libopensonic = pytest.importorskip("libopensonic")
mutagen_flac = pytest.importorskip("mutagen.flac")
requests = pytest.importorskip("requests")

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
PASSWORD = "lists horse"
NS = "{http://subsonic.org/restapi}"

TRACKS = [
    # artist, album, title, track, year, genre, Hz
    ("Alpha Band", "First Light", "Dawn", 1, 1995, "Jazz", 300),
    ("Alpha Band", "First Light", "Noon", 2, 1995, "Jazz", 320),
    ("Alpha Band", "Second Wind", "Dusk", 1, 2005, "Jazz", 340),
    ("Beta Trio", "Blue Notes", "Cool", 1, 1999, "Jazz", 360),
    ("Beta Trio", "Blue Notes", "Warm", 2, 1999, "Jazz", 380),
    ("Gamma Noise", "Static", "Hiss", 1, 2010, "Noise", 400),
    ("Delta Pop", "Hits", "Catchy", 1, 2020, "Pop", 420),
]


def tiny_png():
    """A real 2×2 PNG, so that the signed image URLs load an image."""
    import struct
    import zlib

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + b"\xc0\x40\x20" * 2 for _ in range(2))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def make_corpus(music):
    if not shutil.which("sox"):
        pytest.skip("sox is not installed")
    files = {}
    for artist, album, title, nr, year, genre, hz in TRACKS:
        d = Path(music) / artist / album
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"{nr:02} {title}.flac"
        subprocess.run(["sox", "-n", "-r", "8000", "-c", "1", str(p), "synth", "0.5", "sine",
                        str(hz)], check=True)
        f = mutagen_flac.FLAC(str(p))
        f["artist"], f["album"], f["title"] = artist, album, title
        f["tracknumber"], f["date"], f["genre"] = str(nr), str(year), genre
        f.save()
        files[title] = p
    alpha = Path(music) / "Alpha Band"
    (alpha / "artist.png").write_bytes(tiny_png())
    (alpha / "artist.txt").write_text("Alpha Band play quiet jazz.\n")
    (alpha / "First Light" / "notes.txt").write_text("Recorded in one night.\n")
    lists = Path(music) / "Playlists"
    lists.mkdir()
    (lists / "Evening.m3u").write_bytes(
        b"\xef\xbb\xbf#EXTM3U\r\n../Alpha Band/Second Wind/01 Dusk.flac\r\n"
        b"../Beta Trio/Blue Notes/02 Warm.flac\r\nhttp://radio.example/stream\r\n")
    (Path(music) / "morning.m3u8").write_text(
        "#EXTM3U\n#EXTINF:1,Alpha Band - Dawn\n"
        f"{files['Dawn']}\n#EXTINF:1,Delta Pop - Catchy\nDelta Pop/Hits/01 Catchy.flac\n")
    return files


def cli(data_dir, *args, stdin=None):
    return subprocess.run([BIN, "--data-dir", data_dir, *args], input=stdin,
                          capture_output=True, text=True, check=True).stdout


class Srv:
    pass


@pytest.fixture(scope="module")
def srv():
    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as music:
        files = make_corpus(music)
        cli(data_dir, "user", "add", "ann", stdin=PASSWORD + "\n")
        cli(data_dir, "user", "add", "bob", stdin=PASSWORD + "\n")
        proc = subprocess.Popen(
            [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0", "--music", music],
            stdout=subprocess.PIPE, text=True)
        try:
            m = None
            for _ in range(5):
                m = re.search(r"serving http://([0-9.]+):(\d+)/", proc.stdout.readline())
                if m:
                    break
            assert m, "the server printed no URL"
            s = Srv()
            s.host, s.port = m.group(1), int(m.group(2))
            s.base = f"http://{s.host}:{s.port}"
            s.files, s.music = files, music
            songs = {x["title"]: x["id"] for x in
                     call(s, "search3", query="", songCount=100)["searchResult3"]["song"]}
            s.songs = songs
            # Co-listening: both users play Alpha and Beta on the same
            # days; Gamma alone on other days. Dawn is played most.
            # Noon (UTC) of five days ago: every play of a day stays in it.
            day = (int(time.time()) // 86400 - 5) * 86400 + 43200
            plays = [("ann", 0, "Dawn"), ("ann", 1, "Cool"), ("ann", 2, "Dawn"),
                     ("bob", 0, "Noon"), ("bob", 1, "Warm"), ("bob", 2, "Dawn"),
                     ("ann", 86400 * 2, "Hiss"), ("bob", 86400 * 3, "Catchy")]
            for user, dt, title in plays:
                call(s, "scrobble", user=user, id=songs[title],
                     time=str((day + dt) * 1000), submission="true")
            yield s
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def call(s, method, fmt="json", verb="GET", user="ann", **params):
    """One request; returns the `subsonic-response` (dict for JSON, an
    Element for XML), asserting it says ok."""
    p = {"u": user, "p": PASSWORD, "v": "1.16.1", "c": "lists-tests", "f": fmt, **params}
    url = f"{s.base}/rest/{method}"
    r = (requests.get(url, params=p, timeout=20) if verb == "GET"
         else requests.post(url, data=p, timeout=20))
    assert r.status_code == 200
    if fmt == "json":
        body = r.json()["subsonic-response"]
        assert body["status"] == "ok", (method, params, body)
        return body
    root = ET.fromstring(r.content)
    assert root.get("status") == "ok", (method, params, r.text[:300])
    return root


def fail_code(s, method, fmt="json", **params):
    p = {"u": "ann", "p": PASSWORD, "v": "1.16.1", "c": "t", "f": fmt, **params}
    r = requests.get(f"{s.base}/rest/{method}", params=p, timeout=20)
    if fmt == "json":
        body = r.json()["subsonic-response"]
        assert body["status"] == "failed"
        return body["error"]["code"]
    root = ET.fromstring(r.content)
    assert root.get("status") == "failed"
    return int(root.find(NS + "error").get("code"))


def run(coro):
    return asyncio.run(coro)


async def with_conn(s, fn):
    conn = libopensonic.AsyncConnection(f"http://{s.host}", "ann", PASSWORD, port=s.port,
                                        app_name="lists-tests")
    try:
        return await fn(conn)
    finally:
        await conn.cleanup()


FORMS = [("json", "GET"), ("xml", "GET"), ("json", "POST"), ("xml", "POST")]
TYPES = ["random", "newest", "highest", "frequent", "recent", "alphabeticalByName",
         "alphabeticalByArtist", "starred"]


def albums_of(body, fmt, top):
    if fmt == "json":
        return [a["title" if top == "albumList" else "name"] for a in body[top].get("album", [])]
    return [a.get("title" if top == "albumList" else "name")
            for a in body.find(NS + top).findall(NS + "album")]


@pytest.mark.parametrize("fmt,verb", FORMS)
def test_album_lists_v1_and_v2_answer_every_type_alike(srv, fmt, verb):
    call(srv, "star", albumId=call(srv, "getAlbumList2", type="alphabeticalByName")
         ["albumList2"]["album"][0]["id"])
    for top, method in [("albumList", "getAlbumList"), ("albumList2", "getAlbumList2")]:
        for t in TYPES:
            call(srv, method, fmt, verb, type=t, size=50)
        names = albums_of(call(srv, method, fmt, verb, type="alphabeticalByName", size=50),
                          fmt, top)
        assert names == ["Blue Notes", "First Light", "Hits", "Second Wind", "Static"]
        up = albums_of(call(srv, method, fmt, verb, type="byYear", fromYear=1990,
                            toYear=2006), fmt, top)
        assert up == ["First Light", "Blue Notes", "Second Wind"]
        down = albums_of(call(srv, method, fmt, verb, type="byYear", fromYear=2006,
                              toYear=1990), fmt, top)
        assert down == ["Second Wind", "Blue Notes", "First Light"]
        jazz = albums_of(call(srv, method, fmt, verb, type="byGenre", genre="jazz"), fmt, top)
        assert sorted(jazz) == ["Blue Notes", "First Light", "Second Wind"]
        page = albums_of(call(srv, method, fmt, verb, type="alphabeticalByName", size=2,
                              offset=2), fmt, top)
        assert page == ["Hits", "Second Wind"]
        starred = albums_of(call(srv, method, fmt, verb, type="starred"), fmt, top)
        assert starred == ["Blue Notes"]
    v1 = call(srv, "getAlbumList", "json", type="newest", size=1)["albumList"]["album"][0]
    assert v1["isDir"] is True and v1["parent"].startswith("ar-")
    assert fail_code(srv, "getAlbumList", type="byYear", fromYear=1990) == 10
    assert fail_code(srv, "getAlbumList2", type="sideways") == 0


def test_a_client_library_reads_album_lists_and_opens_an_album_as_a_directory(srv):
    albums = run(with_conn(srv, lambda c: c.get_album_list("alphabeticalByArtist", size=50)))
    first = call(srv, "getAlbumList", type="alphabeticalByArtist", size=1)["albumList"]["album"]
    assert first[0]["title"] == "First Light"
    assert [a.id for a in albums][0] == first[0]["id"]
    d = run(with_conn(srv, lambda c: c.get_music_directory(albums[0].id)))
    assert [x.title for x in d.child] == ["Dawn", "Noon"]


@pytest.mark.parametrize("fmt,verb", FORMS)
def test_search2_and_search3_find_words_and_page_through_everything(srv, fmt, verb):
    for method, top in [("search2", "searchResult2"), ("search3", "searchResult3")]:
        body = call(srv, method, fmt, verb, query="dawn")
        if fmt == "json":
            assert [x["title"] for x in body[top]["song"]] == ["Dawn"]
        else:
            assert [x.get("title") for x in body.find(NS + top).findall(NS + "song")] == ["Dawn"]
        seen = []
        for q in ["", '""']:
            seen = []
            for off in range(0, 10, 3):
                body = call(srv, method, fmt, verb, query=q, songCount=3, songOffset=off,
                            artistCount=1, albumCount=2)
                if fmt == "json":
                    seen += [x["title"] for x in body[top].get("song", [])]
                    assert len(body[top].get("artist", [])) == 1
                    assert len(body[top].get("album", [])) == 2
                else:
                    seen += [x.get("title") for x in body.find(NS + top).findall(NS + "song")]
            assert sorted(seen) == sorted(t[2] for t in TRACKS)
        # Spindle's query language.
        body = call(srv, method, "json", verb, query="genre:Noise")
        assert [x["title"] for x in body[top]["song"]] == ["Hiss"]
    v1 = call(srv, "search2", query="blue")["searchResult2"]["album"][0]
    assert v1["isDir"] is True and v1["title"] == "Blue Notes"
    r = run(with_conn(srv, lambda c: c.search2("alpha")))
    assert [a.name for a in r.artist] == ["Alpha Band"]


@pytest.mark.parametrize("fmt,verb", FORMS)
def test_starred_v1_and_songs_by_genre(srv, fmt, verb):
    call(srv, "star", id=srv.songs["Hiss"])
    body = call(srv, "getStarred", fmt, verb)
    if fmt == "json":
        assert "Hiss" in [x["title"] for x in body["starred"].get("song", [])]
        assert all(a["isDir"] for a in body["starred"].get("album", []))
    else:
        songs = body.find(NS + "starred").findall(NS + "song")
        assert "Hiss" in [x.get("title") for x in songs]
    body = call(srv, "getSongsByGenre", fmt, verb, genre="Jazz", count=2, offset=1)
    if fmt == "json":
        titles = [x["title"] for x in body["songsByGenre"]["song"]]
    else:
        titles = [x.get("title") for x in body.find(NS + "songsByGenre").findall(NS + "song")]
    assert len(titles) == 2
    all_jazz = call(srv, "getSongsByGenre", genre="jazz", count=50)["songsByGenre"]["song"]
    assert sorted(x["title"] for x in all_jazz) == ["Cool", "Dawn", "Dusk", "Noon", "Warm"]
    assert fail_code(srv, "getSongsByGenre") == 10
    starred = run(with_conn(srv, lambda c: c.get_starred()))
    assert "Hiss" in [x.title for x in starred.song]


@pytest.mark.parametrize("fmt,verb", FORMS)
def test_top_songs_follow_the_askers_history_and_no_private_users(srv, fmt, verb):
    body = call(srv, "getTopSongs", fmt, verb, artist="Alpha Band")
    if fmt == "json":
        titles = [x["title"] for x in body["topSongs"]["song"]]
    else:
        titles = [x.get("title") for x in body.find(NS + "topSongs").findall(NS + "song")]
    # Ann asks: her own plays count (Dawn twice), bob's history is private
    # (the default), so his Noon and his play of Dawn do not; Dusk none.
    assert titles == ["Dawn"]
    top = run(with_conn(srv, lambda c: c.get_top_songs("alpha band", count=1)))
    assert [x.title for x in top] == ["Dawn"]


@pytest.mark.parametrize("fmt,verb", FORMS)
def test_similar_songs_come_from_co_listened_and_same_genre_artists(srv, fmt, verb):
    for method, top in [("getSimilarSongs", "similarSongs"),
                        ("getSimilarSongs2", "similarSongs2")]:
        body = call(srv, method, fmt, verb, id=srv.songs["Dawn"], count=20)
        if fmt == "json":
            titles = [x["title"] for x in body[top]["song"]]
            artists = {x["artist"] for x in body[top]["song"]}
        else:
            kids = body.find(NS + top).findall(NS + "song")
            titles = [x.get("title") for x in kids]
            artists = {x.get("artist") for x in kids}
        assert "Dawn" not in titles
        assert "Beta Trio" in artists and "Gamma Noise" not in artists
        again = call(srv, method, "json", id=srv.songs["Dawn"], count=20)[top]["song"]
        if fmt == "json":
            assert [x["title"] for x in again] == titles  # the same request, the same list
    by_artist = run(with_conn(srv, lambda c: c.get_similar_songs2(
        call(srv, "getAlbumList2", type="alphabeticalByName")["albumList2"]["album"][0]
        ["artistId"], count=5)))
    assert by_artist


def texts(el):
    """The text child elements of EL by name (artistInfo's biography...)."""
    return {c.tag.removeprefix(NS): c.text or "" for c in el if len(c) == 0 and not c.attrib}


@pytest.mark.parametrize("fmt,verb", FORMS)
def test_artist_and_album_info_are_read_from_the_music_folder(srv, fmt, verb):
    artists = call(srv, "getArtists")["artists"]["index"]
    ids = {a["name"]: a["id"] for i in artists for a in i["artist"]}
    for method, top in [("getArtistInfo", "artistInfo"), ("getArtistInfo2", "artistInfo2")]:
        body = call(srv, method, fmt, verb, id=ids["Alpha Band"])
        # In XML the texts and URLs are child elements, as in the schema.
        info = body[top] if fmt == "json" else texts(body.find(NS + top))
        assert info["biography"] == "Alpha Band play quiet jazz."
        assert f"/img/{ids['Alpha Band']}/600/" in info["largeImageUrl"]
        # No credentials of the caller's in a URL handed out.
        for k in ["u=", "p=", "t=", "s=", "apiKey="]:
            assert k not in info["largeImageUrl"], info["largeImageUrl"]
        if fmt == "json":
            similar = [a["name"] for a in body[top]["similarArtist"]]
        else:
            similar = [a.get("name") for a in body.find(NS + top).findall(NS + "similarArtist")]
        assert similar[0] == "Beta Trio" and "Gamma Noise" not in similar
    img = requests.get(call(srv, "getArtistInfo2", id=ids["Alpha Band"])
                       ["artistInfo2"]["smallImageUrl"], timeout=10)
    # The URL is signed for that image: it loads without a login.
    assert img.status_code == 200
    assert img.headers["content-type"].startswith("image/")
    assert b'"code":40' not in img.content and b'code="40"' not in img.content
    assert b'"code":10' not in img.content and b'code="10"' not in img.content
    album = call(srv, "getAlbumList2", type="alphabeticalByName")["albumList2"]["album"][1]
    assert album["name"] == "First Light"
    for method in ["getAlbumInfo", "getAlbumInfo2"]:
        body = call(srv, method, fmt, verb, id=album["id"])
        info = body["albumInfo"] if fmt == "json" else texts(body.find(NS + "albumInfo"))
        assert info["notes"] == "Recorded in one night."
        assert album["id"] in info["mediumImageUrl"]
    info = run(with_conn(srv, lambda c: c.get_artist_info2(ids["Beta Trio"])))
    assert info.biography == ""
    assert fail_code(srv, "getArtistInfo2", id="ar-0000000000000000") == 70


@pytest.mark.parametrize("fmt,verb", FORMS)
def test_folders_browse_the_real_tree(srv, fmt, verb):
    body = call(srv, "getIndexes", fmt, verb)
    if fmt == "json":
        idx = body["indexes"]
        tops = {a["name"]: a["id"] for i in idx["index"] for a in i["artist"]}
        last = idx["lastModified"]
    else:
        idx = body.find(NS + "indexes")
        tops = {a.get("name"): a.get("id") for a in idx.iter(NS + "artist")}
        last = int(idx.get("lastModified"))
    assert set(tops) == {"Alpha Band", "Beta Trio", "Delta Pop", "Gamma Noise"}
    assert all(i.startswith("fo-") for i in tops.values())
    # Unchanged since: no index.
    same = call(srv, "getIndexes", fmt, verb, ifModifiedSince=last)
    if fmt == "json":
        assert not same["indexes"].get("index")
    else:
        assert not same.find(NS + "indexes").findall(NS + "index")
    d = call(srv, "getMusicDirectory", fmt, verb, id=tops["Alpha Band"])
    if fmt == "json":
        kids = d["directory"]["child"]
        assert [(k["title"], k["isDir"]) for k in kids] == [("First Light", True),
                                                            ("Second Wind", True)]
        sub = call(srv, "getMusicDirectory", id=kids[0]["id"])["directory"]
        assert sub["parent"] == tops["Alpha Band"]
        assert [(k["title"], k["isDir"]) for k in sub["child"]] == [("Dawn", False),
                                                                   ("Noon", False)]
    # Ids survive a second look (they are hashes of the paths).
    again = call(srv, "getIndexes")["indexes"]
    assert {a["name"]: a["id"] for i in again["index"] for a in i["artist"]} == tops
    ix = run(with_conn(srv, lambda c: c.get_indexes()))
    assert sorted(a.name for i in ix.index for a in i.artist) == sorted(tops)
    assert fail_code(srv, "getMusicDirectory", id="fo-0000000000000000") == 70


@pytest.mark.parametrize("fmt,verb", FORMS)
def test_playlist_files_are_read_only_playlists(srv, fmt, verb):
    body = call(srv, "getPlaylists", fmt, verb)
    if fmt == "json":
        lists = {p["name"]: p for p in body["playlists"]["playlist"]}
    else:
        lists = {p.get("name"): p.attrib for p in
                 body.find(NS + "playlists").findall(NS + "playlist")}
    assert {"Evening", "morning"} <= set(lists)
    ev = lists["Evening"]
    assert str(ev["songCount"]) == "2" and str(ev["owner"]) == "spindle"
    assert str(ev["readonly"]).lower() == "true" and str(ev["public"]).lower() == "true"
    body = call(srv, "getPlaylist", fmt, verb, id=ev["id"])
    if fmt == "json":
        titles = [e["title"] for e in body["playlist"]["entry"]]
    else:
        titles = [e.get("title") for e in body.find(NS + "playlist").findall(NS + "entry")]
    assert titles == ["Dusk", "Warm"]
    morning = call(srv, "getPlaylist", id=lists["morning"]["id"])["playlist"]
    assert [e["title"] for e in morning["entry"]] == ["Dawn", "Catchy"]
    assert fail_code(srv, "updatePlaylist", fmt, playlistId=ev["id"], name="x") == 50
    assert fail_code(srv, "deletePlaylist", fmt, id=ev["id"]) == 50
    pl = run(with_conn(srv, lambda c: c.get_playlists()))
    assert "Evening" in [p.name for p in pl]
