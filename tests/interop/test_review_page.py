"""The web UI's "Year in review" page in headless Chromium: a history of
2023 submitted through the ListenBrainz API, then the page for 2023 shows
its listens, hours, top lists, busiest day and month and new artists.
Run by scripts/ci.d/80-server.sh, which installs Chromium."""

import asyncio
import json

import requests

from conftest import PASSWORD, cli, need_chromium
from stats_history import HISTORY

browser = need_chromium()

USER = "rev"


def test_the_review_page_shows_a_year(server):
    cli(server.data_dir, "user", "add", USER, stdin=PASSWORD + "\n")
    token = cli(server.data_dir, "user", "token", USER).strip()
    listens = [{"listened_at": at, "track_metadata": {
        "artist_name": a, "track_name": t, **({"release_name": al} if al else {}),
        "additional_info": {"duration_ms": sec * 1000} if sec else {}}}
        for a, t, at, al, sec in HISTORY]
    r = requests.post(server.url + "/1/submit-listens",
                      json={"listen_type": "import", "payload": listens},
                      headers={"Authorization": "Token " + token}, timeout=10)
    assert r.status_code == 200, r.text
    b = browser.Browser()

    async def scenario(p):
        await p.call("Page.navigate", url=server.url + "/")
        await p.wait_for("!document.getElementById('login').hidden")
        await p.eval(f"""document.querySelector('[name=user]').value={json.dumps(USER)};
                         document.querySelector('[name=password]').value={json.dumps(PASSWORD)};
                         document.getElementById('login-form').requestSubmit(); true""")
        await p.wait_for("!document.getElementById('app').hidden")
        await p.call("Page.navigate", url=server.url + "/#/review/2023")
        await p.wait_for("!document.getElementById('view-review').hidden")
        await p.wait_for("document.querySelectorAll('#review-artists li').length === 3")

        async def text(i):
            return await p.eval(f"document.getElementById({i!r}).textContent")

        assert await text("review-summary") == "10 listens, 0.4 hours."
        busiest = await text("review-busiest")
        assert "2023-03-06 (4)" in busiest and "2023-03 (5)" in busiest, busiest
        assert (await text("review-artists")).startswith("Alpha — 6")
        assert await text("review-new-count") == "2"
        assert await p.eval("document.getElementById('review-year').value") == "2023"

    try:
        asyncio.run(browser.with_page(b, scenario))
    finally:
        b.close()
