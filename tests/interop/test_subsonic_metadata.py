"""The metadata Subsonic apps show, from real files: a fresh
`spindle serve --music DIR` over files made with the corpus tools (sox for
the audio, the `flac`, `lame` and `opusenc` encoders, mutagen for the
tags), read back through py-opensonic and as raw JSON and XML.

The files carry ReplayGain (and Opus R128 gains), a compilation flag
without an album artist, several artists and genres (repeated Vorbis
fields, ID3v2.4 lists), lyrics embedded (USLT in MP3, LYRICS in FLAC) and in
a `.lrc` sidecar, sort names, labels, moods, disc subtitles and the
original date. Run by scripts/ci.d/80-server.sh."""

import asyncio
import os
import re
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import cli, music_server

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)
libopensonic = pytest.importorskip("libopensonic")
requests = pytest.importorskip("requests")
mutagen_flac = pytest.importorskip("mutagen.flac")
mutagen_id3 = pytest.importorskip("mutagen.id3")
mutagen_ogg = pytest.importorskip("mutagen.oggopus")

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
PASSWORD = "metadata horse"
NS = "{http://subsonic.org/restapi}"

LRC = """[ar:Cy Singer]
[ti:Sunny Day]
[offset:+100]
[00:00.50]Sun comes up
[00:01.25]Sun goes down
"""


def tone(path, hz, rate=44100, bits=16, channels=2):
    """A 1.5 s sine as WAV, made with sox."""
    subprocess.run(
        ["sox", "-n", "-r", str(rate), "-b", str(bits), "-c", str(channels), str(path),
         "synth", "1.5", "sine", str(hz)],
        check=True,
    )


def make_flac(d):
    wav, p = d / "duet.wav", d / "01 The Duet.flac"
    tone(wav, 440, rate=48000, bits=24)
    subprocess.run(["flac", "-s", "-f", "-o", str(p), str(wav)], check=True)
    wav.unlink()
    f = mutagen_flac.FLAC(str(p))
    f["title"] = "The Duet"
    f["artist"] = ["Ann Artist", "Bob Artist"]  # repeated ARTIST fields
    f["albumartist"] = "Ann Artist"
    f["album"] = "Shared Songs"
    f["genre"] = ["Rock", "Jazz"]
    f["tracknumber"], f["discnumber"], f["date"] = "1", "2", "2001"
    f["originaldate"] = "1999-05-04"
    f["label"] = "Tone Records"
    f["mood"] = "Calm"
    f["discsubtitle"] = "The Quiet Disc"
    f["albumsort"] = "Shared Songs, The"
    f["musicbrainz_trackid"] = "189002e7-3285-4e2e-92a3-7f6c30d407a2"
    f["replaygain_track_gain"] = "-6.48 dB"
    f["replaygain_album_gain"] = "-7.01 dB"
    f["replaygain_track_peak"] = "0.988556"
    f["replaygain_album_peak"] = "0.999000"
    f["lyrics"] = "First plain line\nSecond plain line"
    f.save()
    return p


def make_mp3(d, name, title, artists, hz, lyrics=None):
    wav, p = d / f"{name}.wav", d / f"{name}.mp3"
    tone(wav, hz)
    subprocess.run(["lame", "--silent", "-b", "128", str(wav), str(p)], check=True)
    wav.unlink()
    id3 = mutagen_id3
    t = id3.ID3()
    t.add(id3.TIT2(encoding=3, text=title))
    t.add(id3.TPE1(encoding=3, text=artists))  # an ID3v2.4 list: NUL-separated
    t.add(id3.TALB(encoding=3, text="Summer Hits"))
    t.add(id3.TCON(encoding=3, text=["Pop", "Electronic"]))
    t.add(id3.TCMP(encoding=3, text="1"))  # a compilation, no album artist
    t.add(id3.TSOP(encoding=3, text=f"{artists[0]}, sorted"))
    t.add(id3.TXXX(encoding=3, desc="REPLAYGAIN_TRACK_GAIN", text="-3.20 dB"))
    if lyrics:
        t.add(id3.USLT(encoding=3, lang="eng", desc="", text=lyrics))
    t.save(str(p), v2_version=4)
    return p


def make_opus(d):
    wav, p = d / "opus.wav", d / "gain.opus"
    tone(wav, 523, rate=48000)
    subprocess.run(["opusenc", "--quiet", str(wav), str(p)], check=True)
    wav.unlink()
    f = mutagen_ogg.OggOpus(str(p))
    f["title"], f["artist"], f["album"] = "Opus Gain", "Fay Quiet", "Loudness"
    # -10 dB relative to -23 LUFS: -5 dB in ReplayGain terms.
    f["r128_track_gain"] = "-2560"
    f.save()
    return p


