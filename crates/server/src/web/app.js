// Spindle's web UI: plain JavaScript, no build step. Pages are hash
// routes (#/, #/artists, #/artist/ID, #/album/ID, #/charts); the queue
// lives in this browser (localStorage); now playing, recent listens and
// the charts come from the server.
"use strict";

const $ = (id) => document.getElementById(id);
const CSRF = { "X-Spindle-Csrf": "1", "Content-Type": "application/json" };
const VIEWS = ["view-search", "album", "view-artists", "artist", "view-charts"];
let queue = [];
let current = -1;
let loggedIn = false;
let artistsCache = null;
// The play being listened to, for the scrobble rule.
let play = null;

async function api(path, opts) {
  const r = await fetch(path, Object.assign({ credentials: "same-origin" }, opts || {}));
  const body = await r.json().catch(() => ({}));
  if (r.status === 401 && loggedIn) {
    loggedIn = false;
    start();
  }
  return { ok: r.ok, status: r.status, body };
}

function fmtTime(s) {
  if (s == null) return "";
  return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
}

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, props || {});
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function btn(label, title, onclick) {
  const b = el("button", { type: "button", className: "small", textContent: label, title });
  b.setAttribute("aria-label", title);
  b.addEventListener("click", (ev) => { ev.stopPropagation(); onclick(); });
  return b;
}

function link(text, hash) {
  return el("a", { href: hash, textContent: text });
}

// A song row: click plays `list` from this song; "+" adds it to the queue.
function songRow(list, i, text) {
  const s = list[i];
  const row = el("li", { className: "song" },
    el("span", { className: "name", textContent: text }),
    btn("+", `Add ${s.title} to the queue`, () => enqueue([s])));
  row.addEventListener("click", () => playList(list, i));
  return row;
}

async function start() {
  const me = await api("/ui/api/me");
  loggedIn = me.ok;
  $("login").hidden = me.ok;
  $("app").hidden = !me.ok;
  $("nav").hidden = !me.ok;
  $("logout").hidden = !me.ok;
  $("privacy").hidden = !me.ok;
  $("who").textContent = me.ok ? me.body.user : "";
  if (!me.ok) return;
  const priv = await api("/ui/api/me/privacy");
  $("public").checked = priv.ok && priv.body.public;
  loadQueue();
  route();
  refreshActivity();
}

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target);
  $("login-error").textContent = "";
  const r = await api("/ui/login", {
    method: "POST",
    headers: CSRF,
    body: JSON.stringify({ user: f.get("user"), password: f.get("password") }),
  });
  if (!r.ok) {
    $("login-error").textContent = r.body.error || "login failed";
    return;
  }
  start();
});

// Whether the listening history is public (see /ui/api/me/privacy).
$("public").addEventListener("change", async (ev) => {
  const want = ev.target.checked;
  const r = await api("/ui/api/me/privacy", {
    method: "POST",
    headers: CSRF,
    body: JSON.stringify({ public: want }),
  });
  ev.target.checked = r.ok ? r.body.public : !want;
});

$("logout").addEventListener("click", async () => {
  await api("/ui/logout", { method: "POST", headers: CSRF });
  $("audio").pause();
  start();
});

// ---- pages ----

function show(id) {
  for (const v of VIEWS) $(v).hidden = v !== id;
  const nav = { "view-search": "search", album: "search", "view-artists": "artists",
                artist: "artists", "view-charts": "charts" }[id];
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.view === nav) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

