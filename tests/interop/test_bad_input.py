"""Bad input: each gets the right error code, and nothing valid in the
same batch is lost."""

import hashlib
import re

import pytest
import requests

from conftest import now


def sign(params, secret):
    s = "".join(k + v for k, v in sorted(params.items(), key=lambda kv: kv[0].encode()) if k not in ("format", "callback"))
    return hashlib.md5((s + secret).encode()).hexdigest()


@pytest.fixture(scope="module")
def sk(server):
    p = {"method": "auth.getMobileSession", "api_key": server.api_key, "username": server.user,
         "password": server.password}
    p["api_sig"] = sign(p, server.secret)
    r = requests.post(server.url + "/2.0/", data=p, timeout=5)
    return re.search(r"<key>(\w+)</key>", r.text).group(1)


def call(server, params, sk=None, secret=None, fmt=None):
    p = dict(params, api_key=server.api_key)
    if sk:
        p["sk"] = sk
    p["api_sig"] = sign(p, secret or server.secret)
    if fmt:
        p["format"] = fmt
    return requests.post(server.url + "/2.0/", data=p, timeout=10)


def code(r):
    m = re.search(r'<error code="(\d+)"', r.text)
    return int(m.group(1)) if m else None


def recent_titles(server, sk):
    # The history is private: its owner reads it with a signed session key.
    r = call(server, {"method": "user.getRecentTracks", "user": server.user, "limit": "1000"}, sk, fmt="json")
    t = r.json()["recenttracks"].get("track", [])
    t = t if isinstance(t, list) else [t]
    return {x["name"] for x in t}


def test_wrong_signature_is_13(server, sk):
    r = call(server, {"method": "track.scrobble", "artist": "A", "track": "B", "timestamp": str(now())}, sk, secret="x")
    assert code(r) == 13


def test_unknown_session_is_9(server):
    r = call(server, {"method": "track.updateNowPlaying", "artist": "A", "track": "B"}, sk="f" * 32)
    assert code(r) == 9


def test_missing_parameter_is_6(server, sk):
    assert code(call(server, {"method": "track.love", "artist": "A"}, sk)) == 6
    assert code(call(server, {"method": "track.scrobble"}, sk)) == 6


def test_ten_megabyte_body_is_refused(server, sk):
    r = requests.post(server.url + "/2.0/", data={"method": "track.scrobble", "artist": "x" * (10 << 20)}, timeout=30)
    assert r.status_code == 413 and code(r) == 6
    r = requests.post(server.url + "/1/submit-listens", data=b"x" * (10 << 20),
                      headers={"Authorization": f"Token {server.token}"}, timeout=30)
    assert r.status_code == 413


def test_51_scrobbles_are_refused_and_50_accepted(server, sk):
    t0 = now() - 100_000
    p = {"method": "track.scrobble"}
    for i in range(51):
        p.update({f"artist[{i}]": "Fifty", f"track[{i}]": f"F{i}", f"timestamp[{i}]": str(t0 + i)})
    assert code(call(server, p, sk)) == 6
    del p["artist[50]"], p["track[50]"], p["timestamp[50]"]
    r = call(server, p, sk, fmt="json")
    assert r.json()["scrobbles"]["@attr"] == {"accepted": 50, "ignored": 0}


def test_bad_scrobbles_are_ignored_one_by_one(server, sk):
    t = now()
    p = {"method": "track.scrobble",
         "artist[0]": "Good", "track[0]": "Kept 0", "timestamp[0]": str(t - 1000),
         "artist[1]": "Bad", "track[1]": "Old", "timestamp[1]": "978307200",  # 2001
         "artist[2]": "Bad", "track[2]": "Future", "timestamp[2]": str(t + 366 * 86400),
         "artist[3]": "N\0L", "track[3]": "Nul", "timestamp[3]": str(t - 900),
         "artist[4]": "Good", "track[4]": "Kept 4", "timestamp[4]": str(t - 800)}
    r = call(server, p, sk)
    assert r.status_code == 200 and '<scrobbles accepted="2" ignored="3">' in r.text
    codes = re.findall(r'<ignoredMessage code="(\d)"', r.text)
    assert codes == ["0", "3", "4", "1", "0"]
    titles = recent_titles(server, sk)
    assert {"Kept 0", "Kept 4"} <= titles and not {"Old", "Future", "Nul"} & titles
    # A NUL outside the scrobble fields refuses the call.
    assert code(call(server, {"method": "track.love", "artist": "A", "track": "B\0"}, sk)) == 6


def test_json_errors_and_single_scrobble_object(server, sk):
    r = call(server, {"method": "track.scrobble", "artist": "J", "track": "One", "timestamp": str(now() - 50)}, sk,
             fmt="json")
    s = r.json()["scrobbles"]
    assert isinstance(s["scrobble"], dict) and s["scrobble"]["ignoredMessage"]["code"] == "0"
    r = call(server, {"method": "track.scrobble"}, "f" * 32, fmt="json")
    assert r.json()["error"] == 9 and "message" in r.json()