def make_corpus(music):
    for tool in ("sox", "flac", "lame", "opusenc"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")
    a = Path(music) / "Ann Artist" / "Shared Songs"
    c = Path(music) / "Compilations" / "Summer Hits"
    o = Path(music) / "Fay Quiet"
    for d in (a, c, o):
        d.mkdir(parents=True)
    files = {"duet": make_flac(a)}
    files["sunny"] = make_mp3(c, "01 Sunny Day", "Sunny Day", ["Cy Singer", "Dee Singer"], 550,
                              lyrics="Plain sun words\nMore sun words")
    (c / "01 Sunny Day.lrc").write_text(LRC)
    files["rain"] = make_mp3(c, "02 Rainy Night", "Rainy Night", ["Eve Singer"], 660)
    files["opus"] = make_opus(o)
    return files




@pytest.fixture(scope="module")
def srv():
    with tempfile.TemporaryDirectory() as music:
        files = make_corpus(music)
        with music_server(music, PASSWORD) as s:
            s.files = files
            yield s


def conn_call(s, fn):
    async def go():
        conn = libopensonic.AsyncConnection(
            f"http://{s.host}", "ann", PASSWORD, port=s.port, app_name="spindle-metadata")
        try:
            return await fn(conn)
        finally:
            await conn.cleanup()
    return asyncio.run(go())


def api(s, method, fmt="json", **params):
    q = {"u": "ann", "p": PASSWORD, "v": "1.16.1", "c": "tests", **params}
    if fmt == "json":
        q["f"] = "json"
    r = requests.get(f"{s.base}/rest/{method}", params=q, timeout=10)
    r.raise_for_status()
    if fmt == "json":
        body = r.json()["subsonic-response"]
        assert body["status"] == "ok", body
        return body
    root = ET.fromstring(r.content)
    assert root.get("status") == "ok", r.text
    return root


def albums(s):
    body = api(s, "getAlbumList2", type="alphabeticalByName", size=50)
    return {a["name"]: a for a in body["albumList2"]["album"]}


def album_songs(s, name):
    a = albums(s)[name]
    return conn_call(s, lambda c: c.get_album(a["id"]))


def test_several_artists_and_genres_come_back_as_lists(srv):
    al = album_songs(srv, "Shared Songs")
    song = al.song[0]
    assert [a.name for a in song.artists] == ["Ann Artist", "Bob Artist"]
    assert [g.name for g in song.genres] == ["Rock", "Jazz"]
    assert song.genre == "Rock"
    assert song.display_artist == "Ann Artist, Bob Artist"
    assert [a.name for a in song.album_artists] == ["Ann Artist"]
    assert [g.name for g in al.genres] == ["Rock", "Jazz"]
    # A song-only artist can be opened by the id the song gives.
    bob = next(a for a in song.artists if a.name == "Bob Artist")
    art = conn_call(srv, lambda c: c.get_artist(bob.id))
    assert art.name == "Bob Artist" and [x.name for x in art.album] == ["Shared Songs"]
    # ID3v2.4 lists in MP3 too.
    comp = album_songs(srv, "Summer Hits")
    sunny = next(x for x in comp.song if x.title == "Sunny Day")
    assert [a.name for a in sunny.artists] == ["Cy Singer", "Dee Singer"]
    assert [g.name for g in sunny.genres] == ["Pop", "Electronic"]


def test_replay_gain_of_flac_mp3_and_opus_r128(srv):
    duet = album_songs(srv, "Shared Songs").song[0]
    rg = duet.replay_gain
    assert (rg.track_gain, rg.album_gain, rg.track_peak, rg.album_peak) == (-6.48, -7.01, 0.988556, 0.999)
    sunny = next(x for x in album_songs(srv, "Summer Hits").song if x.title == "Sunny Day")
    assert sunny.replay_gain.track_gain == -3.2
    assert sunny.replay_gain.album_gain is None
    opus = album_songs(srv, "Loudness").song[0]
    assert opus.replay_gain.track_gain == -5.0


def test_compilation_without_album_artist_is_one_various_artists_album(srv):
    comp = album_songs(srv, "Summer Hits")
    assert comp.is_compilation is True
    assert comp.artist == "Various Artists"
    assert sorted(x.title for x in comp.song) == ["Rainy Night", "Sunny Day"]
    assert album_songs(srv, "Shared Songs").is_compilation is False


def test_sort_names_audio_facts_and_album_fields(srv):
    al = album_songs(srv, "Shared Songs")
    duet = al.song[0]
    assert duet.sort_name == "Duet"  # "The " left out
    assert al.sort_name == "Shared Songs, The"  # the ALBUMSORT tag
    assert (duet.bit_depth, duet.sampling_rate, duet.channel_count) == (24, 48000, 2)
    assert duet.music_brainz_id == "189002e7-3285-4e2e-92a3-7f6c30d407a2"
    assert duet.media_type == "song"
    assert [r.name for r in al.record_labels] == ["Tone Records"]
    assert al.moods == ["Calm"]
    assert [(d.disc, d.title) for d in al.disc_titles] == [(2, "The Quiet Disc")]
    od = al.original_release_date
    assert (od.year, od.month, od.day) == (1999, 5, 4)
    sunny = next(x for x in album_songs(srv, "Summer Hits").song if x.title == "Sunny Day")
    assert sunny.sort_name == "Sunny Day"
    artists = api(srv, "getArtists")["artists"]
    assert "The" in artists["ignoredArticles"].split()


def test_lyrics_embedded_and_from_an_lrc_sidecar(srv):
    comp = album_songs(srv, "Summer Hits")
    sunny = next(x for x in comp.song if x.title == "Sunny Day")
    lyrics = conn_call(srv, lambda c: c.get_lyrics_by_song_id(sunny.id))
    synced = [l for l in lyrics if l.synced]
    plain = [l for l in lyrics if not l.synced]
    assert len(synced) == 1 and len(plain) == 1
    assert [(l.start, l.value) for l in synced[0].line] == [(500, "Sun comes up"), (1250, "Sun goes down")]
    assert synced[0].offset == 100
    assert synced[0].display_title == "Sunny Day"
    assert [l.value for l in plain[0].line] == ["Plain sun words", "More sun words"]
    assert all(l.start is None for l in plain[0].line)
    assert plain[0].lang  # "xxx" when untagged
    # FLAC LYRICS, by artist and title.
    got = conn_call(srv, lambda c: c.get_lyrics(artist="Bob Artist", title="The Duet"))
    assert got.value == "First plain line\nSecond plain line"
    assert got.title == "The Duet"
    # A song without lyrics has an empty list; an unknown id is error 70.
    rain = next(x for x in comp.song if x.title == "Rainy Night")
    assert conn_call(srv, lambda c: c.get_lyrics_by_song_id(rain.id)) == []
    with pytest.raises(libopensonic.errors.SonicError):
        conn_call(srv, lambda c: c.get_lyrics_by_song_id("999999"))


def test_raw_json_keeps_arrays_for_single_values(srv):
    al = albums(srv)["Loudness"]
    body = api(srv, "getAlbum", id=al["id"])
    song = body["album"]["song"][0]
    assert song["artists"] == [{"id": song["artists"][0]["id"], "name": "Fay Quiet"}]
    assert song["genres"] == []
    assert song["replayGain"] == {"trackGain": -5.0}
    assert body["album"]["isCompilation"] is False
    lyr = api(srv, "getLyricsBySongId", id=song["id"])
    assert lyr["lyricsList"]["structuredLyrics"] == []


def test_raw_xml_has_child_elements_and_text_lines(srv):
    al = albums(srv)["Summer Hits"]
    root = api(srv, "getAlbum", fmt="xml", id=al["id"])
    album = root.find(f"{NS}album")
    assert album.get("isCompilation") == "true"
    sunny = next(s for s in album.findall(f"{NS}song") if s.get("title") == "Sunny Day")
    assert [a.get("name") for a in sunny.findall(f"{NS}artists")] == ["Cy Singer", "Dee Singer"]
    assert [g.get("name") for g in sunny.findall(f"{NS}genres")] == ["Pop", "Electronic"]
    assert sunny.find(f"{NS}replayGain").get("trackGain") == "-3.2"
    lyr = api(srv, "getLyricsBySongId", fmt="xml", id=sunny.get("id"))
    synced = [s for s in lyr.find(f"{NS}lyricsList").findall(f"{NS}structuredLyrics")
              if s.get("synced") == "true"][0]
    lines = [(l.get("start"), l.text) for l in synced.findall(f"{NS}line")]
    assert lines == [("500", "Sun comes up"), ("1250", "Sun goes down")]
    plain = api(srv, "getLyrics", fmt="xml", artist="Ann Artist", title="The Duet")
    assert plain.find(f"{NS}lyrics").text == "First plain line\nSecond plain line"
    genres = api(srv, "getGenres", fmt="xml").find(f"{NS}genres")
    names = sorted(g.text for g in genres.findall(f"{NS}genre"))
    assert names == ["Electronic", "Jazz", "Pop", "Rock"]


def test_extensions_list_song_lyrics(srv):
    exts = conn_call(srv, lambda c: c.get_open_subsonic_extensions())
    names = {e.name for e in exts}
    assert {"songLyrics", "formPost", "apiKeyAuthentication"} <= names
