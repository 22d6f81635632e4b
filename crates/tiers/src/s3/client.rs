//! The S3 requests Spindle needs, with endpoint failover.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::{Method, StatusCode};

use super::sigv4::{amz_date, sha256_hex, Request, Signer, EMPTY_SHA256};
use crate::config::S3Config;

/// Why an S3 request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum S3Error {
    #[error("no endpoint of bucket {bucket} answers (last: {last})")]
    Unreachable { bucket: String, last: String },
    #[error("{method} {key}: HTTP {status}: {message}")]
    Status {
        method: String,
        key: String,
        status: u16,
        message: String,
    },
    #[error("{key}: no such object")]
    NotFound { key: String },
    #[error("{0}")]
    Body(String),
}

/// One S3 bucket on one or more endpoints.
pub struct S3Client {
    cfg: S3Config,
    http: reqwest::Client,
    /// Per endpoint: skipped until this instant.
    down_until: Mutex<Vec<Option<Instant>>>,
    retry_after: Duration,
}

/// A GET's answer: the response (its body is read by the caller), the
/// object's total length, and which endpoint served it.
pub struct Got {
    pub response: reqwest::Response,
    pub total: u64,
    pub endpoint: usize,
}

fn host_of(endpoint: &str) -> (&str, &str) {
    let (scheme, rest) = endpoint.split_once("://").unwrap_or(("http", endpoint));
    let host = rest.split('/').next().unwrap_or(rest);
    let host = match scheme {
        "http" => host.strip_suffix(":80").unwrap_or(host),
        _ => host.strip_suffix(":443").unwrap_or(host),
    };
    (scheme, host)
}

impl S3Client {
    pub fn new(cfg: S3Config, retry_after: Duration) -> S3Client {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        let n = cfg.endpoints.len();
        S3Client {
            cfg,
            http,
            down_until: Mutex::new(vec![None; n]),
            retry_after,
        }
    }

    pub fn config(&self) -> &S3Config {
        &self.cfg
    }

    /// Endpoints in the order to try: those up first, then (if all are
    /// down) every one anyway, so a recovered store is found again.
    fn order(&self) -> Vec<usize> {
        let now = Instant::now();
        let d = self.down_until.lock().unwrap_or_else(|e| e.into_inner());
        let mut up: Vec<usize> = (0..d.len())
            .filter(|&i| d[i].is_none_or(|t| t <= now))
            .collect();
        if up.is_empty() {
            up = (0..d.len()).collect();
        }
        up
    }

    /// Whether any endpoint is usable now.
    pub fn any_up(&self) -> bool {
        let now = Instant::now();
        let d = self.down_until.lock().unwrap_or_else(|e| e.into_inner());
        d.iter().any(|t| t.is_none_or(|t| t <= now))
    }

    /// Marks an endpoint down (a broken body, a refused connection).
    pub fn mark_down(&self, endpoint: usize) {
        let mut d = self.down_until.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = d.get_mut(endpoint) {
            *slot = Some(Instant::now() + self.retry_after);
        }
    }

    fn mark_up(&self, endpoint: usize) {
        let mut d = self.down_until.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = d.get_mut(endpoint) {
            *slot = None;
        }
    }

    fn object_path(&self, key: Option<&str>) -> (String, bool) {
        let key = key.map(|k| format!("{}{k}", self.cfg.prefix));
        match (self.cfg.path_style, key) {
            (true, Some(k)) => (format!("/{}/{k}", self.cfg.bucket), true),
            (true, None) => (format!("/{}", self.cfg.bucket), false),
            (false, Some(k)) => (format!("/{k}"), true),
            (false, None) => ("/".to_owned(), false),
        }
    }

