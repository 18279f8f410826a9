//! What the benchmark examples (`bench`, `bench_models`, `bench_query`...)
//! share: their command-line options, the timed loop, medians, table cells
//! and the process's resident set.
//!
//! The machines are noisy (2 shared cores), so a benchmark runs every
//! measurement several times, interleaving what it compares, and reports
//! medians and ratios rather than single figures.

use std::time::{Duration, Instant};

/// The options every benchmark takes: `--reps N --millis MS --only NAME
/// --on LABELS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Timed runs per measurement (the median is reported).
    pub reps: usize,
    /// Length of one timed run.
    pub run: Duration,
    /// Run only the workload of this name (case-insensitive).
    pub only: Option<String>,
    /// Run only on the backends of these labels (one letter each, the
    /// benchmark's own).
    pub on: Option<String>,
}

impl Options {
    /// `reps` runs of `millis` ms each, every workload.
    pub fn new(reps: usize, millis: u64) -> Options {
        Options {
            reps,
            run: Duration::from_millis(millis),
            only: None,
            on: None,
        }
    }

    /// Reads `--reps N`, `--millis MS`, `--only NAME` and `--on LABELS` over the defaults
    /// in `self`, and the positive numbers of the benchmark's own flags in
    /// `extra` (`("--objects", &mut objects)`). The error is the message to
    /// print, `usage` included.
    pub fn parse(
        mut self,
        args: impl IntoIterator<Item = String>,
        usage: &str,
        extra: &mut [(&str, &mut u64)],
    ) -> Result<Options, String> {
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let mut number = |flag: &str| -> Result<u64, String> {
                let v = args
                    .next()
                    .ok_or(format!("{flag} needs a value\n{usage}"))?;
                v.parse::<u64>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(format!("bad {flag} {v:?}\n{usage}"))
            };
            match flag.as_str() {
                "--reps" => self.reps = usize::try_from(number("--reps")?).unwrap_or(usize::MAX),
                "--millis" => self.run = Duration::from_millis(number("--millis")?),
                "--only" => self.only = Some(args.next().ok_or(usage)?),
                "--on" => self.on = Some(args.next().ok_or(usage)?),
                other => match extra.iter_mut().find(|(name, _)| *name == other) {
                    Some((name, value)) => **value = number(name)?,
                    None => return Err(usage.into()),
                },
            }
        }
        Ok(self)
    }

    /// Whether the workload `name` is to run (`--only` names it, or is absent).
    pub fn selects(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.eq_ignore_ascii_case(name))
    }
}

/// Calls `step` for `run` and returns operations per second; `step`
/// returns how many operations it did (several per call keeps the clock
/// reads out of the figures).
pub async fn ops_per_sec<E>(
    run: Duration,
    mut step: impl AsyncFnMut() -> Result<usize, E>,
) -> Result<f64, E> {
    let started = Instant::now();
    let mut ops = 0usize;
    while started.elapsed() < run {
        ops += step().await?;
    }
    Ok(ops as f64 / started.elapsed().as_secs_f64())
}

/// One side of an [`interleaved`] measurement: a call that does some
/// operations and returns how many.
pub type Side<'a, E> = Box<
    dyn FnMut() -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<usize, E>> + 'a>> + 'a,
>;

/// Calls each of `sides` in turn, one call at a time, for `run` per side,
/// and returns each side's operations per second over its own calls.
///
/// Why in turn: on a shared machine the speed drifts over a second or
/// two, and two sides timed in windows of their own meet different
/// drifts; taking turns call by call, they meet the same, and their ratio
/// is steadier than either rate.
pub async fn interleaved<E>(run: Duration, sides: &mut [Side<'_, E>]) -> Result<Vec<f64>, E> {
    let mut spent = vec![Duration::ZERO; sides.len()];
    let mut ops = vec![0usize; sides.len()];
    let total = run * u32::try_from(sides.len()).unwrap_or(u32::MAX);
    let started = Instant::now();
    while started.elapsed() < total {
        for ((side, spent), ops) in sides.iter_mut().zip(&mut spent).zip(&mut ops) {
            let call = Instant::now();
            *ops += side().await?;
            *spent += call.elapsed();
        }
    }
    Ok(ops
        .iter()
        .zip(&spent)
        .map(|(&ops, spent)| ops as f64 / spent.as_secs_f64())
        .collect())
}

/// This process's resident set (VmRSS of /proc/self/status, the same
/// count as /proc/self/statm's, in kB rather than pages); `None` without
/// /proc.
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kb: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kb.checked_mul(1024)
}

