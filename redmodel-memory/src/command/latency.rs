//! LATENCY LATEST / HISTORY / RESET / GRAPH / DOCTOR / HISTOGRAM / HELP
//! and what they report, as Redis 7.0.15 keeps it (latency.c):
//!
//! - the latency monitor: the engine's own slow paths, each an event
//!   (`command` for a command, `fast-command` for one Redis flags `fast`,
//!   `expire-cycle` for the active expiry cycle, `expire-del` for the
//!   delete of one expired key) that took at least
//!   `latency-monitor-threshold` ms (0: off), kept as a series of at most
//!   160 samples, one per second (the worst of that second), with the
//!   worst ever;
//! - per-command latency histograms (`latency-tracking`): every call's
//!   duration counted in power-of-two buckets from 1 µs, which LATENCY
//!   HISTOGRAM reports as Redis's cumulative `histogram_usec` and INFO
//!   latencystats as percentiles.

use std::collections::HashMap;
use std::time::Duration;

use redis::Value as Reply;

use super::{help_reply, run_subcommand, CmdResult, Ctx, Spec, Sub};
use crate::command_table::{self, Meta};
use crate::hasher::ByNumber;
use crate::reply;

mod report;

pub(super) const COMMANDS: &[Spec] = &[Spec {
    name: "latency",
    arity: -2,
    handler: latency,
}];

/// Samples kept per event (Redis's `LATENCY_TS_LEN`).
const SERIES_LEN: usize = 160;

/// Buckets of a histogram: bucket `k` counts the calls under 1024 << k
/// ns, the last one everything longer (Redis tracks up to 1 s).
const BUCKETS: usize = 21;

/// One sample: its Unix second and its latency in ms; second 0 is empty.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    time: i64,
    latency: u64,
}

/// One event's samples, a ring as Redis keeps them.
#[derive(Debug, Clone)]
struct Series {
    next: usize,
    max: u64,
    samples: [Sample; SERIES_LEN],
}

impl Series {
    /// The samples, oldest first.
    fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..SERIES_LEN)
            .map(move |j| self.samples[(self.next + j) % SERIES_LEN])
            .filter(|s| s.time != 0)
    }

    fn latest(&self) -> Sample {
        self.samples[(self.next + SERIES_LEN - 1) % SERIES_LEN]
    }
}

/// One command's calls and their durations.
#[derive(Debug, Clone)]
struct Histogram {
    /// The command's full name (`config|get`).
    name: &'static str,
    calls: u64,
    buckets: [u64; BUCKETS],
}

impl Histogram {
    /// The empty histogram of `meta`, made at its first call since the
    /// start or a reset: kept out of the path every call takes.
    #[cold]
    #[inline(never)]
    fn new(meta: &'static Meta) -> Self {
        Histogram {
            name: meta.name,
            calls: 0,
            buckets: [0; BUCKETS],
        }
    }
}

/// The latency monitor's events and the commands' histograms.
#[derive(Debug, Default)]
pub(crate) struct Latency {
    /// `latency-monitor-threshold`, ms (0: off).
    threshold_ms: u64,
    /// `latency-tracking`.
    tracking: bool,
    /// Events in the order they first happened.
    events: Vec<(&'static str, Series)>,
    /// By the address of the command's description.
    histograms: HashMap<usize, Histogram, ByNumber>,
}

impl Latency {
    /// Takes the configuration's settings (at start and after CONFIG SET).
    pub(crate) fn configure(&mut self, limits: &crate::config::Limits) {
        self.threshold_ms = limits.latency_threshold_ms;
        self.tracking = limits.latency_tracking;
    }

    /// Whether the monitor is on (`latency-monitor-threshold` is set).
    pub(crate) fn monitoring(&self) -> bool {
        self.threshold_ms != 0
    }

    /// Redis's `latencyAddSampleIfNeeded`: logs `event`, which took `ms`
    /// at Unix second `now`, if that reaches the threshold.
    pub(crate) fn sample(&mut self, event: &'static str, ms: u64, now: i64) {
        if self.threshold_ms == 0 || ms < self.threshold_ms {
            return;
        }
        let at = match self.events.iter().position(|(name, _)| *name == event) {
            Some(at) => at,
            None => {
                let series = Series {
                    next: 0,
                    max: 0,
                    samples: [Sample::default(); SERIES_LEN],
                };
                self.events.push((event, series));
                self.events.len() - 1
            }
        };
        let series = &mut self.events[at].1;
        series.max = series.max.max(ms);
        // One sample per second: the worst of it.
        let prev = (series.next + SERIES_LEN - 1) % SERIES_LEN;
        if series.samples[prev].time == now {
            let latest = &mut series.samples[prev].latency;
            *latest = (*latest).max(ms);
            return;
        }
        series.samples[series.next] = Sample {
            time: now,
            latency: ms,
        };
        series.next = (series.next + 1) % SERIES_LEN;
    }

