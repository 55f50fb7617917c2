//! SVG charts of benchmark results, in the manner of Symas' reports
//! (`/work/shared/seeds/symas-inmemory-scaling-2014.txt`, `symas-malloc-2015.txt`):
//! read and write rates of `readwhilewriting` against reader threads, load times,
//! and throughput per workload.
//!
//! The module stands alone: it takes [`ChartRow`]s, not the harness' own types, so
//! that whatever produces results only has to fill these in and call
//! [`write_charts`].
//!
//! Text: plotters is built without a font backend (no `ttf`, which needs
//! fontconfig/freetype, and no `ab_glyph`). Its fallback ("naive") font then only
//! *estimates* text extents for layout (legend boxes, label areas), while the SVG
//! backend writes every label as an SVG `<text>` element with a `font-family` and a
//! `text-anchor`, so the viewer lays the glyphs out with its own fonts. The charts
//! therefore set label-area sizes explicitly and draw their own legends, rather than
//! relying on the estimate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One benchmark result, as the charts need it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartRow {
    /// The engine, e.g. "sarsen", "lmdb".
    pub engine: String,
    /// "" for the default allocator, else "glibc" | "jemalloc" | "tcmalloc".
    pub allocator: String,
    /// The db_bench name: fillseq, fillrandom, readrandom, readwhilewriting, ...
    pub workload: String,
    /// Reader threads (readwhilewriting/readrandom) or writer threads.
    pub threads: usize,
    /// Operations per second over the timed section.
    pub ops_per_sec: f64,
    /// Reads per second (of all reader threads together).
    pub read_ops_per_sec: f64,
    /// Writes per second (of the writer).
    pub write_ops_per_sec: f64,
    /// Seconds of the timed section.
    pub wall_s: f64,
}

/// The error of [`write_charts`].
pub type ChartError = Box<dyn std::error::Error + Send + Sync>;

/// File name of the read-rate-against-reader-threads chart.
pub const READS_SVG: &str = "readwhilewriting-reads.svg";
/// File name of the write-rate-against-reader-threads chart.
pub const WRITES_SVG: &str = "readwhilewriting-writes.svg";
/// File name of the load-time chart.
pub const LOAD_SVG: &str = "load-time.svg";
/// File name of the throughput-per-workload chart.
pub const THROUGHPUT_SVG: &str = "throughput.svg";
/// File name of the fillsync-commit-rate-against-writer-threads chart.
pub const FILLSYNC_SVG: &str = "fillsync-threads.svg";