/// The median (the upper one of an even count); `None` if empty.
pub fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied()
}

/// A rate as a table cell: whole operations per second, or `n/a`.
pub fn fmt_rate(r: Option<f64>) -> String {
    r.map_or_else(|| "n/a".into(), |r| format!("{r:.0}"))
}

/// `a / b` as a table cell (`1.25x`), or `-` if either is missing.
pub fn fmt_ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

/// The runtime the benchmarks run on: two workers, like the machines' two
/// cores; `BENCH_WORKERS=N` for another number, 0 for a current-thread
/// runtime (where no request waits for another thread to wake).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let workers = std::env::var("BENCH_WORKERS")
        .ok()
        .and_then(|w| w.parse().ok());
    runtime_of(workers.unwrap_or(2))
}

/// A multi-thread runtime of `workers` worker threads; 0: a current-thread
/// runtime.
pub fn runtime_of(workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
    match workers {
        0 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(n);
            builder
        }
    }
    .enable_all()
    .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], extra: &mut [(&str, &mut u64)]) -> Result<Options, String> {
        Options::new(5, 150).parse(args.iter().map(|s| s.to_string()), "usage", extra)
    }

    #[test]
    fn flags_override_the_defaults() {
        let mut objects = 10;
        let options = parse(
            &[
                "--reps",
                "3",
                "--objects",
                "7",
                "--only",
                "GET",
                "--on",
                "ac",
            ],
            &mut [("--objects", &mut objects)],
        );
        assert_eq!(
            options,
            Ok(Options {
                reps: 3,
                run: Duration::from_millis(150),
                only: Some("GET".into()),
                on: Some("ac".into()),
            })
        );
        assert_eq!(objects, 7);
        assert!(options.is_ok_and(|o| o.selects("get") && !o.selects("SET")));
    }

    #[test]
    fn bad_flags_say_what_is_wrong() {
        assert_eq!(
            parse(&["--reps"], &mut []),
            Err("--reps needs a value\nusage".into())
        );
        assert_eq!(
            parse(&["--millis", "0"], &mut []),
            Err("bad --millis \"0\"\nusage".into())
        );
        assert_eq!(parse(&["--objects", "1"], &mut []), Err("usage".into()));
        assert_eq!(parse(&["--only"], &mut []), Err("usage".into()));
        assert_eq!(parse(&["--on"], &mut []), Err("usage".into()));
    }

    #[test]
    fn interleaved_sides_take_turns_and_each_counts_its_own_operations() {
        use std::cell::RefCell;
        let calls = RefCell::new(Vec::new());
        let calls = &calls;
        let side = |name: &'static str, ops: usize| -> Side<'_, String> {
            Box::new(move || {
                Box::pin(async move {
                    calls.borrow_mut().push(name);
                    Ok(ops)
                })
            })
        };
        let mut sides = vec![side("a", 1), side("b", 3)];
        let rates = runtime_of(0)
            .expect("a runtime")
            .block_on(interleaved(Duration::from_millis(5), &mut sides))
            .expect("no side fails");
        let calls = calls.borrow();
        // In turn, a then b, the same number of times each.
        assert!(calls.len() >= 2 && calls.len() % 2 == 0);
        assert!(calls.chunks(2).all(|turn| turn == ["a", "b"]));
        assert_eq!(rates.len(), 2);
        assert!(rates.iter().all(|r| r.is_finite() && *r > 0.0));
        // A failing side ends the measurement with its error.
        let mut failing: Vec<Side<'_, String>> =
            vec![Box::new(|| Box::pin(async { Err("refused".to_string()) }))];
        let failed = runtime_of(0)
            .expect("a runtime")
            .block_on(interleaved(Duration::from_millis(5), &mut failing));
        assert_eq!(failed, Err("refused".to_string()));
    }

    #[test]
    fn medians_and_cells() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![]), None);
        assert_eq!(fmt_rate(Some(1234.6)), "1235");
        assert_eq!(fmt_rate(None), "n/a");
        assert_eq!(fmt_ratio(Some(1.0), Some(4.0)), "0.25x");
        assert_eq!(fmt_ratio(Some(1.0), Some(0.0)), "-");
    }
}
