"""Statistics read by real clients: a known history, spread over weeks
and years, is submitted through the ListenBrainz API; liblistenbrainz
reads the ListenBrainz stats (/1/stats/user/NAME/...), pylast the Last.fm
weekly charts, library and play counts, and the web UI's year in review
is read as its page reads it. The user ("stu") is this file's own, so
every count is exact."""

from datetime import datetime, timedelta, timezone

import liblistenbrainz
import liblistenbrainz.errors
import pylast
import pytest
import requests

from conftest import PASSWORD, cli, listenbrainz_client, now
from stats_history import HISTORY, ts
from test_pylast import network

USER = "stu"
EMPTY = "sol"


def listen(artist, title, at, album=None, seconds=None):
    info = {"duration_ms": seconds * 1000} if seconds else None
    return liblistenbrainz.Listen(track_name=title, artist_name=artist, listened_at=at,
                                  release_name=album, additional_info=info)


# Monday 00:00 UTC of this week: "Delta" is this week, "Epsilon" the
# Friday before it (ListenBrainz's range "week").
_today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
MONDAY = int((_today - timedelta(days=_today.weekday())).timestamp())
RECENT = [
    ("Delta", "d-one", None, None, None),
    ("Epsilon", "e-one", MONDAY - 3 * 86400 + 12 * 3600, None, None),
]

ALL = 14


def client(server, token):
    return listenbrainz_client(server.url, token)


@pytest.fixture(scope="module")
def stu(server):
    for name in (USER, EMPTY):
        cli(server.data_dir, "user", "add", name, stdin=PASSWORD + "\n")
    c = client(server, cli(server.data_dir, "user", "token", USER).strip())
    rows = HISTORY + [(a, t, at or now() - 30, al, s) for a, t, at, al, s in RECENT]
    c.submit_multiple_listens([listen(*r) for r in rows])
    return c


def names(rows, key):
    return [(r[key], r["listen_count"]) for r in rows]


def test_liblistenbrainz_reads_top_artists_releases_and_recordings(stu):
    p = stu.get_user_artists(USER)["payload"]
    assert p["range"] == "all_time" and p["user_id"] == USER
    assert p["total_artist_count"] == 5 and p["count"] == 5
    assert names(p["artists"], "artist_name")[:2] == [("Alpha", 6), ("Beta", 5)]
    assert p["from_ts"] == ts(2022, 6, 1, 10) and p["to_ts"] >= now() - 5
    page = stu.get_user_artists(USER, count=1, offset=1)["payload"]
    assert names(page["artists"], "artist_name") == [("Beta", 5)] and page["offset"] == 1

    r = stu.get_user_releases(USER)["payload"]
    assert r["total_release_count"] == 2
    assert [(x["release_name"], x["artist_name"], x["listen_count"]) for x in r["releases"]] == \
        [("A1", "Alpha", 6), ("B1", "Beta", 5)]

    t = stu.get_user_recordings(USER)["payload"]
    assert t["total_recording_count"] == 6
    assert [(x["track_name"], x["artist_name"], x["listen_count"]) for x in t["recordings"][:2]] == \
        [("b-one", "Beta", 5), ("a-one", "Alpha", 4)]


def test_ranges_count_only_their_listens(stu, server):
    week = stu.get_user_artists(USER, time_range="week")["payload"]
    assert names(week["artists"], "artist_name") == [("Epsilon", 1)]
    assert week["from_ts"] == MONDAY - 7 * 86400 and week["to_ts"] == MONDAY - 1
    this_week = stu.get_user_artists(USER, time_range="this_week")["payload"]
    assert names(this_week["artists"], "artist_name") == [("Delta", 1)]
    assert this_week["from_ts"] == MONDAY
    # A user without listens (reading their own): 204, which
    # liblistenbrainz reads as None.
    empty = client(server, cli(server.data_dir, "user", "token", EMPTY).strip())
    assert empty.get_user_artists(EMPTY) is None
    assert empty.get_user_recordings(EMPTY, time_range="year") is None
    # A range without listens of a user who has some: 204 too.
    assert stu.get_user_releases(USER, time_range="week") is None


