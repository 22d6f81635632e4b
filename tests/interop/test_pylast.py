"""pylast pointed at the server: a LibreFMNetwork whose
ws_server and homepage are ours, and an httpx transport that sends
pylast's hard-coded https:// to our plain-HTTP loopback port."""

import time

import httpx2 as httpx
import pylast
import pytest
import requests

from conftest import PASSWORD, PYLAST_USER, now


class PlainHttp(httpx.HTTPTransport):
    def handle_request(self, request):
        request.url = request.url.copy_with(scheme="http")
        return super().handle_request(request)


def network(server, **kw):
    net = pylast.LibreFMNetwork(api_key=server.api_key, api_secret=server.secret)
    net.ws_server = (server.host, "/2.0/")
    net.homepage = server.url
    net.proxy = {"https://": PlainHttp()}
    for k, v in kw.items():
        setattr(net, k, v)
    return net


@pytest.fixture(scope="module")
def net(server):
    n = network(server)
    sk = pylast.SessionKeyGenerator(n).get_session_key(PYLAST_USER, pylast.md5(server.password))
    n.session_key = sk
    n.username = PYLAST_USER
    return n


def test_mobile_login_with_auth_token(server):
    n = network(server)
    sk = pylast.SessionKeyGenerator(n).get_session_key(PYLAST_USER, pylast.md5(server.password))
    assert len(sk) == 32
    with pytest.raises(pylast.WSError) as e:
        pylast.SessionKeyGenerator(n).get_session_key(PYLAST_USER, pylast.md5("wrong"))
    assert e.value.get_id() == "4"


def test_desktop_login_by_approval_page(server):
    n = network(server)
    gen = pylast.SessionKeyGenerator(n)
    url = gen.get_web_auth_url()
    assert url.startswith(server.url + "/api/auth/?api_key=")
    # Before approval: 14, as Last.fm answers.
    with pytest.raises(pylast.WSError) as e:
        gen.get_web_auth_session_key_username(url)
    assert e.value.get_id() == "14"
    # The user logs in on the page and grants access.
    page = requests.get(url, timeout=5)
    assert page.status_code == 200 and "password" in page.text
    q = dict(p.split("=") for p in url.split("?")[1].split("&"))
    bad = requests.post(server.url + "/api/auth/", data={**q, "username": PYLAST_USER, "password": "no"}, timeout=5)
    assert bad.status_code == 403
    ok = requests.post(server.url + "/api/auth/", data={**q, "username": PYLAST_USER, "password": server.password}, timeout=5)
    assert ok.status_code == 200, ok.text
    sk, user = gen.get_web_auth_session_key_username(url)
    assert user == PYLAST_USER and len(sk) == 32
    # The token is single-use.
    with pytest.raises(pylast.WSError) as e:
        gen.get_web_auth_session_key_username(url)
    assert e.value.get_id() == "15"
    # The session key works.
    n.session_key = sk
    n.update_now_playing(artist="Desktop", title="Flow")


def test_now_playing_comes_first_in_recent_tracks(net, server):
    net.update_now_playing(artist="Now Artist", title="Now Title", album="Now Album", duration=200)
    user = net.get_user(PYLAST_USER)
    np = user.get_now_playing()
    assert np is not None
    assert (str(np.artist), np.title) == ("Now Artist", "Now Title")


def test_120_scrobbles_read_back_equal(net, server):
    base = now() - 10_000
    sent = [
        {"artist": f"Artist {i % 7}", "title": f"Song {i}", "album": f"Album {i % 3}", "timestamp": base + i * 60}
        for i in range(120)
    ]
    net.scrobble_many(sent)  # pylast sends chunks of 50
    got = net.get_user(PYLAST_USER).get_recent_tracks(limit=120, now_playing=False)
    back = [
        {"artist": str(t.track.artist), "title": t.track.title, "album": t.album, "timestamp": int(t.timestamp)}
        for t in got
    ]
    assert back == sorted(sent, key=lambda s: -s["timestamp"])
    # Sending the same batch again adds nothing.
    net.scrobble_many(sent[:50])
    again = net.get_user(PYLAST_USER).get_recent_tracks(limit=200, now_playing=False)
    assert len([t for t in again if t.track.title.startswith("Song ")]) == 120


