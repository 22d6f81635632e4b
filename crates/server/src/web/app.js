// Spindle's web UI: plain JavaScript, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const CSRF = { "X-Spindle-Csrf": "1", "Content-Type": "application/json" };
let queue = [];
let current = -1;

async function api(path, opts) {
  const r = await fetch(path, Object.assign({ credentials: "same-origin" }, opts || {}));
  const body = await r.json().catch(() => ({}));
  return { ok: r.ok, status: r.status, body };
}

function fmtTime(s) {
  if (s == null) return "";
  return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
}

function li(text, onclick) {
  const e = document.createElement("li");
  e.textContent = text;
  if (onclick) e.addEventListener("click", onclick);
  return e;
}

async function start() {
  const me = await api("/ui/api/me");
  if (!me.ok) {
    $("login").hidden = false;
    $("app").hidden = true;
    $("logout").hidden = true;
    $("who").textContent = "";
    return;
  }
  $("login").hidden = true;
  $("app").hidden = false;
  $("logout").hidden = false;
  $("who").textContent = me.body.user;
  search("");
  recent();
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

$("logout").addEventListener("click", async () => {
  await api("/ui/logout", { method: "POST", headers: CSRF });
  start();
});

async function search(q) {
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
  $("album").hidden = true;
  $("results").hidden = false;
  const albums = $("albums");
  albums.replaceChildren(...r.body.albums.map((a) =>
    li(`${a.name} — ${a.artist}${a.year ? " (" + a.year + ")" : ""}`, () => openAlbum(a.id))));
  const songs = $("songs");
  songs.replaceChildren(...r.body.songs.map((s, i) =>
    li(`${s.title} — ${s.artist} · ${s.album} ${fmtTime(s.duration)}`,
       () => play(r.body.songs, i))));
  $("total").textContent = `(${r.body.total})`;
}

$("search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  search($("q").value);
});

async function openAlbum(id) {
  const r = await api("/ui/api/album/" + encodeURIComponent(id));
  if (!r.ok) return;
  $("results").hidden = true;
  $("album").hidden = false;
  $("album-title").textContent = r.body.name + (r.body.year ? ` (${r.body.year})` : "");
  $("album-artist").textContent = r.body.artist;
  $("tracks").replaceChildren(...r.body.tracks.map((s, i) =>
    li(`${s.title} ${fmtTime(s.duration)}`, () => play(r.body.tracks, i))));
  $("play-album").onclick = () => play(r.body.tracks, 0);
}

$("back").addEventListener("click", () => {
  $("album").hidden = true;
  $("results").hidden = false;
});

function play(list, i) {
  queue = list.slice();
  current = i;
  playCurrent();
}

function playCurrent() {
  const s = queue[current];
  if (!s) return;
  const audio = $("audio");
  audio.src = "/ui/stream/" + s.id;
  audio.play().catch(() => {});
  $("now").textContent = `${s.title} — ${s.artist}`;
  $("queue").replaceChildren(...queue.map((q, n) => {
    const e = li(q.title, () => { current = n; playCurrent(); });
    if (n === current) e.className = "playing";
    return e;
  }));
}

$("audio").addEventListener("ended", () => {
  if (current + 1 < queue.length) {
    current += 1;
    playCurrent();
  }
});

async function recent() {
  const r = await api("/ui/api/recent");
  if (!r.ok) return;
  $("recent").replaceChildren(...r.body.listens.map((l) =>
    li(`${l.title} — ${l.artist} · ${new Date(l.at * 1000).toLocaleString()}`)));
}

start();