def test_listening_and_daily_activity(stu):
    # liblistenbrainz has no methods for these two: its own GET, which
    # turns a 204 into an exception.
    la = stu._get(f"/1/stats/user/{USER}/listening-activity")["payload"]
    years = {x["time_range"]: x["listen_count"] for x in la["listening_activity"]}
    assert years["2022"] == 2 and years["2023"] == 10 and sum(years.values()) == ALL
    first = la["listening_activity"][0]
    assert first["from_ts"] == ts(2022, 1, 1) and first["to_ts"] == ts(2023, 1, 1) - 1

    week = stu._get(f"/1/stats/user/{USER}/listening-activity", params={"range": "week"})["payload"]
    days = week["listening_activity"]
    assert len(days) == 14 and days[-1]["to_ts"] == MONDAY - 1
    assert sum(d["listen_count"] for d in days) == 1
    assert days[-1]["time_range"].startswith("Sunday ")

    da = stu._get(f"/1/stats/user/{USER}/daily-activity")["payload"]["daily_activity"]
    assert set(da) == {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
    assert all(len(hours) == 24 for hours in da.values())
    assert sum(h["listen_count"] for hours in da.values() for h in hours) == ALL
    assert da["Monday"][10]["hour"] == 10 and da["Monday"][10]["listen_count"] >= 1
    # Saturday 20:00 UTC: Beta on 1 July 2023 (and nothing else then, but
    # Delta, which is now).
    assert da["Saturday"][20]["listen_count"] >= 1


def test_stats_are_private_and_ranges_checked(stu, server):
    other = client(server, cli(server.data_dir, "user", "token", EMPTY).strip())
    with pytest.raises(liblistenbrainz.errors.ListenBrainzAPIException) as e:
        other.get_user_artists(USER)
    assert e.value.status_code == 401
    r = requests.get(f"{server.url}/1/stats/user/{USER}/artists", params={"range": "7day"},
                     headers={"Authorization": f"Token {stu._auth_token}"}, timeout=5)
    assert r.status_code == 400 and "range" in r.json()["error"]


@pytest.fixture(scope="module")
def net(server, stu):
    n = network(server)
    n.session_key = pylast.SessionKeyGenerator(n).get_session_key(USER, pylast.md5(PASSWORD))
    n.username = USER
    return n


def test_pylast_reads_the_weekly_charts(net):
    user = net.get_user(USER)
    weeks = user.get_weekly_chart_dates()
    # Last.fm's weeks: Sunday 12:00 UTC to the next.
    march = (str(ts(2023, 3, 5, 12)), str(ts(2023, 3, 12, 12)))
    assert march in weeks
    assert int(weeks[0][0]) <= ts(2022, 6, 1, 10) < int(weeks[0][1])
    assert all(int(b) - int(a) == 7 * 86400 for a, b in weeks)
    assert int(weeks[-1][1]) <= now()

    artists = user.get_weekly_artist_charts(*march)
    assert [(str(i.item), i.weight) for i in artists] == [("Alpha", 4)]
    albums = user.get_weekly_album_charts(*march)
    assert [(i.item.get_artist().get_name(), i.item.get_title(), i.weight) for i in albums] == \
        [("Alpha", "A1", 4)]
    tracks = user.get_weekly_track_charts(*march)
    assert [(i.item.get_artist().get_name(), i.item.get_title(), i.weight) for i in tracks] == \
        [("Alpha", "a-one", 4)]
    # Without dates: the last whole week, the list's last entry.
    last = user.get_weekly_artist_charts(*weeks[-1])
    assert [(str(i.item), i.weight) for i in user.get_weekly_artist_charts()] == \
        [(str(i.item), i.weight) for i in last]


def test_pylast_reads_library_artists_and_play_counts(net):
    lib = pylast.Library(USER, net)
    got = {str(i.item): i.playcount for i in lib.get_artists(limit=None)}
    assert got == {"Alpha": 6, "Beta": 5, "Gamma": 1, "Delta": 1, "Epsilon": 1}
    assert net.get_track("Alpha", "a-one").get_userplaycount() == 4
    assert net.get_track("alpha", "A-ONE").get_userplaycount() == 4
    assert net.get_track("Alpha", "a-one").get_userloved() is False
    assert net.get_artist("Alpha").get_userplaycount() == 6
    assert net.get_album("Alpha", "A1").get_userplaycount() == 6
    with pytest.raises(pylast.WSError) as e:
        net.get_track("Nobody", "Nothing").get_userplaycount()
    assert e.value.get_id() == "6"


def test_the_year_in_review(server, stu):
    s = requests.Session()
    r = s.post(f"{server.url}/ui/login", json={"user": USER, "password": PASSWORD},
               headers={"X-Spindle-Csrf": "1"}, timeout=10)
    assert r.status_code == 200, r.text
    v = s.get(f"{server.url}/ui/api/review", params={"year": 2023}, timeout=10).json()
    assert v["year"] == 2023 and v["listens"] == 10
    # 6 × 200 s + 3 × 100 s; Gamma's listen has no duration.
    assert v["seconds"] == 1500 and v["hours"] == 0.4
    assert v["top_artists"][0] == {"name": "Alpha", "listens": 6}
    assert v["top_albums"][0] == {"name": "A1", "artist": "Alpha", "listens": 6}
    assert v["top_tracks"][0] == {"name": "a-one", "artist": "Alpha", "listens": 4}
    assert v["busiest_day"] == {"date": "2023-03-06", "listens": 4}
    assert v["busiest_month"] == {"month": "2023-03", "listens": 5}
    # Beta was first heard in 2022.
    assert v["new_artist_count"] == 2
    assert {a["name"] for a in v["new_artists"]} == {"Alpha", "Gamma"}
    # In Tokyo (UTC+9), Gamma's 23:30 UTC on 31 December is 2024.
    cli(server.data_dir, "user", "set", USER, "timezone", "Asia/Tokyo")
    v = s.get(f"{server.url}/ui/api/review", params={"year": 2023}, timeout=10).json()
    assert v["listens"] == 9 and v["new_artist_count"] == 1
    assert s.get(f"{server.url}/ui/api/review", params={"year": "x"}, timeout=10).status_code == 400
    assert requests.get(f"{server.url}/ui/api/review", timeout=10).status_code == 401


def test_lastfm_json_shapes_once_the_history_is_public(server, stu):
    cli(server.data_dir, "user", "privacy", USER, "public")
    base = {"api_key": server.api_key, "format": "json"}

    def call(method, **kw):
        r = requests.get(f"{server.url}/2.0/", params={**base, "method": method, **kw}, timeout=5)
        assert r.status_code == 200, r.text
        return r.json()

    weeks = call("user.getWeeklyChartList", user=USER)["weeklychartlist"]
    assert weeks["@attr"]["user"] == USER
    assert {"from": str(ts(2023, 3, 5, 12)), "to": str(ts(2023, 3, 12, 12)), "#text": ""} in weeks["chart"]
    chart = call("user.getWeeklyTrackChart", user=USER, **{"from": ts(2023, 3, 5, 12), "to": ts(2023, 3, 12, 12)})
    track = chart["weeklytrackchart"]["track"]
    assert track["name"] == "a-one" and track["playcount"] == "4" and track["artist"]["#text"] == "Alpha"
    assert track["@attr"]["rank"] == "1"
    lib = call("library.getArtists", user=USER, limit=2)["artists"]
    assert lib["@attr"]["total"] == "5" and lib["@attr"]["totalPages"] == "3"
    assert [a["name"] for a in lib["artist"]] == ["Alpha", "Beta"]
    info = call("artist.getInfo", artist="Alpha", username=USER)["artist"]
    assert info["stats"]["userplaycount"] == "6" and info["stats"]["playcount"] == "6"
    t = call("track.getInfo", artist="Alpha", track="a-one", username=USER)["track"]
    assert t["userplaycount"] == "4" and t["userloved"] == "0" and t["artist"]["name"] == "Alpha"
