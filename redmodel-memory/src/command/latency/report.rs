//! LATENCY GRAPH's and LATENCY DOCTOR's texts, as Redis 7.0.15 writes
//! them (`latencyCommandGenSparkeline` and sparkline.c,
//! `createLatencyReport`).

/// Columns of a graph (`LATENCY_GRAPH_COLS`).
const COLUMNS: usize = 80;
/// Rows of a graph's bars.
const ROWS: usize = 4;

/// A sparkline's characters from low to high, filled (`charset_fill`).
const CHARSET: &[u8] = b"_o#";

/// One event and its samples, (Unix second, ms) oldest first.
pub(super) struct Event<'a> {
    pub(super) name: &'a str,
    pub(super) samples: Vec<(i64, u64)>,
    pub(super) max: u64,
}

/// LATENCY GRAPH: a title line, a rule, then the samples as bars with
/// how long ago each happened below them (`7s`, `3m`, `2h`, `1d`).
pub(super) fn graph(name: &str, samples: &[(i64, u64)], max: u64, now: i64) -> String {
    let low = samples.iter().map(|s| s.1).min().unwrap_or(0);
    let high = samples.iter().map(|s| s.1).max().unwrap_or(0);
    let mut out = format!("{name} - high {high} ms, low {low} ms (all time high {max} ms)\n");
    out.push_str(&"-".repeat(COLUMNS));
    out.push('\n');
    let labels: Vec<String> = samples
        .iter()
        .map(|&(time, _)| {
            let ago = now - time;
            match ago {
                _ if ago < 60 => format!("{ago}s"),
                _ if ago < 3600 => format!("{}m", ago / 60),
                _ if ago < 86_400 => format!("{}h", ago / 3600),
                _ => format!("{}d", ago / 86_400),
            }
        })
        .collect();
    let values: Vec<f64> = samples.iter().map(|s| s.1 as f64).collect();
    let (min, max) = (low as f64, high as f64);
    for (i, start) in (0..values.len()).step_by(COLUMNS).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let end = (start + COLUMNS).min(values.len());
        render_range(&mut out, &values[start..end], &labels[start..end], min, max);
    }
    out
}

/// Redis's `sparklineRenderRange` with `SPARKLINE_FILL`: the bars, row by
/// row from the top, then the labels written downwards after a blank row.
fn render_range(out: &mut String, values: &[f64], labels: &[String], min: f64, max: f64) {
    let steps = CHARSET.len() * ROWS;
    let relmax = if max - min == 0.0 { 1.0 } else { max - min };
    let mut row = 0;
    loop {
        let mut line = vec![b' '; values.len()];
        let mut more = false;
        for (j, &value) in values.iter().enumerate() {
            if row < ROWS {
                // C: `(int)(relval*steps)/relmax`, then truncated.
                let step = (((value - min) * steps as f64).trunc() / relmax) as i64;
                let step = step.clamp(0, steps as i64 - 1);
                let at = step - ((ROWS - row - 1) * CHARSET.len()) as i64;
                more = true;
                if let Ok(at) = usize::try_from(at) {
                    line[j] = CHARSET.get(at).copied().unwrap_or(b'|');
                }
            } else {
                // A blank row between the bars and the labels.
                if row - ROWS < 1 {
                    more = true;
                    break;
                }
                let label = labels[j].as_bytes();
                if let Some(&c) = label.get(row - ROWS - 1) {
                    more = true;
                    line[j] = c;
                }
            }
        }
        if !more {
            return;
        }
        row += 1;
        out.push_str(&String::from_utf8_lossy(&line));
        out.push('\n');
    }
}

