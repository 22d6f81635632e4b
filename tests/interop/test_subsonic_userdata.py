"""The Subsonic user data, admin and sharing methods through py-opensonic (a
real OpenSubsonic client library) against a fresh `spindle serve --music
DIR`: setRating (and the rating seen by Spindle's query language), the play
queue in both forms, bookmarks, startScan/getScanStatus, the admin methods
with their roles and error 50, internet radio stations, shares (the public
page, its streams, expiry and deletion), podcasts and the jukebox answered
honestly; some in XML and by POST form. Then headless Chromium opens a share
link and checks that its <audio> time advances.

The music folder holds FLAC files made with sox and tagged with mutagen.
The first user made (ann) is the administrator. Run by
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

from conftest import cli, music_server

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)
libopensonic = pytest.importorskip("libopensonic")
mutagen_flac = pytest.importorskip("mutagen.flac")
requests = pytest.importorskip("requests")

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
PASSWORD = "s3cret horse"
NS = "{http://subsonic.org/restapi}"

TRACKS = [
    # artist, album, title, track, Hz
    ("Share Test", "Long Tones", "First Tone", 1, 440),
    ("Share Test", "Long Tones", "Second Tone", 2, 550),
    ("Share Test", "Other Tones", "Third Tone", 1, 660),
]


def make_track(music, artist, album, title, nr, hz):
    d = Path(music) / artist / album
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{nr:02} {title}.flac"
    subprocess.run(
        ["sox", "-n", "-r", "22050", "-c", "1", str(p), "synth", "6", "sine", str(hz)],
        check=True,
    )
    f = mutagen_flac.FLAC(str(p))
    f["artist"], f["album"], f["title"], f["tracknumber"] = artist, album, title, str(nr)
    f.save()
    return p




@pytest.fixture(scope="module")
def srv():
    if not shutil.which("sox"):
        pytest.skip("sox is not installed")
    with tempfile.TemporaryDirectory() as music:
        for t in TRACKS:
            make_track(music, *t)
        # The first user made administers the server.
        with music_server(music, PASSWORD, users=("ann", "bob")) as s:
            songs = raw_json(s, "search3", query="", songCount=50)["searchResult3"]["song"]
            s.songs = {x["title"]: x["id"] for x in songs}
            s.album = next(x["albumId"] for x in songs if x["album"] == "Long Tones")
            yield s


def run(coro):
    return asyncio.run(coro)


async def with_conn(s, fn, user="ann", password=PASSWORD):
    conn = libopensonic.AsyncConnection(
        f"http://{s.host}", user, password, port=s.port, app_name="spindle-tests",
    )
    try:
        return await fn(conn)
    finally:
        await conn.cleanup()


def call(s, fn, user="ann", password=PASSWORD):
    return run(with_conn(s, fn, user, password))


def auth(user="ann", password=PASSWORD):
    return {"u": user, "p": password, "v": "1.16.1", "c": "interop"}


def raw_json(s, method, user="ann", **params):
    r = requests.get(f"{s.base}/rest/{method}", params={**auth(user), "f": "json", **params},
                     timeout=10)
    r.raise_for_status()
    return r.json()["subsonic-response"]


def raw_xml(s, method, user="ann", post=False, **params):
    data = {**auth(user), **params}
    if post:
        r = requests.post(f"{s.base}/rest/{method}.view", data=data, timeout=10)
    else:
        r = requests.get(f"{s.base}/rest/{method}.view", params=data, timeout=10)
    r.raise_for_status()
    return ET.fromstring(r.content)


def error_code(fn, s, user="ann"):
    with pytest.raises(libopensonic.errors.SonicError) as e:
        call(s, fn, user)
    return type(e.value)


def test_ratings_reach_the_query_language_and_bad_ones_are_refused(srv):
    first, second = srv.songs["First Tone"], srv.songs["Second Tone"]
    assert call(srv, lambda c: c.set_rating(first, 5))
    assert call(srv, lambda c: c.set_rating(second, 2))
    assert call(srv, lambda c: c.set_rating(srv.album, 4))
    found = raw_json(srv, "search3", query="rating>=4", songCount=50)["searchResult3"]
    assert [x["id"] for x in found.get("song", [])] == [first]
    r = raw_json(srv, "setRating", id=first, rating=7)
    assert r["status"] == "failed" and r["error"]["code"] == 0
    assert "0 (none)" in r["error"]["message"]
    assert error_code(lambda c: c.set_rating("al-nothing", 3), srv) is \
        libopensonic.errors.DataNotFoundError
    assert call(srv, lambda c: c.set_rating(second, 0))


def test_the_play_queue_follows_the_user_in_both_forms(srv):
    ids = [srv.songs["First Tone"], srv.songs["Second Tone"], srv.songs["First Tone"]]
    assert call(srv, lambda c: c.save_play_queue(ids, current=ids[1], position=12_345))
    q = call(srv, lambda c: c.get_play_queue())
    assert (q.current, q.position, q.changed_by) == (ids[1], 12_345, "spindle-tests")
    assert [e.id for e in q.entry] == ids and q.username == "ann"
    assert call(srv, lambda c: c.save_play_queue_by_index(ids, current_index=2, position=500))
    q = call(srv, lambda c: c.get_play_queue_by_index())
    assert (q.current_index, q.position) == (2, 500)
    bobs = call(srv, lambda c: c.get_play_queue(), user="bob")
    assert not bobs.entry, "queues are per user"
    # The same by POST form, answered in XML.
    raw_xml(srv, "savePlayQueue", post=True, id=ids[:2], current=ids[0], position=7)
    doc = raw_xml(srv, "getPlayQueue")
    pq = doc.find(f"{NS}playQueue")
    assert pq.get("current") == ids[0] and pq.get("changedBy") == "interop"
    assert len(pq.findall(f"{NS}entry")) == 2


def test_bookmarks_are_kept_moved_and_deleted(srv):
    song = srv.songs["Third Tone"]
    assert call(srv, lambda c: c.create_bookmark(song, 1500, "the middle"))
    assert call(srv, lambda c: c.create_bookmark(song, 2500, "later"))
    marks = call(srv, lambda c: c.get_bookmarks())
    assert [(b.entry.id, b.position, b.comment) for b in marks] == [(song, 2500, "later")]
    assert call(srv, lambda c: c.get_bookmarks(), user="bob") == []
    assert call(srv, lambda c: c.delete_bookmark(song))
    assert error_code(lambda c: c.delete_bookmark(song), srv) is \
        libopensonic.errors.DataNotFoundError


def test_a_rescan_finds_a_new_file_and_counts_it(srv):
    assert error_code(lambda c: c.start_scan(), srv, user="bob") is libopensonic.errors.AuthError
    make_track(srv.music, "Share Test", "Other Tones", "Fourth Tone", 2, 770)
    status = call(srv, lambda c: c.start_scan())
    assert status.count is not None
    deadline = time.time() + 60
    while True:
        status = call(srv, lambda c: c.get_scan_status(), user="bob")
        if not status.scanning:
            break
        assert time.time() < deadline, "the scan never ended"
        time.sleep(0.1)
    assert status.count == 4
    found = raw_json(srv, "search3", query="Fourth")["searchResult3"]
    assert [x["title"] for x in found["song"]] == ["Fourth Tone"]


def test_administrators_manage_users_and_listeners_get_error_50(srv):
    auth_error = libopensonic.errors.AuthError
    assert error_code(lambda c: c.get_users(), srv, user="bob") is auth_error
    assert error_code(lambda c: c.delete_user("ann"), srv, user="bob") is auth_error
    users = call(srv, lambda c: c.get_users())
    assert {u.username: u.admin_role for u in users} == {"ann": True, "bob": False}
    assert call(srv, lambda c: c.create_user("cy", "cy pass", "cy@example.org",
                                             download_role=True, share_role=True,
                                             music_folder_id=1))
    cy = call(srv, lambda c: c.get_user("cy"))
    assert (cy.download_role, cy.share_role, cy.admin_role) == (True, True, False)
    assert (cy.podcast_role, cy.jukebox_role) == (False, False)
    assert cy.folder == [1]
    # py-opensonic's User has no email field: read it raw.
    assert raw_json(srv, "getUser", username="cy")["user"]["email"] == "cy@example.org"
    assert call(srv, lambda c: c.ping(), user="cy", password="cy pass")
    assert call(srv, lambda c: c.update_user("cy", playlist_role=True, stream_role=True))
    cy = call(srv, lambda c: c.get_user("cy"))
    assert cy.playlist_role and not cy.share_role
    # A user changes their own password; an administrator anyone's.
    assert call(srv, lambda c: c.change_password("cy", "newer"), user="cy", password="cy pass")
    assert call(srv, lambda c: c.ping(), user="cy", password="newer")
    assert error_code(lambda c: c.change_password("ann", "x"), srv, user="bob") is auth_error
    assert call(srv, lambda c: c.change_password("cy", "third"))
    assert call(srv, lambda c: c.delete_user("cy"))
    assert error_code(lambda c: c.get_user("cy"), srv) is libopensonic.errors.DataNotFoundError
    with pytest.raises(libopensonic.errors.CredentialError):
        call(srv, lambda c: c.ping(), user="cy", password="third")


def test_radio_stations_are_listed_for_all_and_kept_by_administrators(srv):
    auth_error = libopensonic.errors.AuthError
    url = "https://radio.example/live.mp3"
    assert error_code(lambda c: c.create_internet_radio_station(url, "Live"), srv,
                      user="bob") is auth_error
    assert call(srv, lambda c: c.create_internet_radio_station(url, "Live",
                                                               "https://radio.example/"))
    (st,) = call(srv, lambda c: c.get_internet_radio_stations(), user="bob")
    assert (st.name, st.stream_url, st.home_page_url) == ("Live", url, "https://radio.example/")
    assert call(srv, lambda c: c.update_internet_radio_station(st.id, url, "Live 2"))
    assert call(srv, lambda c: c.get_internet_radio_stations())[0].name == "Live 2"
    assert call(srv, lambda c: c.delete_internet_radio_station(st.id))
    assert call(srv, lambda c: c.get_internet_radio_stations()) == []


def test_podcasts_are_empty_and_the_jukebox_is_refused(srv):
    assert call(srv, lambda c: c.get_podcasts()) == []
    assert call(srv, lambda c: c.get_newest_podcasts()) == []
    assert error_code(lambda c: c.jukebox_control("status"), srv) is libopensonic.errors.AuthError
    assert error_code(lambda c: c.create_podcast_channel("http://p.example/feed"), srv) is \
        libopensonic.errors.AuthError


def get(url):
    return requests.get(url, timeout=10)


def test_a_share_is_public_until_it_expires_or_is_deleted(srv):
    first, third = srv.songs["First Tone"], srv.songs["Third Tone"]
    assert error_code(lambda c: c.create_share([first]), srv, user="bob") is \
        libopensonic.errors.AuthError
    share = call(srv, lambda c: c.create_share([srv.album], "Long tones for you"))
    assert share.url == f"{srv.base}/share/{share.id}"
    assert [e.title for e in share.entry] == ["First Tone", "Second Tone"]
    page = get(share.url)
    assert page.status_code == 200 and "Long tones for you" in page.text
    assert "<audio" in page.text and "Second Tone" in page.text
    song = get(f"{share.url}/stream/{first}")
    assert song.status_code == 200 and song.content[:4] == b"fLaC"
    assert get(f"{share.url}/stream/{third}").status_code == 404, "not in the share"
    shares = call(srv, lambda c: c.get_shares())
    assert [(s.id, s.visit_count) for s in shares] == [(share.id, 1)]
    # py-opensonic 10.4's update_share sends a None key: by hand, by POST.
    doc = raw_xml(srv, "updateShare", post=True, id=share.id, description="Renamed")
    assert doc.get("status") == "ok"
    assert "Renamed" in get(share.url).text
    assert call(srv, lambda c: c.delete_share(share.id))
    assert get(share.url).status_code == 404
    assert get(f"{share.url}/stream/{first}").status_code == 404
    # Expiring three seconds from now (whole seconds: at least two).
    short = call(srv, lambda c: c.create_share([first], "short", time.time() + 3))
    assert get(short.url).status_code == 200
    time.sleep(3.5)
    assert get(short.url).status_code == 404
    assert get(f"{short.url}/stream/{first}").status_code == 404
    # XML lists it with its expiry.
    doc = raw_xml(srv, "getShares")
    (el,) = [e for e in doc.iter(f"{NS}share") if e.get("id") == short.id]
    assert el.get("expires") and el.get("url") == short.url


def test_a_share_link_plays_in_chromium(srv):
    aiohttp = pytest.importorskip("aiohttp")  # noqa: F841 (browser.py needs it)
    import browser  # beside this file

    if not browser.chromium_binary():
        pytest.skip("chromium is not installed")
    share = call(srv, lambda c: c.create_share([srv.album], "In the browser"))
    b = browser.Browser()
    try:
        async def check(p):
            await p.call("Page.navigate", url=share.url)
            await p.wait_for("document.querySelectorAll('#tracks button').length === 2")
            title = await p.eval("document.title")
            assert title == "In the browser"
            await p.eval("document.querySelectorAll('#tracks button')[1].click(); true")
            await p.wait_for("document.getElementById('player').currentTime > 0.5", timeout=30)
            src = await p.eval("document.getElementById('player').currentSrc")
            assert src.endswith(f"/stream/{srv.songs['Second Tone']}")
            shot = os.environ.get("SPINDLE_SCREENSHOTS")
            if shot:
                await p.screenshot(os.path.join(shot, "share-page.png"))
        run(browser.with_page(b, check))
        # The same link once deleted: 404, and the player has nothing.
        assert call(srv, lambda c: c.delete_share(share.id))

        async def gone(p):
            await p.call("Page.navigate", url=share.url)
            await p.wait_for("document.readyState === 'complete'")
            text = await p.eval("document.body.innerText")
            assert "does not exist or has expired" in text
            assert await p.eval("document.querySelector('audio') === null")
        run(browser.with_page(b, gone))
    finally:
        b.close()
