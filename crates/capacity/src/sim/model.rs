//! The capacity model: from checked [`Params`] to one [`Scenario`] per
//! listener count.
//!
//! Every Spindle node holds the same hot set (the cluster-wide popular
//! tracks, so a load balancer may send a listener to any node): its SSD
//! bytes do not depend on the listeners, only on the catalogue, the skew
//! and the churn. The listeners decide the nodes (each node bounded by its
//! link and by its SSDs' streams) and the misses, which Garage's hard
//! disks serve beside holding `replication` copies of the catalogue.

use serde::Serialize;

use super::limits::{hdd_streams, link_streams, ssd_streams, streams_gbps, CHURN_WINDOW_DAYS};
use super::zipf::hot_set;

/// Checked options ([`Params::from_options`]), in the model's units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Params {
    /// Concurrent listeners of each scenario, ascending, no repeats.
    pub listeners: Vec<u64>,
    pub bitrate_kbps: f64,
    pub zipf: f64,
    pub tracks: u64,
    /// Mean bytes of a track.
    pub track_bytes: f64,
    /// Share of streams the hot tier must serve.
    pub hit_ratio_target: f64,
    /// Share of the hot set replaced each day.
    pub shift_per_day: f64,
    pub link_gbps: f64,
    /// Share of a link a node may fill.
    pub link_usable: f64,
    pub ssds_per_node: u32,
    pub replication: u32,
    /// Bytes of one Garage hard disk.
    pub disk_bytes: f64,
    pub disks_per_garage_node: u32,
}

/// The hot tier every Spindle node holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HotTier {
    /// The most popular tracks that serve the target share of streams.
    pub tracks: u64,
    /// Their share of the catalogue's tracks.
    pub catalogue_share: f64,
    /// The share of streams they serve (at least the target).
    pub hit_ratio: f64,
    /// Tracks held beside them while popularity shifts: the day's
    /// newcomers ([`CHURN_WINDOW_DAYS`]).
    pub churn_tracks: u64,
    /// SSD bytes on each node: hot set and churn.
    pub bytes: f64,
    /// Bytes each node fetches from Garage a day to follow the shift.
    pub fill_bytes_per_day: f64,
}

/// What bounds the number of Spindle nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// Each node's network link (at the usable share).
    Network,
    /// Each node's SSDs' streams.
    SsdStreams,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Network => "network",
            Bound::SsdStreams => "SSD streams",
        }
    }
}

/// The cluster one listener count needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    pub listeners: u64,
    /// Spindle nodes.
    pub nodes: u64,
    pub bound: Bound,
    /// Listeners on each node, on average.
    pub listeners_per_node: f64,
    /// Gbit/s each node sends.
    pub network_gbps_per_node: f64,
    /// SSD bytes each node holds.
    pub ssd_bytes_per_node: f64,
    /// SSDs each node's hot streams keep busy (of `ssds_per_node`).
    pub ssds_busy_per_node: f64,
    /// Share of the streams the hot tier serves.
    pub hit_ratio: f64,
    /// Streams served from the SSDs, whole cluster.
    pub hot_streams: f64,
    /// Streams read from Garage (the hot tier's misses), whole cluster.
    pub miss_streams: f64,
    /// Garage nodes.
    pub garage_nodes: u64,
    /// Garage hard disks: the more of the two needs below.
    pub disks: u64,
    /// Disks the catalogue's copies fill.
    pub disks_for_capacity: u64,
    /// Disks the misses' streams keep busy.
    pub disks_for_streams: u64,
    pub miss_streams_per_disk: f64,
    /// Gbit/s each Garage node sends to the Spindle nodes.
    pub garage_gbps_per_node: f64,
}

/// A run: its parameters, the hot tier and one scenario per listener
/// count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Simulation {
    pub params: Params,
    /// Bytes of the whole catalogue (one copy).
    pub catalogue_bytes: f64,
    /// Streams one node's link carries (at the usable share).
    pub node_link_streams: f64,
    /// Streams one node's SSDs serve.
    pub node_ssd_streams: f64,
    /// Streams one Garage hard disk serves.
    pub disk_streams: f64,
    pub hot: HotTier,
    pub scenarios: Vec<Scenario>,
}

/// `⌈x⌉` as a count (0 for negative or NaN `x`).
fn ceil(x: f64) -> u64 {
    // A float-to-int `as` saturates: NaN and negatives give 0.
    x.ceil() as u64
}

