//! Charts of a listening history drawn as SVG on the server: listens over
//! time (a column per day, week or month) and ranked lists (top artists,
//! albums, tracks) as horizontal bars. The pictures carry their numbers as
//! text, a `<title>` and `<desc>` for screen readers, and a `<title>` on
//! each bar; colours and fonts are presentation attributes, so the same
//! SVG looks right opened alone or placed inline under a strict
//! Content-Security-Policy.
//!
//! This module only draws and parses periods; the counting is
//! `spindle-listens`' day buckets and time index.

use std::fmt::Write;

use jiff::civil::Date;

use crate::time::{date_of_day, day_of_date, DAY};
use crate::xml::escape;

const BAR: &str = "#3b6ea5";
const INK: &str = "#222";
const FAINT: &str = "#666";
const GRID: &str = "#ddd";
const FONT: &str = "system-ui, sans-serif";

/// The listens a chart covers: `[from, to]`, either end open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// Words for titles: "the last 7 days", "2024-01-01 to 2024-03-31".
    pub label: String,
}

/// Why a period was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PeriodError {
    #[error("unknown period {0:?}: use 7day, 30day, 12month, overall or range")]
    Unknown(String),
    #[error("a range needs from and to as YYYY-MM-DD")]
    MissingDates,
    #[error("{0:?} is not a date: use YYYY-MM-DD")]
    BadDate(String),
    #[error("the range ends before it starts")]
    Backwards,
}

/// The span of a named period at `now`: `7day`, `30day`, `12month` (365
/// days) — each that many whole UTC days up to now, today included —
/// `overall`, or `range` with `from` and `to` dates (UTC days, both
/// included).
pub fn period(
    name: &str,
    from: Option<&str>,
    to: Option<&str>,
    now: i64,
) -> Result<Span, PeriodError> {
    // Whole UTC days, today included, so a chart of 7 days has 7 columns
    // and its top lists count the same listens.
    let last = |days: i64, label: &str| Span {
        from: Some((now.div_euclid(DAY) - days + 1) * DAY),
        to: None,
        label: label.to_owned(),
    };
    match name {
        "" | "7day" => Ok(last(7, "the last 7 days")),
        "30day" | "1month" => Ok(last(30, "the last 30 days")),
        "12month" => Ok(last(365, "the last 12 months")),
        "overall" => Ok(Span {
            from: None,
            to: None,
            label: "all time".to_owned(),
        }),
        "range" => {
            let (Some(f), Some(t)) = (from, to) else {
                return Err(PeriodError::MissingDates);
            };
            let (fd, td) = (parse_date(f)?, parse_date(t)?);
            if td < fd {
                return Err(PeriodError::Backwards);
            }
            Ok(Span {
                from: Some(fd * DAY),
                to: Some((td + 1) * DAY - 1),
                label: format!("{} to {}", date(fd), date(td)),
            })
        }
        other => Err(PeriodError::Unknown(other.chars().take(40).collect())),
    }
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date.
pub fn parse_date(s: &str) -> Result<i64, PeriodError> {
    let bad = || PeriodError::BadDate(s.chars().take(40).collect());
    let mut it = s.trim().splitn(3, '-');
    let (Some(y), Some(m), Some(d)) = (it.next(), it.next(), it.next()) else {
        return Err(bad());
    };
    let y: i64 = y.parse().map_err(|_| bad())?;
    let m: u32 = m.parse().map_err(|_| bad())?;
    let d: u32 = d.parse().map_err(|_| bad())?;
    if !(1..=9999).contains(&y) {
        return Err(bad());
    }
    // 31 Feb and the like are refused.
    let date = match (i16::try_from(y), i8::try_from(m), i8::try_from(d)) {
        (Ok(y), Ok(m), Ok(d)) => Date::new(y, m, d).map_err(|_| bad())?,
        _ => return Err(bad()),
    };
    Ok(day_of_date(date))
}

fn date(day: i64) -> String {
    date_of_day(day).to_string()
}

/// One column of a time chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Short axis label ("Nov 20", "Nov 2026").
    pub label: String,
    /// Full words for the bar's tooltip ("2026-11-20").
    pub long: String,
    pub value: u64,
}

/// How long one column of a time chart is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Day,
    Week,
    Month,
}

impl Step {
    pub fn noun(self) -> &'static str {
        match self {
            Step::Day => "day",
            Step::Week => "week",
            Step::Month => "month",
        }
    }
}