/// Writes every chart the rows support into `dir` (created if missing); returns the files written.
///
/// The charts, each written only when some row has a finite value for it:
/// - [`READS_SVG`]: `readwhilewriting` read rate against reader threads, a line per series;
/// - [`WRITES_SVG`]: `readwhilewriting` write rate (the one writer) against reader threads;
/// - [`LOAD_SVG`]: bars of load time (`wall_s` of the fill workloads but `fillsync`);
/// - [`THROUGHPUT_SVG`]: one panel of bars per workload, ops/s (reads/s for
///   `readwhilewriting`) against threads;
/// - [`FILLSYNC_SVG`]: `fillsync` commit rate (one put per durable commit) against
///   writer threads, a line per series, when fillsync ran at two thread counts or
///   more (group commit shows as a rising line).
///
/// A series is an engine, or "engine/allocator" when the allocator is not "". Repeated
/// rows for the same (series, workload, threads) are reduced to their median; NaN,
/// infinite and negative values count as missing. Each series has the same colour
/// and marker in every chart. No rows write nothing and are not an error.
pub fn write_charts(
    dir: &Path,
    title: &str,
    rows: &[ChartRow],
) -> Result<Vec<PathBuf>, ChartError> {
    let data = Data::new(rows);
    let mut charts: Vec<(&str, String)> = Vec::new();

    let is_rww = |w: &str| w == "readwhilewriting";
    let reads = data.medians(is_rww, |r| r.read_ops_per_sec);
    if !reads.is_empty() {
        let svg = line_chart(
            title,
            "readwhilewriting: read rate of all readers (1 writer running)",
            READER_THREADS,
            READ_RATE,
            &data.series,
            &reads,
        )?;
        charts.push((READS_SVG, svg));
    }
    let writes = data.medians(is_rww, |r| r.write_ops_per_sec);
    if !writes.is_empty() {
        let svg = line_chart(
            title,
            "readwhilewriting: write rate of the one writer",
            READER_THREADS,
            WRITE_RATE,
            &data.series,
            &writes,
        )?;
        charts.push((WRITES_SVG, svg));
    }
    let commits = data.medians(|w| w == "fillsync", |r| r.ops_per_sec);
    let commit_threads: BTreeSet<usize> = commits.keys().map(|&(_, t, _)| t).collect();
    if commit_threads.len() > 1 {
        let svg = line_chart(
            title,
            "fillsync: durable one-put commits of all writer threads",
            WRITER_THREADS,
            COMMIT_RATE,
            &data.series,
            &commits,
        )?;
        charts.push((FILLSYNC_SVG, svg));
    }
    let loads = data.medians(is_load, |r| r.wall_s);
    if !loads.is_empty() {
        charts.push((LOAD_SVG, load_chart(title, &data.series, &loads)?));
    }
    let throughput = data.medians(|_| true, throughput_of);
    if !throughput.is_empty() {
        let svg = throughput_chart(title, &data.series, &throughput)?;
        charts.push((THROUGHPUT_SVG, svg));
    }

    let mut written = Vec::with_capacity(charts.len());
    if !charts.is_empty() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for (name, svg) in charts {
        let path = dir.join(name);
        std::fs::write(&path, svg).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Axis descriptions (with units); the tests look for them in the SVG.
const READER_THREADS: &str = "reader threads";
const READ_RATE: &str = "read rate (reads/s)";
const WRITE_RATE: &str = "write rate (writes/s)";
const LOAD_TIME: &str = "load time (s)";
const WORKLOAD: &str = "workload";
const THREADS: &str = "threads";
const OPS_RATE: &str = "throughput (ops/s)";
const WRITER_THREADS: &str = "writer threads";
const COMMIT_RATE: &str = "commit rate (commits/s)";

/// Whether the workload loads a new database: the fills, except `fillsync`, which
/// writes only `num/1000` keys and so is no load of the whole data set.
fn is_load(workload: &str) -> bool {
    workload.starts_with("fill") && workload != "fillsync"
}

/// The rate shown by the throughput chart: reads/s for `readwhilewriting` (its
/// ops/s would mix the readers and the writer), else ops/s.
fn throughput_of(r: &ChartRow) -> f64 {
    if r.workload == "readwhilewriting" {
        r.read_ops_per_sec
    } else {
        r.ops_per_sec
    }
}

/// Median of the usable values (finite, not negative), or `None` when there are none.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite() && *v >= 0.0);
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// Medians keyed by (workload, threads, series index).
type Medians = BTreeMap<(String, usize, usize), f64>;

/// The rows grouped by series, workload and thread count.
struct Data<'a> {
    /// Series names, in the order that gives each its colour: sorted by (engine,
    /// allocator), so the default allocator comes before the named ones, and the same
    /// rows give the same colours whatever their order.
    series: Vec<String>,
    /// Rows by (series index, workload, threads).
    cells: BTreeMap<(usize, &'a str, usize), Vec<&'a ChartRow>>,
}

impl<'a> Data<'a> {
    fn new(rows: &'a [ChartRow]) -> Data<'a> {
        let keys: BTreeSet<(&str, &str)> = rows
            .iter()
            .map(|r| (r.engine.as_str(), r.allocator.as_str()))
            .collect();
        let index: BTreeMap<(&str, &str), usize> =
            keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
        let series = keys
            .iter()
            .map(|(engine, allocator)| {
                if allocator.is_empty() {
                    engine.to_string()
                } else {
                    format!("{engine}/{allocator}")
                }
            })
            .collect();
        let mut cells: BTreeMap<_, Vec<_>> = BTreeMap::new();
        for r in rows {
            let s = index[&(r.engine.as_str(), r.allocator.as_str())];
            cells
                .entry((s, r.workload.as_str(), r.threads))
                .or_default()
                .push(r);
        }
        Data { series, cells }
    }

    /// Median of `metric` for each (workload, threads, series) whose workload passes
    /// `keep` and which has a usable value.
    fn medians(&self, keep: impl Fn(&str) -> bool, metric: fn(&ChartRow) -> f64) -> Medians {
        let mut out = Medians::new();
        for (&(s, workload, threads), rows) in &self.cells {
            if !keep(workload) {
                continue;
            }
            if let Some(m) = median(rows.iter().map(|r| metric(r)).collect()) {
                out.insert((workload.to_string(), threads, s), m);
            }
        }
        out
    }
}

/// Workloads in db_bench's usual order (writes, then reads, then mixed); others
/// follow in name order.
fn workload_rank(workload: &str) -> (usize, &str) {
    const ORDER: &[&str] = &[
        "fillseq",
        "fillrandom",
        "fillbatch",
        "fillseqbatch",
        "fillrandbatch",
        "filluniquerandom",
        "fill100K",
        "fillsync",
        "overwrite",
        "updaterandom",
        "mergerandom",
        "deleteseq",
        "deleterandom",
        "readseq",
        "readreverse",
        "readrandom",
        "multireadrandom",
        "readmissing",
        "readhot",
        "seekrandom",
        "readwhilewriting",
        "readwhilemerging",
        "readrandomwriterandom",
    ];
    let rank = ORDER.iter().position(|w| *w == workload);
    (rank.unwrap_or(ORDER.len()), workload)
}

/// The workloads of `medians`, in display order.
fn workloads(medians: &Medians) -> Vec<&str> {
    let mut ws: Vec<&str> = medians.keys().map(|(w, _, _)| w.as_str()).collect();
    ws.dedup();
    ws.sort_by_key(|w| workload_rank(w));
    ws
}

/// A rate or duration in few characters: "950", "12.5k", "1.2M", "0.25".
fn human(v: f64) -> String {
    if !v.is_finite() {
        return "?".to_string();
    }
    const UNITS: &[(f64, &str)] = &[(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    let a = v.abs();
    if a >= 1e15 {
        return format!("{v:.2e}");
    }
    for &(scale, suffix) in UNITS {
        // Compare after rounding, so that 999_999 shows as "1M", not "1000k".
        if (a / scale * 100.0).round() / 100.0 >= 1.0 {
            return format!("{}{suffix}", trim(v / scale, 2));
        }
    }
    if a >= 1.0 || a == 0.0 {
        trim(v, 2)
    } else {
        // Below 1: three significant digits, e.g. "0.00123".
        let decimals = (-a.log10().floor()) as usize + 2;
        trim(v, decimals.min(12))
    }
}

/// `v` with `decimals` decimals, trailing zeros (and point) removed.
fn trim(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// Okabe–Ito's colour-blind-safe palette (without its yellow, too pale on white),
/// then a brown and four of Paul Tol's muted colours: twelve, since bars (unlike
/// lines) have no marker to tell two series of one colour apart, and engines ×
/// allocators easily make a dozen series. Past twelve the colours repeat.
const PALETTE: [RGBColor; 12] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(230, 159, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(140, 86, 75),
    RGBColor(51, 34, 136),
    RGBColor(153, 153, 51),
    RGBColor(136, 34, 85),
    RGBColor(153, 153, 153),
];

/// The colour of series `i`, the same in every chart.
fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Draws the marker of series `i` at `at`: circle, triangle, square, diamond or
/// cross. Five shapes against twelve colours, so that no two of the first 60 series
/// look alike. (A function drawing on an area rather than one returning a
/// `DynElement`: `draw_series` wants elements that outlive the SVG buffer.)
fn draw_marker<CT>(
    area: &DrawingArea<SVGBackend<'_>, CT>,
    i: usize,
    at: CT::From,
) -> Result<(), ChartError>
where
    CT: CoordTranslate,
    CT::From: Clone,
{
    let fill = colour(i).filled();
    let dot = EmptyElement::at(at);
    match i % 5 {
        0 => area.draw(&(dot + Circle::new((0, 0), 4, fill)))?,
        1 => area.draw(&(dot + TriangleMarker::new((0, 0), 6, fill)))?,
        2 => area.draw(&(dot + Rectangle::new([(-4, -4), (4, 4)], fill)))?,
        3 => area.draw(&(dot + Polygon::new(vec![(0, -6), (5, 0), (0, 6), (-5, 0)], fill)))?,
        _ => area.draw(&(dot + Cross::new((0, 0), 5, colour(i).stroke_width(2))))?,
    }
    Ok(())
}

const FONT: &str = "sans-serif";
/// Sizes of the chart texts, in plotters' units: the SVG backend writes
/// `font-size` as size / 1.24, so 16 here is about 13 px.
const TITLE_SIZE: u32 = 26;
const SUBTITLE_SIZE: u32 = 19;
const DESC_SIZE: u32 = 18;
const LABEL_SIZE: u32 = 16;
const VALUE_SIZE: u32 = 14;

/// How a series is shown in the legend.
#[derive(Clone, Copy)]
enum Key {
    Line,
    Bar,
}

/// Width of the legend column for these names. The naive font's estimate is no
/// use here (SVG text is laid out by the viewer), so this assumes a generous
/// 0.6 em per character.
fn legend_width(series: &[String]) -> u32 {
    let chars = series.iter().map(|s| s.chars().count()).max().unwrap_or(0);
    (60 + chars as u32 * DESC_SIZE * 6 / 10).max(120)
}

/// `width`, or more if the title lines need it: the viewer lays SVG text out, so
/// this guesses ~0.5 (bold title) and ~0.45 (subtitle) of plotters' size per character.
fn fit(width: u32, title: &str, subtitle: &str) -> u32 {
    let chars = |s: &str| s.chars().count() as u32;
    let title_px = chars(title) * TITLE_SIZE / 2;
    let subtitle_px = chars(subtitle) * SUBTITLE_SIZE * 45 / 100;
    width.max(title_px.max(subtitle_px) + 40)
}

/// A drawing area of an SVG chart, in pixels.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// `height`, or more if the legend of the `present` series needs it (26 px a row,
/// below ~90 px of titles).
fn tall(height: u32, present: &BTreeSet<usize>) -> u32 {
    height.max(26 * present.len() as u32 + 130)
}

/// Draws the title lines on `root` and returns (plot area, legend area).
fn frame<'a>(
    root: &Area<'a>,
    title: &str,
    subtitle: &str,
    series: &[String],
) -> Result<(Area<'a>, Area<'a>), ChartError> {
    root.fill(&WHITE)?;
    let mut area = root.margin(8, 4, 8, 8);
    if !title.is_empty() {
        area = area.titled(title, (FONT, TITLE_SIZE).into_font().style(FontStyle::Bold))?;
    }
    area = area.titled(subtitle, (FONT, SUBTITLE_SIZE))?;
    let width = area.dim_in_pixel().0;
    let split = width.saturating_sub(legend_width(series));
    Ok(area.split_horizontally(split))
}

/// Upper end of a y axis that starts at 0: 10% above the largest value, so that
/// the highest point or bar label stays inside; 1 when everything is 0.
fn y_top<'a>(values: impl Iterator<Item = &'a f64>) -> f64 {
    let max = values.fold(0.0f64, |m, v| m.max(*v));
    if max > 0.0 {
        // (max itself near f64::MAX: 10% more would be infinite.)
        Some(max * 1.1).filter(|t| t.is_finite()).unwrap_or(max)
    } else {
        1.0
    }
}

/// A linear f64 axis whose ticks are exactly `ticks`: the x axis of categories
/// (thread counts, workloads), drawn at fixed positions and named by a label
/// formatter. (plotters' own `with_key_points` on an f64 range does the same but
/// loses the range's value formatter, so its mesh cannot be configured.)
struct Slots {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
}

impl Slots {
    fn new(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Slots {
        Slots { range, ticks }
    }
}

impl Ranged for Slots {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let fraction = if span > 0.0 {
            (value - self.range.start) / span
        } else {
            0.5
        };
        limit.0 + (fraction * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // The ticks are the bold points; there are no light (minor) ones.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

/// A rate against reader threads: one line with markers per series. The x axis is
/// categorical (the distinct thread counts, evenly spaced), as in Symas' charts, so
/// 1, 2, 4, ... 64 threads spread out instead of crowding at the left; with one
/// thread count only, each series is one marker in the middle.
fn line_chart(
    title: &str,
    subtitle: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[String],
    medians: &Medians,
) -> Result<String, ChartError> {
    let threads: Vec<usize> = medians
        .keys()
        .map(|&(_, t, _)| t)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let present: BTreeSet<usize> = medians.keys().map(|&(_, _, s)| s).collect();
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (fit(960, title, subtitle), tall(600, &present)))
                .into_drawing_area();
        let (plot, legend) = frame(&root, title, subtitle, series)?;
        let n = threads.len() as f64;
        let ticks: Vec<f64> = (0..threads.len()).map(|i| i as f64).collect();
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(
                Slots::new(-0.5..n - 0.5, ticks),
                0.0..y_top(medians.values()),
            )?;
        let thread_label = |x: &f64| {
            let i = x.round();
            if i >= 0.0 && (i as usize) < threads.len() {
                threads[i as usize].to_string()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(1)
            .y_labels(8)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .axis_desc_style((FONT, DESC_SIZE))
            .label_style((FONT, LABEL_SIZE))
            .x_label_formatter(&thread_label)
            .y_label_formatter(&|y| human(*y))
            .draw()?;
        for &s in &present {
            let mut points: Vec<(f64, f64)> = medians
                .iter()
                .filter(|((_, _, vs), _)| *vs == s)
                .map(|((_, t, _), &v)| (threads.binary_search(t).unwrap_or(0) as f64, v))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart.draw_series(LineSeries::new(points.clone(), colour(s).stroke_width(2)))?;
            for p in points {
                draw_marker(chart.plotting_area(), s, p)?;
            }
        }
        draw_legend(&legend, series, &present, Key::Line)?;
        root.present()?;
    }
    Ok(svg)
}

/// The legend of the series present in a chart, one row each, with the line and
/// marker or the bar colour that the series has in every chart.
fn draw_legend(
    area: &Area<'_>,
    series: &[String],
    present: &BTreeSet<usize>,
    key: Key,
) -> Result<(), ChartError> {
    let text = (FONT, DESC_SIZE)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (row, &i) in present.iter().enumerate() {
        let y = 24 + 26 * row as i32;
        match key {
            Key::Line => {
                let line = vec![(10, y), (42, y)];
                area.draw(&PathElement::new(line, colour(i).stroke_width(2)))?;
                draw_marker(area, i, (26, y))?;
            }
            Key::Bar => {
                let bar = [(16, y - 8), (36, y + 8)];
                area.draw(&Rectangle::new(bar, colour(i).filled()))?;
            }
        }
        area.draw(&Text::new(series[i].clone(), (50, y), text.clone()))?;
    }
    Ok(())
}

/// Grouped bars, as one chart or one panel.
struct Bars<'a> {
    /// Panel caption, if any.
    caption: Option<&'a str>,
    /// The group labels along the x axis.
    groups: Vec<String>,
    x_desc: &'a str,
    y_desc: &'a str,
    /// The series with a bar somewhere in the whole figure, each with a slot in
    /// every group, so that a series' bar is at the same place in every panel.
    present: &'a BTreeSet<usize>,
    /// Values by (group index, series index).
    values: BTreeMap<(usize, usize), f64>,
}

/// Draws `bars` on `area`, with the value above each bar when the bars are wide
/// enough for it.
fn draw_bars(area: &Area<'_>, bars: &Bars) -> Result<(), ChartError> {
    let n = bars.groups.len() as f64;
    // x: group g spans [g, g + 1); its bars share the middle 80%, each at most a
    // quarter of the group wide (a lone bar as wide as the chart reads badly).
    let ticks: Vec<f64> = (0..bars.groups.len()).map(|g| g as f64 + 0.5).collect();
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(10)
        .x_label_area_size(50)
        .y_label_area_size(80);
    if let Some(caption) = bars.caption {
        builder.caption(
            caption,
            (FONT, SUBTITLE_SIZE).into_font().style(FontStyle::Bold),
        );
    }
    let top = y_top(bars.values.values());
    let mut chart = builder.build_cartesian_2d(Slots::new(0.0..n, ticks), 0.0..top)?;
    let group_label = |x: &f64| {
        let g = x.floor();
        if g >= 0.0 && (g as usize) < bars.groups.len() {
            bars.groups[g as usize].clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(1)
        .y_labels(6)
        .x_desc(bars.x_desc)
        .y_desc(bars.y_desc)
        .axis_desc_style((FONT, DESC_SIZE))
        .label_style((FONT, LABEL_SIZE))
        .x_label_formatter(&group_label)
        .y_label_formatter(&|y| human(*y))
        .draw()?;

    let slots = bars.present.len().max(1) as f64;
    let width = (0.8 / slots).min(0.25);
    let start = (1.0 - width * slots) / 2.0;
    // Values above the bars when every label fits its bar (~0.5 em per character
    // in the viewer's font, i.e. 0.4 of plotters' size): all or none, so that a
    // missing label never looks like a missing value.
    let plot_px = f64::from(chart.plotting_area().dim_in_pixel().0);
    let bar_px = plot_px / n * width;
    let longest = bars
        .values
        .values()
        .map(|&v| human(v).len())
        .max()
        .unwrap_or(0);
    let labelled = bar_px >= longest as f64 * f64::from(VALUE_SIZE) * 0.4 + 2.0;
    let value_style = (FONT, VALUE_SIZE)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    for (slot, &s) in bars.present.iter().enumerate() {
        let mine: Vec<(usize, f64)> = bars
            .values
            .iter()
            .filter(|((_, vs), _)| *vs == s)
            .map(|(&(g, _), &v)| (g, v))
            .collect();
        let x0 = |g: usize| g as f64 + start + slot as f64 * width;
        chart.draw_series(mine.iter().map(|&(g, v)| {
            Rectangle::new(
                [(x0(g), 0.0), (x0(g) + width * 0.92, v)],
                colour(s).filled(),
            )
        }))?;
        if labelled {
            chart.draw_series(mine.iter().map(|&(g, v)| {
                let at = (x0(g) + width * 0.46, v);
                Text::new(human(v), at, value_style.clone())
            }))?;
        }
    }
    Ok(())
}

/// Bars of load time, grouped by load workload (split by thread count when a
/// workload ran with several).
fn load_chart(title: &str, series: &[String], medians: &Medians) -> Result<String, ChartError> {
    let present: BTreeSet<usize> = medians.keys().map(|&(_, _, s)| s).collect();
    let mut categories: Vec<(&str, usize)> =
        medians.keys().map(|(w, t, _)| (w.as_str(), *t)).collect();
    categories.dedup();
    categories.sort_by_key(|&(w, t)| (workload_rank(w), t));
    let groups = categories
        .iter()
        .map(|&(w, t)| {
            let several = categories.iter().filter(|(w2, _)| *w2 == w).count() > 1;
            if several {
                format!("{w} ({t} thr)")
            } else {
                w.to_string()
            }
        })
        .collect();
    let values = medians
        .iter()
        .map(|((w, t, s), &v)| {
            let g = categories.iter().position(|c| *c == (w.as_str(), *t));
            ((g.unwrap_or(0), *s), v)
        })
        .collect();
    let names: Vec<&str> = workloads(medians);
    let subtitle = format!("load time: wall seconds of {}", names.join(", "));
    let mut svg = String::new();
    {
        let width = 500 + 120 * categories.len() as u32 * present.len().max(1) as u32 / 2;
        let root = SVGBackend::with_string(
            &mut svg,
            (
                fit(width.clamp(760, 1400), title, &subtitle),
                tall(600, &present),
            ),
        )
        .into_drawing_area();
        let (plot, legend) = frame(&root, title, &subtitle, series)?;
        let bars = Bars {
            caption: None,
            groups,
            x_desc: WORKLOAD,
            y_desc: LOAD_TIME,
            present: &present,
            values,
        };
        draw_bars(&plot, &bars)?;
        draw_legend(&legend, series, &present, Key::Bar)?;
        root.present()?;
    }
    Ok(svg)
}

/// Throughput, one small panel per workload, bars per series grouped by thread
/// count. Rates differ by 1000x between workloads (fillsync against readrandom);
/// a panel per workload gives each its own linear y axis starting at 0, so bar
/// lengths compare honestly within a workload (on a shared log axis, bar lengths
/// depend on where the axis happens to start, and differences of 10-30% between
/// series, the interesting ones, become hard to see).
fn throughput_chart(
    title: &str,
    series: &[String],
    medians: &Medians,
) -> Result<String, ChartError> {
    const PANEL_H: u32 = 330;
    let present: BTreeSet<usize> = medians.keys().map(|&(_, _, s)| s).collect();
    let names = workloads(medians);
    // Panels widen with their bar count (thread counts × series), ~8 px a bar.
    let most_bars = names
        .iter()
        .map(|w| {
            medians
                .keys()
                .filter(|(w2, _, _)| w2 == w)
                .map(|(_, t, _)| t)
                .collect::<BTreeSet<_>>()
                .len()
        })
        .max()
        .unwrap_or(1)
        * present.len();
    let panel_w = (most_bars as u32 * 8 + 150).clamp(400, 1200);
    let cols = match names.len() {
        0..=3 => names.len().max(1),
        4 => 2,
        _ => 3,
    };
    let rows = names.len().div_ceil(cols);
    let subtitle = "throughput per workload (readwhilewriting: reads/s of all readers)";
    let width = fit(
        panel_w * cols as u32 + legend_width(series) + 16,
        title,
        subtitle,
    );
    let height = tall(PANEL_H * rows as u32 + 80, &present);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let (plot, legend) = frame(&root, title, subtitle, series)?;
        let panels = plot.split_evenly((rows, cols));
        for (panel, &workload) in panels.iter().zip(&names) {
            let threads: Vec<usize> = medians
                .keys()
                .filter(|(w, _, _)| w == workload)
                .map(|&(_, t, _)| t)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let values = medians
                .iter()
                .filter(|((w, _, _), _)| w == workload)
                .map(|((_, t, s), &v)| ((threads.binary_search(t).unwrap_or(0), *s), v))
                .collect();
            let bars = Bars {
                caption: Some(workload),
                groups: threads.iter().map(|t| t.to_string()).collect(),
                x_desc: THREADS,
                y_desc: if workload == "readwhilewriting" {
                    READ_RATE
                } else {
                    OPS_RATE
                },
                present: &present,
                values,
            };
            draw_bars(panel, &bars)?;
        }
        draw_legend(&legend, series, &present, Key::Bar)?;
        root.present()?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests;
