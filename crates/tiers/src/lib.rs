//! Spindle's storage tiers: where the audio lives and which copy a stream
//! reads.
//!
//! Audio lives on cold devices (the music folders, other local folders,
//! S3 buckets); a hot folder on fast storage holds extra copies of the
//! popular tracks, chosen by an admission and eviction policy fed by
//! stream requests and the listening history. Reads pick among the
//! copies by measured latency and fail over mid-stream. The crate owns
//! every copy it makes: promotions into and demotions out of the hot
//! folder, uploads to `mindevcount` cold copies, and re-replication when
//! a device is lost. `docs/tiers.md` describes the configuration and
//! `docs/tiers-policy.md` the policy.
//!
//! Main types: [`Tiers`] (the runtime: [`Tiers::open`] gives a
//! [`TierStream`]; [`Tiers::start_background`] and [`Tiers::shutdown`]
//! run and stop its tasks; [`Status`]), [`TiersConfig`] (the `[tiers]`
//! section), [`device::Backend`] (a device: [`device::Folder`],
//! [`device::S3Device`], [`hot::HotFolder`]) and
//! [`placement::HotPolicy`] (the runtime's seam to the policies).
//!
//! - [`runtime`]: [`Tiers`], one file per job (reads and failover, the
//!   policy feed and pins, promotion, re-replication, status, the
//!   background tasks).
//! - [`device`], [`hot`], [`s3`]: the devices; a [`device::Folder`] opens
//!   files only through [`spindle_io::beneath::MusicRoot`], so a symlink
//!   out of the folder is refused.
//! - [`latency`]: measured time to first byte and the choice among copies.
//! - [`replica`], [`access_log`], [`pins`], [`config`]: the files under
//!   `DATA/tiers/` and the config section.
//! - [`policy`]: the hot tier's admission and eviction policies behind one
//!   trait, [`policy::Policy`], with a byte budget: Spindle's own
//!   ([`policy::Spindle`]), the baselines it is measured against (LRU, ARC,
//!   S3-FIFO, W-TinyLFU), a static oracle set and Belady's limit, and pins
//!   ([`policy::Pinned`]); [`placement`] adapts them to the runtime.
//! - [`sim`]: the trace-driven simulation behind `spindle tiers simulate`:
//!   synthetic catalogues and workloads, replay of the server's access log,
//!   the hit-ratio grid, its targets and its chart.
//!
//! It is *not* the HTTP side (ranges and headers of a tiered stream are
//! the server's, `spindle-server`), not the library or the scanner (a
//! track reaches it as a [`TrackRef`]: a key below a music folder), and
//! not a general object store: keys are tracks' relative paths.
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
