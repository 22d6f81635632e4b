//! `/ui/chart/NAME.svg?period=…`: the user's charts as SVG pictures —
//! `listens` (listens per day, week or month), `artists`, `albums` and
//! `tracks` (top lists). Periods: `7day` (default), `30day`, `12month`,
//! `overall`, or `range` with `from` and `to` (YYYY-MM-DD, UTC days, both
//! included). `limit` sets the rows of a top list (10 by default, at most
//! 100). Counting uses the history's day buckets, so a chart over a large
//! history costs milliseconds.

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use spindle_listens::{ChartKind, ChartQuery};

use super::{err, with_catalog};
use crate::catalog::{album_id, artist_id, Catalog};
use crate::chart_svg::{self, Ranked, Span};
use crate::state::AppState;

#[derive(Deserialize)]
pub(super) struct ChartQ {
    #[serde(default)]
    period: String,
    from: Option<String>,
    to: Option<String>,
    limit: Option<usize>,
}

fn svg(body: String) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("image/svg+xml; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'none'"),
    );
    r
}

pub(super) async fn chart(
    State(st): State<AppState>,
    h: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<ChartQ>,
) -> Response {
    let kind = match name.strip_suffix(".svg").unwrap_or(&name) {
        "listens" => None,
        "artists" => Some(ChartKind::Artists),
        "albums" => Some(ChartKind::Albums),
        "tracks" => Some(ChartKind::Tracks),
        _ => return err(StatusCode::NOT_FOUND, "no such chart"),
    };
    with_catalog(st, &h, move |st, cat, user| {
        let now = st.now();
        let span = match chart_svg::period(&q.period, q.from.as_deref(), q.to.as_deref(), now) {
            Ok(s) => s,
            Err(e) => return err(StatusCode::BAD_REQUEST, &e.to_string()),
        };
        match kind {
            None => svg(listens_svg(st, user, &span, now)),
            Some(kind) => {
                let limit = q.limit.unwrap_or(10).clamp(1, 100);
                svg(top_svg(st, cat, user, kind, &span, limit))
            }
        }
    })
    .await
}

fn listens_svg(st: &AppState, user: &str, span: &Span, now: i64) -> String {
    let per_day = st.listens.per_day(user, span.from);
    let from = span
        .from
        .or_else(|| per_day.first().map(|d| d.0))
        .unwrap_or(now);
    let to = span.to.unwrap_or(now).max(from);
    let (step, cols) = chart_svg::columns(&per_day, from, to);
    let title = format!("Listens per {}, {}", step.noun(), span.label);
    chart_svg::time_svg("chart-listens", &title, "listen", &cols)
}

fn top_svg(
    st: &AppState,
    cat: &Catalog,
    user: &str,
    kind: ChartKind,
    span: &Span,
    limit: usize,
) -> String {
    let chart = st.listens.chart(
        user,
        kind,
        &ChartQuery {
            from: span.from,
            to: span.to,
            artist: None,
            limit,
            page: 1,
        },
    );
    let counts: Vec<u32> = chart.rows.iter().map(|r| r.playcount).collect();
    let ranks = chart_svg::shared_ranks(&counts, 1);
    let rows: Vec<Ranked> = chart
        .rows
        .into_iter()
        .zip(ranks)
        .map(|(r, rank)| {
            // A link to the library's page of the artist or album, if the
            // library has it.
            let href = match kind {
                ChartKind::Albums => {
                    let id = album_id(&r.artist, &r.name);
                    cat.album(&id).map(|_| format!("#/album/{id}"))
                }
                ChartKind::Artists | ChartKind::Tracks => {
                    let name = if kind == ChartKind::Artists {
                        &r.name
                    } else {
                        &r.artist
                    };
                    let id = artist_id(name);
                    cat.artist(&id).map(|_| format!("#/artist/{id}"))
                }
            };
            Ranked {
                rank,
                name: r.name,
                by: r.artist,
                count: r.playcount,
                href,
            }
        })
        .collect();
    let (what, id) = match kind {
        ChartKind::Artists => ("Top artists", "chart-artists"),
        ChartKind::Albums => ("Top albums", "chart-albums"),
        ChartKind::Tracks => ("Top tracks", "chart-tracks"),
    };
    let title = format!("{what}, {}", span.label);
    chart_svg::ranked_svg(id, &title, "listen", &rows)
}
