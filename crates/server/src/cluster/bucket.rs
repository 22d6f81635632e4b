//! The cluster's bucket: JSON documents and checked objects over the
//! tiers' S3 client (`spindle_tiers::s3`), under `[cluster] prefix`.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use spindle_tiers::s3::{S3Client, S3Error};

use super::objects::{self, ObjectRef};

/// Why the bucket could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BucketError {
    #[error(transparent)]
    S3(#[from] S3Error),
    #[error("{key}: not a document this Spindle reads: {message}")]
    Json { key: String, message: String },
    #[error("{key}: format {found}; this Spindle reads up to {}", objects::FORMAT)]
    Newer { key: String, found: u32 },
    #[error("{0}")]
    Damaged(String),
}

/// The cluster's part of the bucket.
pub struct Bucket {
    s3: S3Client,
}

/// The longest one object may be (a snapshot's listens log): what a
/// single PUT carries here.
pub const MAX_OBJECT: u64 = 4 << 30;

impl Bucket {
    pub fn new(cfg: spindle_tiers::config::S3Config) -> Bucket {
        // An endpoint that failed is skipped for a moment only: the
        // cluster's requests are few and each matters.
        Bucket {
            s3: S3Client::new(cfg, Duration::from_secs(2)),
        }
    }

    /// The object's bytes, or `None` if there is none.
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BucketError> {
        let got = match self.s3.get(key, 0).await {
            Ok(g) => g,
            Err(S3Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if got.total > MAX_OBJECT {
            return Err(BucketError::Damaged(format!(
                "{key}: {} bytes, more than any object the cluster writes",
                got.total
            )));
        }
        let bytes = got
            .response
            .bytes()
            .await
            .map_err(|e| S3Error::Body(format!("{key}: {e}")))?;
        Ok(Some(bytes.to_vec()))
    }

    /// An object a manifest names, checked against its size and
    /// checksums.
    pub async fn get_checked(&self, r: &ObjectRef) -> Result<Vec<u8>, BucketError> {
        let bytes = self.get(&r.key).await?.ok_or_else(|| {
            BucketError::Damaged(format!("{}: named by a manifest but missing", r.key))
        })?;
        r.check(&bytes).map_err(BucketError::Damaged)?;
        Ok(bytes)
    }

    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BucketError> {
        Ok(self.s3.put(key, bytes).await?)
    }

    pub async fn delete(&self, key: &str) -> Result<(), BucketError> {
        Ok(self.s3.delete(key).await?)
    }

    /// A JSON document, or `None` if there is none.
    pub async fn get_json<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, BucketError> {
        let Some(bytes) = self.get(key).await? else {
            return Ok(None);
        };
        let v: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| BucketError::Json {
                key: key.to_owned(),
                message: e.to_string(),
            })?;
        let format = v
            .get("format")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        if format > u64::from(objects::FORMAT) {
            return Err(BucketError::Newer {
                key: key.to_owned(),
                found: u32::try_from(format).unwrap_or(u32::MAX),
            });
        }
        serde_json::from_value(v)
            .map(Some)
            .map_err(|e| BucketError::Json {
                key: key.to_owned(),
                message: e.to_string(),
            })
    }

    pub async fn put_json<T: Serialize>(&self, key: &str, value: &T) -> Result<(), BucketError> {
        let bytes = serde_json::to_vec_pretty(value).map_err(|e| BucketError::Json {
            key: key.to_owned(),
            message: e.to_string(),
        })?;
        self.put(key, bytes).await
    }

    /// Keys under `prefix`, in order, after `start_after` if given.
    pub async fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
    ) -> Result<Vec<String>, BucketError> {
        Ok(self
            .s3
            .list_after(prefix, start_after)
            .await?
            .into_iter()
            .map(|(k, _)| k)
            .collect())
    }

    /// The newest generation object, if any.
    pub async fn newest_generation(&self) -> Result<Option<objects::Generation>, BucketError> {
        let keys = self.list("generations/", None).await?;
        let newest = keys
            .iter()
            .filter_map(|k| objects::parse_generation_key(k))
            .max();
        match newest {
            Some(g) => self.get_json(&objects::generation_key(g)).await,
            None => Ok(None),
        }
    }

    /// Generation `g`'s object, if any.
    pub async fn generation(&self, g: u32) -> Result<Option<objects::Generation>, BucketError> {
        self.get_json(&objects::generation_key(g)).await
    }
}
