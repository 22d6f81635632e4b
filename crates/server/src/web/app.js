// Spindle's web UI: plain JavaScript, no build step. Pages are hash
// routes (#/, #/albums, #/artists, #/artist/ID, #/album/ID, #/playlists,
// #/playlist/ID, #/starred, #/charts, #/review, #/settings, #/admin); the queue lives in this
// browser (localStorage); now playing, recent listens, playlists, stars,
// ratings and the charts come from the server. Every URL is relative
// ("ui/…"), so the page works under a path prefix (a reverse proxy's
// /music/) as well as at /.
"use strict";

const $ = (id) => document.getElementById(id);
const CSRF = { "X-Spindle-Csrf": "1", "Content-Type": "application/json" };
const VIEWS = ["view-search", "album", "view-albums", "view-artists", "artist", "view-charts",
               "view-playlists", "playlist", "view-starred", "view-admin", "view-settings",
               "view-review"];
let queue = [];
let current = -1;
let loggedIn = false;
let isAdmin = false;
// The ids the user starred (songs, al-… albums, ar-… artists).
let starredIds = new Set();
let artistsCache = null;
// The play being listened to, for the scrobble rule.
let play = null;

// "/ui/x" → "ui/x": relative to the page, wherever it is mounted.
const rel = (path) => path.replace(/^\//, "");

async function api(path, opts) {
  const r = await fetch(rel(path), Object.assign({ credentials: "same-origin" }, opts || {}));
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

function post(path, body) {
  return api(path, { method: "POST", headers: CSRF, body: JSON.stringify(body || {}) });
}

// A cover picture, loaded when it scrolls into view; a missing one shows
// the placeholder background instead of a broken image.
function cover(id, size, cls) {
  const img = el("img", { className: "cover " + (cls || ""), alt: "", loading: "lazy",
                          width: size, height: size });
  img.addEventListener("error", () => img.classList.add("missing"));
  img.src = "ui/cover/" + encodeURIComponent(id) + "?size=" + size;
  return img;
}

// A star toggle for a song, album or artist id.
function starButton(id, label) {
  const b = el("button", { type: "button", className: "small star" });
  const draw = () => {
    const on = starredIds.has(id);
    b.textContent = on ? "★" : "☆";
    b.setAttribute("aria-pressed", on ? "true" : "false");
    b.title = (on ? "Unstar " : "Star ") + label;
    b.setAttribute("aria-label", b.title);
  };
  draw();
  b.addEventListener("click", async (ev) => {
    ev.stopPropagation();
    const on = !starredIds.has(id);
    const r = await post("/ui/api/star", { id, on });
    if (r.ok) { if (on) starredIds.add(id); else starredIds.delete(id); }
    draw();
  });
  return b;
}

// Five buttons that set a rating (clicking the current one clears it).
function ratingWidget(id, value, label) {
  const box = el("span", { className: "rating" });
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", "Rating of " + label);
  let current = value || 0;
  const draw = () => box.querySelectorAll("button").forEach((b, i) => {
    b.textContent = i < current ? "●" : "○";
    b.setAttribute("aria-pressed", i + 1 === current ? "true" : "false");
  });
  for (let n = 1; n <= 5; n++) {
    const b = el("button", { type: "button", className: "small", title: `${n} of 5` });
    b.setAttribute("aria-label", `Rate ${label} ${n} of 5`);
    b.dataset.rating = n;
    b.addEventListener("click", async (ev) => {
      ev.stopPropagation();
      const want = current === n ? 0 : n;
      const r = await post("/ui/api/rating", { id, rating: want });
      if (r.ok) { current = want; draw(); }
    });
    box.append(b);
  }
  draw();
  return box;
}

async function loadStars() {
  const r = await api("/ui/api/starred");
  if (r.ok) starredIds = new Set(r.body.ids);
}

// ---- first run ----

async function showSetup() {
  const s = await api("/ui/api/setup");
  if (!s.ok || !s.body.needed) return false;
  $("setup").hidden = false;
  $("login").hidden = true;
  $("setup-code-label").hidden = s.body.local;
  return true;
}

$("setup-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target);
  $("setup-error").textContent = "";
  if (f.get("password") !== f.get("again")) {
    $("setup-error").textContent = "the passwords differ";
    return;
  }
  const r = await post("/ui/setup", { user: f.get("user"), password: f.get("password"),
                                      code: f.get("code") || "" });
  if (!r.ok) {
    $("setup-error").textContent = r.body.error || "could not create the user";
    if (r.status === 409) start();
    return;
  }
  $("setup").hidden = true;
  start();
});

async function start() {
  const me = await api("/ui/api/me");
  loggedIn = me.ok;
  isAdmin = me.ok && !!me.body.admin;
  $("setup").hidden = true;
  if (!me.ok && await showSetup()) {
    for (const id of ["app", "nav", "logout", "privacy"]) $(id).hidden = true;
    return;
  }
  $("nav-admin").hidden = !isAdmin;
  $("login").hidden = me.ok;
  $("app").hidden = !me.ok;
  $("nav").hidden = !me.ok;
  $("logout").hidden = !me.ok;
  $("privacy").hidden = !me.ok;
  $("who").textContent = me.ok ? me.body.user : "";
  if (!me.ok) return;
  const priv = await api("/ui/api/me/privacy");
  $("public").checked = priv.ok && priv.body.public;
  await loadStars();
  loadQueue();
  route();
  refreshActivity();
}

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target);
  $("login-error").textContent = "";
  const r = await post("/ui/login", { user: f.get("user"), password: f.get("password") });
  if (!r.ok) {
    $("login-error").textContent = r.body.error || "login failed";
    return;
  }
  start();
});