    /// A call of the command `meta` describes, which ran for `took`, at
    /// Unix ms `now`: its histogram, and its latency event if slow.
    pub(crate) fn command(&mut self, meta: &'static Meta, took: Duration, now: i64) {
        if self.tracking {
            // Redis counts whole µs, as ns.
            let nanos = took.as_micros().saturating_mul(1000).max(1);
            let bucket = (0..BUCKETS)
                .find(|&k| nanos < 1024 << k)
                .unwrap_or(BUCKETS - 1);
            let histogram = self
                .histograms
                .entry(std::ptr::from_ref(meta) as usize)
                .or_insert_with(|| Histogram::new(meta));
            histogram.calls += 1;
            histogram.buckets[bucket] += 1;
        }
        if self.threshold_ms > 0 {
            self.sample_command(meta, took, now);
        }
    }

    /// A call's latency event, with the monitor on.
    #[cold]
    #[inline(never)]
    fn sample_command(&mut self, meta: &'static Meta, took: Duration, now: i64) {
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        let event = if meta.has_flag("fast") {
            "fast-command"
        } else {
            "command"
        };
        self.sample(event, ms, now.div_euclid(1000));
    }

    /// CONFIG RESETSTAT: the histograms start again (the events stay).
    pub(crate) fn reset_histograms(&mut self) {
        self.histograms.clear();
    }

    /// INFO latencystats: each command's percentiles of
    /// `latency-tracking-info-percentiles`, in µs, as Redis prints them.
    pub(crate) fn percentiles(&self, wanted: &[f64]) -> Vec<(String, String)> {
        let mut all: Vec<&Histogram> = self.histograms.values().collect();
        all.sort_by_key(|h| h.name);
        all.into_iter()
            .map(|h| {
                let values: Vec<String> = wanted
                    .iter()
                    .map(|p| format!("p{p}={:.3}", h.value_at(*p)))
                    .collect();
                (
                    format!("latency_percentiles_usec_{}", h.name),
                    values.join(","),
                )
            })
            .collect()
    }
}

impl Histogram {
    /// The duration under which `percentile` % of the calls ran, in µs
    /// (the upper bound of its bucket).
    fn value_at(&self, percentile: f64) -> f64 {
        let wanted = ((percentile / 100.0) * self.calls as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (k, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= wanted {
                return bucket_micros(k) as f64;
            }
        }
        bucket_micros(BUCKETS - 1) as f64
    }

    /// Redis's `fillCommandCDF`: calls, and for each bucket where the
    /// cumulative count grows, its upper bound in µs and that count.
    fn cdf(&self) -> Reply {
        let mut points = Vec::new();
        let mut cumulative = 0;
        for (k, n) in self.buckets.iter().enumerate() {
            if *n > 0 {
                cumulative += n;
                points.push((reply::int(bucket_micros(k)), reply::int(cumulative)));
            }
        }
        reply::map(vec![
            (reply::bulk("calls"), reply::int(self.calls)),
            (reply::bulk("histogram_usec"), reply::map(points)),
        ])
    }
}

/// The upper bound of bucket `k` in whole µs, as Redis's logarithmic
/// iteration reports it (1, 2, 4, 8, 16, 32, 65, 131...).
fn bucket_micros(k: usize) -> u64 {
    ((1024u64 << k) - 1) / 1000
}

/// LATENCY's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "latest",
        arity: 2,
        handler: latest,
    },
    Sub {
        name: "history",
        arity: 3,
        handler: history,
    },
    Sub {
        name: "reset",
        arity: -2,
        handler: reset,
    },
    Sub {
        name: "graph",
        arity: 3,
        handler: graph,
    },
    Sub {
        name: "doctor",
        arity: 2,
        handler: doctor,
    },
    Sub {
        name: "histogram",
        arity: -2,
        handler: histogram,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: help,
    },
];

fn latency(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, SUBCOMMANDS)
}

