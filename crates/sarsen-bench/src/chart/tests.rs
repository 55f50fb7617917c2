//! Tests of the charts: every chart from synthetic rows, colours, bad values,
//! medians, number formats, and a demo that writes the charts to look at.

use super::*;

fn row(engine: &str, allocator: &str, workload: &str, threads: usize, rate: f64) -> ChartRow {
    let rww = workload == "readwhilewriting";
    ChartRow {
        engine: engine.to_string(),
        allocator: allocator.to_string(),
        workload: workload.to_string(),
        threads,
        ops_per_sec: rate,
        read_ops_per_sec: if rww { rate * 0.95 } else { 0.0 },
        write_ops_per_sec: if rww {
            rate * 0.05 / threads as f64
        } else {
            0.0
        },
        wall_s: 1e6 / rate,
    }
}

/// Rows like a real run: two engines, one with two allocators, every workload,
/// three repetitions of each (the middle one is the median), readrandom and
/// readwhilewriting at several thread counts.
fn synthetic() -> Vec<ChartRow> {
    let series = [
        ("sarsen", "", 1.0),
        ("lmdb", "", 0.8),
        ("sarsen", "jemalloc", 1.1),
    ];
    let mut rows = Vec::new();
    for (engine, allocator, speed) in series {
        for rep in [1.0, 0.9, 1.2] {
            let f = speed * rep;
            rows.push(row(engine, allocator, "fillseq", 1, 1.5e6 * f));
            rows.push(row(engine, allocator, "fillrandom", 1, 6.5e5 * f));
            rows.push(row(engine, allocator, "fillsync", 1, 2.1e3 * f));
            rows.push(row(engine, allocator, "readseq", 1, 9.0e6 * f));
            for t in [1, 2, 4] {
                rows.push(row(
                    engine,
                    allocator,
                    "readrandom",
                    t,
                    1.2e6 * f * t as f64,
                ));
            }
            for t in [1, 2, 4, 8, 16] {
                let scale = (t as f64).min(2.0);
                rows.push(row(
                    engine,
                    allocator,
                    "readwhilewriting",
                    t,
                    1.0e6 * f * scale,
                ));
            }
        }
    }
    rows
}

/// The contents of the `<text>` elements of an SVG, unescaped.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|part| {
            let body = &part[part.find('>')? + 1..];
            let body = &body[..body.find("</text>")?];
            Some(
                body.trim()
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&amp;", "&"),
            )
        })
        .collect()
}

fn read_svg(path: &Path) -> String {
    let svg = std::fs::read_to_string(path).unwrap();
    let start = svg.trim_start();
    assert!(
        start.starts_with("<svg") || start.starts_with("<?xml"),
        "{}: does not start as SVG",
        path.display()
    );
    assert!(
        svg.trim_end().ends_with("</svg>"),
        "{}: not closed",
        path.display()
    );
    assert_eq!(
        svg.matches("<text").count(),
        svg.matches("</text>").count(),
        "{}",
        path.display()
    );
    svg
}

fn names(files: &[PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn all_charts_from_synthetic_rows() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("charts/nested");
    let title = "sarsen vs lmdb, 1M keys <test> & co";
    let files = write_charts(&out, title, &synthetic()).unwrap();
    assert_eq!(
        names(&files),
        [LOAD_SVG, READS_SVG, WRITES_SVG, THROUGHPUT_SVG]
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
    );
    let axis = |name: &str| -> Vec<&str> {
        match name {
            READS_SVG => vec![READER_THREADS, READ_RATE],
            WRITES_SVG => vec![READER_THREADS, WRITE_RATE],
            LOAD_SVG => vec![WORKLOAD, LOAD_TIME],
            THROUGHPUT_SVG => vec![THREADS, OPS_RATE, READ_RATE],
            _ => unreachable!(),
        }
    };
    for file in &files {
        assert!(file.starts_with(&out));
        let svg = read_svg(file);
        let texts = texts(&svg);
        let name = file.file_name().unwrap().to_str().unwrap();
        let mut want = vec!["sarsen", "lmdb", "sarsen/jemalloc", title];
        want.extend(axis(name));
        for w in want {
            assert!(
                texts.iter().any(|t| t == w),
                "{name}: no text {w:?} in {texts:?}"
            );
        }
    }
    // The load chart shows the loads only; the throughput chart every workload.
    let load = texts(&read_svg(&out.join(LOAD_SVG)));
    assert!(load.iter().any(|t| t == "fillseq") && load.iter().any(|t| t == "fillrandom"));
    assert!(!load.iter().any(|t| t == "fillsync" || t == "readseq"));
    let tp = texts(&read_svg(&out.join(THROUGHPUT_SVG)));
    for w in [
        "fillseq",
        "fillrandom",
        "fillsync",
        "readseq",
        "readrandom",
        "readwhilewriting",
    ] {
        assert!(tp.iter().any(|t| t == w), "throughput: no panel {w}");
    }
    // The thread counts label the x axis of the readwhilewriting charts.
    let reads = texts(&read_svg(&out.join(READS_SVG)));
    for t in ["1", "2", "4", "8", "16"] {
        assert!(reads.iter().any(|x| x == t), "reads: no tick {t}");
    }
}

/// fillsync at several writer-thread counts gets its own line chart; at one
/// count (the main job's) it does not.
#[test]
fn fillsync_over_writer_threads_gets_a_line_chart() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    for t in [1, 2, 4, 8] {
        rows.push(row("sarsen", "", "fillsync", t, 4.0e3));
        rows.push(row("rocksdb", "", "fillsync", t, 3.0e3 * t as f64));
    }
    let files = write_charts(dir.path(), "group commit", &rows).unwrap();
    assert!(
        names(&files).contains(&FILLSYNC_SVG.to_string()),
        "{files:?}"
    );
    let texts = texts(&read_svg(&dir.path().join(FILLSYNC_SVG)));
    for want in ["sarsen", "rocksdb", WRITER_THREADS, COMMIT_RATE, "1", "8"] {
        assert!(
            texts.iter().any(|t| t == want),
            "no text {want:?} in {texts:?}"
        );
    }
    let single = tempfile::tempdir().unwrap();
    let files = write_charts(single.path(), "main job", &synthetic()).unwrap();
    assert!(
        !names(&files).contains(&FILLSYNC_SVG.to_string()),
        "{files:?}"
    );
}