/// LATENCY DOCTOR: Redis's report, for the events the engine logs.
pub(super) fn doctor(
    events: &[Event<'_>],
    now: i64,
    threshold: u64,
    slowlog: (i64, u64),
) -> String {
    if events.is_empty() && threshold == 0 {
        return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis \
                instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" \
                in order to enable it. If we weren't in a deep space mission I'd suggest to take \
                a look at https://redis.io/topics/latency-monitor.\n"
            .into();
    }
    if events.is_empty() {
        return "Dave, no latency spike was observed during the lifetime of this Redis \
                instance, not in the slightest bit. I honestly think you ought to sit down \
                calmly, take a stress pill, and think things over.\n"
            .into();
    }
    let mut out = String::from(
        "Dave, I have observed latency spikes in this Redis instance. You don't mind \
         talking about it, do you Dave?\n\n",
    );
    let (mut slowlog_enable, mut slowlog_tune, mut slowlog_inspect) = (false, false, false);
    let (mut scheduler, mut large_objects) = (false, false);
    for (n, event) in events.iter().enumerate() {
        let count = event.samples.len().max(1) as u64;
        let avg = event.samples.iter().map(|s| s.1).sum::<u64>() / count;
        let oldest = event.samples.iter().map(|s| s.0).min().unwrap_or(now);
        let period = (now - oldest).max(1);
        let mad = event.samples.iter().map(|s| avg.abs_diff(s.1)).sum::<u64>() / count;
        out.push_str(&format!(
            "{}. {}: {} latency spikes (average {avg}ms, mean deviation {mad}ms, period {:.2} \
             sec). Worst all time event {}ms.\n",
            n + 1,
            event.name,
            event.samples.len(),
            period as f64 / count as f64,
            event.max
        ));
        match event.name {
            "command" => {
                let (slower_than, max_len) = slowlog;
                if slower_than < 0 || max_len == 0 {
                    slowlog_enable = true;
                } else if u64::try_from(slower_than / 1000).unwrap_or(0) > threshold {
                    slowlog_tune = true;
                }
                slowlog_inspect = true;
                large_objects = true;
            }
            "fast-command" => scheduler = true,
            "expire-cycle" => large_objects = true,
            _ => {}
        }
    }
    out.push_str("\nI have a few advices for you:\n\n");
    let micros = threshold * 1000;
    if slowlog_enable {
        out.push_str(&format!(
            "- There are latency issues with potentially slow commands you are using. Try to \
             enable the Slow Log Redis feature using the command 'CONFIG SET \
             slowlog-log-slower-than {micros}'. If the Slow log is disabled Redis is not able \
             to log slow commands execution for you.\n"
        ));
    }
    if slowlog_tune {
        out.push_str(&format!(
            "- Your current Slow Log configuration only logs events that are slower than your \
             configured latency monitor threshold. Please use 'CONFIG SET \
             slowlog-log-slower-than {micros}'.\n"
        ));
    }
    if slowlog_inspect {
        out.push_str(
            "- Check your Slow Log to understand what are the commands you are running which \
             are too slow to execute. Please check https://redis.io/commands/slowlog for more \
             information.\n",
        );
    }
    if scheduler {
        out.push_str(
            "- The system is slow to execute Redis code paths not containing system calls. \
             This usually means the system does not provide Redis CPU time to run for long \
             periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / \
             VM just for Redis if you are running other software in the same system.\n  3) \
             Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli \
             --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check \
             if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you \
             are using Jemalloc. However this may create fragmentation problems.\n",
        );
    }
    if large_objects {
        out.push_str(
            "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a \
             blocking operation. If you have very large objects that are often deleted, \
             expired, or evicted, try to fragment those objects into multiple smaller \
             objects.\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    /// Observed on redis-server 7.0.15: one 200 ms sample, 0 s ago.
    #[test]
    fn a_graph_of_one_sample() {
        let graph = super::graph("command", &[(100, 200)], 200, 100);
        let rule = "-".repeat(80);
        assert_eq!(
            graph,
            format!(
                "command - high 200 ms, low 200 ms (all time high 200 ms)\n{rule}\n \n \n \n_\n \n0\ns\n"
            )
        );
    }
}