    /// Sends one signed request, trying the endpoints in turn.
    async fn send(
        &self,
        method: Method,
        key: Option<&str>,
        query: &[(&str, &str)],
        extra: &[(&str, String)],
        body: Option<Vec<u8>>,
    ) -> Result<(reqwest::Response, usize), S3Error> {
        let (path, _) = self.object_path(key);
        let payload = body
            .as_deref()
            .map_or_else(|| EMPTY_SHA256.to_owned(), sha256_hex);
        let signer = Signer {
            access_key: &self.cfg.access_key,
            secret_key: &self.cfg.secret_key,
            region: &self.cfg.region,
            service: "s3",
        };
        let mut last = String::from("no endpoint configured");
        for i in self.order() {
            let ep = &self.cfg.endpoints[i];
            let (scheme, host) = host_of(ep);
            let host = if self.cfg.path_style {
                host.to_owned()
            } else {
                format!("{}.{host}", self.cfg.bucket)
            };
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let date = amz_date(now);
            let mut headers: Vec<(&str, &str)> = vec![
                ("host", &host),
                ("x-amz-date", &date),
                ("x-amz-content-sha256", &payload),
            ];
            for (k, v) in extra {
                headers.push((k, v));
            }
            let auth = signer.authorization(
                &Request {
                    method: method.as_str(),
                    path: &path,
                    query,
                    headers: &headers,
                    payload_hash: &payload,
                },
                &date,
            );
            let mut url = format!("{scheme}://{host}{}", super::sigv4::uri_encode(&path, true));
            if !query.is_empty() {
                url.push('?');
                url.push_str(&super::sigv4::canonical_query(query));
            }
            let mut rb = self
                .http
                .request(method.clone(), &url)
                .header("x-amz-date", &date)
                .header("x-amz-content-sha256", &payload)
                .header("authorization", auth);
            for (k, v) in extra {
                rb = rb.header(*k, v);
            }
            if let Some(b) = &body {
                rb = rb.body(b.clone());
            }
            match rb.send().await {
                Ok(r) if r.status().is_server_error() => {
                    last = format!("{ep}: HTTP {}", r.status());
                    self.mark_down(i);
                }
                Ok(r) => {
                    self.mark_up(i);
                    return Ok((r, i));
                }
                Err(e) => {
                    last = format!("{ep}: {e}");
                    self.mark_down(i);
                }
            }
        }
        Err(S3Error::Unreachable {
            bucket: self.cfg.bucket.clone(),
            last,
        })
    }

    async fn status_error(method: &str, key: &str, r: reqwest::Response) -> S3Error {
        let status = r.status().as_u16();
        if status == 404 {
            return S3Error::NotFound {
                key: key.to_owned(),
            };
        }
        let text = r.text().await.unwrap_or_default();
        let message = between(&text, "<Message>", "</Message>")
            .or_else(|| between(&text, "<Code>", "</Code>"))
            .unwrap_or(text.trim())
            .chars()
            .take(300)
            .collect();
        S3Error::Status {
            method: method.to_owned(),
            key: key.to_owned(),
            status,
            message,
        }
    }

    /// `GET` from byte `offset` to the end.
    pub async fn get(&self, key: &str, offset: u64) -> Result<Got, S3Error> {
        let extra = if offset > 0 {
            vec![("range", format!("bytes={offset}-"))]
        } else {
            Vec::new()
        };
        let (r, endpoint) = self.send(Method::GET, Some(key), &[], &extra, None).await?;
        let total = match r.status() {
            StatusCode::OK => r.content_length().unwrap_or(0),
            StatusCode::PARTIAL_CONTENT => r
                .headers()
                .get("content-range")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.rsplit('/').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
            StatusCode::RANGE_NOT_SATISFIABLE => {
                return Err(S3Error::Body(format!(
                    "{key}: offset {offset} is past the end"
                )))
            }
            _ => return Err(Self::status_error("GET", key, r).await),
        };
        if offset > 0 && r.status() == StatusCode::OK {
            return Err(S3Error::Body(format!(
                "{key}: the store ignored the Range header"
            )));
        }
        Ok(Got {
            response: r,
            total,
            endpoint,
        })
    }

    /// `PUT` an object.
    pub async fn put(&self, key: &str, body: Vec<u8>) -> Result<(), S3Error> {
        let (r, _) = self
            .send(Method::PUT, Some(key), &[], &[], Some(body))
            .await?;
        if !r.status().is_success() {
            return Err(Self::status_error("PUT", key, r).await);
        }
        Ok(())
    }