#[test]
fn series_keep_their_colour_across_charts() {
    let dir = tempfile::tempdir().unwrap();
    // lmdb has no load rows: the load chart must still paint sarsen in sarsen's
    // colour, not in the first colour.
    let rows: Vec<ChartRow> = synthetic()
        .into_iter()
        .filter(|r| r.engine == "sarsen" || !is_load(&r.workload))
        .collect();
    write_charts(dir.path(), "colours", &rows).unwrap();
    let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
    let load = std::fs::read_to_string(dir.path().join(LOAD_SVG)).unwrap();
    let reads = std::fs::read_to_string(dir.path().join(READS_SVG)).unwrap();
    // Series order: (lmdb, ""), (sarsen, ""), (sarsen, jemalloc).
    let (lmdb, sarsen) = (hex(colour(0)), hex(colour(1)));
    assert!(reads.contains(&lmdb) && reads.contains(&sarsen));
    assert!(load.contains(&sarsen), "load chart lost sarsen's colour");
    assert!(
        !load.contains(&lmdb),
        "load chart paints with lmdb's colour"
    );
    assert!(
        !texts(&load).iter().any(|t| t == "lmdb"),
        "lmdb in a chart without it"
    );
}

#[test]
fn fill_only_rows_give_load_and_throughput() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<ChartRow> = synthetic()
        .into_iter()
        .filter(|r| r.workload.starts_with("fill"))
        .collect();
    let files = write_charts(dir.path(), "fills", &rows).unwrap();
    assert_eq!(names(&files), [LOAD_SVG, THROUGHPUT_SVG]);
    for f in &files {
        read_svg(f);
    }
    let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(written.len(), 2);
}

#[test]
fn no_rows_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("absent");
    let files = write_charts(&out, "nothing", &[]).unwrap();
    assert!(files.is_empty());
    assert!(!out.exists(), "created a directory for no chart");
}

#[test]
fn one_thread_count_still_draws_points() {
    let dir = tempfile::tempdir().unwrap();
    let rows = vec![
        row("sarsen", "", "readwhilewriting", 4, 2.0e6),
        row("lmdb", "", "readwhilewriting", 4, 1.5e6),
    ];
    let files = write_charts(dir.path(), "one", &rows).unwrap();
    assert_eq!(
        names(&files),
        [READS_SVG, WRITES_SVG, THROUGHPUT_SVG]
            .map(String::from)
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
    );
    let svg = read_svg(&dir.path().join(READS_SVG));
    // Series 0 (lmdb) is drawn with circles, series 1 (sarsen) with triangles:
    // one marker each in the plot, plus one each in the legend.
    assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
    assert!(texts(&svg).iter().any(|t| t == "4"));
}