// Whether the listening history is public (see /ui/api/me/privacy).
$("public").addEventListener("change", async (ev) => {
  const want = ev.target.checked;
  const r = await post("/ui/api/me/privacy", { public: want });
  ev.target.checked = r.ok ? r.body.public : !want;
});

$("logout").addEventListener("click", async () => {
  await post("/ui/logout");
  $("audio").pause();
  start();
});

// ---- pages ----

function show(id) {
  for (const v of VIEWS) $(v).hidden = v !== id;
  const nav = { "view-search": "search", album: "albums", "view-albums": "albums",
                "view-artists": "artists", artist: "artists", "view-charts": "charts",
                "view-playlists": "playlists", playlist: "playlists", "view-starred": "starred",
                "view-admin": "admin", "view-settings": "settings",
                "view-review": "review" }[id];
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
  else if (page === "albums") openAlbums();
  else if (page === "playlists") openPlaylists();
  else if (page === "playlist" && arg) openPlaylist(arg);
  else if (page === "starred") openStarred();
  else if (page === "admin" && isAdmin) openAdmin();
  else if (page === "settings") openSettings();
  else if (page === "charts") openCharts();
  else if (page === "review") openReview(arg);
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
    const row = el("li", {}, cover(a.id, 40, "tiny"),
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
  const img = $("album-cover");
  img.classList.remove("missing");
  img.onerror = () => img.classList.add("missing");
  img.src = "ui/cover/" + encodeURIComponent(a.id) + "?size=300";
  $("album-star").replaceChildren(starButton(a.id, a.name));
  $("album-rating").replaceChildren(ratingWidget(a.id, a.rating, a.name));
  $("tracks").replaceChildren(...a.tracks.map((s, i) => {
    const row = songRow(a.tracks, i, `${s.track ? s.track + ". " : ""}${s.title} ${fmtTime(s.duration)}`);
    row.append(starButton(String(s.id), s.title), ratingWidget(String(s.id), s.rating, s.title),
               addToPlaylistButton([s]));
    return row;
  }));
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

// ---- albums ----

async function openAlbums() {
  show("view-albums");
  const r = await api("/ui/api/search?q=");
  if (!r.ok) return;
  const albums = r.body.albums;
  $("albums-count").textContent = `(${albums.length})`;
  $("album-grid").replaceChildren(...albums.map((a) => el("li", {},
    el("a", { href: "#/album/" + a.id }, cover(a.id, 160),
       el("span", { className: "title", textContent: a.name }),
       el("small", { textContent: a.artist + (a.year ? ` · ${a.year}` : "") })))));
}

// ---- playlists ----

let playlistsCache = [];

async function loadPlaylists() {
  const r = await api("/ui/api/playlists");
  playlistsCache = r.ok ? r.body.playlists : [];
  return playlistsCache;
}

// "+ List": adds songs to a playlist of the user's, chosen from a menu.
function addToPlaylistButton(songs) {
  const sel = el("select", { className: "small add-to-playlist" });
  sel.setAttribute("aria-label", "Add to a playlist");
  sel.append(el("option", { value: "", textContent: "+ list" }));
  sel.addEventListener("click", (ev) => ev.stopPropagation());
  sel.addEventListener("focus", async () => {
    if (sel.options.length > 1) return;
    for (const p of (await loadPlaylists()).filter((p) => p.mine)) {
      sel.append(el("option", { value: p.id, textContent: p.name }));
    }
  });
  sel.addEventListener("change", async () => {
    const id = sel.value;
    sel.value = "";
    if (!id) return;
    const cur = await api("/ui/api/playlist/" + id);
    if (!cur.ok) return;
    await post("/ui/api/playlist/" + id,
               { songs: cur.body.tracks.map((t) => t.id).concat(songs.map((s) => s.id)) });
  });
  return sel;
}

async function openPlaylists() {
  show("view-playlists");
  const list = await loadPlaylists();
  $("playlists").replaceChildren(...(list.length ? list.map((p) => el("li", {},
    link(p.name, "#/playlist/" + p.id),
    el("small", { textContent: ` ${p.songs} songs${p.mine ? "" : " · by " + p.owner}` })))
    : [el("li", { className: "empty", textContent: "No playlists yet" })]));
}

async function createPlaylist(name, songs) {
  const r = await post("/ui/api/playlists", { name, songs });
  $("playlist-error").textContent = r.ok ? "" : (r.body.error || "could not create it");
  if (r.ok) location.hash = "#/playlist/" + r.body.id;
}

$("playlist-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const name = new FormData(ev.target).get("name");
  ev.target.reset();
  createPlaylist(name, []);
});
$("playlist-from-queue").addEventListener("click", () => {
  const name = $("playlist-form").elements.name.value || "Queue " + new Date().toLocaleDateString();
  createPlaylist(name, queue.map((s) => s.id));
});

async function savePlaylist(id, tracks) {
  await post("/ui/api/playlist/" + id, { songs: tracks.map((t) => t.id) });
  openPlaylist(id);
}

async function openPlaylist(id) {
  const r = await api("/ui/api/playlist/" + encodeURIComponent(id));
  if (!r.ok) return;
  show("playlist");
  const p = r.body;
  const tracks = p.tracks;
  $("playlist-name").textContent = p.name;
  $("playlist-info").textContent = `${tracks.length} songs` + (p.mine ? "" : ` · by ${p.owner}`);
  $("play-playlist").onclick = () => tracks.length && playList(tracks, 0);
  $("rename-playlist").hidden = $("delete-playlist").hidden = !p.mine;
  $("rename-playlist").onclick = async () => {
    const name = prompt("New name", p.name);
    if (name) { await post("/ui/api/playlist/" + id, { name }); openPlaylist(id); }
  };
  $("delete-playlist").onclick = async () => {
    if (!confirm(`Delete the playlist ${p.name}?`)) return;
    const d = await post("/ui/api/playlist/" + id + "/delete");
    if (d.ok) location.hash = "#/playlists";
  };
  $("playlist-tracks").replaceChildren(...tracks.map((s, i) => {
    const row = songRow(tracks, i, `${s.title} — ${s.artist} ${fmtTime(s.duration)}`);
    if (p.mine) {
      const moved = (d) => {
        const t = tracks.slice();
        const [x] = t.splice(i, 1);
        t.splice(i + d, 0, x);
        savePlaylist(id, t);
      };
      if (i > 0) row.append(btn("↑", `Move ${s.title} up`, () => moved(-1)));
      if (i + 1 < tracks.length) row.append(btn("↓", `Move ${s.title} down`, () => moved(1)));
      row.append(btn("×", `Remove ${s.title} from the playlist`,
                     () => savePlaylist(id, tracks.filter((_, n) => n !== i))));
    }
    return row;
  }));
}

// ---- starred ----

async function openStarred() {
  show("view-starred");
  const r = await api("/ui/api/starred");
  if (!r.ok) return;
  starredIds = new Set(r.body.ids);
  const songs = r.body.songs;
  $("starred-songs").replaceChildren(...(songs.length ? songs.map((s, i) => {
    const row = songRow(songs, i, `${s.title} — ${s.artist} · ${s.album}`);
    row.append(starButton(String(s.id), s.title));
    return row;
  }) : [el("li", { className: "empty", textContent: "Nothing starred yet: ☆ on an album page" })]));
}

// ---- administration (shown to administrators only; the server checks) ----

function adminError(r) {
  $("admin-error").textContent = r.ok ? "" : (r.body.error || "refused");
  return r.ok;
}

async function openAdmin() {
  show("view-admin");
  const [users, folders, sessions, keys] = await Promise.all([
    api("/ui/api/admin/users"), api("/ui/api/admin/folders"), api("/ui/api/admin/sessions"),
    api("/ui/api/admin/apikeys")]);
  if (!adminError(users)) return;
  const fl = folders.ok ? folders.body.folders : [];
  $("admin-folders").replaceChildren(...fl.map((f) =>
    el("li", { textContent: `${f.id}: ${f.path}` })));
  $("admin-users").tBodies[0].replaceChildren(...users.body.users.map((u) => {
    const role = el("select", {});
    role.setAttribute("aria-label", `Role of ${u.name}`);
    for (const v of ["user", "admin"]) role.append(el("option", { value: v, textContent: v }));
    role.value = u.admin ? "admin" : "user";
    role.addEventListener("change", async () => {
      adminError(await post("/ui/api/admin/user/" + encodeURIComponent(u.name),
                            { admin: role.value === "admin" }));
      openAdmin();
    });
    const grants = el("span", { className: "grants" });
    for (const f of fl) {
      const cb = el("input", { type: "checkbox", checked: !u.folders.length || u.folders.includes(f.id) });
      cb.setAttribute("aria-label", `${u.name} may see folder ${f.id}`);
      cb.addEventListener("change", async () => {
        const on = [...grants.querySelectorAll("input")].map((c, n) => c.checked ? fl[n].id : 0)
          .filter((x) => x);
        adminError(await post("/ui/api/admin/user/" + encodeURIComponent(u.name),
                              { folders: on.length === fl.length ? [] : on }));
      });
      grants.append(el("label", {}, cb, String(f.id)));
    }
    const actions = el("span", {},
      btn("Password", `New password for ${u.name}`, async () => {
        const pw = prompt(`New password for ${u.name}`);
        if (pw) adminError(await post("/ui/api/admin/user/" + encodeURIComponent(u.name) + "/password",
                                      { password: pw }));
      }),
      btn("Token", `New ListenBrainz token for ${u.name}`, async () => {
        if (!confirm(`Make a new ListenBrainz token for ${u.name}? The old one stops working.`)) return;
        const r = await post("/ui/api/admin/user/" + encodeURIComponent(u.name) + "/token");
        if (adminError(r)) alert(`New token for ${u.name} (shown once):\n${r.body.token}`);
      }),
      btn("Delete", `Delete ${u.name}`, async () => {
        if (!confirm(`Delete ${u.name}? Their listening history stays.`)) return;
        adminError(await post("/ui/api/admin/user/" + encodeURIComponent(u.name) + "/delete"));
        openAdmin();
      }));
    return el("tr", { className: "user-row" }, el("td", { textContent: u.name }), el("td", {}, role),
              el("td", {}, grants), el("td", { textContent: String(u.web_sessions) }),
              el("td", {}, actions));
  }));
  $("admin-sessions").tBodies[0].replaceChildren(...(sessions.ok ? sessions.body.web : []).map((s) =>
    el("tr", {}, el("td", { textContent: s.user }), el("td", { textContent: s.agent }),
       el("td", { textContent: s.ip || "" }), el("td", { textContent: when(s.last_use) }),
       el("td", {}, btn("Revoke", `End the session of ${s.user}`, async () => {
         adminError(await post("/ui/api/admin/sessions/revoke", { handle: s.handle }));
         openAdmin();
       })))));
  const revoke = (kind, handle, what) => btn("Revoke", what, async () => {
    adminError(await post("/ui/api/admin/sessions/revoke", { handle, kind }));
    openAdmin();
  });
  $("admin-lastfm").tBodies[0].replaceChildren(...(sessions.ok ? sessions.body.lastfm : []).map((s) =>
    el("tr", {}, el("td", { textContent: s.user }), el("td", {}, el("code", { textContent: s.handle })),
       el("td", { textContent: s.api_key }), el("td", { textContent: when(s.created) }),
       el("td", {}, revoke("lastfm", s.handle, `Revoke the Last.fm session key ${s.handle} of ${s.user}`)))));
  $("admin-apps").tBodies[0].replaceChildren(...(sessions.ok ? sessions.body.apps : []).map((k) =>
    el("tr", {}, el("td", { textContent: k.user }), el("td", { textContent: k.app }),
       el("td", {}, el("code", { textContent: k.id })), el("td", { textContent: when(k.created) }),
       el("td", {}, revoke("app", k.id, `Revoke the API key ${k.id} (${k.app}) of ${k.user}`)))));
  $("admin-apikeys").tBodies[0].replaceChildren(...(keys.ok ? keys.body.keys : []).map((k) =>
    el("tr", {}, el("td", {}, el("code", { textContent: k.api_key })), el("td", { textContent: k.name }),
       el("td", { textContent: String(k.sessions) }), el("td", { textContent: when(k.created) }),
       el("td", {}, btn("Delete", `Delete the Last.fm API key ${k.name || k.api_key}`, async () => {
         if (k.sessions && !confirm(`Its ${k.sessions} session key(s) end with it. Delete?`)) return;
         adminError(await post("/ui/api/admin/apikeys/delete", { api_key: k.api_key }));
         openAdmin();
       })))));
  refreshScan();
}

$("add-user-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target);
  const r = await post("/ui/api/admin/users",
                       { name: f.get("name"), password: f.get("password"), admin: !!f.get("admin") });
  if (adminError(r)) { ev.target.reset(); openAdmin(); }
});

