//! The share page: the title (the share's description, else who shared
//! it), its tracks as buttons, and one `<audio>` that plays the first
//! track and, through [`SCRIPT`], the one clicked and then the next.
//! Links are relative to `/share/TOKEN`, so the page works behind a
//! proxy that serves Spindle under a path.

use crate::catalog::Catalog;
use crate::userdata::Share;
use crate::xml::escape;

/// The answer for a share that is not there (never was, deleted or
/// expired): the same for all three.
pub(super) const GONE: &str = "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width\"><title>Share not found</title>\
<p>This share link does not exist or has expired.</p></html>";

/// The page's script: a click plays that track; the end of one plays the
/// next.
pub(super) const SCRIPT: &str = r##""use strict";
const audio = document.getElementById("player");
const buttons = Array.from(document.querySelectorAll("#tracks button"));
function play(i) {
  buttons.forEach((b, n) => b.setAttribute("aria-current", n === i ? "true" : "false"));
  audio.dataset.index = String(i);
  audio.src = buttons[i].dataset.src;
  audio.play().catch(() => {});
}
buttons.forEach((b, i) => b.addEventListener("click", () => play(i)));
audio.addEventListener("ended", () => {
  const next = Number(audio.dataset.index || 0) + 1;
  if (next < buttons.length) play(next);
});
"##;

const STYLE: &str =
    "body{font:16px/1.4 system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em}\
audio{width:100%}ol{padding-left:1.5em}button{font:inherit;background:none;border:0;padding:.2em 0;\
cursor:pointer;text-align:left}button[aria-current=true]{font-weight:bold}.meta{color:#666}";

fn duration(secs: Option<i64>) -> String {
    match secs {
        Some(s) if s >= 0 => format!("{}:{:02}", s / 60, s % 60),
        _ => String::new(),
    }
}

/// The page of share `token`.
pub(super) fn render(token: &str, share: &Share, cat: &Catalog) -> String {
    let title = if share.description.is_empty() {
        format!("Shared by {}", share.owner)
    } else {
        share.description.clone()
    };
    let token = escape(token);
    let mut items = String::new();
    let mut first = None;
    for s in share.songs.iter().filter_map(|&e| cat.song_by_entry(e)) {
        let src = format!("{token}/stream/{}", s.id);
        first.get_or_insert_with(|| src.clone());
        items.push_str(&format!(
            "<li><button type=\"button\" data-src=\"{src}\">{} <span class=\"meta\">— {} · {} {}</span></button></li>",
            escape(&s.title),
            escape(&s.artist),
            escape(&s.album),
            duration(s.duration),
        ));
    }
    let audio = match &first {
        Some(src) => format!("<audio id=\"player\" controls preload=\"metadata\" src=\"{src}\" data-index=\"0\"></audio>"),
        None => "<p>The songs of this share are no longer here.</p><audio id=\"player\"></audio>".into(),
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title>\
<style>{STYLE}</style></head><body><h1>{t}</h1>\
<p class=\"meta\">Shared by {owner} with Spindle</p>{audio}<ol id=\"tracks\">{items}</ol>\
<script src=\"{token}/player.js\"></script></body></html>",
        t = escape(&title),
        owner = escape(&share.owner),
    )
}