let searched = false;
function route() {
  if (!loggedIn) return;
  const h = decodeURIComponent(location.hash.replace(/^#\/?/, ""));
  const [page, ...rest] = h.split("/");
  const arg = rest.join("/");
  if (page === "album" && arg) openAlbum(arg);
  else if (page === "artist" && arg) openArtist(arg);
  else if (page === "artists") openArtists();
  else if (page === "charts") openCharts();
  else {
    show("view-search");
    if (!searched) search("");
  }
}
window.addEventListener("hashchange", route);

async function search(q) {
  searched = true;
  const r = await api("/ui/api/search?q=" + encodeURIComponent(q));
  const err = $("query-error");
  if (!r.ok) {
    // A parse error points at its column.
    if (r.body.column) {
      err.textContent = q + "\n" + " ".repeat(r.body.column - 1) + "^ " + r.body.error;
    } else {
      err.textContent = r.body.error || "search failed";
    }
    err.hidden = false;
    return;
  }
  err.hidden = true;
  $("albums").replaceChildren(...r.body.albums.map((a) => {
    const row = el("li", {},
      el("span", { className: "name",
                   textContent: `${a.name} — ${a.artist}${a.year ? " (" + a.year + ")" : ""}` }));
    row.addEventListener("click", () => { location.hash = "#/album/" + a.id; });
    return row;
  }));
  const songs = r.body.songs;
  $("songs").replaceChildren(...songs.map((s, i) =>
    songRow(songs, i, `${s.title} — ${s.artist} · ${s.album} ${fmtTime(s.duration)}`)));
  $("total").textContent = `(${r.body.total})`;
}

$("search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  if (location.hash.replace(/^#\/?/, "") !== "") location.hash = "#/";
  show("view-search");
  search($("q").value);
});

async function openAlbum(id) {
  const r = await api("/ui/api/album/" + encodeURIComponent(id));
  if (!r.ok) return;
  show("album");
  const a = r.body;
  $("album-title").textContent = a.name + (a.year ? ` (${a.year})` : "");
  $("album-artist").textContent = a.artist;
  $("album-artist").href = "#/artist/" + a.artist_id;
  $("tracks").replaceChildren(...a.tracks.map((s, i) =>
    songRow(a.tracks, i, `${s.track ? s.track + ". " : ""}${s.title} ${fmtTime(s.duration)}`)));
  $("play-album").onclick = () => playList(a.tracks, 0);
  $("queue-album").onclick = () => enqueue(a.tracks);
}

async function openArtists() {
  show("view-artists");
  const r = await api("/ui/api/artists");
  if (!r.ok) return;
  artistsCache = r.body.artists;
  drawArtists();
}

function drawArtists() {
  const list = artistsCache.slice();
  if ($("artists-sort").value === "listens") {
    list.sort((a, b) => b.listens - a.listens || a.name.localeCompare(b.name));
  }
  $("artists-count").textContent = `(${list.length})`;
  $("artists").replaceChildren(...list.map((a) => el("li", {},
    link(a.name, "#/artist/" + a.id),
    el("small", { textContent:
      ` ${a.albums} album${a.albums === 1 ? "" : "s"} · ${a.songs} songs · ${a.listens} listens` }))));
}
$("artists-sort").addEventListener("change", () => artistsCache && drawArtists());

async function openArtist(id) {
  const r = await api("/ui/api/artist/" + encodeURIComponent(id));
  if (!r.ok) return;
  show("artist");
  const a = r.body;
  $("artist-name").textContent = a.name;
  $("artist-listens").textContent = `${a.listens} listen${a.listens === 1 ? "" : "s"} by you`;
  const top = a.top_tracks;
  const max = Math.max(1, ...top.map((t) => t.listens));
  const playable = top.filter((t) => t.song).map((t) => t.song);
  $("artist-top").replaceChildren(...(top.length ? top.map((t) => {
    const bar = el("span", { className: "meter" });
    bar.style.width = (100 * t.listens / max) + "%";
    const row = el("li", { className: "song" + (t.song ? "" : " absent") },
      el("span", { className: "rank", textContent: t.rank }),
      el("span", { className: "name", textContent: t.title }),
      el("span", { className: "meter-box" }, bar),
      el("span", { className: "count", textContent: `${t.listens}` }),
      t.song ? btn("+", `Add ${t.title} to the queue`, () => enqueue([t.song])) : null);
    if (t.song) row.addEventListener("click", () => playList(playable, playable.indexOf(t.song)));
    else row.title = "not in the library";
    return row;
  }) : [el("li", { className: "empty", textContent: "No listens yet" })]));
  $("artist-albums").replaceChildren(...a.albums.map((al) => el("li", {},
    link(al.name + (al.year ? ` (${al.year})` : ""), "#/album/" + al.id),
    el("small", { textContent: ` ${al.songs} songs ` }),
    btn("Play", `Play ${al.name}`, () => playList(al.tracks, 0)),
    btn("+ Queue", `Add ${al.name} to the queue`, () => enqueue(al.tracks)))));
}

// ---- charts ----

function periodQuery() {
  const f = new FormData($("period-form"));
  const p = f.get("period");
  let q = "period=" + encodeURIComponent(p);
  if (p === "range") {
    q += "&from=" + encodeURIComponent(f.get("from")) + "&to=" + encodeURIComponent(f.get("to"));
  }
  return q;
}

async function drawChart(box, url) {
  const r = await fetch(url, { credentials: "same-origin" });
  const text = await r.text();
  if (!r.ok) {
    let msg = text;
    try { msg = JSON.parse(text).error; } catch (e) { /* plain text */ }
    $("chart-error").textContent = msg;
    $("chart-error").hidden = false;
    return;
  }
  // The server escapes every name; parsed as SVG, nothing in it runs.
  const svg = new DOMParser().parseFromString(text, "image/svg+xml").documentElement;
  $(box).replaceChildren(document.importNode(svg, true));
}

function openCharts() {
  show("view-charts");
  $("chart-error").hidden = true;
  const q = periodQuery();
  drawChart("chart-listens", "/ui/chart/listens.svg?" + q);
  drawChart("chart-artists", "/ui/chart/artists.svg?" + q);
  drawChart("chart-albums", "/ui/chart/albums.svg?" + q);
}

$("period-form").addEventListener("submit", (ev) => { ev.preventDefault(); openCharts(); });
$("period-form").addEventListener("change", (ev) => {
  if (ev.target.name === "from" || ev.target.name === "to") {
    $("period-form").querySelector("[value=range]").checked = true;
  }
  if (ev.target.name === "period" && ev.target.value !== "range") openCharts();
});

// ---- the queue and the player ----

function saveQueue() {
  try {
    localStorage.setItem("spindle-queue", JSON.stringify({ queue, current }));
  } catch (e) { /* private mode: the queue lasts this page */ }
}

function loadQueue() {
  try {
    const s = JSON.parse(localStorage.getItem("spindle-queue") || "null");
    if (s && Array.isArray(s.queue)) { queue = s.queue; current = s.current; }
  } catch (e) { queue = []; current = -1; }
  drawQueue();
}

function drawQueue() {
  $("queue-count").textContent = queue.length ? `(${queue.length})` : "";
  $("queue").replaceChildren(...queue.map((q, n) => {
    const row = el("li", { className: n === current ? "playing" : "" },
      el("span", { className: "name", textContent: `${q.title} — ${q.artist}` }),
      btn("×", `Remove ${q.title} from the queue`, () => removeAt(n)));
    row.addEventListener("click", () => { current = n; playCurrent(); });
    return row;
  }));
  $("prev").disabled = current <= 0;
  $("next").disabled = current + 1 >= queue.length;
  saveQueue();
}

function playList(list, i) {
  queue = list.slice();
  current = i;
  playCurrent();
}

// Adds to the end of the queue; "Next" (or the end of the track playing)
// reaches them.
function enqueue(songs) {
  queue.push(...songs);
  drawQueue();
}

function removeAt(n) {
  queue.splice(n, 1);
  if (n < current) current -= 1;
  else if (n === current) {
    if (current < queue.length) playCurrent();
    else { current = queue.length - 1; $("audio").pause(); }
  }
  drawQueue();
}

function step(d) {
  const n = current + d;
  if (n >= 0 && n < queue.length) { current = n; playCurrent(); }
}
$("prev").addEventListener("click", () => step(-1));
$("next").addEventListener("click", () => step(1));
$("clear-queue").addEventListener("click", () => {
  queue = []; current = -1; $("audio").pause(); drawQueue();
});

function playCurrent() {
  const s = queue[current];
  if (!s) return;
  const audio = $("audio");
  audio.src = "/ui/stream/" + s.id;
  audio.play().catch(() => {});
  $("now").textContent = `In the player: ${s.title} — ${s.artist}`;
  play = { song: s, started: Math.floor(Date.now() / 1000), heard: 0, last: null, sent: false };
  drawQueue();
}

async function report(song, scrobble, at) {
  const r = await api("/ui/api/playing", {
    method: "POST",
    headers: CSRF,
    body: JSON.stringify({ id: song.id, scrobble, at }),
  });
  if (r.ok) refreshActivity();
}

const audio = $("audio");
audio.addEventListener("playing", () => {
  if (play && !play.announced) { play.announced = true; report(play.song, false); }
});
// A listen counts once half the track (or 4 minutes) has been heard, for
// tracks over 30 s: the Last.fm rule every Spindle scrobbler follows.
audio.addEventListener("timeupdate", () => {
  if (!play) return;
  const t = audio.currentTime;
  if (play.last != null && t > play.last && t - play.last < 2) play.heard += t - play.last;
  play.last = t;
  const d = audio.duration;
  if (!play.sent && isFinite(d) && d > 30 && play.heard >= Math.min(d / 2, 240)) {
    play.sent = true;
    report(play.song, true, play.started);
  }
});
audio.addEventListener("seeking", () => { if (play) play.last = null; });
audio.addEventListener("ended", () => step(1));

// ---- now playing and recent listens ----

function when(secs) {
  return new Date(secs * 1000).toLocaleString([], { dateStyle: "short", timeStyle: "short" });
}

async function refreshActivity() {
  if (!loggedIn) return;
  const [now, recent] = await Promise.all([api("/ui/api/now"), api("/ui/api/recent")]);
  if (now.ok) {
    const n = now.body.now_playing;
    $("now-playing").textContent = n
      ? `${n.title} — ${n.artist}${n.album ? " · " + n.album : ""}${n.client ? " (" + n.client + ")" : ""}`
      : "Nothing";
  }
  if (recent.ok) {
    $("recent-count").textContent = `(${recent.body.total})`;
    $("recent").replaceChildren(...recent.body.listens.map((l) =>
      el("li", { textContent: `${l.title} — ${l.artist} · ${when(l.at)}` })));
  }
}
setInterval(() => { if (!document.hidden) refreshActivity(); }, 5000);

start();