    /// `HEAD`: the object's length, or `None` if there is none.
    pub async fn head(&self, key: &str) -> Result<Option<u64>, S3Error> {
        let (r, _) = self.send(Method::HEAD, Some(key), &[], &[], None).await?;
        match r.status() {
            StatusCode::NOT_FOUND => Ok(None),
            // HEAD has no body, so the length comes from the header.
            s if s.is_success() => Ok(Some(
                r.headers()
                    .get("content-length")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            )),
            _ => Err(Self::status_error("HEAD", key, r).await),
        }
    }

    /// `DELETE` an object (absent objects are fine).
    pub async fn delete(&self, key: &str) -> Result<(), S3Error> {
        let (r, _) = self.send(Method::DELETE, Some(key), &[], &[], None).await?;
        if !(r.status().is_success() || r.status() == StatusCode::NOT_FOUND) {
            return Err(Self::status_error("DELETE", key, r).await);
        }
        Ok(())
    }

    /// ListObjectsV2 under `prefix` (after the device prefix): every
    /// (key, size), following continuation tokens.
    pub async fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, S3Error> {
        self.list_after(prefix, None).await
    }

    /// [`S3Client::list`] of the keys that sort after `start_after` (a
    /// key under the same device prefix), in key order: S3's
    /// `start-after`, so a reader of numbered objects lists only the new
    /// ones.
    pub async fn list_after(
        &self,
        prefix: &str,
        start_after: Option<&str>,
    ) -> Result<Vec<(String, u64)>, S3Error> {
        let full = format!("{}{prefix}", self.cfg.prefix);
        let after = start_after.map(|a| format!("{}{a}", self.cfg.prefix));
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut q: Vec<(&str, &str)> = vec![("list-type", "2"), ("prefix", &full)];
            if let Some(t) = &token {
                q.push(("continuation-token", t));
            } else if let Some(a) = &after {
                q.push(("start-after", a));
            }
            let (r, _) = self.send(Method::GET, None, &q, &[], None).await?;
            if !r.status().is_success() {
                return Err(Self::status_error("LIST", prefix, r).await);
            }
            let text = r.text().await.map_err(|e| S3Error::Body(e.to_string()))?;
            for c in text.split("<Contents>").skip(1) {
                let key = between(c, "<Key>", "</Key>").map(xml_unescape);
                let size = between(c, "<Size>", "</Size>").and_then(|s| s.parse().ok());
                if let (Some(k), Some(s)) = (key, size) {
                    let k = k
                        .strip_prefix(&self.cfg.prefix)
                        .map(str::to_owned)
                        .unwrap_or(k);
                    out.push((k, s));
                }
            }
            let truncated = between(&text, "<IsTruncated>", "</IsTruncated>") == Some("true");
            token = between(&text, "<NextContinuationToken>", "</NextContinuationToken>")
                .map(xml_unescape);
            if !truncated || token.is_none() {
                return Ok(out);
            }
        }
    }
}

fn between<'a>(s: &'a str, a: &str, b: &str) -> Option<&'a str> {
    let i = s.find(a)? + a.len();
    let j = s[i..].find(b)? + i;
    Some(&s[i..j])
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_drop_default_ports() {
        assert_eq!(host_of("http://h:80"), ("http", "h"));
        assert_eq!(host_of("http://h:3900"), ("http", "h:3900"));
        assert_eq!(host_of("https://s3.x.com:443/"), ("https", "s3.x.com"));
    }

    #[test]
    fn list_xml_fields_are_read() {
        let x = "<ListBucketResult><Contents><Key>a&amp;b.flac</Key><Size>12</Size></Contents><IsTruncated>false</IsTruncated></ListBucketResult>";
        assert_eq!(
            between(x, "<Key>", "</Key>").map(xml_unescape).as_deref(),
            Some("a&b.flac")
        );
        assert_eq!(between(x, "<IsTruncated>", "</IsTruncated>"), Some("false"));
    }
}
