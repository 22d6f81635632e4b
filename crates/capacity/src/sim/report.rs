//! A [`Simulation`] as `spindle cluster simulate` prints it: the inputs
//! and the hot tier in a few lines, then one Markdown table row per
//! scenario.

use std::fmt::Write as _;

use super::Simulation;

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in TB (10^12), two decimals.
pub fn tb(bytes: f64) -> String {
    format!("{:.2} TB", bytes / 1e12)
}

/// The inputs, the per-node limits, the hot tier, and the table.
pub fn table(sim: &Simulation) -> String {
    let p = &sim.params;
    let h = &sim.hot;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Catalogue: {} tracks × {:.1} MB = {}, {} copies on Garage; streams of {} kbit/s, Zipf s = {}.",
        thousands(p.tracks),
        p.track_bytes / 1e6,
        tb(sim.catalogue_bytes),
        p.replication,
        p.bitrate_kbps,
        p.zipf
    );
    let _ = writeln!(
        out,
        "Per node: link {} Gbit/s at {:.0}% = {} streams; {} SSDs × {} = {} hot streams. Per Garage disk: {} streams.",
        p.link_gbps,
        p.link_usable * 100.0,
        thousands(sim.node_link_streams.floor() as u64),
        p.ssds_per_node,
        thousands((sim.node_ssd_streams / f64::from(p.ssds_per_node)).floor() as u64),
        thousands(sim.node_ssd_streams.floor() as u64),
        thousands(sim.disk_streams.floor() as u64)
    );
    let _ = writeln!(
        out,
        "Hot tier on every node: the top {} tracks ({:.1}% of the catalogue) serve {:.2}% of streams (target {:.2}%); with {:.0}% of them shifting a day, {} more: {} per node, {} a day fetched from Garage.",
        thousands(h.tracks),
        h.catalogue_share * 100.0,
        h.hit_ratio * 100.0,
        p.hit_ratio_target * 100.0,
        p.shift_per_day * 100.0,
        thousands(h.churn_tracks),
        tb(h.bytes),
        tb(h.fill_bytes_per_day)
    );
    out.push('\n');
    out.push_str("| listeners | nodes | bound | SSD per node | network per node (Gbit/s) | hot-tier hit ratio | Garage nodes | disks | miss streams per disk |\n");
    out.push_str("|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for s in &sim.scenarios {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.2} | {:.2}% | {} | {} | {:.0} |",
            thousands(s.listeners),
            thousands(s.nodes),
            s.bound.name(),
            tb(s.ssd_bytes_per_node),
            s.network_gbps_per_node,
            s.hit_ratio * 100.0,
            thousands(s.garage_nodes),
            thousands(s.disks),
            s.miss_streams_per_disk
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{ClusterOptions, Params};
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn the_table_has_a_row_per_scenario() {
        let sim = Params::from_options(&ClusterOptions::default()).map(|p| p.simulate());
        let text = sim.map(|s| table(&s)).unwrap_or_default();
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| 1")).collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(rows[0].starts_with("| 10,000 | 1 | network |"), "{text}");
        assert!(
            rows[2].starts_with("| 1,000,000 | 40 | network |"),
            "{text}"
        );
    }
}