impl Params {
    /// The hot tier, the per-node limits and every scenario.
    pub fn simulate(&self) -> Simulation {
        let hot = self.hot_tier();
        let node_link_streams = link_streams(self.link_gbps, self.link_usable, self.bitrate_kbps);
        let node_ssd_streams = f64::from(self.ssds_per_node) * ssd_streams(self.bitrate_kbps);
        let scenarios = self
            .listeners
            .iter()
            .map(|&l| self.scenario(l, &hot, node_link_streams, node_ssd_streams))
            .collect();
        Simulation {
            params: self.clone(),
            catalogue_bytes: self.tracks as f64 * self.track_bytes,
            node_link_streams,
            node_ssd_streams,
            disk_streams: hdd_streams(self.bitrate_kbps),
            hot,
            scenarios,
        }
    }

    fn hot_tier(&self) -> HotTier {
        let set = hot_set(self.tracks, self.zipf, self.hit_ratio_target);
        let churn = set.tracks as f64 * self.shift_per_day;
        let churn_tracks = ceil(churn * CHURN_WINDOW_DAYS).min(self.tracks - set.tracks);
        HotTier {
            tracks: set.tracks,
            catalogue_share: set.tracks as f64 / self.tracks as f64,
            hit_ratio: set.hit_ratio,
            churn_tracks,
            bytes: (set.tracks + churn_tracks) as f64 * self.track_bytes,
            fill_bytes_per_day: churn * self.track_bytes,
        }
    }

