//! SVG charts of a grid: one chart per workload, one panel per Zipf
//! exponent, byte hit ratio against hot-tier size, one line per policy.

use std::fmt::Write;

use spindle_io::bench::chart::escape;

use super::{Cell, PolicyKind};

const PANEL_W: f64 = 250.0;
const PANEL_H: f64 = 230.0;
const LEFT: f64 = 46.0;
const TOP: f64 = 56.0;
const BOTTOM: f64 = 44.0;
const LEGEND_W: f64 = 120.0;

fn colour(p: PolicyKind) -> &'static str {
    match p {
        PolicyKind::Lru => "#8c8c8c",
        PolicyKind::Arc => "#e69f00",
        PolicyKind::S3Fifo => "#56b4e9",
        PolicyKind::WTinyLfu => "#009e73",
        PolicyKind::Spindle => "#d55e00",
        PolicyKind::Static => "#0072b2",
        PolicyKind::Belady => "#000000",
    }
}

fn dash(p: PolicyKind) -> &'static str {
    match p {
        PolicyKind::Static => " stroke-dasharray=\"6 3\"",
        PolicyKind::Belady => " stroke-dasharray=\"2 3\"",
        _ => "",
    }
}

/// The chart of one workload's cells (all exponents), or `None` if the
/// grid has no cells of that workload.
pub fn svg(cells: &[Cell], workload: &str, title: &str) -> Option<String> {
    let cells: Vec<&Cell> = cells.iter().filter(|c| c.workload == workload).collect();
    if cells.is_empty() {
        return None;
    }
    let mut exps: Vec<Option<f64>> = Vec::new();
    let mut caps: Vec<f64> = Vec::new();
    let mut pols: Vec<PolicyKind> = Vec::new();
    for c in &cells {
        if !exps.contains(&c.exponent) {
            exps.push(c.exponent);
        }
        if !caps.contains(&c.capacity) {
            caps.push(c.capacity);
        }
        if !pols.contains(&c.policy) {
            pols.push(c.policy);
        }
    }
    exps.sort_by(|a, b| a.unwrap_or(0.0).total_cmp(&b.unwrap_or(0.0)));
    caps.sort_by(f64::total_cmp);
    pols.sort_by_key(|p| PolicyKind::ALL.iter().position(|q| q == p));
    let w = LEFT + PANEL_W * exps.len() as f64 + LEGEND_W;
    let h = TOP + PANEL_H + BOTTOM;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(s, "<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>",
        escape(title)
    );
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"36\" fill=\"#555\">byte hit ratio (share of streamed bytes served hot) against hot-tier size (% of the catalogue's bytes)</text>"
    );
    let plot_w = PANEL_W - 20.0;
    let plot_h = PANEL_H - 30.0;
    // x positions: evenly spaced categories.
    let xs = |i: usize| {
        if caps.len() == 1 {
            plot_w / 2.0
        } else {
            10.0 + (plot_w - 20.0) * i as f64 / (caps.len() - 1) as f64
        }
    };
    for (pi, e) in exps.iter().enumerate() {
        let ox = LEFT + PANEL_W * pi as f64;
        let oy = TOP + 20.0;
        let y = |r: f64| oy + plot_h * (1.0 - r);
        let label = match e {
            Some(s) => format!("Zipf s = {s}"),
            None => "replayed log".to_string(),
        };
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{label}</text>",
            ox + plot_w / 2.0,
            oy - 6.0
        );
        let _ = writeln!(
            s,
            "<rect x=\"{ox}\" y=\"{oy}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"none\" stroke=\"#999\"/>"
        );
        for t in 0..=5 {
            let r = t as f64 / 5.0;
            let yy = y(r);
            let _ = writeln!(
                s,
                "<line x1=\"{ox}\" x2=\"{}\" y1=\"{yy}\" y2=\"{yy}\" stroke=\"#eee\"/>",
                ox + plot_w
            );
            if pi == 0 {
                let _ = writeln!(
                    s,
                    "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}%</text>",
                    ox - 4.0,
                    yy + 4.0,
                    t * 20
                );
            }
        }
        for (ci, c) in caps.iter().enumerate() {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}%</text>",
                ox + xs(ci),
                oy + plot_h + 14.0,
                c * 100.0
            );
        }
        for &p in &pols {
            let mut pts = Vec::new();
            for (ci, c) in caps.iter().enumerate() {
                if let Some(cell) = cells
                    .iter()
                    .find(|x| x.policy == p && x.exponent == *e && x.capacity == *c)
                {
                    pts.push((ox + xs(ci), y(cell.byte_hit_ratio)));
                }
            }
            let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let width = if p == PolicyKind::Spindle { 2.5 } else { 1.5 };
            let _ = writeln!(
                s,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{width}\"{}/>",
                path.join(" "),
                colour(p),
                dash(p)
            );
            for (x, y) in pts {
                let _ = writeln!(
                    s,
                    "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.2\" fill=\"{}\"/>",
                    colour(p)
                );
            }
        }
    }
    let lx = LEFT + PANEL_W * exps.len() as f64;
    for (i, &p) in pols.iter().enumerate() {
        let ly = TOP + 30.0 + 18.0 * i as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{lx}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{}\" stroke-width=\"2\"{}/>",
            lx + 22.0,
            colour(p),
            dash(p)
        );
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\">{}</text>",
            lx + 28.0,
            ly + 4.0,
            p.name()
        );
    }
    s.push_str("</svg>\n");
    Some(s)
}
