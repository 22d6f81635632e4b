//! What one device and one node can serve: the reference figures of a
//! streaming tier that grew by adding nodes, and how they scale with the
//! bitrate.
//!
//! The figures come from Last.fm's streaming tier, which Spindle's tiers
//! are modelled on (Last.fm's engineering blog, "Launching Xbox,
//! Part 2 - SSD Streaming", 14 December 2009:
//! <https://blog.last.fm/2009/12/14/launching-xbox-part-2-ssd-streaming>).
//! They are taken as figures at [`REFERENCE_BITRATE_KBPS`], the bitrate the
//! issue plans for. A device serves a stream by reading its bytes as they
//! play, so a stream at twice the bitrate costs twice the reads (of a
//! disk's IOPS or an SSD's bandwidth): every figure scales with
//! `REFERENCE_BITRATE_KBPS / bitrate`.

/// The bitrate, kbit/s, at which the reference figures below hold.
pub const REFERENCE_BITRATE_KBPS: f64 = 320.0;

/// Concurrent streams one 7,200 rpm SATA hard disk serves before its
/// random reads (IOPS) run out: "around 300 concurrent connections"
/// (Last.fm's blog post above). Garage's disks are such disks.
pub const HDD_STREAMS: u32 = 300;

/// Concurrent streams one SSD serves: ~7,000, the figure of Last.fm's
/// SSD streaming nodes (the blog post above).
pub const SSD_STREAMS: u32 = 7_000;

/// Concurrent streams one node served before its network saturated:
/// ~30,000 (the blog post above). A 10 Gbit/s link carries
/// 31,250 streams of 320 kbit/s ([`link_streams`]), so the figure is the
/// link, full; a plan keeps headroom ([`DEFAULT_LINK_USABLE`]).
pub const NODE_STREAMS: u32 = 30_000;

/// A node's network link, Gbit/s, unless `--link-gbps` says otherwise.
pub const DEFAULT_LINK_GBPS: f64 = 10.0;

/// The share of a link a plan fills, unless `--link-usable` says
/// otherwise: 80%, headroom for bursts, TCP and HTTP overhead and the
/// hot tier's fills from the cold tier.
pub const DEFAULT_LINK_USABLE: f64 = 0.8;

/// Days a track that has left the hot set stays on the SSDs before the
/// policy evicts it: the hot tier holds the day's newcomers beside it, so
/// with popularity shifting by a share `f` of the hot set a day, the hot
/// tier needs `1 + f × CHURN_WINDOW_DAYS` times the hot set's bytes.
pub const CHURN_WINDOW_DAYS: f64 = 1.0;

/// `figure` (streams at [`REFERENCE_BITRATE_KBPS`]) at `bitrate_kbps`.
fn at_bitrate(figure: u32, bitrate_kbps: f64) -> f64 {
    f64::from(figure) * REFERENCE_BITRATE_KBPS / bitrate_kbps
}

/// Concurrent streams one hard disk serves at `bitrate_kbps`.
pub fn hdd_streams(bitrate_kbps: f64) -> f64 {
    at_bitrate(HDD_STREAMS, bitrate_kbps)
}

/// Concurrent streams one SSD serves at `bitrate_kbps`.
pub fn ssd_streams(bitrate_kbps: f64) -> f64 {
    at_bitrate(SSD_STREAMS, bitrate_kbps)
}

/// Concurrent streams a link of `gbps` carries at `bitrate_kbps`, filled
/// to the share `usable`.
pub fn link_streams(gbps: f64, usable: f64, bitrate_kbps: f64) -> f64 {
    gbps * 1e9 * usable / (bitrate_kbps * 1e3)
}

/// Gbit/s that `streams` concurrent streams at `bitrate_kbps` send.
pub fn streams_gbps(streams: f64, bitrate_kbps: f64) -> f64 {
    streams * bitrate_kbps * 1e3 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_ten_gigabit_link_carries_the_reference_node_figure() {
        let full = link_streams(DEFAULT_LINK_GBPS, 1.0, REFERENCE_BITRATE_KBPS);
        assert_eq!(full, 31_250.0);
        // ~30,000: within 5% of the link's capacity, and below it.
        let node = f64::from(NODE_STREAMS);
        assert!(node <= full && (full - node) / full < 0.05, "{full}");
        // The plan's headroom: 25,000 streams per node by default.
        let planned = link_streams(DEFAULT_LINK_GBPS, DEFAULT_LINK_USABLE, 320.0);
        assert_eq!(planned, 25_000.0);
    }

    #[test]
    fn device_figures_hold_at_the_reference_bitrate_and_scale_with_it() {
        assert_eq!(hdd_streams(320.0), 300.0);
        assert_eq!(ssd_streams(320.0), 7_000.0);
        assert_eq!(hdd_streams(160.0), 600.0);
        assert_eq!(ssd_streams(640.0), 3_500.0);
    }

    #[test]
    fn a_node_of_four_ssds_serves_about_what_its_link_carries() {
        // Why four SSDs a node is the default: 4 × 7,000 ≈ 30,000.
        let ssds = 4.0 * ssd_streams(320.0);
        let node = f64::from(NODE_STREAMS);
        assert!((ssds - node).abs() / node < 0.1, "{ssds}");
    }

    #[test]
    fn thirty_thousand_streams_at_320_kbps_send_9_6_gbps() {
        assert!((streams_gbps(30_000.0, 320.0) - 9.6).abs() < 1e-9);
    }
}