/// LATENCY LATEST: each event's latest sample and worst ever.
fn latest(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let events = ctx.store.latency.events.iter().map(|(name, series)| {
        let last = series.latest();
        reply::array(vec![
            reply::bulk(*name),
            reply::int(last.time),
            reply::int(last.latency),
            reply::int(series.max),
        ])
    });
    Ok(reply::array(events.collect()))
}

/// The series of the event named `name`, if it happened.
fn series<'a>(ctx: &'a Ctx<'_>, name: &[u8]) -> Option<&'a Series> {
    let latency = &ctx.store.latency;
    let found = latency.events.iter().find(|(n, _)| n.as_bytes() == name);
    found.map(|(_, series)| series)
}

/// LATENCY HISTORY event: its samples, oldest first, as [time, latency].
fn history(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let samples = series(ctx, args[2]).into_iter().flat_map(Series::samples);
    Ok(reply::array(
        samples
            .map(|s| reply::array(vec![reply::int(s.time), reply::int(s.latency)]))
            .collect(),
    ))
}

/// LATENCY RESET [event ...]: forgets those events (all without one);
/// how many there were.
fn reset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let events = &mut ctx.store.latency.events;
    let before = events.len();
    if args.len() == 2 {
        events.clear();
    } else {
        events.retain(|(name, _)| !args[2..].contains(&name.as_bytes()));
    }
    Ok(reply::int(before - events.len()))
}

/// LATENCY GRAPH event: Redis's ASCII graph of its samples.
fn graph(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now.div_euclid(1000);
    let Some((name, series)) = ctx
        .store
        .latency
        .events
        .iter()
        .find(|(n, _)| n.as_bytes() == args[2])
    else {
        return Err(crate::error::CmdError::err(format!(
            "No samples available for event '{}'",
            String::from_utf8_lossy(args[2])
        )));
    };
    let samples: Vec<(i64, u64)> = series.samples().map(|s| (s.time, s.latency)).collect();
    Ok(reply::verbatim(report::graph(
        name, &samples, series.max, now,
    )))
}

/// LATENCY DOCTOR: Redis's report on the events.
fn doctor(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let now = ctx.now.div_euclid(1000);
    let store = &*ctx.store;
    let events: Vec<report::Event> = store
        .latency
        .events
        .iter()
        .map(|(name, series)| report::Event {
            name,
            samples: series.samples().map(|s| (s.time, s.latency)).collect(),
            max: series.max,
        })
        .collect();
    let slowlog = (
        store
            .config
            .get("slowlog-log-slower-than")
            .parse()
            .unwrap_or(-1),
        store.config.get("slowlog-max-len").parse().unwrap_or(0),
    );
    let threshold = store.latency.threshold_ms;
    Ok(reply::verbatim(report::doctor(
        &events, now, threshold, slowlog,
    )))
}

/// LATENCY HISTOGRAM [command ...]: the histograms of the commands named,
/// in that order (a container's own, then its subcommands'), or of every
/// command called; names Redis does not know are skipped.
fn histogram(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let histograms = &ctx.store.latency.histograms;
    let by_name = |name: &str| histograms.values().find(|h| h.name == name);
    let chosen: Vec<&Histogram> = if args.len() == 2 {
        let mut all: Vec<&Histogram> = histograms.values().collect();
        all.sort_by_key(|h| h.name);
        all
    } else {
        let mut chosen = Vec::new();
        for name in &args[2..] {
            let name = String::from_utf8_lossy(name).to_ascii_lowercase();
            let Some(meta) = command_table::meta(&name) else {
                continue;
            };
            let names = std::iter::once(meta.name).chain(meta.subcommands.iter().copied());
            chosen.extend(names.filter_map(by_name));
        }
        chosen
    };
    Ok(reply::map(
        chosen
            .into_iter()
            .map(|h| (reply::bulk(h.name), h.cdf()))
            .collect(),
    ))
}