$("apikey-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const r = await post("/ui/api/admin/apikeys", { name: new FormData(ev.target).get("name") || "" });
  if (adminError(r)) {
    $("apikey-new").textContent = `api_key ${r.body.api_key}\nsecret  ${r.body.secret}\n(shown once)`;
    openAdmin();
  }
});

let scanTimer = null;
async function refreshScan() {
  const r = await api("/ui/api/admin/scan");
  const s = $("scan-status");
  if (!r.ok) { s.textContent = ""; return; }
  const b = r.body;
  const bar = $("scan-progress");
  bar.hidden = !b.scanning;
  if (b.stage === "reading" && b.total) {
    bar.max = b.total;
    bar.value = b.done;
    s.textContent = `scanning: read ${b.done} of ${b.total} new or changed files`;
  } else if (b.scanning) {
    bar.removeAttribute("value");
    s.textContent = b.stage === "finishing" ? `scanning: finishing (${b.done} files read)`
                                            : "scanning: looking for new and changed files…";
  } else {
    s.textContent = `idle · ${b.count} songs in the library` +
      (b.last_scan ? ` · last scan ${when(b.last_scan)}` : "");
  }
  clearTimeout(scanTimer);
  if (b.scanning && !$("view-admin").hidden) scanTimer = setTimeout(refreshScan, 500);
}
$("scan-now").addEventListener("click", async () => {
  adminError(await post("/ui/api/admin/scan"));
  refreshScan();
});

