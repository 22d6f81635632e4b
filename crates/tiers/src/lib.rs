//! Spindle's storage tiers (seed `003_…`, Last.fm's SSD hot class).
//!
//! Audio lives on cold devices (the music folders, other local folders,
//! S3 buckets); a hot folder on fast storage holds extra copies of the
//! popular tracks, chosen by an admission and eviction policy fed by
//! stream requests and the listening history. Reads pick among the
//! copies by measured latency.
//!
//! - [`policy`]: the hot tier's admission and eviction policies behind one
//!   trait, [`policy::Policy`], with a byte budget: Spindle's own
//!   ([`policy::Spindle`]), the baselines it is measured against (LRU, ARC,
//!   S3-FIFO, W-TinyLFU), a static oracle set and Belady's limit, and pins
//!   ([`policy::Pinned`]).
//! - [`sim`]: the trace-driven simulation behind `spindle tiers simulate`:
//!   synthetic catalogues and workloads, replay of the server's access log,
//!   the hit-ratio grid, its targets and its chart.
//!
//! The crate copies no files: the runtime asks the policy what to do and
//! performs promotions and demotions itself.
//!
//! ```
//! use spindle_tiers::policy::{Policy, Spindle};
//!
//! // A 100 MB hot tier; tracks of 5 MB.
//! let mut hot = Spindle::new(100_000_000);
//! let first = hot.access(7, 5_000_000);
//! assert!(!first.hit && first.admit); // room to spare: promote it
//! assert!(hot.access(7, 5_000_000).hit);
//! ```
#![forbid(unsafe_code)]

pub mod policy;
pub mod sim;

// The runtime: devices, the hot folder, cold replicas, latency-aware reads.
pub mod access_log;
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
