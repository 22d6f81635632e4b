"""The web UI of a fresh `spindle serve --music DIR` in headless Chromium
(Debian's, driven over the DevTools protocol by tests/interop/browser.py):
it plays a WavPack file, and shows covers on the album grid and the album
page.

The music folder holds a WavPack album (sox makes a WAV, Debian's
`wavpack` CLI packs it, mutagen tags it), a FLAC album with a
`cover.jpg` and a FLAC album with an embedded picture (images made by
Pillow). APE is not tested: Debian packages no APE encoder
(monkeys-audio is not in Debian), and the web player treats APE and
WavPack alike (crates/app/src/transcode/format.rs).

Checked: the WavPack album plays in <audio> (its time passes 1 s, with no
media error) and /ui/stream/ID answers it as a transcode (audio/mpeg);
every cover <img> of an album with art has loaded (naturalWidth > 0),
asks for a size (`size=N` in its URL) and is decoded no larger than N,
with its longer side exactly N where the source is larger; the album
without art shows the placeholder. Screenshots go to SPINDLE_SCREENSHOTS,
or to a fresh temporary folder (printed). Run by scripts/ci.d/80-server.sh."""

import asyncio
import io
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)
pytest.importorskip("aiohttp")
mutagen_flac = pytest.importorskip("mutagen.flac")
mutagen_wavpack = pytest.importorskip("mutagen.wavpack")
Image = pytest.importorskip("PIL.Image")
import browser  # noqa: E402  (beside this file)

if not browser.chromium_binary():
    pytest.skip("chromium is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", str(ROOT / "target/release/spindle"))
PASSWORD = "pack s3cret"
SHOTS = os.environ.get("SPINDLE_SCREENSHOTS") or tempfile.mkdtemp(prefix="spindle-wv-shots-")
print(f"screenshots in {SHOTS}")

PACK_ALBUM, FOLDER_ALBUM, EMBEDDED_ALBUM = "Packed Tones", "Folder Art", "Embedded Art"
# Sources larger than every size the UI asks for (40, 128, 160, 300), so
# each resized cover's longer side is exactly the size asked.
FOLDER_SIZE, EMBEDDED_SIZE = (900, 600), (500, 500)


def image_bytes(size, color, fmt):
    img = Image.new("RGB", size, color)
    out = io.BytesIO()
    img.save(out, fmt)
    return out.getvalue()


def flac(path, artist, album, title, seconds=2, picture=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", str(path),
                    "synth", str(seconds), "sine", "440"], check=True)
    f = mutagen_flac.FLAC(str(path))
    f["artist"], f["albumartist"], f["album"], f["title"] = artist, artist, album, title
    f["tracknumber"] = "1"
    if picture is not None:
        pic = mutagen_flac.Picture()
        pic.type, pic.mime, pic.data = 3, "image/png", picture
        f.add_picture(pic)
    f.save()


def wavpack(path, artist, album, title, seconds=6):
    path.parent.mkdir(parents=True, exist_ok=True)
    wav = path.with_suffix(".wav")
    subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(wav),
                    "synth", str(seconds), "sine", "330"], check=True)
    subprocess.run(["wavpack", "-q", "-y", str(wav), "-o", str(path)], check=True)
    wav.unlink()
    f = mutagen_wavpack.WavPack(str(path))
    if f.tags is None:
        f.add_tags()
    f["Artist"], f["Album Artist"], f["Album"], f["Title"] = artist, artist, album, title
    f["Track"] = "1"
    f.save()
    assert path.read_bytes()[:4] == b"wvpk"