// ---- settings: the user's time zone and their API keys for apps ----

function settingsError(r) {
  $("settings-error").textContent = r.ok ? "" : (r.body.error || "refused");
  return r.ok;
}

async function openSettings() {
  show("view-settings");
  openForward();
  const list = $("tz-list");
  if (!list.children.length && Intl.supportedValuesOf) {
    list.replaceChildren(...Intl.supportedValuesOf("timeZone").map((z) => el("option", { value: z })));
  }
  const r = await api("/ui/api/me/settings");
  if (!settingsError(r)) return;
  $("tz-input").value = r.body.timezone;
  $("my-appkeys").tBodies[0].replaceChildren(...r.body.apps.map((k) =>
    el("tr", {}, el("td", { textContent: k.app }), el("td", {}, el("code", { textContent: k.id })),
       el("td", { textContent: when(k.created) }),
       el("td", {}, btn("Revoke", `Revoke the key of ${k.app}`, async () => {
         if (!confirm(`Revoke the key of ${k.app}? The app will need a new one.`)) return;
         settingsError(await post("/ui/api/me/apikeys/revoke", { id: k.id }));
         openSettings();
       })))));
}

$("tz-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const r = await post("/ui/api/me/settings", { timezone: $("tz-input").value.trim() });
  if (settingsError(r)) $("tz-input").value = r.body.timezone;
});