fn help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "latency",
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::command::test_util::*;

    fn monitor(threshold_ms: u64) -> Latency {
        Latency {
            threshold_ms,
            tracking: true,
            ..Latency::default()
        }
    }

    /// The delete of an expired key that takes the threshold or more is
    /// an `expire-del` event (a 200,000-member set takes milliseconds to
    /// free); under the threshold, none.
    #[test]
    fn a_slow_delete_of_an_expired_key_is_an_expire_del_event() {
        let (clock, mut c) = clocked(1_700_000_000_000);
        let fill = |c: &mut crate::Connection| {
            let mut args: Vec<String> = vec!["SADD".into(), "big".into()];
            args.extend((0..200_000).map(|i| format!("member:{i}")));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_args(c, &args);
            run(c, "PEXPIRE big 10");
        };
        run(&mut c, "DEBUG SET-ACTIVE-EXPIRE 0");
        fill(&mut c);
        run(&mut c, "CONFIG SET latency-monitor-threshold 1000");
        clock.advance(Duration::from_millis(20));
        assert_eq!(run(&mut c, "EXISTS big"), int(0));
        assert_eq!(run(&mut c, "LATENCY LATEST"), empty());
        fill(&mut c);
        run(&mut c, "CONFIG SET latency-monitor-threshold 1");
        clock.advance(Duration::from_millis(20));
        assert_eq!(run(&mut c, "EXISTS big"), int(0));
        let Reply::Array(events) = run(&mut c, "LATENCY LATEST") else {
            panic!("LATENCY LATEST is an array");
        };
        assert!(
            events.iter().any(
                |e| matches!(e, Reply::Array(fields) if fields.first() == Some(&bulk("expire-del")))
            ),
            "{events:?}"
        );
    }

    #[test]
    fn one_sample_per_second_keeps_its_worst() {
        let mut latency = monitor(10);
        latency.sample("command", 5, 100);
        assert!(latency.events.is_empty(), "under the threshold");
        latency.sample("command", 20, 100);
        latency.sample("command", 30, 100);
        latency.sample("command", 15, 101);
        let (name, series) = &latency.events[0];
        let samples: Vec<(i64, u64)> = series.samples().map(|s| (s.time, s.latency)).collect();
        assert_eq!(
            (*name, samples, series.max),
            ("command", vec![(100, 30), (101, 15)], 30)
        );
        let mut off = monitor(0);
        off.sample("command", 1000, 100);
        assert!(
            off.events.is_empty(),
            "a threshold of 0 turns the monitor off"
        );
    }

    #[test]
    fn a_series_keeps_its_last_160_seconds() {
        let mut latency = monitor(1);
        for second in 1..=200 {
            latency.sample("expire-cycle", 5, second);
        }
        let series = &latency.events[0].1;
        let times: Vec<i64> = series.samples().map(|s| s.time).collect();
        assert_eq!(times, (41..=200).collect::<Vec<_>>());
        assert_eq!(series.latest().time, 200);
    }

    /// Redis reports a command's histogram by its logarithmic buckets'
    /// upper bounds: 1, 2, 4 ... µs, a bound shown where the count grows.
    #[test]
    fn histograms_count_calls_in_redis_buckets() {
        assert_eq!(
            (0..8).map(bucket_micros).collect::<Vec<_>>(),
            [1, 2, 4, 8, 16, 32, 65, 131]
        );
        let mut latency = monitor(0);
        let meta = crate::command_table::meta("get").expect("GET is described");
        for micros in [0, 3, 3, 100] {
            latency.command(meta, Duration::from_micros(micros), 0);
        }
        let histogram = latency.histograms.values().next().expect("GET's histogram");
        assert_eq!(
            histogram.cdf(),
            reply::map(vec![
                (reply::bulk("calls"), reply::int(4)),
                (
                    reply::bulk("histogram_usec"),
                    reply::map(vec![
                        (reply::int(1), reply::int(1)),
                        (reply::int(4), reply::int(3)),
                        (reply::int(131), reply::int(4)),
                    ])
                ),
            ])
        );
    }

    #[test]
    fn latency_replies() {
        let mut c = conn();
        assert_eq!(run(&mut c, "LATENCY LATEST"), redis::Value::Array(vec![]));
        assert_eq!(run(&mut c, "LATENCY RESET"), redis::Value::Int(0));
        assert_eq!(
            run(&mut c, "LATENCY GRAPH command"),
            err("ERR No samples available for event 'command'")
        );
        run(&mut c, "CONFIG SET latency-monitor-threshold 1");
        run(&mut c, "DEBUG SLEEP 0.005");
        let redis::Value::Array(events) = run(&mut c, "LATENCY LATEST") else {
            panic!("LATENCY LATEST is an array");
        };
        assert_eq!(events.len(), 1);
        assert_eq!(
            run(&mut c, "LATENCY RESET nosuch command"),
            redis::Value::Int(1)
        );
        assert_eq!(
            run(&mut c, "LATENCY HELP x"),
            err("ERR wrong number of arguments for 'latency|help' command")
        );
    }
}