    fn scenario(&self, listeners: u64, hot: &HotTier, link: f64, ssds: f64) -> Scenario {
        let l = listeners as f64;
        let hot_streams = l * hot.hit_ratio;
        let miss_streams = l - hot_streams;
        let by_network = ceil(l / link);
        let by_ssd = ceil(hot_streams / ssds);
        let (nodes, bound) = if by_ssd > by_network {
            (by_ssd, Bound::SsdStreams)
        } else {
            (by_network.max(1), Bound::Network)
        };
        let per_node = l / nodes as f64;

        let copies = self.tracks as f64 * self.track_bytes * f64::from(self.replication);
        let disks_for_capacity = ceil(copies / self.disk_bytes);
        let disks_for_streams = ceil(miss_streams / hdd_streams(self.bitrate_kbps));
        // Each copy on a disk of its own.
        let disks = disks_for_capacity
            .max(disks_for_streams)
            .max(u64::from(self.replication));
        let garage_by_disks = disks.div_ceil(u64::from(self.disks_per_garage_node));
        let garage_by_network = ceil(miss_streams / link);
        // Each copy on a node of its own.
        let garage_nodes = garage_by_disks
            .max(garage_by_network)
            .max(u64::from(self.replication));
        Scenario {
            listeners,
            nodes,
            bound,
            listeners_per_node: per_node,
            network_gbps_per_node: streams_gbps(per_node, self.bitrate_kbps),
            ssd_bytes_per_node: hot.bytes,
            ssds_busy_per_node: per_node * hot.hit_ratio / ssd_streams(self.bitrate_kbps),
            hit_ratio: hot.hit_ratio,
            hot_streams,
            miss_streams,
            garage_nodes,
            disks,
            disks_for_capacity,
            disks_for_streams,
            miss_streams_per_disk: miss_streams / disks as f64,
            garage_gbps_per_node: streams_gbps(
                miss_streams / garage_nodes as f64,
                self.bitrate_kbps,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::limits::{HDD_STREAMS, NODE_STREAMS, SSD_STREAMS};
    use super::super::ClusterOptions;
    use super::*;

    fn params(o: ClusterOptions) -> Params {
        match Params::from_options(&o) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    fn one(listeners: u64, o: ClusterOptions) -> Scenario {
        let sim = params(ClusterOptions {
            listeners: vec![listeners],
            ..o
        })
        .simulate();
        sim.scenarios[0].clone()
    }

    #[test]
    fn the_reference_node_figure_fills_one_node_s_link() {
        // A full link (no headroom), SSDs that are not the bound.
        let o = ClusterOptions {
            link_usable: 1.0,
            ssds_per_node: 8,
            ..ClusterOptions::default()
        };
        let s = one(u64::from(NODE_STREAMS), o.clone());
        assert_eq!((s.nodes, s.bound), (1, Bound::Network));
        assert!((s.network_gbps_per_node - 9.6).abs() < 1e-9, "{s:?}");
        // Past the link's 31,250 streams, a second node.
        assert_eq!(one(31_250, o.clone()).nodes, 1);
        assert_eq!(one(31_251, o).nodes, 2);
        // With the default 80% headroom, 25,000 listeners a node.
        assert_eq!(one(25_000, ClusterOptions::default()).nodes, 1);
        assert_eq!(one(25_001, ClusterOptions::default()).nodes, 2);
    }

    #[test]
    fn one_ssd_serves_the_reference_ssd_figure() {
        // Every stream hot, one SSD a node, a link that is not the bound.
        let o = ClusterOptions {
            hit_ratio: 1.0,
            ssds_per_node: 1,
            link_gbps: 100.0,
            ..ClusterOptions::default()
        };
        let s = one(u64::from(SSD_STREAMS), o.clone());
        assert_eq!((s.nodes, s.bound), (1, Bound::Network));
        assert!((s.ssds_busy_per_node - 1.0).abs() < 1e-9, "{s:?}");
        let s = one(u64::from(SSD_STREAMS) + 1, o);
        assert_eq!((s.nodes, s.bound), (2, Bound::SsdStreams));
    }

    #[test]
    fn one_hard_disk_serves_the_reference_disk_figure() {
        // Uniform popularity and a 50% hot tier: half the streams miss.
        let o = ClusterOptions {
            zipf: 0.0,
            tracks: 1_000,
            hit_ratio: 0.5,
            ..ClusterOptions::default()
        };
        let s = one(60 * u64::from(HDD_STREAMS), o.clone());
        assert_eq!(s.miss_streams, 30.0 * f64::from(HDD_STREAMS));
        assert_eq!((s.disks_for_streams, s.disks), (30, 30));
        assert_eq!(s.miss_streams_per_disk, f64::from(HDD_STREAMS));
        let s = one(60 * u64::from(HDD_STREAMS) + 2, o);
        assert_eq!(s.disks, 31);
    }

    #[test]
    fn garage_holds_every_copy_of_the_catalogue() {
        // 1,000,000 tracks × 8 MB × 3 copies = 24 TB: two 16 TB disks,
        // yet three, one per copy; and three nodes.
        let s = one(1_000, ClusterOptions::default());
        assert_eq!((s.disks_for_capacity, s.disks, s.garage_nodes), (2, 3, 3));
        let big = ClusterOptions {
            tracks: 100_000_000,
            ..ClusterOptions::default()
        };
        let s = one(1_000, big);
        assert_eq!((s.disks_for_capacity, s.garage_nodes), (150, 13));
    }

    #[test]
    fn more_listeners_never_need_less() {
        let sim = params(ClusterOptions {
            listeners: vec![1, 1_000, 10_000, 30_000, 100_000, 1_000_000, 10_000_000],
            ..ClusterOptions::default()
        })
        .simulate();
        for w in sim.scenarios.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            assert!(b.nodes >= a.nodes, "{a:?} {b:?}");
            assert!(b.disks >= a.disks && b.garage_nodes >= a.garage_nodes);
            assert!(b.miss_streams >= a.miss_streams);
            assert_eq!(b.ssd_bytes_per_node, a.ssd_bytes_per_node);
        }
        assert!(sim
            .scenarios
            .iter()
            .all(|s| s.network_gbps_per_node <= 8.0 + 1e-9));
    }

    #[test]
    fn more_skew_needs_fewer_ssd_bytes_per_node() {
        let bytes: Vec<f64> = [0.6, 0.8, 1.0, 1.2]
            .iter()
            .map(|&zipf| {
                one(
                    100_000,
                    ClusterOptions {
                        zipf,
                        ..ClusterOptions::default()
                    },
                )
                .ssd_bytes_per_node
            })
            .collect();
        assert!(bytes.windows(2).all(|w| w[1] < w[0]), "{bytes:?}");
    }

    #[test]
    fn shifting_popularity_adds_the_day_s_newcomers() {
        let still = params(ClusterOptions {
            shift_per_day: 0.0,
            ..ClusterOptions::default()
        })
        .simulate()
        .hot;
        let shifting = params(ClusterOptions::default()).simulate().hot;
        assert_eq!(still.churn_tracks, 0);
        assert_eq!(shifting.tracks, still.tracks);
        assert_eq!(
            shifting.churn_tracks,
            (still.tracks as f64 * 0.05).ceil() as u64
        );
        assert!(shifting.bytes > still.bytes);
    }
}