$("tz-browser").addEventListener("click", () => {
  $("tz-input").value = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
});

$("appkey-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const r = await post("/ui/api/me/apikeys", { app: new FormData(ev.target).get("app") });
  if (settingsError(r)) {
    ev.target.reset();
    $("appkey-new").textContent = `${r.body.key}\n(for ${r.body.app}; shown once: copy it into the app now)`;
    openSettings();
  }
});

// ---- settings: linked services (plays forwarded to Last.fm, ListenBrainz, …) ----

async function openForward() {
  const r = await api("/ui/api/forward");
  if (!r.ok) return;
  $("fw-links").tBodies[0].replaceChildren(...r.body.links.map((l) =>
    el("tr", {}, el("td", { textContent: l.name }), el("td", { textContent: `${l.kind} ${l.url}` }),
       el("td", { textContent: l.remote_user }), el("td", { textContent: String(l.pending) }),
       el("td", { textContent: String(l.sent) }),
       el("td", { textContent: l.needs_auth ? "needs re-linking" : (l.last_error ? `retrying: ${l.last_error}` : "ok") }),
       el("td", {}, btn("Unlink", `Unlink ${l.name}`, async () => {
         if (!confirm(`Unlink ${l.name}? Plays not sent yet are dropped.`)) return;
         settingsError(await post("/ui/api/forward/unlink", { name: l.name }));
         openForward();
       })))));
}

