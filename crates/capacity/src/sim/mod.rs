//! The capacity simulation behind `spindle cluster simulate`: for a
//! catalogue and listener populations, how many Spindle nodes, how much
//! SSD each, the network per node, and the Garage nodes and disks behind
//! them.
//!
//! [`ClusterOptions`] (the command line) becomes checked [`Params`]
//! ([`Params::from_options`]); [`Params::simulate`] gives a
//! [`Simulation`], one [`Scenario`] per listener count, which
//! [`report::table`] renders as Markdown and [`chart::svg`] draws.
//! [`zipf`] sizes the hot set, [`limits`] holds the per-device and
//! per-node figures the model is checked against.

pub mod chart;
pub mod limits;
mod model;
pub mod report;
pub mod zipf;

pub use model::{Bound, HotTier, Params, Scenario, Simulation};

/// What a run asks for: the arguments of `spindle cluster simulate`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct ClusterOptions {
    /// Concurrent listeners, one scenario per figure.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
    pub listeners: Vec<u64>,
    /// Bitrate of a stream, kbit/s.
    #[arg(long, default_value_t = 320.0)]
    pub bitrate_kbps: f64,
    /// Zipf exponent of track popularity (0: every track alike; larger:
    /// more skewed toward the hits).
    #[arg(long, default_value_t = 0.8)]
    pub zipf: f64,
    /// Tracks in the catalogue.
    #[arg(long, default_value_t = 1_000_000)]
    pub tracks: u64,
    /// Mean size of a track, MB (10^6 bytes).
    #[arg(long, default_value_t = 8.0)]
    pub track_mb: f64,
    /// Mean length of a track, minutes: sizes tracks as bitrate × length
    /// instead of --track-mb.
    #[arg(long, conflicts_with = "track_mb")]
    pub track_minutes: Option<f64>,
    /// Share of streams the SSD hot tier must serve.
    #[arg(long, default_value_t = 0.95)]
    pub hit_ratio: f64,
    /// Share of the hot set whose tracks change each day as popularity
    /// shifts (new releases rising, old hits fading).
    #[arg(long, default_value_t = 0.05)]
    pub shift_per_day: f64,
    /// Network link of a node (Spindle or Garage), Gbit/s.
    #[arg(long, default_value_t = limits::DEFAULT_LINK_GBPS)]
    pub link_gbps: f64,
    /// Share of a link a node may fill.
    #[arg(long, default_value_t = limits::DEFAULT_LINK_USABLE)]
    pub link_usable: f64,
    /// SSDs in each Spindle node's hot tier (each serves ~7,000 streams
    /// of 320 kbit/s).
    #[arg(long, default_value_t = 4)]
    pub ssds_per_node: u32,
    /// Copies Garage keeps of each block (its replication_factor).
    #[arg(long, default_value_t = 3)]
    pub replication: u32,
    /// Size of one Garage hard disk, TB (10^12 bytes).
    #[arg(long, default_value_t = 16.0)]
    pub disk_tb: f64,
    /// Hard disks in one Garage node.
    #[arg(long, default_value_t = 12)]
    pub disks_per_garage_node: u32,
}

impl Default for ClusterOptions {
    /// The command's defaults.
    fn default() -> Self {
        ClusterOptions {
            listeners: vec![10_000, 100_000, 1_000_000],
            bitrate_kbps: 320.0,
            zipf: 0.8,
            tracks: 1_000_000,
            track_mb: 8.0,
            track_minutes: None,
            hit_ratio: 0.95,
            shift_per_day: 0.05,
            link_gbps: limits::DEFAULT_LINK_GBPS,
            link_usable: limits::DEFAULT_LINK_USABLE,
            ssds_per_node: 4,
            replication: 3,
            disk_tb: 16.0,
            disks_per_garage_node: 12,
        }
    }
}

/// An option outside the range the model works in.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    #[error("--listeners needs at least one figure, e.g. --listeners 10000,100000")]
    NoListeners,
    #[error("--{option} must be {expected}, not {value}")]
    Invalid {
        option: &'static str,
        expected: &'static str,
        value: String,
    },
}

