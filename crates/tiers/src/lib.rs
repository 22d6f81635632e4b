//! Spindle's storage tiers (seed `003_…`, Last.fm's SSD hot class).
//!
//! Audio lives on cold devices (the music folders, other local folders,
//! S3 buckets); a hot folder on fast storage holds extra copies of the
//! popular tracks, chosen by an admission and eviction policy fed by
//! stream requests and the listening history. Reads pick among the
//! copies by measured latency.
#![forbid(unsafe_code)]

// The runtime: devices, the hot folder, cold replicas, latency-aware reads.
pub mod config;
pub mod device;
pub mod hot;
pub mod latency;
pub mod pins;
pub mod placement;
pub mod replica;
pub mod runtime;
pub mod s3;

pub use config::TiersConfig;
pub use runtime::{Status, TierStream, Tiers, TrackRef};
