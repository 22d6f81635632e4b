"""Audioscrobbler 1.2 with raw HTTP: handshake, now playing, submissions."""

import hashlib

import requests

from conftest import now


def md5(s):
    return hashlib.md5(s.encode()).hexdigest()


def handshake(server, password):
    t = str(now())
    a = md5(md5(password) + t)
    r = requests.get(server.url + "/", params={"hs": "true", "p": "1.2.1", "c": "tst", "v": "1.0",
                                               "u": server.user, "t": t, "a": a}, timeout=5)
    return r.text.split("\n")


def test_handshake_nowplaying_and_submission(server):
    assert handshake(server, "wrong")[0] == "BADAUTH"
    ok, sid, np_url, sub_url = handshake(server, server.password)[:4]
    assert ok == "OK"
    assert requests.post(np_url, data={"s": "bad", "a": "X", "t": "Y"}, timeout=5).text == "BADSESSION\n"
    assert requests.post(np_url, data={"s": sid, "a": "AS Artist", "t": "AS Now", "b": "", "l": "200",
                                       "n": "", "m": ""}, timeout=5).text == "OK\n"
    t0 = now() - 30_000
    form = {"s": sid}
    for i in range(3):
        form.update({f"a[{i}]": "AS Artist", f"t[{i}]": f"AS Track {i}", f"i[{i}]": str(t0 + i * 300),
                     f"o[{i}]": "P", f"r[{i}]": "", f"l[{i}]": "240", f"b[{i}]": "AS Album", f"n[{i}]": "",
                     f"m[{i}]": ""})
    assert requests.post(sub_url, data=form, timeout=5).text == "OK\n"
    # The history is private: its owner reads it with their token.
    auth = {"Authorization": f"Token {server.token}"}
    lb = requests.get(f"{server.url}/1/user/{server.user}/listens",
                      params={"min_ts": t0 - 1, "max_ts": t0 + 1000}, headers=auth, timeout=5)
    # min_ts and max_ts together are refused as in ListenBrainz.
    assert lb.status_code == 400
    lb = requests.get(f"{server.url}/1/user/{server.user}/listens", params={"max_ts": t0 + 1000, "count": 3},
                      headers=auth, timeout=5).json()
    assert [x["track_metadata"]["track_name"] for x in lb["payload"]["listens"]] == \
        ["AS Track 2", "AS Track 1", "AS Track 0"]


def test_badtime(server):
    t = str(now() - 10 * 3600)
    r = requests.get(server.url + "/", params={"hs": "true", "p": "1.2", "u": server.user, "t": t,
                                               "a": md5(md5(server.password) + t)}, timeout=5)
    assert r.text.startswith("BADTIME")
