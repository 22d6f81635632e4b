//! Turning the workers' numbers into medians, ratios, targets and tables.

use crate::worker::{Side, SideReport, EQUALITY_QUERY, QUERIES};

/// The whole result of one `bench library` run at one size.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LibraryReport {
    pub entries: u32,
    pub properties: u64,
    pub rounds: usize,
    pub seed: u64,
    pub sides: Vec<SideReport>,
    /// Bytes on disk per contestant (all its files).
    pub disk_bytes: Vec<(Side, u64)>,
    /// Seconds each contestant took to load the generated tracks (shared
    /// generation excluded; Spindle includes the compaction, SQLite the
    /// index builds and ANALYZE).
    pub load_secs: Vec<(Side, f64)>,
}

/// Median and spread of a sample.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub median: f64,
    /// Median absolute deviation from the median.
    pub mad: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(xs: &[f64]) -> Option<Summary> {
        if xs.is_empty() {
            return None;
        }
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let median = median_sorted(&v);
        let mut dev: Vec<f64> = v.iter().map(|x| (x - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        Some(Summary {
            median,
            mad: median_sorted(&dev),
            min: v[0],
            max: v[v.len() - 1],
        })
    }
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One target of the issue, judged.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Target {
    pub name: String,
    pub measured: String,
    /// `None` when a contestant needed for it did not run.
    pub pass: Option<bool>,
}

/// The speed-up every query must reach against tuned SQLite.
pub const MIN_SPEEDUP: f64 = 10.0;
pub const MAX_EQUALITY_US: f64 = 1000.0;
pub const MAX_OPEN_US: f64 = 1_000_000.0;
pub const MAX_DISK_RATIO: f64 = 0.5;
pub const MAX_RSS_KIB: u64 = 400 * 1024;

impl LibraryReport {
    pub fn side(&self, s: Side) -> Option<&SideReport> {
        self.sides.iter().find(|r| r.side == s)
    }

    pub fn time(&self, s: Side, qi: usize) -> Option<Summary> {
        self.side(s)
            .and_then(|r| Summary::of(&r.queries[qi].times_us))
    }

    pub fn disk(&self, s: Side) -> Option<u64> {
        self.disk_bytes
            .iter()
            .find(|(x, _)| *x == s)
            .map(|(_, b)| *b)
    }

    /// tuned (or XMMS2) median ÷ Spindle median for query `qi`.
    pub fn ratio(&self, other: Side, qi: usize) -> Option<f64> {
        Some(self.time(other, qi)?.median / self.time(Side::Spindle, qi)?.median)
    }

    pub fn targets(&self) -> Vec<Target> {
        let mut out = Vec::new();
        let ratios: Vec<Option<f64>> = (0..QUERIES.len())
            .map(|qi| self.ratio(Side::Tuned, qi))
            .collect();
        let worst = ratios
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.map(|r| (i, r)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        out.push(Target {
            name: format!("every query ≥{MIN_SPEEDUP}× faster than tuned SQLite"),
            measured: match worst {
                Some((i, r)) => format!("slowest ratio {} on `{}`", fmt_ratio(r), QUERIES[i]),
                None => "tuned SQLite not run".to_owned(),
            },
            pass: if ratios.iter().all(Option::is_some) {
                Some(ratios.iter().flatten().all(|r| *r >= MIN_SPEEDUP))
            } else {
                None
            },
        });
        let eq = self.time(Side::Spindle, EQUALITY_QUERY);
        out.push(Target {
            name: format!(
                "`{}` (indexed equality) under 1 ms",
                QUERIES[EQUALITY_QUERY]
            ),
            measured: eq.map_or("-".into(), |s| fmt_us(s.median)),
            pass: eq.map(|s| s.median < MAX_EQUALITY_US),
        });
        let sp = self.side(Side::Spindle);
        out.push(Target {
            name: "Spindle open (load + index build) under 1 s".to_owned(),
            measured: sp.map_or("-".into(), |s| fmt_us(s.open_us)),
            pass: sp.map(|s| s.open_us < MAX_OPEN_US),
        });
        let disk = self
            .disk(Side::Spindle)
            .zip(self.disk(Side::Tuned))
            .map(|(a, b)| a as f64 / b as f64);
        out.push(Target {
            name: "data on disk ≤ ½ of tuned SQLite".to_owned(),
            measured: disk.map_or("-".into(), |d| format!("{d:.2}×")),
            pass: disk.map(|d| d <= MAX_DISK_RATIO),
        });
        out.push(Target {
            name: "Spindle peak RSS under 400 MiB".to_owned(),
            measured: sp.map_or("-".into(), |s| fmt_kib(s.memory.peak_kib)),
            pass: sp.map(|s| s.memory.peak_kib < MAX_RSS_KIB),
        });
        out
    }

    /// The report as Markdown tables.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let present: Vec<Side> = Side::ALL
            .into_iter()
            .filter(|x| self.side(*x).is_some())
            .collect();
        s.push_str(&format!(
            "### {} entries ({} properties), {} rounds, seed {}\n\n",
            group(u64::from(self.entries)),
            group(self.properties),
            self.rounds,
            self.seed
        ));
        s.push_str("Median µs per query (± median absolute deviation), each fetching artist, album, title, tracknr and duration of every match.\n\n");
        s.push_str("| query | rows |");
        for x in &present {
            s.push_str(&format!(" {} |", x.label()));
        }
        for x in present.iter().filter(|x| **x != Side::Spindle) {
            s.push_str(&format!(" {} ÷ Spindle |", x.label()));
        }
        if present.contains(&Side::Spindle) {
            s.push_str(" Spindle select / fetch |");
        }
        s.push_str("\n|---|---:|");
        for _ in &present {
            s.push_str("---:|");
        }
        for _ in present.iter().filter(|x| **x != Side::Spindle) {
            s.push_str("---:|");
        }
        if present.contains(&Side::Spindle) {
            s.push_str("---:|");
        }
        s.push('\n');
        for (qi, q) in QUERIES.iter().enumerate() {
            let rows = present
                .first()
                .and_then(|x| self.side(*x))
                .map_or(0, |r| r.queries[qi].rows);
            s.push_str(&format!("| `{q}` | {} |", group(rows as u64)));
            for x in &present {
                let t = self.time(*x, qi);
                s.push_str(&format!(
                    " {} |",
                    t.map_or("-".into(), |t| format!("{} ±{}", num(t.median), num(t.mad)))
                ));
            }
            for x in present.iter().filter(|x| **x != Side::Spindle) {
                let r = self.ratio(*x, qi);
                let mark = match (x, r) {
                    (Side::Tuned, Some(r)) if r < MIN_SPEEDUP => " (MISS)",
                    _ => "",
                };
                s.push_str(&format!(" {}{mark} |", r.map_or("-".into(), fmt_ratio)));
            }
            if let Some(sp) = self.side(Side::Spindle) {
                let sel = Summary::of(&sp.queries[qi].select_us).map(|x| x.median);
                let tot = self.time(Side::Spindle, qi).map(|x| x.median);
                s.push_str(&match (sel, tot) {
                    (Some(a), Some(t)) => format!(" {} / {} |", num(a), num((t - a).max(0.0))),
                    _ => " - |".to_owned(),
                });
            }
            s.push('\n');
        }

        s.push_str("\n|  |");
        for x in &present {
            s.push_str(&format!(" {} |", x.label()));
        }
        s.push_str("\n|---|");
        for _ in &present {
            s.push_str("---:|");
        }
        s.push('\n');
        let row = |s: &mut String, name: &str, f: &dyn Fn(Side) -> String| {
            s.push_str(&format!("| {name} |"));
            for x in &present {
                s.push_str(&format!(" {} |", f(*x)));
            }
            s.push('\n');
        };
        row(&mut s, "open", &|x| {
            self.side(x).map_or("-".into(), |r| fmt_us(r.open_us))
        });
        row(&mut s, "page-cache warm-up (SQLite)", &|x| {
            self.side(x)
                .and_then(|r| r.warm_us)
                .map_or("-".into(), fmt_us)
        });
        row(&mut s, "RSS after open", &|x| {
            self.side(x)
                .map_or("-".into(), |r| fmt_kib(r.memory.open_kib))
        });
        row(&mut s, "peak RSS (VmHWM)", &|x| {
            self.side(x)
                .map_or("-".into(), |r| fmt_kib(r.memory.peak_kib))
        });
        row(&mut s, "on disk", &|x| {
            self.disk(x).map_or("-".into(), fmt_bytes)
        });
        row(&mut s, "load (generation excluded)", &|x| {
            self.load_secs
                .iter()
                .find(|(y, _)| *y == x)
                .map_or("-".into(), |(_, t)| format!("{t:.1} s"))
        });

        s.push_str("\n| target (set for 100,000 entries) | measured | |\n|---|---|---|\n");
        for t in self.targets() {
            s.push_str(&format!(
                "| {} | {} | {} |\n",
                t.name,
                t.measured,
                match t.pass {
                    Some(true) => "PASS",
                    Some(false) => "MISS",
                    None => "n/a",
                }
            ));
        }
        s
    }
}

/// 1234567 → "1,234,567".
pub fn group(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A µs figure with sensible precision.
fn num(us: f64) -> String {
    if us >= 100.0 {
        group(us.round() as u64)
    } else if us >= 10.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.2}")
    }
}

fn fmt_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{us:.0} µs")
    }
}

fn fmt_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{}×", group(r.round() as u64))
    } else {
        format!("{r:.1}×")
    }
}

fn fmt_kib(k: u64) -> String {
    format!("{:.0} MiB", k as f64 / 1024.0)
}

pub fn fmt_bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_and_formatting() {
        let s = Summary::of(&[5.0, 1.0, 3.0, 100.0]).unwrap();
        assert_eq!(s.median, 4.0);
        assert_eq!(s.mad, 2.0);
        assert_eq!((s.min, s.max), (1.0, 100.0));
        assert!(Summary::of(&[]).is_none());
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(group(12), "12");
        assert_eq!(fmt_ratio(1234.4), "1,234×");
        assert_eq!(fmt_us(1500.0), "1.5 ms");
    }
}
