//! The capacity model of a Spindle cluster (several Spindle servers in
//! front of one Garage cluster, docs/cluster.md): [`sim`], behind
//! `spindle cluster simulate`. The cluster itself runs in spindle-server.
//!
//! # Capacity simulation
//!
//! For a catalogue (tracks × mean track size, or bitrate × length) and a
//! population of concurrent listeners (bitrate, Zipf exponent of track
//! popularity, the share of the hot set that shifts each day), the model
//! answers how many Spindle nodes, how many SSD bytes each, the network
//! each sends, and how many Garage nodes and hard disks hold the
//! catalogue and serve what the hot tiers miss.
//!
//! - **Hot set.** Under Zipf's law the top `k` of `n` tracks get
//!   `H(k, s) / H(n, s)` of the streams; the hot set is the smallest such
//!   `k` that reaches the target hit ratio ([`sim::zipf::hot_set`]).
//!   Every node holds the same hot set, so that a load balancer may send a
//!   listener to any node: the SSD bytes per node do not grow with the
//!   listeners. With popularity shifting by a share `f` a day, the hot
//!   tier also holds the day's newcomers ([`sim::limits::CHURN_WINDOW_DAYS`]).
//!   A flat popularity needs a large hot set: at Zipf 0.8, 95% of the
//!   streams come from ~78% of the tracks.
//! - **Spindle nodes.** Each node is bounded by its link (10 Gbit/s filled
//!   to 80% by default: 25,000 streams of 320 kbit/s) and by its SSDs'
//!   streams (4 SSDs × 7,000); the nodes are the larger of the two counts.
//! - **Garage.** `replication` copies of the catalogue fill disks; the
//!   misses (`1 - hit ratio` of the streams) keep disks busy at ~300
//!   streams each; the disks are the larger of the two counts (and at
//!   least one per copy), the Garage nodes those disks a node holds (and
//!   their links, and at least one per copy).
//!
//! The per-device and per-node figures are [`sim::limits`]' named
//! constants (an HDD ~300 streams, an SSD ~7,000, a node ~30,000 before
//! its 10 Gbit/s link saturates), taken from Last.fm's streaming tier,
//! and the unit tests check that the model reproduces them.
//!
//! It is *not* the cluster's replication or failover, and it measures
//! nothing: every figure is computed from the model's inputs.
//!
//! ```
//! use spindle_capacity::sim::{ClusterOptions, Params};
//!
//! let opts = ClusterOptions {
//!     listeners: vec![1_000_000],
//!     ..ClusterOptions::default()
//! };
//! let sim = Params::from_options(&opts)?.simulate();
//! let s = &sim.scenarios[0];
//! // 1,000,000 listeners at 320 kbit/s: 320 Gbit/s, 8 Gbit/s a node.
//! assert_eq!(s.nodes, 40);
//! assert!(s.hit_ratio >= 0.95);
//! # Ok::<(), spindle_capacity::sim::SimError>(())
//! ```
#![forbid(unsafe_code)]

pub mod sim;
