//! The chart: IOPS (left) and p99 read latency (right) against queue depth
//! on a log2 axis, one line per engine and mix; fio's figures dashed.
//!
//! The layout is drawn once against a small `Canvas` trait with two back
//! ends: SVG text ([`svg`]) and a PNG raster ([`png`], tiny-skia with a
//! built-in 8×8 bitmap font, so it needs no system fonts); [`write()`] puts
//! both files side by side.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{BenchReport, Point, Rw};
use crate::engine::EngineKind;
use crate::error::BenchError;

const W: f32 = 1200.0;
const H: f32 = 560.0;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Rgb(u8, u8, u8);

const INK: Rgb = Rgb(0x22, 0x22, 0x22);
const GRID: Rgb = Rgb(0xdd, 0xdd, 0xdd);
const WHITE: Rgb = Rgb(0xff, 0xff, 0xff);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Anchor {
    Start,
    Middle,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Size {
    Small,
    Normal,
    Title,
}

trait Canvas {
    fn line(&mut self, pts: &[(f32, f32)], color: Rgb, width: f32, dashed: bool);
    fn rect(&mut self, x: f32, y: f32, w: f32, h: f32, color: Rgb);
    fn text(&mut self, x: f32, y: f32, s: &str, size: Size, anchor: Anchor, color: Rgb);
}

fn color(engine: EngineKind, rw: Rw) -> Rgb {
    match (engine, rw) {
        (EngineKind::Psync, Rw::RandRead) => Rgb(0x1f, 0x77, 0xb4),
        (EngineKind::Psync, Rw::RandRw) => Rgb(0x17, 0xbe, 0xcf),
        (EngineKind::Uring, Rw::RandRead) => Rgb(0xd6, 0x27, 0x28),
        (EngineKind::Uring, Rw::RandRw) => Rgb(0xff, 0x7f, 0x0e),
        (EngineKind::UringSqpoll, Rw::RandRead) => Rgb(0x2c, 0xa0, 0x2c),
        (EngineKind::UringSqpoll, Rw::RandRw) => Rgb(0x94, 0x67, 0xbd),
    }
}

/// One line: (depth, value) points.
struct Series {
    label: String,
    color: Rgb,
    dashed: bool,
    pts: Vec<(f64, f64)>,
}

fn series(report: &BenchReport, value: fn(&Point, bool) -> Option<f64>) -> Vec<Series> {
    let mut keys: Vec<(Rw, EngineKind)> = report.points.iter().map(|p| (p.rw, p.engine)).collect();
    keys.dedup();
    let mut out = Vec::new();
    for fio in [false, true] {
        for &(rw, engine) in &keys {
            let pts: Vec<(f64, f64)> = report
                .points
                .iter()
                .filter(|p| p.rw == rw && p.engine == engine)
                .filter_map(|p| value(p, fio).map(|v| (p.depth as f64, v)))
                .collect();
            if !pts.is_empty() {
                out.push(Series {
                    label: format!(
                        "{} {}{}",
                        engine.name(),
                        rw.name(),
                        if fio { " (fio)" } else { "" }
                    ),
                    color: color(engine, rw),
                    dashed: fio,
                    pts,
                });
            }
        }
    }
    out
}

fn iops(p: &Point, fio: bool) -> Option<f64> {
    if fio {
        p.fio.as_ref().map(|f| f.median.iops())
    } else {
        Some(p.spindle.median.iops())
    }
}

fn p99(p: &Point, fio: bool) -> Option<f64> {
    let v = if fio {
        p.fio.as_ref()?.median.lat_p99_us
    } else {
        p.spindle.median.lat_p99_us
    };
    (v > 0.0).then_some(v)
}

/// "Nice" linear ticks from 0 to at least `max`.
fn linear_ticks(max: f64) -> Vec<f64> {
    let max = if max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let n = (max / step).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if v >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

struct Panel {
    x0: f32,
    y0: f32,
    w: f32,
    h: f32,
    dmin: f64,
    dmax: f64,
}

impl Panel {
    fn x(&self, depth: f64) -> f32 {
        let (a, b) = (self.dmin.log2(), self.dmax.log2());
        let t = if b > a {
            (depth.log2() - a) / (b - a)
        } else {
            0.5
        };
        self.x0 + (t as f32) * self.w
    }
}

fn draw(c: &mut dyn Canvas, report: &BenchReport) {
    c.rect(0.0, 0.0, W, H, WHITE);
    let title = format!(
        "spindle iobench: {} {} blocks, {}, {} CPUs, median of {} round{}",
        crate::units::format_size(report.size),
        crate::units::format_size(report.bs as u64),
        if report.direct {
            "O_DIRECT"
        } else {
            "buffered"
        },
        report.cpus,
        report.rounds,
        if report.rounds == 1 { "" } else { "s" }
    );
    c.text(W / 2.0, 28.0, &title, Size::Title, Anchor::Middle, INK);
    let depths: Vec<f64> = report.points.iter().map(|p| p.depth as f64).collect();
    let dmin = depths
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min)
        .max(1.0);
    let dmax = depths.iter().cloned().fold(1.0, f64::max).max(dmin);
    let mut ticks_x: Vec<usize> = report.points.iter().map(|p| p.depth).collect();
    ticks_x.sort_unstable();
    ticks_x.dedup();

    let iops_series = series(report, iops);
    let p99_series = series(report, p99);
    let left = Panel {
        x0: 90.0,
        y0: 70.0,
        w: 470.0,
        h: 360.0,
        dmin,
        dmax,
    };
    let right = Panel {
        x0: 700.0,
        y0: 70.0,
        w: 470.0,
        h: 360.0,
        dmin,
        dmax,
    };

    // Left: IOPS, linear from 0.
    let max_iops = iops_series
        .iter()
        .flat_map(|s| s.pts.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let ty = linear_ticks(max_iops);
    let top = *ty.last().unwrap_or(&1.0);
    let yl = |v: f64| left.y0 + left.h - (v / top) as f32 * left.h;
    axes(c, &left, &ticks_x, "IOPS (read + write)");
    for &t in &ty {
        c.line(
            &[(left.x0, yl(t)), (left.x0 + left.w, yl(t))],
            GRID,
            1.0,
            false,
        );
        c.text(
            left.x0 - 8.0,
            yl(t) + 4.0,
            &short(t),
            Size::Small,
            Anchor::End,
            INK,
        );
    }
    for s in &iops_series {
        plot(c, &left, s, yl);
    }

    // Right: p99 read latency, log10.
    let vals: Vec<f64> = p99_series
        .iter()
        .flat_map(|s| s.pts.iter().map(|p| p.1))
        .collect();
    let lo = vals.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().cloned().fold(0.0, f64::max);
    let (lo_e, hi_e) = if vals.is_empty() {
        (0, 3)
    } else {
        let a = lo.log10().floor() as i32;
        let b = (hi.log10().ceil() as i32).max(a + 1);
        (a, b)
    };
    let yr = |v: f64| {
        let t = (v.log10() - lo_e as f64) / (hi_e - lo_e) as f64;
        right.y0 + right.h - t as f32 * right.h
    };
    axes(c, &right, &ticks_x, "p99 read latency (us, log scale)");
    for e in lo_e..=hi_e {
        let v = 10f64.powi(e);
        c.line(
            &[(right.x0, yr(v)), (right.x0 + right.w, yr(v))],
            GRID,
            1.0,
            false,
        );
        c.text(
            right.x0 - 8.0,
            yr(v) + 4.0,
            &short(v),
            Size::Small,
            Anchor::End,
            INK,
        );
    }
    for s in &p99_series {
        plot(c, &right, s, yr);
    }

    // Legend: Spindle's lines in a grid (a row per mix when there are three
    // engines), then a note on fio's dashes.
    let solid: Vec<&Series> = iops_series.iter().filter(|s| !s.dashed).collect();
    for (i, s) in solid.iter().enumerate() {
        let x = 90.0 + (i % 3) as f32 * 360.0;
        let y = 492.0 + (i / 3) as f32 * 22.0;
        c.line(&[(x, y - 4.0), (x + 24.0, y - 4.0)], s.color, 3.0, false);
        c.text(x + 30.0, y, &s.label, Size::Normal, Anchor::Start, INK);
    }
    if iops_series.iter().any(|s| s.dashed) {
        let y = 492.0 + solid.len().div_ceil(3) as f32 * 22.0;
        c.line(&[(90.0, y - 4.0), (114.0, y - 4.0)], INK, 2.0, true);
        c.text(
            120.0,
            y,
            "dashed: fio at the same point, same engine",
            Size::Normal,
            Anchor::Start,
            INK,
        );
    }
}

fn axes(c: &mut dyn Canvas, p: &Panel, ticks: &[usize], label: &str) {
    c.text(p.x0, p.y0 - 14.0, label, Size::Normal, Anchor::Start, INK);
    for &d in ticks {
        let x = p.x(d as f64);
        c.line(&[(x, p.y0), (x, p.y0 + p.h)], GRID, 1.0, false);
        c.text(
            x,
            p.y0 + p.h + 18.0,
            &d.to_string(),
            Size::Small,
            Anchor::Middle,
            INK,
        );
    }
    c.text(
        p.x0 + p.w / 2.0,
        p.y0 + p.h + 40.0,
        "queue depth (log2)",
        Size::Normal,
        Anchor::Middle,
        INK,
    );
    c.line(
        &[(p.x0, p.y0), (p.x0, p.y0 + p.h), (p.x0 + p.w, p.y0 + p.h)],
        INK,
        1.5,
        false,
    );
}

fn plot(c: &mut dyn Canvas, p: &Panel, s: &Series, y: impl Fn(f64) -> f32) {
    let pts: Vec<(f32, f32)> = s.pts.iter().map(|&(d, v)| (p.x(d), y(v))).collect();
    c.line(&pts, s.color, if s.dashed { 1.5 } else { 2.5 }, s.dashed);
    if !s.dashed {
        for &(x, y) in &pts {
            c.rect(x - 3.0, y - 3.0, 6.0, 6.0, s.color);
        }
    }
}

/// The chart as an SVG document.
pub fn svg(report: &BenchReport) -> String {
    let mut c = Svg(String::new());
    draw(&mut c, report);
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n{}</svg>\n",
        c.0
    )
}

/// The chart as a PNG image (twice the SVG's pixel size).
pub fn png(report: &BenchReport) -> Result<Vec<u8>, String> {
    let mut c = Png::new(2.0).ok_or("cannot allocate the image")?;
    draw(&mut c, report);
    c.pixmap.encode_png().map_err(|e| e.to_string())
}

/// `x.svg` → (`x.svg`, `x.png`); `x.png` → (`x.svg`, `x.png`); `x` →
/// (`x.svg`, `x.png`).
pub fn paths(p: &Path) -> (PathBuf, PathBuf) {
    match p.extension().and_then(|e| e.to_str()) {
        Some("svg") => (p.to_path_buf(), p.with_extension("png")),
        Some("png") => (p.with_extension("svg"), p.to_path_buf()),
        _ => {
            let mut svg = p.as_os_str().to_owned();
            svg.push(".svg");
            let mut png = p.as_os_str().to_owned();
            png.push(".png");
            (PathBuf::from(svg), PathBuf::from(png))
        }
    }
}

/// Writes the chart as SVG and PNG at [`paths`]`(path)`; returns them.
pub fn write(report: &BenchReport, path: &Path) -> Result<(PathBuf, PathBuf), BenchError> {
    let (svg_path, png_path) = paths(path);
    let put = |p: &Path, bytes: &[u8]| {
        std::fs::write(p, bytes).map_err(|source| BenchError::Chart {
            path: p.to_owned(),
            source,
        })
    };
    put(&svg_path, svg(report).as_bytes())?;
    put(&png_path, &png(report).map_err(BenchError::ChartRender)?)?;
    Ok((svg_path, png_path))
}

struct Svg(String);

fn hex(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// `s` as the text of an SVG `<text>` element: `&`, `<` and `>` escaped.
/// The one escaping of the benchmark charts (this one and the tiers'
/// policy simulation's, `spindle_tiers::sim::chart`); the server's
/// documents have their own rule (`spindle_server::xml`).
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Canvas for Svg {
    fn line(&mut self, pts: &[(f32, f32)], color: Rgb, width: f32, dashed: bool) {
        if pts.len() < 2 {
            return;
        }
        let d: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = writeln!(
            self.0,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{width}\"{}/>",
            d.join(" "),
            hex(color),
            if dashed {
                " stroke-dasharray=\"7 5\""
            } else {
                ""
            }
        );
    }

    fn rect(&mut self, x: f32, y: f32, w: f32, h: f32, color: Rgb) {
        let _ = writeln!(
            self.0,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{}\"/>",
            hex(color)
        );
    }

    fn text(&mut self, x: f32, y: f32, s: &str, size: Size, anchor: Anchor, color: Rgb) {
        let px = match size {
            Size::Small => 11,
            Size::Normal => 13,
            Size::Title => 16,
        };
        let a = match anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let _ = writeln!(
            self.0,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{px}\" text-anchor=\"{a}\" fill=\"{}\">{}</text>",
            hex(color),
            escape(s)
        );
    }
}

struct Png {
    pixmap: tiny_skia::Pixmap,
    scale: f32,
}

impl Png {
    fn new(scale: f32) -> Option<Png> {
        let pixmap = tiny_skia::Pixmap::new((W * scale) as u32, (H * scale) as u32)?;
        Some(Png { pixmap, scale })
    }

    fn paint(color: Rgb) -> tiny_skia::Paint<'static> {
        let mut p = tiny_skia::Paint::default();
        p.set_color_rgba8(color.0, color.1, color.2, 255);
        p.anti_alias = true;
        p
    }
}

impl Canvas for Png {
    fn line(&mut self, pts: &[(f32, f32)], color: Rgb, width: f32, dashed: bool) {
        let s = self.scale;
        let mut pb = tiny_skia::PathBuilder::new();
        for (i, &(x, y)) in pts.iter().enumerate() {
            if i == 0 {
                pb.move_to(x * s, y * s);
            } else {
                pb.line_to(x * s, y * s);
            }
        }
        let Some(path) = pb.finish() else { return };
        let mut stroke = tiny_skia::Stroke {
            width: width * s,
            ..Default::default()
        };
        if dashed {
            stroke.dash = tiny_skia::StrokeDash::new(vec![7.0 * s, 5.0 * s], 0.0);
        }
        self.pixmap.stroke_path(
            &path,
            &Self::paint(color),
            &stroke,
            tiny_skia::Transform::identity(),
            None,
        );
    }

    fn rect(&mut self, x: f32, y: f32, w: f32, h: f32, color: Rgb) {
        let s = self.scale;
        if let Some(r) = tiny_skia::Rect::from_xywh(x * s, y * s, w * s, h * s) {
            self.pixmap.fill_rect(
                r,
                &Self::paint(color),
                tiny_skia::Transform::identity(),
                None,
            );
        }
    }

    fn text(&mut self, x: f32, y: f32, s: &str, size: Size, anchor: Anchor, color: Rgb) {
        // Glyph pixels become squares of `px` image pixels.
        let px = match size {
            Size::Small => 1.0,
            Size::Normal => 1.25,
            Size::Title => 1.5,
        } * self.scale;
        let width = s.chars().count() as f32 * 8.0 * px;
        let x0 = x * self.scale
            - match anchor {
                Anchor::Start => 0.0,
                Anchor::Middle => width / 2.0,
                Anchor::End => width,
            };
        // `y` is the baseline; the 8x8 glyphs have a descender row.
        let y0 = y * self.scale - 7.0 * px;
        let paint = Self::paint(color);
        let mut pb = tiny_skia::PathBuilder::new();
        for (i, ch) in s.chars().enumerate() {
            let glyph = font8x8::legacy::BASIC_LEGACY
                .get(ch as usize)
                .copied()
                .unwrap_or(font8x8::legacy::BASIC_LEGACY[b'?' as usize]);
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8 {
                    if bits & (1 << col) != 0 {
                        let gx = x0 + (i as f32 * 8.0 + col as f32) * px;
                        let gy = y0 + row as f32 * px;
                        if let Some(r) = tiny_skia::Rect::from_xywh(gx, gy, px, px) {
                            pb.push_rect(r);
                        }
                    }
                }
            }
        }
        if let Some(path) = pb.finish() {
            self.pixmap.fill_path(
                &path,
                &paint,
                tiny_skia::FillRule::Winding,
                tiny_skia::Transform::identity(),
                None,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_svg_and_png_sit_side_by_side() {
        let pair = |a: &str, b: &str| (PathBuf::from(a), PathBuf::from(b));
        assert_eq!(paths(Path::new("d/x.svg")), pair("d/x.svg", "d/x.png"));
        assert_eq!(paths(Path::new("x.png")), pair("x.svg", "x.png"));
        assert_eq!(paths(Path::new("x.v1")), pair("x.v1.svg", "x.v1.png"));
    }

    #[test]
    fn chart_text_escapes_markup_and_keeps_the_rest() {
        assert_eq!(escape("R&B <live> 4k"), "R&amp;B &lt;live&gt; 4k");
        assert_eq!(escape("&amp;"), "&amp;amp;");
    }

    #[test]
    fn ticks_cover_the_maximum() {
        let t = linear_ticks(123_456.0);
        assert_eq!(t[0], 0.0);
        assert!(*t.last().unwrap() >= 123_456.0);
        assert!(t.len() <= 7);
        assert_eq!(short(25_000.0), "25k");
        assert_eq!(short(1_500_000.0), "1.5M");
    }
}