function formObject(form) {
  const o = {};
  for (const [k, v] of new FormData(form)) if (String(v).trim()) o[k] = String(v).trim();
  return o;
}

$("fw-lastfm-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = formObject(ev.target);
  const r = await post("/ui/api/forward/lastfm/start", f);
  if (!settingsError(r)) return;
  $("fw-approve-link").href = r.body.approve_url;
  $("fw-approve").hidden = false;
  window.open(r.body.approve_url, "_blank", "noopener");
  const until = Date.now() + 5 * 60 * 1000;
  while (Date.now() < until && !$("view-settings").hidden) {
    await new Promise((ok) => setTimeout(ok, 2000));
    const d = await post("/ui/api/forward/lastfm/finish", { token: r.body.token, name: f.name });
    if (d.status === 202) continue;
    settingsError(d);
    break;
  }
  $("fw-approve").hidden = true;
  ev.target.reset();
  openForward();
});

$("fw-lb-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  if (settingsError(await post("/ui/api/forward/listenbrainz", formObject(ev.target)))) ev.target.reset();
  openForward();
});

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
  const r = await fetch(rel(url), { credentials: "same-origin" });
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
  // The top albums' covers, under their chart, each a link to the album.
  if (box === "chart-albums") {
    const ids = [...new Set([...$(box).querySelectorAll("a")]
      .map((a) => a.getAttribute("href") || a.getAttribute("xlink:href") || "")
      .filter((h) => h.startsWith("#/album/")).map((h) => h.slice(8)))];
    $("chart-album-covers").replaceChildren(...ids.map((id) =>
      el("li", {}, el("a", { href: "#/album/" + id }, cover(decodeURIComponent(id), 96)))));
  }
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
  audio.src = "ui/stream/" + s.id;
  const pc = $("player-cover");
  pc.hidden = false;
  pc.classList.remove("missing");
  pc.onerror = () => pc.classList.add("missing");
  pc.src = "ui/cover/" + encodeURIComponent(s.album_id || s.id) + "?size=128";
  audio.play().catch(() => {});
  $("now").textContent = `In the player: ${s.title} — ${s.artist}`;
  play = { song: s, started: Math.floor(Date.now() / 1000), heard: 0, last: null, sent: false };
  drawQueue();
}