def test_love_and_unlove(net, server):
    t = net.get_track("Artist 1", "Song 1")
    t.love()
    loved = net.get_user(PYLAST_USER).get_loved_tracks(limit=10)
    assert [(str(x.track.artist), x.track.title) for x in loved] == [("Artist 1", "Song 1")]
    t.unlove()
    assert net.get_user(PYLAST_USER).get_loved_tracks(limit=10) == []


def subsonic(server, user, method, **params):
    q = {"u": user, "p": PASSWORD, "v": "1.16.1", "c": "interop", "f": "json", **params}
    r = requests.get(f"{server.url}/rest/{method}", params=q, timeout=10).json()["subsonic-response"]
    assert r["status"] == "ok", r
    return r


def starred_titles(server, user):
    return sorted(s["title"] for s in subsonic(server, user, "getStarred2")["starred2"].get("song", []))


def test_a_love_stars_the_library_song_and_a_star_is_a_love(net, server):
    # pylast's love of a track of the (demo) library stars its song.
    # (ann shares this server with other tests, which star songs of hers.)
    anns = starred_titles(server, "ann")
    t = net.get_track("The Sine Waves", "Middle C")
    t.love()
    assert starred_titles(server, PYLAST_USER) == ["Middle C"]
    assert starred_titles(server, "ann") == anns, "another user's love"
    t.unlove()
    assert starred_titles(server, PYLAST_USER) == []
    # A Subsonic star is a love pylast reads back.
    hum = subsonic(server, PYLAST_USER, "search3", query="Hum")["searchResult3"]["song"][0]
    subsonic(server, PYLAST_USER, "star", id=hum["id"])
    loved = net.get_user(PYLAST_USER).get_loved_tracks(limit=10)
    assert [x.track.title for x in loved] == ["Hum"]
    subsonic(server, PYLAST_USER, "unstar", id=hum["id"])
    assert net.get_user(PYLAST_USER).get_loved_tracks(limit=10) == []


def test_top_artists(net, server):
    top = net.get_user(PYLAST_USER).get_top_artists(period=pylast.PERIOD_OVERALL, limit=3)
    names = [(str(x.item), int(x.weight)) for x in top]
    # 120 scrobbles over 7 artists: i % 7 == 0..0 gets 18, the rest 17.
    assert names[0] == ("Artist 0", 18)
    assert all(w == 17 for _, w in names[1:])
    week = net.get_user(PYLAST_USER).get_top_artists(period=pylast.PERIOD_7DAYS, limit=50)
    assert sum(int(x.weight) for x in week) == 120


def test_history_is_read_by_its_owner_only_and_keys_stay_with_their_api_key(net, server):
    from conftest import cli
    anon = network(server)
    codes = []
    for name in (PYLAST_USER, "nobody-here"):
        with pytest.raises(pylast.WSError) as e:
            anon.get_user(name).get_recent_tracks(limit=1)
        codes.append((e.value.get_id(), str(e.value)))
    # A private user and an unknown one get the same answer.
    assert codes[0] == codes[1] and codes[0][0] == "17"
    assert net.get_user(PYLAST_USER).get_recent_tracks(limit=1), "the owner reads with the session"
    # The session key is no use under another application's API key.
    out = cli(server.data_dir, "apikey", "add", "--name", "other")
    key = out.split("api_key ")[1].split()[0]
    secret = out.split("secret ")[1].split()[0]
    other = pylast.LibreFMNetwork(api_key=key, api_secret=secret)
    other.ws_server, other.homepage, other.proxy = net.ws_server, net.homepage, net.proxy
    other.session_key = net.session_key
    with pytest.raises(pylast.WSError) as e:
        other.update_now_playing(artist="Other", title="Key")
    assert e.value.get_id() == "9"
