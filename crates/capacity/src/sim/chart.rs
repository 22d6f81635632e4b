//! The SVG chart of a [`Simulation`]: against the listeners (one evenly
//! spaced mark per scenario), the Spindle and Garage nodes in one panel
//! and the SSD bytes per Spindle node in the other. Every label is the
//! simulation's own numbers, so nothing needs escaping.

use std::fmt::Write;

use super::report::thousands;
use super::Simulation;

const PANEL_W: f64 = 300.0;
const PANEL_H: f64 = 240.0;
const LEFT: f64 = 56.0;
const GAP: f64 = 70.0;
const TOP: f64 = 64.0;
const BOTTOM: f64 = 50.0;
const RIGHT: f64 = 20.0;

/// The smallest of 1, 2, 5 × 10^k at or above `x` (1 for `x ≤ 0`).
fn nice_max(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&v| v >= x)
        .unwrap_or(10.0 * p)
}

/// One line of a panel: its name, colour and values (one per scenario).
struct Series {
    name: &'static str,
    colour: &'static str,
    values: Vec<f64>,
}

/// Draws one panel with its origin at `ox`.
fn panel(s: &mut String, ox: f64, title: &str, xs: &[String], series: &[Series]) {
    let oy = TOP;
    let top = nice_max(
        series
            .iter()
            .flat_map(|l| l.values.iter().copied())
            .fold(0.0, f64::max),
    );
    let x = |i: usize| {
        if xs.len() == 1 {
            ox + PANEL_W / 2.0
        } else {
            ox + 16.0 + (PANEL_W - 32.0) * i as f64 / (xs.len() - 1) as f64
        }
    };
    let y = |v: f64| oy + PANEL_H * (1.0 - v / top);
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{title}</text>",
        ox + PANEL_W / 2.0,
        oy - 8.0
    );
    let _ = writeln!(
        s,
        "<rect x=\"{ox}\" y=\"{oy}\" width=\"{PANEL_W}\" height=\"{PANEL_H}\" fill=\"none\" stroke=\"#999\"/>"
    );
    // Decimals enough for the step (top / 5), none from 1 up.
    let decimals = (-(top / 5.0).log10()).ceil().max(0.0) as usize;
    for t in 0..=5 {
        let v = top * f64::from(t) / 5.0;
        let yy = y(v);
        let _ = writeln!(
            s,
            "<line x1=\"{ox}\" x2=\"{}\" y1=\"{yy}\" y2=\"{yy}\" stroke=\"#eee\"/>",
            ox + PANEL_W
        );
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{v:.decimals$}</text>",
            ox - 4.0,
            yy + 4.0,
        );
    }
    for (i, label) in xs.iter().enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{label}</text>",
            x(i),
            oy + PANEL_H + 16.0
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">concurrent listeners</text>",
        ox + PANEL_W / 2.0,
        oy + PANEL_H + 34.0
    );
    for (li, line) in series.iter().enumerate() {
        let pts: Vec<(f64, f64)> = line
            .values
            .iter()
            .enumerate()
            .map(|(i, &v)| (x(i), y(v)))
            .collect();
        let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = writeln!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
            path.join(" "),
            line.colour
        );
        for (px, py) in pts {
            let _ = writeln!(
                s,
                "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"2.5\" fill=\"{}\"/>",
                line.colour
            );
        }
        if series.len() > 1 {
            let ly = oy + 14.0 + 16.0 * li as f64;
            let lx = ox + 10.0;
            let _ = writeln!(
                s,
                "<line x1=\"{lx}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{}\" stroke-width=\"2\"/>",
                lx + 20.0,
                line.colour
            );
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\">{}</text>",
                lx + 26.0,
                ly + 4.0,
                line.name
            );
        }
    }
}

/// The chart of a simulation, titled `title` (plain text, no markup).
pub fn svg(sim: &Simulation, title: &str) -> String {
    let w = LEFT + 2.0 * PANEL_W + GAP + RIGHT;
    let h = TOP + PANEL_H + BOTTOM;
    let p = &sim.params;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(s, "<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{title}</text>"
    );
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"36\" fill=\"#555\">{} tracks, {} kbit/s, Zipf s = {}, hot-tier hit ratio {:.0}%, {:.0}% of the hot set shifting a day</text>",
        thousands(p.tracks),
        p.bitrate_kbps,
        p.zipf,
        p.hit_ratio_target * 100.0,
        p.shift_per_day * 100.0
    );
    let xs: Vec<String> = sim
        .scenarios
        .iter()
        .map(|c| thousands(c.listeners))
        .collect();
    let nodes = [
        Series {
            name: "Spindle nodes",
            colour: "#d55e00",
            values: sim.scenarios.iter().map(|c| c.nodes as f64).collect(),
        },
        Series {
            name: "Garage nodes",
            colour: "#0072b2",
            values: sim
                .scenarios
                .iter()
                .map(|c| c.garage_nodes as f64)
                .collect(),
        },
    ];
    panel(&mut s, LEFT, "nodes", &xs, &nodes);
    let ssd = [Series {
        name: "SSD per node",
        colour: "#009e73",
        values: sim
            .scenarios
            .iter()
            .map(|c| c.ssd_bytes_per_node / 1e12)
            .collect(),
    }];
    panel(
        &mut s,
        LEFT + PANEL_W + GAP,
        "SSD per Spindle node (TB)",
        &xs,
        &ssd,
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::super::{ClusterOptions, Params};
    use super::*;

    #[test]
    fn nice_maxima_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_max(40.0), 50.0);
        assert_eq!(nice_max(6.6), 10.0);
        assert_eq!(nice_max(1.0), 1.0);
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(0.13), 0.2);
    }

    #[test]
    fn the_chart_draws_three_lines_with_a_mark_per_scenario() {
        let sim = Params::from_options(&ClusterOptions::default()).map(|p| p.simulate());
        let svg = sim.map(|s| svg(&s, "cluster")).unwrap_or_default();
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline ").count(), 3);
        assert_eq!(svg.matches("<circle ").count(), 9);
        assert!(svg.contains(">1,000,000</text>"));
        // Axes: nodes up to 50 by 10, SSD up to 10 TB by 2.
        assert!(svg.contains(">50</text>") && svg.contains(">8</text>"));
    }

    #[test]
    fn small_axis_steps_keep_their_decimals_and_no_more() {
        let o = ClusterOptions {
            listeners: vec![100],
            tracks: 1_000,
            track_mb: 0.1,
            ..ClusterOptions::default()
        };
        let sim = Params::from_options(&o).map(|p| p.simulate());
        let svg = sim.map(|s| svg(&s, "small")).unwrap_or_default();
        // About 0.0001 TB per node: an axis to 0.0001 by 0.00002.
        assert!(svg.contains(">0.00006</text>"), "{svg}");
        assert!(!svg.contains("0000000"), "{svg}");
    }
}
