//! Every route of the web UI, one row each: its HTTP method, its path,
//! who may call it, how a cluster serves it, and its handler. The router
//! ([`router`]) and the cluster's routing of `/ui/` paths ([`class_of`],
//! asked by [`crate::cluster::route::classify`]) are read from this
//! table, so adding a route is adding a row (and its handler). The share
//! links ([`crate::share`]) have a table of the same [`Route`]s.
//!
//! The auth rule is what the handler's extractors enforce
//! (`extract.rs`); the table states it, and its tests check that
//! the two agree.

use axum::http::Method;
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;

use crate::cluster::route::Class::{self, Local, Memory, Write};
use crate::corrections::{DeleteArgs, EditArgs, MergeArgs};
use crate::state::AppState;

use super::{activity, admin, charts, cover, forward, history, imports, library, mine};
use super::{review, settings, setup};
pub use crate::verb::Verb;
use Auth::{Admin, Public, User};
use Verb::{Get, Post};

/// A Subsonic role a route needs beyond a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleName {
    /// Changing one's settings, API keys and linked services.
    Settings,
    /// Making and changing playlists.
    Playlist,
}

/// Who may call a route. Every `POST` also needs the CSRF header
/// (`csrf_ok`), public ones included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// Anyone: the assets, logging in and out, the first-run setup, a
    /// share link.
    Public,
    /// A logged-in user (a session): `401` without one.
    User,
    /// A logged-in user holding a role: `401` without a session, `403`
    /// without the role.
    Role(RoleName),
    /// An administrator: `401` without a session, `403` for another
    /// user.
    Admin,
}

/// One route: a row of [`TABLE`] (or of the shares' table).
pub struct Route {
    pub verb: Verb,
    /// The path as the router matches it; `{name}` is one segment.
    pub path: &'static str,
    pub auth: Auth,
    /// How a cluster serves it: any node, the primary's memory (the web
    /// sessions live there), or a write the primary ships.
    pub class: Class,
    /// The handler, routed for a method.
    pub(crate) handler: fn(MethodFilter) -> MethodRouter<AppState>,
}

pub(crate) const fn row(
    verb: Verb,
    path: &'static str,
    auth: Auth,
    class: Class,
    handler: fn(MethodFilter) -> MethodRouter<AppState>,
) -> Route {
    Route {
        verb,
        path,
        auth,
        class,
        handler,
    }
}

const SETTINGS: Auth = Auth::Role(RoleName::Settings);
const PLAYLIST: Auth = Auth::Role(RoleName::Playlist);

