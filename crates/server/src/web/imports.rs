//! The admin page's imports, under `/ui/api/admin/imports`: an export
//! file uploaded for a user (`POST ?user=NAME&name=FILE`, the file as the
//! raw body) is streamed to disk in the import spool and handed to the
//! server's import task ([`crate::import`]); the jobs and their progress
//! are listed (`GET`) or read one by one (`GET …/ID`), without a pull's
//! API key or token. Every route answers `403` to a user who is not an
//! administrator and `401` without a session; the upload needs the CSRF
//! header.

use std::path::Path as FsPath;
use std::pin::Pin;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use http_body::Body as _;
use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::extract::{Admin, User};
use super::{WebError, WebResult};
use crate::import::{Job, Source, Spool};
use crate::state::AppState;

/// The largest export an administrator may upload: 64 MiB. The upload
/// goes to disk as it arrives, but the import task then reads and parses
/// the export in memory whole (its text and every listen in it, several
/// times the file's size), so the cap bounds that memory. It holds a
/// Last.fm export of about 500,000 scrobbles or a Spotify history file
/// (10–20 MiB); a larger history is split into several files.
pub const MAX_IMPORT_UPLOAD: u64 = 64 << 20;

fn spool_of(st: &AppState) -> WebResult<Spool> {
    st.import_spool().cloned().ok_or_else(|| {
        WebError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "this server takes no imports (no data dir)",
        )
    })
}

fn io_err(e: std::io::Error) -> WebError {
    tracing::warn!("import spool: {e}");
    WebError::internal("the import spool could not be written; see the server log")
}

/// Runs `work` over the spool on the blocking pool: it reads and writes
/// files. Work that did not finish is the spool's error too.
async fn on_spool<R: Send + 'static>(
    spool: Spool,
    work: impl FnOnce(&Spool) -> std::io::Result<R> + Send + 'static,
) -> WebResult<R> {
    spindle_app::offload::run(move || work(&spool))
        .await
        .map_err(|e| io_err(std::io::Error::other(e)))?
        .map_err(io_err)
}

pub(super) async fn list(State(st): State<AppState>, _: User<Admin>) -> WebResult {
    let jobs = on_spool(spool_of(&st)?, Spool::list).await?;
    let jobs: Vec<Job> = jobs.iter().map(Job::public).collect();
    Ok(Json(json!({ "imports": jobs })).into_response())
}

pub(super) async fn one(
    State(st): State<AppState>,
    Path(id): Path<String>,
    _: User<Admin>,
) -> WebResult {
    let job = on_spool(spool_of(&st)?, move |sp| sp.read(&id))
        .await?
        .ok_or_else(|| WebError::not_found("no such import"))?;
    Ok(Json(job.public()).into_response())
}

pub(super) async fn upload(State(st): State<AppState>, _: User<Admin>, req: Request) -> WebResult {
    let spool = spool_of(&st)?;
    let (mut user, mut name) = (String::new(), String::from("upload"));
    for (k, v) in form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes()) {
        match &*k {
            "user" => user = v.into_owned(),
            "name" => name = v.into_owned(),
            _ => {}
        }
    }
    if user.is_empty() {
        return Err(WebError::bad_request(
            "say whose listens these are: ?user=NAME",
        ));
    }
    if !st.accounts.user_exists(&user) {
        return Err(WebError::not_found(format!("no user named '{user}'")));
    }
    let job = Job::new(&user, Source::File { name }, st.now());
    // Makes the spool's folder if it is not there yet.
    let id = job.id.clone();
    let part = on_spool(spool.clone(), move |sp| sp.part_path(&id)).await?;
    if let Err(e) = receive(&st, req.into_body(), &part).await {
        let _ = tokio::fs::remove_file(&part).await;
        return Err(e);
    }
    let j = job.clone();
    on_spool(spool, move |sp| sp.hand_in_part(&j, &part)).await?;
    tracing::info!(job = %job.id, "export uploaded for {user}");
    Ok((StatusCode::ACCEPTED, Json(job.public())).into_response())
}

/// Writes `body` to `path`: at most [`MAX_IMPORT_UPLOAD`] bytes, none of
/// its pauses longer than the server's body idle timeout.
async fn receive(st: &AppState, mut body: Body, path: &FsPath) -> WebResult<()> {
    let too_large = || {
        WebError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("an export may be at most {MAX_IMPORT_UPLOAD} bytes"),
        )
    };
    if body.size_hint().lower() > MAX_IMPORT_UPLOAD {
        return Err(too_large());
    }
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(crate::import::spool::FILE_MODE)
        .open(path)
        .await
        .map_err(io_err)?;
    let mut total = 0u64;
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
        let frame = match tokio::time::timeout(st.config.body_idle_timeout, frame).await {
            Err(_) => {
                return Err(WebError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "the upload stalled; try again",
                ))
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(WebError::bad_request(format!("the upload broke off: {e}")))
            }
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        total += data.len() as u64;
        if total > MAX_IMPORT_UPLOAD {
            return Err(too_large());
        }
        file.write_all(&data).await.map_err(io_err)?;
    }
    if total == 0 {
        return Err(WebError::bad_request("the upload is empty"));
    }
    file.flush().await.map_err(io_err)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{Accounts, Config, ManualClock};
    use spindle_store::Db;

    fn state(dir: &FsPath) -> AppState {
        let (listens, _) = spindle_listens::Listens::open(&dir.join("listens")).unwrap();
        AppState::new(
            Arc::new(Db::open(dir.join("lib")).unwrap()),
            Arc::new(Accounts::open(&dir.join("accounts")).unwrap()),
            Arc::new(listens),
            Config::default(),
            Arc::new(ManualClock::new(1_750_000_000)),
        )
        .started()
    }

    /// A body of `.0` chunks of 1 MiB, its length unknown.
    struct Chunks(usize);

    impl futures_core::Stream for Chunks {
        type Item = Result<Vec<u8>, std::io::Error>;
        fn poll_next(
            mut self: Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            if self.0 == 0 {
                return std::task::Poll::Ready(None);
            }
            self.0 -= 1;
            std::task::Poll::Ready(Some(Ok(vec![b'x'; 1 << 20])))
        }
    }

    #[tokio::test]
    async fn an_upload_over_the_cap_is_refused_with_413() {
        let dir = tempfile::tempdir().unwrap();
        let st = state(dir.path());
        let path = dir.path().join("up.part");
        // 65 chunks of 1 MiB, streamed with no length: over 64 MiB.
        let body = Body::from_stream(Chunks(65));
        let r = receive(&st, body, &path).await.unwrap_err().into_response();
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert!(std::fs::metadata(&path).unwrap().len() <= MAX_IMPORT_UPLOAD);
    }

    #[tokio::test]
    async fn an_upload_is_written_readable_by_the_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let st = state(dir.path());
        let path = dir.path().join("up.part");
        receive(&st, Body::from("#AUDIOSCROBBLER/1.1\n"), &path)
            .await
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