/// Listens per day (`per_day`: day start, count; oldest first) as columns
/// from the day of `from` to the day of `to`, every day present (zero if
/// no listens): days up to three months, weeks up to two years, months
/// beyond.
pub fn columns(per_day: &[(i64, u32)], from: i64, to: i64) -> (Step, Vec<Column>) {
    let (first, last) = (from.div_euclid(DAY), to.div_euclid(DAY));
    let n = (last - first + 1).max(1);
    let step = if n <= 92 {
        Step::Day
    } else if n <= 2 * 366 {
        Step::Week
    } else {
        Step::Month
    };
    let month_of = |day: i64| {
        let d = date_of_day(day);
        i64::from(d.year()) * 12 + i64::from(d.month()) - 1
    };
    let index = |day: i64| -> i64 {
        match step {
            Step::Day => day - first,
            Step::Week => (day - first) / 7,
            Step::Month => month_of(day) - month_of(first),
        }
    };
    let count = index(last).max(0) as usize + 1;
    let mut cols: Vec<Column> = (0..count)
        .map(|i| {
            let i = i as i64;
            let (label, long) = match step {
                Step::Day => (
                    date_of_day(first + i).strftime("%b %-d").to_string(),
                    date(first + i),
                ),
                Step::Week => (
                    date_of_day(first + 7 * i).strftime("%b %-d").to_string(),
                    format!("week of {}", date(first + 7 * i)),
                ),
                Step::Month => {
                    let month = jiff::Span::new()
                        .try_months(i)
                        .and_then(|m| date_of_day(first).first_of_month().checked_add(m))
                        .unwrap_or(Date::MAX);
                    let label = month.strftime("%b %-Y").to_string();
                    (label.clone(), label)
                }
            };
            Column {
                label,
                long,
                value: 0,
            }
        })
        .collect();
    for &(start, n) in per_day {
        let day = start.div_euclid(DAY);
        if day < first || day > last {
            continue;
        }
        if let Some(c) = cols.get_mut(index(day) as usize) {
            c.value += u64::from(n);
        }
    }
    (step, cols)
}

/// `n` and the noun, plural unless `n` is 1: "1 listen", "3 listens".
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// At most `max` characters, with an ellipsis when cut.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut o: String = s.chars().take(max.saturating_sub(1)).collect();
    o.push('…');
    o
}

/// A round step for `ticks` gridlines up to `max`.
fn tick_step(max: u64, ticks: u64) -> u64 {
    let raw = max.div_ceil(ticks).max(1);
    let mut p = 1u64;
    while p.saturating_mul(10) <= raw {
        p *= 10;
    }
    for m in [1, 2, 5, 10] {
        if p * m >= raw {
            return p * m;
        }
    }
    p * 10
}

fn open_svg(s: &mut String, id: &str, w: u32, h: u32, title: &str, desc: &str) {
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-labelledby="{id}-title {id}-desc" class="chart" font-family="{FONT}" font-size="12"><title id="{id}-title">{}</title><desc id="{id}-desc">{}</desc><rect width="{w}" height="{h}" fill="#fff"/>"##,
        escape(title),
        escape(desc)
    );
}

/// A column chart of `cols` (listens over time). `id` prefixes the ids of
/// the title and description, so several charts can share a page; `noun`
/// is what is counted, singular ("listen").
pub fn time_svg(id: &str, title: &str, noun: &str, cols: &[Column]) -> String {
    let (w, h) = (760u32, 260u32);
    let (left, right, top, bottom) = (48.0, 12.0, 30.0, 42.0);
    let total: u64 = cols.iter().map(|c| c.value).sum();
    let max = cols.iter().map(|c| c.value).max().unwrap_or(0);
    let busiest = cols
        .iter()
        .filter(|c| c.value == max)
        .map(|c| &c.long)
        .next();
    let desc = match busiest {
        Some(b) if max > 0 => format!(
            "{} in {} columns; the most, {max}, in {b}.",
            count(total, noun),
            cols.len()
        ),
        _ => format!("No {noun}s in this period."),
    };
    let mut s = String::new();
    open_svg(&mut s, id, w, h, title, &desc);
    let _ = write!(
        s,
        r#"<text x="{left}" y="18" font-size="14" font-weight="bold" fill="{INK}">{}</text>"#,
        escape(title)
    );
    let plot_w = f64::from(w) - left - right;
    let plot_h = f64::from(h) - top - bottom;
    let base = top + plot_h;
    let step = tick_step(max.max(1), 4);
    let top_val = (max.max(1).div_ceil(step) * step) as f64;
    let mut v = 0;
    while v as f64 <= top_val {
        let y = base - plot_h * v as f64 / top_val;
        let _ = write!(
            s,
            r#"<line x1="{left}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{GRID}"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="{FAINT}">{v}</text>"#,
            left + plot_w,
            left - 6.0,
            y + 4.0
        );
        v += step;
    }
    if max == 0 {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="{FAINT}">No {}s in this period</text>"#,
            left + plot_w / 2.0,
            top + plot_h / 2.0,
            escape(noun)
        );
    }
    let n = cols.len().max(1) as f64;
    let slot = plot_w / n;
    let gap = if slot > 4.0 { slot * 0.2 } else { 0.0 };
    // About ten axis labels, whatever the number of columns.
    let every = (cols.len() / 10).max(1);
    for (i, c) in cols.iter().enumerate() {
        let x = left + slot * i as f64;
        let bh = plot_h * c.value as f64 / top_val;
        if c.value > 0 {
            let _ = write!(
                s,
                r#"<rect class="bar" x="{:.2}" y="{:.2}" width="{:.2}" height="{bh:.2}" fill="{BAR}"><title>{}: {}</title></rect>"#,
                x + gap / 2.0,
                base - bh,
                (slot - gap).max(0.5),
                escape(&c.long),
                escape(&count(c.value, noun))
            );
        }
        if i % every == 0 {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="{FAINT}">{}</text>"#,
                x + slot / 2.0,
                base + 16.0,
                escape(&c.label)
            );
        }
    }
    let _ = write!(
        s,
        r#"<line x1="{left}" x2="{:.1}" y1="{base:.1}" y2="{base:.1}" stroke="{FAINT}"/></svg>"#,
        left + plot_w
    );
    s
}

