"""liblistenbrainz pointed at the server. Releases up to early
2025 read a module global API_BASE_URL on every call; later ones take
api_base_url in the constructor. Both are handled."""

import liblistenbrainz
import liblistenbrainz.client as lbclient
import liblistenbrainz.errors
import pytest
import requests

from conftest import now


@pytest.fixture(scope="module")
def lb(server):
    lbclient.API_BASE_URL = server.url
    try:
        c = liblistenbrainz.ListenBrainz(api_base_url=server.url)
    except TypeError:
        c = liblistenbrainz.ListenBrainz()
    c.set_auth_token(server.token)  # validates with ?token=
    return c


def test_token_validation(lb, server):
    other = liblistenbrainz.ListenBrainz(api_base_url=server.url) if hasattr(lb, "api_base_url") \
        else liblistenbrainz.ListenBrainz()
    other.set_auth_token(server.token)
    with pytest.raises(liblistenbrainz.errors.InvalidAuthTokenException):
        other.set_auth_token("0" * 32)
    # The ?token= form older clients use.
    r = requests.get(server.url + "/1/validate-token", params={"token": server.token}, timeout=5)
    assert r.json()["valid"] is True
    r = requests.get(server.url + "/1/validate-token", headers={"Authorization": f"Token {server.token}"}, timeout=5)
    assert r.json()["valid"] is True and r.json()["user_name"] == server.user
    assert "X-RateLimit-Remaining" in r.headers and "X-RateLimit-Reset-In" in r.headers


def test_single_playing_now_and_import_read_back(lb, server):
    t0 = now() - 50_000
    single = liblistenbrainz.Listen(track_name="LB Single", artist_name="LB Artist", release_name="LB Rel",
                                    listened_at=t0, recording_mbid="11111111-2222-3333-4444-555555555555")
    lb.submit_single_listen(single)
    lb.submit_playing_now(liblistenbrainz.Listen(track_name="LB Playing", artist_name="LB Artist"))
    np = lb.get_playing_now(server.user)
    assert (np.artist_name, np.track_name) == ("LB Artist", "LB Playing")
    batch = [liblistenbrainz.Listen(track_name=f"LB Import {i}", artist_name="LB Importer", listened_at=t0 - 100 - i)
             for i in range(30)]
    lb.submit_multiple_listens(batch)
    got = lb.get_listens(server.user, max_ts=t0 + 1, count=31)
    assert [(x.track_name, x.listened_at) for x in got] == \
        [("LB Single", t0)] + [(f"LB Import {i}", t0 - 100 - i) for i in range(30)]
    assert got[0].recording_mbid == "11111111-2222-3333-4444-555555555555"
    assert got[0].release_name == "LB Rel"


def test_feedback_loves_a_recording_and_lists_it(lb, server):
    mbid = "22222222-3333-4444-8555-666666666666"
    lb.submit_single_listen(liblistenbrainz.Listen(
        track_name="LB Loved", artist_name="LB Artist", listened_at=now() - 40_000, recording_mbid=mbid))
    lb.submit_user_feedback(1, mbid)
    got = lb.get_user_feedback(server.user, score=1, metadata=True)
    mine = [f for f in got["feedback"] if f["recording_mbid"] == mbid]
    assert len(mine) == 1, got
    assert mine[0]["score"] == 1 and mine[0]["track_metadata"]["track_name"] == "LB Loved"
    assert mine[0]["recording_msid"], "an MSID to send back"
    with pytest.raises(liblistenbrainz.errors.ListenBrainzAPIException) as e:
        lb.submit_user_feedback(-1, mbid)
    assert e.value.status_code == 400, "hate is not recorded"
    lb.submit_user_feedback(0, mbid)
    got = lb.get_user_feedback(server.user, score=1, metadata=False)
    assert [f for f in got["feedback"] if f["recording_mbid"] == mbid] == []


def test_limits_of_a_submission(server):
    h = {"Authorization": f"Token {server.token}"}
    url = server.url + "/1/submit-listens"
    def listen(ts, i=0):
        return {"listened_at": ts, "track_metadata": {"artist_name": "L", "track_name": f"T{i}"}}
    too_many = {"listen_type": "import", "payload": [listen(now() - 10_000 - i, i) for i in range(1001)]}
    assert requests.post(url, json=too_many, headers=h, timeout=10).status_code == 400
    two_singles = {"listen_type": "single", "payload": [listen(now() - 5), listen(now() - 6, 1)]}
    assert requests.post(url, json=two_singles, headers=h, timeout=5).status_code == 400
    old = {"listen_type": "single", "payload": [listen(978307200)]}  # 2001
    assert requests.post(url, json=old, headers=h, timeout=5).status_code == 400
    big = {"listen_type": "single", "payload": [{"listened_at": now(), "track_metadata": {
        "artist_name": "L", "track_name": "T", "additional_info": {"x": "y" * 11000}}}]}
    assert requests.post(url, json=big, headers=h, timeout=5).status_code == 400
    assert requests.post(url, json=old, headers={"Authorization": "Token nope"}, timeout=5).status_code == 401


def test_history_is_private_until_the_user_makes_it_public(lb, server):
    from conftest import cli
    anon = liblistenbrainz.ListenBrainz(api_base_url=server.url) if hasattr(lb, "api_base_url") \
        else liblistenbrainz.ListenBrainz()
    errors = []
    for name in (server.user, "nobody-here"):
        with pytest.raises(liblistenbrainz.errors.ListenBrainzAPIException) as e:
            anon.get_listens(name)
        errors.append((e.value.status_code, e.value.message))
    # A private user and an unknown one get the same answer.
    assert errors[0] == errors[1] and errors[0][0] == 401
    assert lb.get_listens(server.user, count=1), "the owner reads with the token"
    # The listen count is read as the listens are.
    with pytest.raises(liblistenbrainz.errors.ListenBrainzAPIException) as e:
        anon.get_user_listen_count(server.user)
    assert e.value.status_code == 401
    count = lb.get_user_listen_count(server.user)
    assert count >= 1
    lb.submit_single_listen(liblistenbrainz.Listen(
        track_name="Counted", artist_name="Counter", listened_at=now() - 5))
    assert lb.get_user_listen_count(server.user) == count + 1
    # Set with the CLI beside the running server, seen at once.
    cli(server.data_dir, "user", "privacy", server.user, "public")
    try:
        assert anon.get_listens(server.user, count=1)
        anon.get_playing_now(server.user)
    finally:
        cli(server.data_dir, "user", "privacy", server.user, "private")
    with pytest.raises(liblistenbrainz.errors.ListenBrainzAPIException):
        anon.get_listens(server.user)