fn check(
    ok: bool,
    option: &'static str,
    expected: &'static str,
    value: impl ToString,
) -> Result<(), SimError> {
    if ok {
        Ok(())
    } else {
        Err(SimError::Invalid {
            option,
            expected,
            value: value.to_string(),
        })
    }
}

impl Params {
    /// Checks the options and derives the catalogue's bytes.
    pub fn from_options(o: &ClusterOptions) -> Result<Params, SimError> {
        if o.listeners.is_empty() {
            return Err(SimError::NoListeners);
        }
        let positive = "a number above 0";
        let finite = |x: f64| x.is_finite() && x > 0.0;
        check(
            finite(o.bitrate_kbps),
            "bitrate-kbps",
            positive,
            o.bitrate_kbps,
        )?;
        check(
            o.zipf.is_finite() && (0.0..10.0).contains(&o.zipf),
            "zipf",
            "in [0, 10)",
            o.zipf,
        )?;
        check(o.tracks > 0, "tracks", "at least 1", o.tracks)?;
        check(finite(o.track_mb), "track-mb", positive, o.track_mb)?;
        if let Some(m) = o.track_minutes {
            check(finite(m), "track-minutes", positive, m)?;
        }
        check(
            o.hit_ratio > 0.0 && o.hit_ratio <= 1.0,
            "hit-ratio",
            "in (0, 1]",
            o.hit_ratio,
        )?;
        check(
            (0.0..=1.0).contains(&o.shift_per_day),
            "shift-per-day",
            "in [0, 1]",
            o.shift_per_day,
        )?;
        check(finite(o.link_gbps), "link-gbps", positive, o.link_gbps)?;
        check(
            o.link_usable > 0.0 && o.link_usable <= 1.0,
            "link-usable",
            "in (0, 1]",
            o.link_usable,
        )?;
        check(
            o.ssds_per_node > 0,
            "ssds-per-node",
            "at least 1",
            o.ssds_per_node,
        )?;
        check(
            o.replication > 0,
            "replication",
            "at least 1",
            o.replication,
        )?;
        check(finite(o.disk_tb), "disk-tb", positive, o.disk_tb)?;
        check(
            o.disks_per_garage_node > 0,
            "disks-per-garage-node",
            "at least 1",
            o.disks_per_garage_node,
        )?;
        let track_bytes = match o.track_minutes {
            Some(m) => o.bitrate_kbps * 1e3 / 8.0 * m * 60.0,
            None => o.track_mb * 1e6,
        };
        let mut listeners = o.listeners.clone();
        listeners.sort_unstable();
        listeners.dedup();
        Ok(Params {
            listeners,
            bitrate_kbps: o.bitrate_kbps,
            zipf: o.zipf,
            tracks: o.tracks,
            track_bytes,
            hit_ratio_target: o.hit_ratio,
            shift_per_day: o.shift_per_day,
            link_gbps: o.link_gbps,
            link_usable: o.link_usable,
            ssds_per_node: o.ssds_per_node,
            replication: o.replication,
            disk_bytes: o.disk_tb * 1e12,
            disks_per_garage_node: o.disks_per_garage_node,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_of_the_command_line_and_of_default_agree() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: ClusterOptions,
        }
        let parsed = Cli::try_parse_from(["simulate"]).map(|c| c.o);
        assert_eq!(parsed.ok(), Some(ClusterOptions::default()));
    }

    #[test]
    fn options_out_of_range_are_refused_with_the_option_named() {
        let bad = ClusterOptions {
            hit_ratio: 1.5,
            ..ClusterOptions::default()
        };
        let err = Params::from_options(&bad).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("--hit-ratio must be in (0, 1], not 1.5")
        );
        let none = ClusterOptions {
            listeners: vec![],
            ..ClusterOptions::default()
        };
        assert_eq!(
            Params::from_options(&none).err(),
            Some(SimError::NoListeners)
        );
    }

    #[test]
    fn track_minutes_size_tracks_by_bitrate() {
        let o = ClusterOptions {
            track_minutes: Some(3.5),
            ..ClusterOptions::default()
        };
        let p = Params::from_options(&o).ok();
        // 320 kbit/s = 40,000 B/s, × 210 s.
        assert_eq!(p.map(|p| p.track_bytes), Some(8_400_000.0));
    }
}