async function report(song, scrobble, at) {
  const r = await post("/ui/api/playing", { id: song.id, scrobble, at });
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
    const today = recent.body.today;
    $("recent-count").textContent = `(${recent.body.total}${today != null ? ", " + today + " today" : ""})`;
    $("recent").replaceChildren(...recent.body.listens.map(recentItem));
  }
}

// A recent listen with its corrections (ui/api/listens/edit|delete):
// edit asks for the new artist and title, delete asks to confirm.
function recentItem(l) {
  const li = el("li", { textContent: `${l.title} — ${l.artist} · ${when(l.at)} ` });
  const correct = async (path, body) => {
    const r = await api(path, { method: "POST", headers: CSRF, body: JSON.stringify(body) });
    if (!r.ok) alert(r.body.error || "The correction failed.");
    refreshActivity();
  };
  li.append(
    btn("Edit", "Edit this listen", () => {
      const artist = prompt("Artist", l.artist);
      if (artist == null) return;
      const title = prompt("Title", l.title);
      if (title == null) return;
      correct("/ui/api/listens/edit",
        { at: l.at, artist: l.artist, title: l.title, new_artist: artist, new_title: title });
    }),
    btn("Delete", "Delete this listen", () => {
      if (confirm(`Delete the listen of ${l.title} — ${l.artist}?`)) {
        correct("/ui/api/listens/delete", { at: l.at, artist: l.artist, title: l.title });
      }
    }));
  return li;
}
setInterval(() => { if (!document.hidden) refreshActivity(); }, 5000);

start();

// ---- year in review ----

// #/review/YYYY: the user's year (their time zone); #/review: this year.
async function openReview(year) {
  show("view-review");
  $("review-error").hidden = true;
  const r = await api("/ui/api/review" + (year ? "?year=" + encodeURIComponent(year) : ""));
  if (!r.ok) {
    $("review-error").textContent = r.body.error || "The review could not be loaded.";
    $("review-error").hidden = false;
    return;
  }
  const v = r.body;
  $("review-year").value = v.year;
  $("review-summary").textContent = v.listens === 1
    ? "1 listen, " + v.hours + " hours."
    : v.listens + " listens, " + v.hours + " hours.";
  const parts = [];
  if (v.busiest_day) parts.push("Busiest day: " + v.busiest_day.date + " (" + v.busiest_day.listens + ")");
  if (v.busiest_month) parts.push("busiest month: " + v.busiest_month.month + " (" + v.busiest_month.listens + ")");
  $("review-busiest").textContent = parts.join("; ");
  const rows = (list, label) => list.map((x) => el("li", { textContent: label(x) + " — " + x.listens }));
  $("review-artists").replaceChildren(...rows(v.top_artists, (x) => x.name));
  $("review-albums").replaceChildren(...rows(v.top_albums, (x) => x.name + " by " + x.artist));
  $("review-tracks").replaceChildren(...rows(v.top_tracks, (x) => x.name + " by " + x.artist));
  $("review-new-count").textContent = v.new_artist_count ? String(v.new_artist_count) : "";
  $("review-new").replaceChildren(...rows(v.new_artists, (x) => x.name));
}

$("review-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const y = $("review-year").value.trim();
  location.hash = "#/review" + (y ? "/" + y : "");
});