#[test]
fn bad_values_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    for (i, v) in [
        f64::NAN,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -5.0,
        1e-300,
        f64::MAX,
    ]
    .into_iter()
    .enumerate()
    {
        for w in ["fillseq", "fillrandom", "readrandom", "readwhilewriting"] {
            rows.push(ChartRow {
                engine: format!("e{i}"),
                allocator: String::new(),
                workload: w.to_string(),
                threads: i,
                ops_per_sec: v,
                read_ops_per_sec: v,
                write_ops_per_sec: v,
                wall_s: v,
            });
        }
    }
    let files = write_charts(dir.path(), "bad", &rows).unwrap();
    for f in &files {
        read_svg(f);
    }
    // Only NaN/inf/negative: no usable value, no chart, no error.
    let only_nan: Vec<ChartRow> = rows
        .iter()
        .filter(|r| !r.wall_s.is_finite() || r.wall_s < 0.0)
        .cloned()
        .collect();
    assert!(write_charts(&dir.path().join("nan"), "nan", &only_nan)
        .unwrap()
        .is_empty());
    // All zero: charts with flat zero data.
    let zeros: Vec<ChartRow> = rows.iter().filter(|r| r.wall_s == 0.0).cloned().collect();
    let files = write_charts(&dir.path().join("zero"), "zero", &zeros).unwrap();
    assert_eq!(files.len(), 4);
    for f in &files {
        read_svg(f);
    }
}

#[test]
fn medians_of_repeated_runs() {
    assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
    assert_eq!(median(vec![f64::NAN, 5.0, f64::INFINITY, -1.0]), Some(5.0));
    assert_eq!(median(vec![f64::NAN]), None);
    assert_eq!(median(vec![]), None);
    let rows = vec![
        row("sarsen", "", "fillseq", 1, 100.0),
        row("sarsen", "", "fillseq", 1, 1000.0),
        row("sarsen", "", "fillseq", 1, 200.0),
        row("sarsen", "", "fillseq", 2, 7.0),
    ];
    let data = Data::new(&rows);
    let m = data.medians(|_| true, |r| r.ops_per_sec);
    assert_eq!(m[&("fillseq".to_string(), 1, 0)], 200.0);
    assert_eq!(m[&("fillseq".to_string(), 2, 0)], 7.0);
}

#[test]
fn human_numbers() {
    for (v, s) in [
        (0.0, "0"),
        (7.0, "7"),
        (950.0, "950"),
        (1234.0, "1.23k"),
        (12_500.0, "12.5k"),
        (999_999.0, "1M"),
        (1_200_000.0, "1.2M"),
        (3.5e9, "3.5G"),
        (0.25, "0.25"),
        (0.00123, "0.00123"),
        (-2500.0, "-2.5k"),
        (f64::NAN, "?"),
        (2.5e20, "2.50e20"),
    ] {
        assert_eq!(human(v), s, "{v}");
    }
}

#[test]
fn workload_order() {
    let mut ws = vec![
        "readwhilewriting",
        "zzz",
        "fillrandom",
        "readrandom",
        "fillseq",
    ];
    ws.sort_by_key(|w| workload_rank(w));
    assert_eq!(
        ws,
        [
            "fillseq",
            "fillrandom",
            "readrandom",
            "readwhilewriting",
            "zzz"
        ]
    );
}

/// Writes the charts of [`synthetic`] rows to `$SARSEN_CHART_DEMO` (default: a
/// `sarsen-bench-charts` folder in the temp dir), to look at:
/// `SARSEN_CHART_DEMO=/tmp/c cargo test -p sarsen-bench chart::tests::demo -- --ignored`.
#[test]
#[ignore]
fn demo() {
    let dir = std::env::var_os("SARSEN_CHART_DEMO")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("sarsen-bench-charts"));
    let one = vec![
        row("sarsen", "", "readwhilewriting", 4, 2.0e6),
        row("lmdb", "", "readwhilewriting", 4, 1.5e6),
    ];
    let odd = vec![
        row("sarsen", "", "fillseq", 1, 0.0),
        row("lmdb", "", "fillseq", 1, f64::NAN),
        row("lmdb", "", "fillrandom", 1, 5.0e5),
    ];
    // Twelve series: engines by allocators, past the palette's eight colours.
    let mut many = Vec::new();
    for (e, engine) in ["sarsen", "lmdb", "redb"].into_iter().enumerate() {
        for (a, allocator) in ["", "glibc", "jemalloc", "tcmalloc"]
            .into_iter()
            .enumerate()
        {
            let f = 1.0 + 0.3 * e as f64 + 0.07 * a as f64;
            for t in [1, 2, 4, 8, 16, 32, 64] {
                let w = "readwhilewriting";
                many.push(row(engine, allocator, w, t, 4.0e5 * f * t as f64));
            }
            many.push(row(engine, allocator, "fillseq", 1, 1.0e6 * f));
        }
    }
    for (sub, rows) in [
        ("", synthetic()),
        ("one", one),
        ("odd", odd),
        ("many", many),
    ] {
        let title = "sarsen vs lmdb — 1M keys, 16 B keys, 100 B values";
        for f in write_charts(&dir.join(sub), title, &rows).unwrap() {
            println!("{}", f.display());
        }
    }
}