/// One row of a ranked chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    /// Shared by ties.
    pub rank: u32,
    pub name: String,
    /// The artist of an album or track; empty for artists.
    pub by: String,
    pub count: u32,
    /// A link for the name (an artist page in the web UI), if any.
    pub href: Option<String>,
}

/// Ranks shared by ties: rows with equal counts get the rank of the first
/// of them (1, 2, 2, 4). `rows` are sorted by count, highest first, and
/// `first` is the rank of the first row.
pub fn shared_ranks(counts: &[u32], first: u32) -> Vec<u32> {
    let mut out = Vec::with_capacity(counts.len());
    for (i, &c) in counts.iter().enumerate() {
        let r = if i > 0 && counts[i - 1] == c {
            out[i - 1]
        } else {
            first + i as u32
        };
        out.push(r);
    }
    out
}

/// Horizontal bars, one row per entry: rank, name (and artist), a bar as
/// long as its share of the top count, the count.
pub fn ranked_svg(id: &str, title: &str, noun: &str, rows: &[Ranked]) -> String {
    let w = 760u32;
    let row_h = 26.0;
    let top = 34.0;
    let h = (top + row_h * rows.len().max(1) as f64 + 10.0) as u32;
    let max = rows.iter().map(|r| r.count).max().unwrap_or(0);
    let desc = match rows.first() {
        Some(r) => format!(
            "{} rows; first {}{} with {}.",
            rows.len(),
            r.name,
            if r.by.is_empty() {
                String::new()
            } else {
                format!(" by {}", r.by)
            },
            count(u64::from(r.count), noun)
        ),
        None => format!("No {noun}s in this period."),
    };
    let mut s = String::new();
    open_svg(&mut s, id, w, h, title, &desc);
    let _ = write!(
        s,
        r#"<text x="8" y="18" font-size="14" font-weight="bold" fill="{INK}">{}</text>"#,
        escape(title)
    );
    if rows.is_empty() {
        let _ = write!(
            s,
            r#"<text x="8" y="{:.1}" fill="{FAINT}">No {}s in this period</text>"#,
            top + 16.0,
            escape(noun)
        );
    }
    let (bar_x, bar_w) = (340.0, 360.0);
    for (i, r) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        let text_y = y + 17.0;
        let _ = write!(
            s,
            r#"<text x="30" y="{text_y:.1}" text-anchor="end" fill="{FAINT}">{}</text>"#,
            r.rank
        );
        let name = if r.by.is_empty() {
            escape(&clip(&r.name, 44))
        } else {
            format!(
                r#"{}<tspan fill="{FAINT}"> · {}</tspan>"#,
                escape(&clip(&r.name, 30)),
                escape(&clip(&r.by, 22))
            )
        };
        let label = format!(r#"<text x="38" y="{text_y:.1}" fill="{INK}">{name}</text>"#);
        match &r.href {
            Some(href) => {
                let _ = write!(s, r#"<a href="{}">{label}</a>"#, escape(href));
            }
            None => s.push_str(&label),
        }
        let bw = if max == 0 {
            0.0
        } else {
            (bar_w * f64::from(r.count) / f64::from(max)).max(1.0)
        };
        let full = if r.by.is_empty() {
            r.name.clone()
        } else {
            format!("{} by {}", r.name, r.by)
        };
        let _ = write!(
            s,
            r#"<rect class="bar" x="{bar_x}" y="{:.1}" width="{bw:.2}" height="{:.1}" fill="{BAR}"><title>#{} {}: {}</title></rect><text x="{:.1}" y="{text_y:.1}" fill="{INK}">{}</text>"#,
            y + 4.0,
            row_h - 8.0,
            r.rank,
            escape(&full),
            escape(&count(u64::from(r.count), noun)),
            bar_x + bw + 6.0,
            r.count
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods() {
        let now = 1_700_000_000;
        type Case<'a> = (
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
            Result<(Option<i64>, Option<i64>), PeriodError>,
        );
        let cases: &[Case<'_>] = &[
            // `now` is 2023-11-14 22:13 UTC, in day 19,675: 7 days start
            // at the midnight of 2023-11-08.
            ("7day", None, None, Ok((Some(19_669 * DAY), None))),
            ("30day", None, None, Ok((Some(19_646 * DAY), None))),
            ("12month", None, None, Ok((Some(19_311 * DAY), None))),
            ("overall", None, None, Ok((None, None))),
            (
                "range",
                Some("2024-02-28"),
                Some("2024-03-01"),
                Ok((Some(1_709_078_400), Some(1_709_337_599))),
            ),
            (
                "range",
                Some("2024-02-28"),
                None,
                Err(PeriodError::MissingDates),
            ),
            (
                "range",
                Some("2023-02-29"),
                Some("2023-03-01"),
                Err(PeriodError::BadDate("2023-02-29".into())),
            ),
            (
                "range",
                Some("2024-03-02"),
                Some("2024-03-01"),
                Err(PeriodError::Backwards),
            ),
            ("week", None, None, Err(PeriodError::Unknown("week".into()))),
        ];
        for (name, f, t, want) in cases {
            let got = period(name, *f, *t, now).map(|s| (s.from, s.to));
            assert_eq!(&got, want, "{name} {f:?} {t:?}");
        }
        for day in [-1000, 0, 11_016, 19_783, 20_000, 2_932_896] {
            assert_eq!(parse_date(&date(day)), Ok(day));
        }
    }

    #[test]
    fn columns_fill_every_day_and_group_long_spans() {
        let d0 = 19_000 * DAY;
        let per_day = [(d0, 3), (d0 + 2 * DAY, 5), (d0 + 40 * DAY, 1)];
        let (step, cols) = columns(&per_day, d0 + 100, d0 + 6 * DAY + 5);
        assert_eq!(step, Step::Day);
        let v: Vec<u64> = cols.iter().map(|c| c.value).collect();
        assert_eq!(v, [3, 0, 5, 0, 0, 0, 0]);
        let (step, cols) = columns(&per_day, d0, d0 + 199 * DAY);
        assert_eq!(step, Step::Week);
        assert_eq!(cols.len(), 29);
        assert_eq!(cols[0].value, 8);
        assert_eq!(cols[5].value, 1);
        let (step, cols) = columns(&per_day, d0, d0 + 1000 * DAY);
        assert_eq!(step, Step::Month);
        assert_eq!(cols.iter().map(|c| c.value).sum::<u64>(), 9);
        assert!(cols.len() >= 33 && cols.len() <= 34, "{}", cols.len());
    }

    #[test]
    fn pictures_have_titles_bars_and_escaped_text() {
        let cols = vec![
            Column {
                label: "Nov 1".into(),
                long: "2026-11-01".into(),
                value: 4,
            },
            Column {
                label: "Nov 2".into(),
                long: "2026-11-02".into(),
                value: 0,
            },
        ];
        let svg = time_svg("l", "Listens <per> day", "listen", &cols);
        assert!(svg.contains(r#"<title id="l-title">Listens &lt;per&gt; day</title>"#));
        assert_eq!(svg.matches(r#"class="bar""#).count(), 1);
        assert!(svg.contains("4 listens in 2 columns"));
        let rows = vec![
            Ranked {
                rank: 1,
                name: "AC/DC & <Friends>".into(),
                by: String::new(),
                count: 10,
                href: Some("#/artist/ar-1".into()),
            },
            Ranked {
                rank: 2,
                name: "B".into(),
                by: "C".into(),
                count: 5,
                href: None,
            },
        ];
        let svg = ranked_svg("a", "Top artists", "listen", &rows);
        assert!(svg.contains("AC/DC &amp; &lt;Friends&gt;"));
        assert!(svg.contains(r##"<a href="#/artist/ar-1">"##));
        assert_eq!(svg.matches(r#"class="bar""#).count(), 2);
        assert!(svg.contains(r#"width="360.00""#) && svg.contains(r#"width="180.00""#));
        let empty = ranked_svg("a", "Top artists", "listen", &[]);
        assert!(empty.contains("No listens in this period"));
        assert!(!empty.contains("class=\"bar\""));
    }

    #[test]
    fn ties_share_a_rank() {
        assert_eq!(
            shared_ranks(&[9, 7, 7, 3, 3, 3, 1], 1),
            [1, 2, 2, 4, 4, 4, 7]
        );
        assert_eq!(shared_ranks(&[5, 5], 11), [11, 11]);
    }
}