def make_corpus(music):
    for tool in ("sox", "wavpack"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")
    m = Path(music)
    wavpack(m / "Pack Band" / PACK_ALBUM / "01 Packed.wv", "Pack Band", PACK_ALBUM, "Packed")
    flac(m / "Art Band" / FOLDER_ALBUM / "01 Folder.flac", "Art Band", FOLDER_ALBUM, "Folder")
    (m / "Art Band" / FOLDER_ALBUM / "cover.jpg").write_bytes(
        image_bytes(FOLDER_SIZE, (30, 60, 220), "JPEG"))
    flac(m / "Art Band" / EMBEDDED_ALBUM / "01 Embedded.flac", "Art Band", EMBEDDED_ALBUM,
         "Embedded", picture=image_bytes(EMBEDDED_SIZE, (220, 30, 30), "PNG"))


@pytest.fixture(scope="module")
def base():
    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as music:
        make_corpus(music)
        env = dict(os.environ, HOME=data_dir, XDG_MUSIC_DIR="")
        proc = subprocess.Popen(
            [BIN, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0", "--music", music],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )
        try:
            url = None
            for _ in range(5):
                url = re.search(r"http://([0-9.]+:\d+)/", proc.stdout.readline())
                if url:
                    break
            assert url, "the server printed no URL"
            subprocess.run([BIN, "--data-dir", data_dir, "user", "add", "ann"],
                           input=PASSWORD + "\n", text=True, check=True, capture_output=True)
            yield f"http://{url.group(1)}/"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


async def log_in(p, base):
    await p.call("Page.navigate", url=base)
    await p.wait_for("!document.getElementById('login').hidden")
    await p.eval(f"""document.querySelector('[name=user]').value='ann';
                    document.querySelector('[name=password]').value={PASSWORD!r};
                    document.getElementById('login-form').requestSubmit(); true""")
    await p.wait_for("!document.getElementById('app').hidden")


async def open_album(p, name):
    """Opens the album called `name` from the album grid."""
    await p.eval("location.hash = '#/albums'; true")
    await p.wait_for("document.querySelectorAll('#album-grid li').length === 3")
    await p.eval(f"""[...document.querySelectorAll('#album-grid li a')]
                     .find(a => a.querySelector('.title').textContent === {name!r}).click(); true""")
    await p.wait_for(f"!document.getElementById('album').hidden && "
                     f"document.getElementById('album-title').textContent.startsWith({name!r})")
    await p.wait_for("document.querySelectorAll('#tracks li').length === 1")


# Every settled cover <img> in `root`: its album's title (on the grid),
# its URL, whether it failed, and its decoded size.
COVERS = """(async () => {
  const imgs = [...document.querySelectorAll(%s)];
  await Promise.all(imgs.map((i) => i.complete ? null : new Promise((ok) => {
    i.addEventListener('load', ok); i.addEventListener('error', ok); })));
  return imgs.map((i) => {
    const li = i.closest('li');
    const t = li && li.querySelector('.title');
    return { title: t ? t.textContent : null, src: i.currentSrc || i.src,
             missing: i.classList.contains('missing'),
             w: i.naturalWidth, h: i.naturalHeight };
  });
})()"""


def check_cover(c, source):
    """A cover <img> with art: loaded, asked for a size, no larger."""
    m = re.search(r"[?&]size=(\d+)", c["src"])
    assert m, f"the cover asks for no size: {c}"
    size = int(m.group(1))
    assert not c["missing"] and c["w"] > 0 and c["h"] > 0, f"not loaded: {c}"
    assert max(c["w"], c["h"]) <= size, f"larger than asked: {c}"
    # The source is larger than the size, so the longer side is the size,
    # and the aspect of the source is kept.
    assert max(c["w"], c["h"]) == size, f"not the size asked: {c}"
    want = size * min(source) // max(source)
    assert abs(min(c["w"], c["h"]) - want) <= 1, (c, source)


def test_the_web_ui_plays_a_wavpack_file_through_a_transcode(base):
    b = browser.Browser()

    async def scenario(p):
        await log_in(p, base)
        await open_album(p, PACK_ALBUM)
        await p.eval("document.getElementById('play-album').click(); true")
        await p.wait_for("document.getElementById('audio').currentTime > 1.2", timeout=40)
        state = await p.eval("""(() => { const a = document.getElementById('audio');
            return { src: a.currentSrc, error: a.error && a.error.code,
                     duration: a.duration }; })()""")
        assert re.search(r"/ui/stream/[^/?]+$", state["src"]), state
        assert state["error"] is None, state
        await p.screenshot(os.path.join(SHOTS, "wavpack-playing.png"))
        # The same URL, with the browser's session: an MP3 transcode, not
        # the WavPack bytes.
        head = await p.eval(f"""(async () => {{
            const r = await fetch({state['src']!r});
            const head = new Uint8Array(await r.arrayBuffer()).slice(0, 3);
            return {{ status: r.status, type: r.headers.get('content-type'),
                      head: [...head] }}; }})()""")
        assert head["status"] == 200, head
        assert head["type"] == "audio/mpeg", head
        # An MP3 stream starts with an ID3 tag or a frame sync.
        assert bytes(head["head"]) == b"ID3" or head["head"][0] == 0xFF, head
        assert head["head"][:3] != list(b"wvp"), head

    try:
        asyncio.run(browser.with_page(b, scenario))
    finally:
        b.close()


def test_covers_load_at_the_size_asked_on_the_album_grid_and_album_page(base):
    b = browser.Browser()
    sources = {FOLDER_ALBUM: FOLDER_SIZE, EMBEDDED_ALBUM: EMBEDDED_SIZE}

    async def scenario(p):
        await log_in(p, base)
        await p.eval("location.hash = '#/albums'; true")
        await p.wait_for("document.querySelectorAll('#album-grid li img.cover').length === 3")
        grid = await p.eval(COVERS % "'#album-grid img.cover'")
        await p.screenshot(os.path.join(SHOTS, "album-grid.png"), full=True)
        by_title = {c["title"]: c for c in grid}
        assert set(by_title) == {PACK_ALBUM, FOLDER_ALBUM, EMBEDDED_ALBUM}, grid
        for title, source in sources.items():
            check_cover(by_title[title], source)
        # No art: the placeholder, not a broken image.
        assert by_title[PACK_ALBUM]["missing"] and by_title[PACK_ALBUM]["w"] == 0, grid

        for title, source in sources.items():
            await open_album(p, title)
            await p.wait_for("document.getElementById('album-cover').complete")
            [page] = await p.eval(COVERS % "'#album-cover'")
            check_cover(page, source)
            # Its own cover, not the previous album's.
            assert (source[0] > source[1]) == (page["w"] > page["h"]), (title, page)
            await p.screenshot(os.path.join(SHOTS, f"album-{title}.png"))

    try:
        asyncio.run(browser.with_page(b, scenario))
    finally:
        b.close()