/// The table. Every route but the assets needs the web session, which
/// the primary keeps in memory: reads are `Memory`, writes `Write`, but
/// logging in and out and the player's now-playing report, which change
/// only memory.
#[rustfmt::skip]
pub static TABLE: &[Route] = &[
    row(Get, "/ui/app.js", Public, Local, |m| on(m, super::app_js)),
    row(Get, "/ui/style.css", Public, Local, |m| on(m, super::style_css)),
    row(Post, "/ui/login", Public, Memory, |m| on(m, super::login)),
    row(Post, "/ui/logout", Public, Memory, |m| on(m, super::logout)),
    row(Post, "/ui/setup", Public, Write, |m| on(m, setup::create)),
    row(Get, "/ui/api/setup", Public, Memory, |m| on(m, setup::status)),
    row(Get, "/ui/api/me", User, Memory, |m| on(m, super::me)),
    row(Get, "/ui/api/me/privacy", User, Memory, |m| on(m, super::privacy)),
    row(Post, "/ui/api/me/privacy", User, Write, |m| on(m, super::set_privacy)),
    row(Get, "/ui/api/search", User, Memory, |m| on(m, library::search)),
    row(Get, "/ui/api/album/{id}", User, Memory, |m| on(m, library::album)),
    row(Get, "/ui/api/artists", User, Memory, |m| on(m, library::artists)),
    row(Get, "/ui/api/artist/{id}", User, Memory, |m| on(m, library::artist)),
    row(Get, "/ui/api/recent", User, Memory, |m| on(m, activity::recent)),
    row(Get, "/ui/api/review", User, Memory, |m| on(m, review::review)),
    row(Get, "/ui/api/now", User, Memory, |m| on(m, activity::now)),
    row(Post, "/ui/api/playing", User, Memory, |m| on(m, activity::playing)),
    row(Get, "/ui/chart/{name}", User, Memory, |m| on(m, charts::chart)),
    row(Get, "/ui/stream/{id}", User, Memory, |m| on(m, super::stream)),
    row(Get, "/ui/cover/{id}", User, Memory, |m| on(m, cover::cover)),
    // The user's own things (mine.rs).
    row(Get, "/ui/api/playlists", User, Memory, |m| on(m, mine::playlists)),
    row(Post, "/ui/api/playlists", PLAYLIST, Write, |m| on(m, mine::create)),
    row(Get, "/ui/api/playlist/{id}", User, Memory, |m| on(m, mine::playlist)),
    row(Post, "/ui/api/playlist/{id}", PLAYLIST, Write, |m| on(m, mine::update)),
    row(Post, "/ui/api/playlist/{id}/delete", User, Write, |m| on(m, mine::delete)),
    row(Get, "/ui/api/starred", User, Memory, |m| on(m, mine::starred)),
    row(Post, "/ui/api/star", User, Write, |m| on(m, mine::star)),
    row(Post, "/ui/api/rating", User, Write, |m| on(m, mine::rate)),
    // Settings (settings.rs).
    row(Get, "/ui/api/me/settings", User, Memory, |m| on(m, settings::settings)),
    row(Post, "/ui/api/me/settings", SETTINGS, Write, |m| on(m, settings::set_settings)),
    row(Post, "/ui/api/me/apikeys", SETTINGS, Write, |m| on(m, settings::add_key)),
    row(Post, "/ui/api/me/apikeys/revoke", SETTINGS, Write, |m| on(m, settings::revoke_key)),
    // Linked services (forward.rs).
    row(Get, "/ui/api/forward", User, Memory, |m| on(m, forward::list)),
    row(Post, "/ui/api/forward/lastfm/start", SETTINGS, Write, |m| on(m, forward::lastfm_start)),
    row(Post, "/ui/api/forward/lastfm/finish", SETTINGS, Write, |m| on(m, forward::lastfm_finish)),
    row(Post, "/ui/api/forward/listenbrainz", SETTINGS, Write, |m| on(m, forward::listenbrainz)),
    row(Post, "/ui/api/forward/unlink", SETTINGS, Write, |m| on(m, forward::unlink)),
    // Corrections of the history (history.rs).
    row(Get, "/ui/api/corrections", User, Memory, |m| on(m, history::list)),
    row(Post, "/ui/api/listens/edit", User, Write, |m| on(m, history::correct::<EditArgs>)),
    row(Post, "/ui/api/listens/delete", User, Write, |m| on(m, history::correct::<DeleteArgs>)),
    row(Post, "/ui/api/artists/merge", User, Write, |m| on(m, history::correct::<MergeArgs>)),
    row(Post, "/ui/api/corrections/{id}/undo", User, Write, |m| on(m, history::undo)),
    // The admin page (admin.rs, imports.rs).
    row(Get, "/ui/api/admin/users", Admin, Memory, |m| on(m, admin::users)),
    row(Post, "/ui/api/admin/users", Admin, Write, |m| on(m, admin::add_user)),
    row(Post, "/ui/api/admin/user/{name}", Admin, Write, |m| on(m, admin::set_profile)),
    row(Post, "/ui/api/admin/user/{name}/password", Admin, Write, |m| on(m, admin::set_password)),
    row(Post, "/ui/api/admin/user/{name}/delete", Admin, Write, |m| on(m, admin::delete_user)),
    row(Post, "/ui/api/admin/user/{name}/token", Admin, Write, |m| on(m, admin::reset_token)),
    row(Get, "/ui/api/admin/folders", Admin, Memory, |m| on(m, admin::folders)),
    row(Get, "/ui/api/admin/scan", Admin, Memory, |m| on(m, admin::scan_status)),
    row(Post, "/ui/api/admin/scan", Admin, Write, |m| on(m, admin::start_scan)),
    row(Get, "/ui/api/admin/sessions", Admin, Memory, |m| on(m, admin::sessions)),
    row(Post, "/ui/api/admin/sessions/revoke", Admin, Write, |m| on(m, admin::revoke)),
    row(Get, "/ui/api/admin/apikeys", Admin, Memory, |m| on(m, admin::api_keys)),
    row(Post, "/ui/api/admin/apikeys", Admin, Write, |m| on(m, admin::add_api_key)),
    row(Post, "/ui/api/admin/apikeys/delete", Admin, Write, |m| on(m, admin::delete_api_key)),
    row(Get, "/ui/api/admin/imports", Admin, Memory, |m| on(m, imports::list)),
    row(Post, "/ui/api/admin/imports", Admin, Write, |m| on(m, imports::upload)),
    row(Get, "/ui/api/admin/imports/{id}", Admin, Memory, |m| on(m, imports::one)),
];

/// A router of `table`'s routes (routes of one path share its method
/// router).
pub(crate) fn router_of(table: &[Route]) -> Router<AppState> {
    table.iter().fold(Router::new(), |r, row| {
        r.route(row.path, (row.handler)(row.verb.filter()))
    })
}

/// Whether `path` is `pattern`'s: the same segments, a `{name}` standing
/// for any one that is not empty.
pub(crate) fn matches(pattern: &str, path: &str) -> bool {
    let mut want = pattern.split('/');
    let mut got = path.split('/');
    loop {
        match (want.next(), got.next()) {
            (None, None) => return true,
            (Some(w), Some(g)) if w.starts_with('{') && w.ends_with('}') => {
                if g.is_empty() {
                    return false;
                }
            }
            (Some(w), Some(g)) if w == g => {}
            _ => return false,
        }
    }
}

/// The route of `table` that answers `method` at `path`.
pub(crate) fn find<'t>(table: &'t [Route], method: &Method, path: &str) -> Option<&'t Route> {
    table
        .iter()
        .find(|r| r.verb.allows(method) && matches(r.path, path))
}

/// How a cluster serves a request of the web UI (a path under `/ui/`):
/// its route's class. A method its path has no route for (the router
/// answers 405) is served as the path's routes are when they are an
/// exception to the rule (the assets any node serves; logging in and out
/// and the now-playing report, in the primary's memory), else by the
/// rule: reads from the primary's memory, writes shipped; so is a path
/// with no route (404).
pub fn class_of(method: &Method, path: &str) -> Class {
    if let Some(r) = find(TABLE, method, path) {
        return r.class;
    }
    let exception = TABLE
        .iter()
        .find(|r| matches(r.path, path) && r.class != by_rule(r.verb == Get));
    match exception {
        Some(r) => r.class,
        None => by_rule(*method == Method::GET || *method == Method::HEAD),
    }
}

/// The class of a web route that is no exception: a read needs the
/// session (the primary's memory), a write is shipped.
fn by_rule(read: bool) -> Class {
    if read {
        Memory
    } else {
        Write
    }
}

/// The web UI's router: every row of [`TABLE`].
pub fn router() -> Router<AppState> {
    router_of(TABLE)
}

#[cfg(test)]
mod tests;
