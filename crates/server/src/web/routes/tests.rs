use std::collections::HashSet;

use axum::body::Body;
use axum::http::{Method, Request};
use http_body_util::BodyExt;
use tower::ServiceExt;

use super::*;
use crate::accounts::{Profile, Roles};

/// A path of `route`'s with every `{name}` filled in (a chart's with a
/// chart's name: an unknown one is a 404 before the session is asked
/// for).
fn sample(route: &Route) -> String {
    if route.path == "/ui/chart/{name}" {
        return "/ui/chart/listens.svg".into();
    }
    route
        .path
        .split('/')
        .map(|s| if s.starts_with('{') { "1" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

fn method(verb: Verb) -> Method {
    match verb {
        Get => Method::GET,
        Post => Method::POST,
    }
}

#[test]
fn every_route_is_in_the_table_once_under_ui_and_classed_by_its_row() {
    let mut seen = HashSet::new();
    for r in TABLE {
        assert!(r.path.starts_with("/ui/"), "{}", r.path);
        assert!(
            seen.insert((r.verb, r.path)),
            "{} {} twice",
            r.verb.as_str(),
            r.path
        );
        let m = method(r.verb);
        let p = sample(r);
        assert_eq!(class_of(&m, &p), r.class, "{} {p}", r.verb.as_str());
        assert_eq!(
            crate::cluster::route::classify(&m, &p, None),
            r.class,
            "{p}"
        );
        if r.verb == Get {
            assert_eq!(class_of(&Method::HEAD, &p), r.class, "HEAD {p}");
        }
    }
}

#[test]
fn only_the_assets_and_the_memory_posts_break_the_rule_of_reads_in_memory_and_writes_shipped() {
    let exceptions: Vec<(&str, Class)> = TABLE
        .iter()
        .filter(|r| r.class != by_rule(r.verb == Get))
        .map(|r| (r.path, r.class))
        .collect();
    assert_eq!(
        exceptions,
        [
            ("/ui/app.js", Local),
            ("/ui/style.css", Local),
            ("/ui/login", Memory),
            ("/ui/logout", Memory),
            ("/ui/api/playing", Memory),
        ]
    );
}

#[test]
fn a_method_or_path_of_no_route_is_classed_as_before_the_table() {
    let put = Method::PUT;
    for (m, p, want) in [
        // Paths that are exceptions keep their class for any method.
        (&Method::POST, "/ui/app.js", Local),
        (&Method::DELETE, "/ui/style.css", Local),
        (&Method::GET, "/ui/login", Memory),
        (&put, "/ui/logout", Memory),
        (&Method::GET, "/ui/api/playing", Memory),
        // The others, and paths of no route: reads Memory, writes Write.
        (&put, "/ui/api/me", Write),
        (&Method::GET, "/ui/setup", Memory),
        (&Method::GET, "/ui/api/playlist/1/delete", Memory),
        (&Method::GET, "/ui/nosuch", Memory),
        (&Method::POST, "/ui/nosuch", Write),
        (&Method::GET, "/ui/api/album/", Memory),
    ] {
        assert_eq!(class_of(m, p), want, "{m} {p}");
    }
}

#[test]
fn paths_match_segment_by_segment() {
    assert!(matches("/ui/api/album/{id}", "/ui/api/album/al-1"));
    assert!(!matches("/ui/api/album/{id}", "/ui/api/album/"));
    assert!(!matches("/ui/api/album/{id}", "/ui/api/album/a/b"));
    assert!(!matches("/ui/api/album/{id}", "/ui/api/albums/1"));
    assert!(matches("/ui/api/me", "/ui/api/me"));
    assert!(!matches("/ui/api/me", "/ui/api/me/"));
}

#[test]
fn the_admin_routes_list_is_the_tables_admin_rows_but_the_imports() {
    let rows: Vec<(&str, String)> = TABLE
        .iter()
        .filter(|r| r.auth == Admin && !r.path.starts_with("/ui/api/admin/imports"))
        .map(|r| (r.verb.as_str(), r.path.replace("{name}", "NAME")))
        .collect();
    let listed: Vec<(&str, String)> = crate::web::ADMIN_ROUTES
        .iter()
        .map(|(m, p)| (*m, (*p).to_owned()))
        .collect();
    assert_eq!(rows, listed);
}

/// What an answer said: its status, its `error` (if JSON), and whether
/// it has a body at all (the router's own 404 and 405 have none).
struct Answer {
    status: u16,
    error: String,
    empty: bool,
}

impl Answer {
    /// Whether a handler answered (not the router: no route, or not
    /// this method).
    fn served(&self) -> bool {
        self.status != 405 && !(self.status == 404 && self.empty)
    }
}

async fn ask(app: &Router, m: Method, path: &str, cookie: Option<&str>) -> Answer {
    let mut b = Request::builder()
        .method(m.clone())
        .uri(path)
        .header("host", "127.0.0.1:4533")
        .header("content-type", "application/json")
        .header("x-spindle-csrf", "1");
    if let Some(c) = cookie {
        b = b.header("cookie", c);
    }
    let body = if m == Method::POST { "{}" } else { "" };
    let r = app
        .clone()
        .oneshot(b.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = r.status().as_u16();
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    Answer {
        status,
        error: v["error"].as_str().unwrap_or("").to_owned(),
        empty: bytes.is_empty(),
    }
}

/// The web router over a state with three users logged in: `bob`, who
/// holds no role, `carl`, who holds a listener's (settings and
/// playlists), and `root`, an administrator; their cookies.
fn app() -> (Router, [String; 3], tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    let st = AppState::in_dir(data.path(), 1_750_000_000);
    let none = Roles {
        admin: false,
        settings: false,
        download: false,
        upload: false,
        playlist: false,
        cover_art: false,
        comment: false,
        stream: false,
        share: false,
    };
    // The first user is an administrator: root comes first.
    for (name, roles) in [
        ("root", Roles::ALL),
        ("bob", none),
        ("carl", Roles::default()),
    ] {
        st.accounts.add_user_cheaply(name, "pw");
        let p = Profile {
            roles,
            ..Profile::default()
        };
        st.accounts.set_profile(name, p).unwrap();
    }
    let cookie = |u: &str| {
        let id = st.web.sessions.start(u, st.now(), "test", None);
        format!("{}={id}", super::super::COOKIE)
    };
    let cookies = [cookie("bob"), cookie("carl"), cookie("root")];
    (router().with_state(st), cookies, data)
}

#[tokio::test]
async fn the_router_serves_every_row_and_nothing_else() {
    let (app, _, _data) = app();
    for r in TABLE {
        let p = sample(r);
        let a = ask(&app, method(r.verb), &p, None).await;
        assert!(a.served(), "{} {p}: {}", r.verb.as_str(), a.status);
        // No route takes PUT: the router refuses it at every path.
        assert_eq!(ask(&app, Method::PUT, &p, None).await.status, 405, "{p}");
    }
    let a = ask(&app, Method::GET, "/ui/api/nosuch", None).await;
    assert!((a.status, a.empty) == (404, true), "{}", a.status);
}

#[tokio::test]
async fn each_route_refuses_whom_its_auth_rule_says() {
    let (app, [bob, carl, root], _data) = app();
    for r in TABLE {
        let (m, p) = (method(r.verb), sample(r));
        let what = format!("{} {p}", r.verb.as_str());
        let anon = ask(&app, m.clone(), &p, None).await;
        if r.auth == Public {
            assert!(
                anon.served() && anon.status != 401,
                "{what}: {}",
                anon.status
            );
            continue;
        }
        assert_eq!(
            (anon.status, anon.error.as_str()),
            (401, "not logged in"),
            "{what}"
        );
        let bob = ask(&app, m.clone(), &p, Some(&bob)).await;
        let carl = ask(&app, m.clone(), &p, Some(&carl)).await;
        let root = ask(&app, m.clone(), &p, Some(&root)).await;
        match r.auth {
            Admin => {
                for a in [&bob, &carl] {
                    let refusal = (a.status, a.error.as_str());
                    assert_eq!(
                        refusal,
                        (403, "only an administrator may do this"),
                        "{what}"
                    );
                }
                assert!(
                    root.served() && ![401, 403].contains(&root.status),
                    "{what}"
                );
            }
            Auth::Role(_) => {
                assert_eq!(bob.status, 403, "{what}");
                assert!(
                    bob.error.starts_with("you may not"),
                    "{what}: {}",
                    bob.error
                );
                for a in [&carl, &root] {
                    assert!(a.served() && ![401, 403].contains(&a.status), "{what}");
                }
            }
            User => {
                for a in [&bob, &carl, &root] {
                    let ok = a.served() && ![401, 403].contains(&a.status);
                    assert!(ok, "{what}: {} {}", a.status, a.error);
                }
            }
            Public => unreachable!(),
        }
    }
}
