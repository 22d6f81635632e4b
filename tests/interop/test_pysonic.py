"""A second Python Subsonic client, py-sonic (module `libsonic`), which
posts forms to the `.view` URLs and sends Python's booleans (`False`):
a token login beside an empty `p` is no wrong password (and no failed
login for the throttle), and `scrobble(submission=False)` is now playing
and records no play."""

import urllib.parse

import pytest
import requests

libsonic = pytest.importorskip("libsonic")


class EmptyPassword(libsonic.Connection):
    """py-sonic that also sends `p=` (empty) beside its salted token, as
    some clients fill in every field."""

    def _getBaseQdict(self):
        q = super()._getBaseQdict()
        q["p"] = ""
        return q


def connect(server, cls=libsonic.Connection):
    url = urllib.parse.urlsplit(server.url)
    return cls(f"{url.scheme}://{url.hostname}", server.user, server.password,
               port=url.port, appName="py-sonic")


def test_a_token_beside_an_empty_password_logs_in_every_time(server):
    conn = connect(server, EmptyPassword)
    # More than the throttle's free tries: none counts as a failure.
    for _ in range(12):
        assert conn.ping()
    assert connect(server).ping()


def history_size(server):
    r = requests.get(f"{server.url}/1/user/{server.user}/listens", params={"count": 1000},
                     headers={"Authorization": f"Token {server.token}"}, timeout=10)
    r.raise_for_status()
    return len(r.json()["payload"]["listens"])


def test_scrobble_submission_false_is_now_playing_and_no_play(server):
    conn = connect(server)
    song = conn.getRandomSongs(size=1)["randomSongs"]["song"][0]
    before = history_size(server)
    conn.scrobble(song["id"], submission=False)
    playing = conn.getNowPlaying()["nowPlaying"]["entry"]
    playing = playing if isinstance(playing, list) else [playing]
    assert song["id"] in [e["id"] for e in playing]
    # The history is written before the answer: no listen was added.
    assert history_size(server) == before
    conn.scrobble(song["id"], submission=True)
    assert history_size(server) == before + 1
