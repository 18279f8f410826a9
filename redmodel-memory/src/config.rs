//! The settings store behind CONFIG GET / SET: every parameter Redis 7.0.15
//! knows (see `config/params.rs`), validated and shown as Redis does.
//!
//! Most parameters only hold a value (there is no persistence, no
//! replication, no TLS to configure): the engine remembers what was set
//! and shows it back, which is what clients and Redis's own test suite
//! expect. The ones the engine obeys are gathered in [`Limits`]: the
//! encoding thresholds OBJECT ENCODING reports against, the largest string
//! (`proto-max-bulk-len`) and the eviction policy OBJECT FREQ checks.

use crate::error::CmdError;
use crate::glob::glob_match;
use crate::RedisVersion;

mod params;

use params::PARAMS;

/// Flags of a parameter (`config.c`'s `*_CONFIG` flags that matter here).
pub(crate) mod flag {
    /// Set only at startup: CONFIG SET refuses it.
    pub(crate) const IMMUTABLE: u8 = 1;
    /// Refused unless `enable-protected-configs` allows it (it does not).
    pub(crate) const PROTECTED: u8 = 2;
    /// Not listed by a CONFIG GET pattern; an exact name still finds it.
    pub(crate) const HIDDEN: u8 = 4;
    /// The value is a list of words separated by spaces.
    pub(crate) const MULTIARG: u8 = 8;
    /// A parameter Redis 7.0 does not have: only an engine behaving as
    /// Redis 7.4 knows it.
    pub(crate) const SINCE_7_4: u8 = 16;
}

/// The bounds and notation of a numeric parameter. Bounds are C's `long
/// long` bit patterns: an unsigned parameter compares them as unsigned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Number {
    pub(crate) lower: i64,
    pub(crate) upper: i64,
    pub(crate) unsigned: bool,
    /// Accepts `1mb`, `2gb`...
    pub(crate) memory: bool,
    /// Accepts `50%` (stored negative, as Redis does).
    pub(crate) percent: bool,
    /// Read and shown in octal (`unixsocketperm`).
    pub(crate) octal: bool,
}

/// How a parameter's value is read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Bool,
    Number(Number),
    Enum(&'static [&'static str]),
    Str,
    /// Parsed by a function of its own in Redis (`save`,
    /// `notify-keyspace-events`, ...).
    Special,
}

/// One parameter of the table.
#[derive(Debug)]
pub(crate) struct Param {
    pub(crate) name: &'static str,
    pub(crate) alias: Option<&'static str>,
    pub(crate) flags: u8,
    pub(crate) kind: Kind,
    pub(crate) default: &'static str,
}

/// The settings the engine acts on, read from the parameters whenever one
/// changes (the keyspaces keep a copy, see `Keyspace::set_limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) hash_max_listpack_entries: u64,
    pub(crate) hash_max_listpack_value: u64,
    pub(crate) set_max_intset_entries: u64,
    pub(crate) zset_max_listpack_entries: u64,
    pub(crate) zset_max_listpack_value: u64,
    /// Redis 7.2's small sets of strings (`set-max-listpack-entries` and
    /// `-value`), and its small lists (`list-max-listpack-size`): the
    /// encodings of the version followed.
    pub(crate) set_max_listpack_entries: u64,
    pub(crate) set_max_listpack_value: u64,
    pub(crate) list_max_listpack_size: i64,
    pub(crate) version: RedisVersion,
    /// The largest string SETRANGE and APPEND may build.
    pub(crate) proto_max_bulk_len: u64,
    /// Whether `maxmemory-policy` is an LFU one (OBJECT FREQ needs it,
    /// and accesses are counted then), with `lfu-log-factor` and
    /// `lfu-decay-time`.
    pub(crate) lfu: bool,
    pub(crate) lfu_log_factor: u64,
    pub(crate) lfu_decay_time: u64,
    /// `notify-keyspace-events` as `notify::class` bits.
    pub(crate) notify: u32,
    /// How far a subscriber may fall behind, in bytes (0: no limit).
    pub(crate) pubsub_limit: u64,
    /// The size and entry limits of a stream's nodes, which decide what
    /// approximate trimming removes.
    pub(crate) stream_node_max_bytes: u64,
    pub(crate) stream_node_max_entries: u64,
    /// `busy-reply-threshold`: how long a script runs before other
    /// clients get BUSY.
    pub(crate) busy_reply_threshold: u64,
    /// `min-replicas-to-write` and `min-replicas-max-lag` are both set:
    /// with no replicas, writes are refused (scripts check it).
    pub(crate) min_replicas: bool,
    /// `slowlog-log-slower-than` (µs; negative: off) and `slowlog-max-len`.
    pub(crate) slowlog_slower_than: i64,
    pub(crate) slowlog_max_len: u64,
    /// `latency-monitor-threshold` (ms; 0: off) and `latency-tracking`.
    pub(crate) latency_threshold_ms: u64,
    pub(crate) latency_tracking: bool,
    /// `maxmemory` in bytes (0: no limit).
    pub(crate) maxmemory: u64,
    /// Which deletes Redis runs lazily (`lazyfree-lazy-*`): see
    /// [`crate::lazyfree`].
    pub(crate) lazy: Lazy,
}

/// The `lazyfree-lazy-*` settings: which of Redis's deletes free their
/// values as UNLINK does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Lazy {
    /// DEL and GETDEL (`lazyfree-lazy-user-del`).
    pub(crate) user_del: bool,
    /// FLUSHALL, FLUSHDB, SCRIPT FLUSH and FUNCTION FLUSH without a mode
    /// (`lazyfree-lazy-user-flush`).
    pub(crate) user_flush: bool,
    /// Keys deleted because their time passed (`lazyfree-lazy-expire`).
    pub(crate) expire: bool,
    /// Keys evicted under `maxmemory` (`lazyfree-lazy-eviction`).
    pub(crate) eviction: bool,
    /// Values a write replaces (`lazyfree-lazy-server-del`).
    pub(crate) server_del: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Config::default().limits()
    }
}

/// The current value of every parameter, in [`PARAMS`] order, as CONFIG
/// GET shows it.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    values: Vec<String>,
    /// `notify-keyspace-events` as set: its shown form drops `n` when
    /// `A` is there (as Redis shows it), but the class stays on.
    notify: u32,
    /// The Redis version whose parameters are known (see
    /// [`flag::SINCE_7_4`]) and whose encodings the limits follow.
    version: RedisVersion,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            values: PARAMS.iter().map(|p| p.default.to_string()).collect(),
            notify: 0,
            version: RedisVersion::default(),
        }
    }
}

/// The index of the parameter called `name` (or aliased so),
/// case-insensitively as Redis's config dictionary.
fn lookup(name: &[u8]) -> Option<usize> {
    PARAMS.iter().position(|p| {
        name.eq_ignore_ascii_case(p.name.as_bytes())
            || p.alias
                .is_some_and(|a| name.eq_ignore_ascii_case(a.as_bytes()))
    })
}

impl Config {
    /// Follows Redis `version`: its parameters, its encodings.
    pub(crate) fn set_version(&mut self, version: RedisVersion) {
        self.version = version;
    }

    /// Whether parameter `i` exists in the version followed.
    fn known(&self, i: usize) -> bool {
        PARAMS[i].flags & flag::SINCE_7_4 == 0 || self.version >= RedisVersion::V7_4
    }

    /// [`lookup`] among the parameters of the version followed.
    fn find(&self, name: &[u8]) -> Option<usize> {
        lookup(name).filter(|&i| self.known(i))
    }

    /// The value of a parameter by its exact name; empty if unknown.
    pub(crate) fn get(&self, name: &str) -> &str {
        self.find(name.as_bytes())
            .and_then(|i| self.values.get(i))
            .map_or("", String::as_str)
    }

    fn number(&self, name: &str) -> u64 {
        let value = self.get(name);
        value.parse::<u64>().unwrap_or(0)
    }

    /// The settings the engine obeys, from the current values.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            hash_max_listpack_entries: self.number("hash-max-listpack-entries"),
            hash_max_listpack_value: self.number("hash-max-listpack-value"),
            set_max_intset_entries: self.number("set-max-intset-entries"),
            zset_max_listpack_entries: self.number("zset-max-listpack-entries"),
            zset_max_listpack_value: self.number("zset-max-listpack-value"),
            set_max_listpack_entries: self.number("set-max-listpack-entries"),
            set_max_listpack_value: self.number("set-max-listpack-value"),
            list_max_listpack_size: self.get("list-max-listpack-size").parse().unwrap_or(-2),
            version: self.version,
            proto_max_bulk_len: self.number("proto-max-bulk-len"),
            lfu: self.get("maxmemory-policy").ends_with("lfu"),
            lfu_log_factor: self.number("lfu-log-factor"),
            lfu_decay_time: self.number("lfu-decay-time"),
            notify: self.notify,
            pubsub_limit: pubsub_hard_limit(self.get("client-output-buffer-limit")),
            stream_node_max_bytes: self.number("stream-node-max-bytes"),
            stream_node_max_entries: self.number("stream-node-max-entries"),
            busy_reply_threshold: self.number("busy-reply-threshold"),
            min_replicas: self.number("min-replicas-to-write") > 0
                && self.number("min-replicas-max-lag") > 0,
            slowlog_slower_than: self.get("slowlog-log-slower-than").parse().unwrap_or(-1),
            slowlog_max_len: self.number("slowlog-max-len"),
            latency_threshold_ms: self.number("latency-monitor-threshold"),
            latency_tracking: self.get("latency-tracking") == "yes",
            maxmemory: self.number("maxmemory"),
            lazy: Lazy {
                user_del: self.get("lazyfree-lazy-user-del") == "yes",
                user_flush: self.get("lazyfree-lazy-user-flush") == "yes",
                expire: self.get("lazyfree-lazy-expire") == "yes",
                eviction: self.get("lazyfree-lazy-eviction") == "yes",
                server_del: self.get("lazyfree-lazy-server-del") == "yes",
            },
        }
    }

    /// CONFIG GET: the (name, value) pairs matching `patterns`, as Redis's
    /// `configGetCommand` collects them. A plain name is looked up exactly
    /// (hidden parameters included) and shown as given; a glob pattern
    /// walks every name and alias, hidden parameters excepted, and shows
    /// the name or alias that matched. Redis registers an alias as a
    /// parameter of its own, so a pattern matching both names shows both;
    /// a name already collected is not collected again.
    pub(crate) fn get_matching(&self, patterns: &[&[u8]]) -> Vec<(Vec<u8>, String)> {
        let mut found: Vec<(Vec<u8>, String)> = Vec::new();
        let seen = |found: &[(Vec<u8>, String)], name: &[u8]| {
            found.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        for &pattern in patterns {
            let is_glob = pattern.iter().any(|b| matches!(b, b'[' | b'*' | b'?'));
            if !is_glob {
                if seen(&found, pattern) {
                    continue;
                }
                if let Some(i) = self.find(pattern) {
                    found.push((pattern.to_vec(), self.values[i].clone()));
                }
                continue;
            }
            for (i, param) in PARAMS.iter().enumerate() {
                if param.flags & flag::HIDDEN != 0 || !self.known(i) {
                    continue;
                }
                for name in std::iter::once(param.name).chain(param.alias) {
                    if seen(&found, name.as_bytes()) {
                        continue;
                    }
                    if glob_match(pattern, name.as_bytes(), true) {
                        found.push((name.as_bytes().to_vec(), self.values[i].clone()));
                    }
                }
            }
        }
        found
    }

    /// Sets a parameter as Redis's command line or configuration file
    /// sets it at start: immutable and protected ones included.
    pub(crate) fn set_at_start(&mut self, name: &str, value: &[u8]) -> Result<(), String> {
        let i = self
            .find(name.as_bytes())
            .ok_or_else(|| format!("unknown parameter {name}"))?;
        self.values[i] = parse_value(&PARAMS[i], value)?;
        Ok(())
    }

    /// CONFIG SET name value [name value ...]: all or nothing, checked in
    /// Redis's order (every name first, then every value).
    pub(crate) fn set(&mut self, pairs: &[&[u8]]) -> Result<(), CmdError> {
        if !pairs.len().is_multiple_of(2) {
            return Err(CmdError::Syntax);
        }
        let failed = |name: &[u8], why: &str| {
            CmdError::err(format!(
                "CONFIG SET failed (possibly related to argument '{}') - {why}",
                String::from_utf8_lossy(name)
            ))
        };
        let mut chosen: Vec<usize> = Vec::with_capacity(pairs.len() / 2);
        let mut refused: Option<CmdError> = None;
        for pair in pairs.chunks_exact(2) {
            let name = pair[0];
            let Some(i) = self.find(name) else {
                // An unknown name wins over any other error, as in Redis.
                return Err(CmdError::err(format!(
                    "Unknown option or number of arguments for CONFIG SET - '{}'",
                    String::from_utf8_lossy(name)
                )));
            };
            if refused.is_none() {
                let flags = PARAMS[i].flags;
                if flags & flag::IMMUTABLE != 0 {
                    refused = Some(failed(name, "can't set immutable config"));
                } else if flags & flag::PROTECTED != 0 {
                    refused = Some(failed(name, "can't set protected config"));
                } else if chosen.contains(&i) {
                    refused = Some(failed(name, "duplicate parameter"));
                }
            }
            chosen.push(i);
        }
        if let Some(e) = refused {
            return Err(e);
        }
        let mut parsed = Vec::with_capacity(chosen.len());
        let mut notify = self.notify;
        for (&i, pair) in chosen.iter().zip(pairs.chunks_exact(2)) {
            let param = &PARAMS[i];
            if param.name == "notify-keyspace-events" {
                notify = crate::notify::parse_flags(pair[1]).unwrap_or(0);
            }
            let value =
                parse_value(param, pair[1]).map_err(|why| failed(param.name.as_bytes(), &why))?;
            parsed.push((i, value));
        }
        for (i, value) in parsed {
            self.values[i] = value;
        }
        self.notify = notify;
        Ok(())
    }
}

/// Reads a value for `param` as Redis would, and returns it as CONFIG GET
/// will show it; or the reason Redis gives for refusing it.
fn parse_value(param: &Param, value: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(value);
    match param.kind {
        Kind::Bool => {
            if value.eq_ignore_ascii_case(b"yes") {
                Ok("yes".into())
            } else if value.eq_ignore_ascii_case(b"no") {
                Ok("no".into())
            } else {
                Err("argument must be 'yes' or 'no'".into())
            }
        }
        // `hz` is clamped to 1..=500 rather than refused (Redis's CONFIG_MIN_HZ
        // and CONFIG_MAX_HZ).
        Kind::Number(n) if param.name == "hz" => {
            let shown = parse_number(&n, value)?;
            let hz: i64 = shown.parse().unwrap_or(1);
            Ok(hz.clamp(1, 500).to_string())
        }
        Kind::Number(n) => parse_number(&n, value),
        Kind::Enum(choices) => {
            // A multi-word parameter takes several of its choices at once.
            let words: Vec<&[u8]> = if param.flags & flag::MULTIARG != 0 {
                value.split(|&b| b == b' ').collect()
            } else {
                vec![value]
            };
            let mut names = Vec::with_capacity(words.len());
            for word in words {
                match choices
                    .iter()
                    .find(|c| word.eq_ignore_ascii_case(c.as_bytes()))
                {
                    Some(c) => names.push(*c),
                    None => {
                        return Err(format!(
                            "argument(s) must be one of the following: {}",
                            choices.join(", ")
                        ))
                    }
                }
            }
            Ok(names.join(" "))
        }
        Kind::Str => Ok(text.into_owned()),
        Kind::Special => match param.name {
            "save" => parse_save(value),
            "notify-keyspace-events" => parse_notify_flags(value),
            "oom-score-adj-values" => parse_oom_values(value),
            "latency-tracking-info-percentiles" => parse_percentiles(value),
            _ => Ok(text.into_owned()),
        },
    }
}

/// Redis's `numericParseString` and `numericBoundaryCheck`.
fn parse_number(n: &Number, value: &[u8]) -> Result<String, String> {
    let parsed = if n.memory {
        memtoull(value).map(|v| v as i64)
    } else {
        None
    };
    let parsed = parsed.or_else(|| {
        let digits = value.strip_suffix(b"%")?;
        if !n.percent || digits.is_empty() {
            return None;
        }
        crate::args::parse_i64(digits)
            .filter(|&v| v >= 0)
            .map(|v| -v)
    });
    let parsed = parsed.or_else(|| {
        if !n.octal {
            return None;
        }
        let text = std::str::from_utf8(value).ok()?;
        i64::from_str_radix(text, 8).ok()
    });
    let parsed = parsed.or_else(|| {
        if n.memory || n.percent || n.octal {
            return None;
        }
        crate::args::parse_i64(value)
    });
    let Some(v) = parsed else {
        return Err(match (n.memory, n.percent, n.octal) {
            (true, true, _) => "argument must be a memory or percent value",
            (true, false, _) => "argument must be a memory value",
            (false, _, true) => "argument couldn't be parsed as an octal number",
            _ => "argument couldn't be parsed into an integer",
        }
        .into());
    };
    if n.unsigned {
        let (u, lower, upper) = (v as u64, n.lower as u64, n.upper as u64);
        if u > upper || u < lower {
            return Err(if n.octal {
                format!("argument must be between {lower:o} and {upper:o} inclusive")
            } else {
                format!("argument must be between {lower} and {upper} inclusive")
            });
        }
    } else if n.percent && v < 0 {
        if v < n.lower {
            return Err(format!(
                "percentage argument must be less or equal to {}",
                n.lower.unsigned_abs()
            ));
        }
    } else if v > n.upper || v < n.lower {
        return Err(format!(
            "argument must be between {} and {} inclusive",
            n.lower, n.upper
        ));
    }
    Ok(if n.percent && v < 0 {
        format!("{}%", v.unsigned_abs())
    } else if n.memory {
        (v as u64).to_string()
    } else if n.octal {
        format!("{v:o}")
    } else {
        v.to_string()
    })
}

/// Redis's `memtoull`: digits and an optional unit (b, k, kb, m, mb, g,
/// gb, any case). No sign, and, as in Redis, no overflow check.
pub(crate) fn memtoull(value: &[u8]) -> Option<u64> {
    let digits = value.iter().take_while(|b| b.is_ascii_digit()).count();
    let (number, unit) = value.split_at(digits);
    let unit = String::from_utf8_lossy(unit).to_ascii_lowercase();
    let mul: u64 = match unit.as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    // strtoull of no digits is 0; of too many, ERANGE's ULLONG_MAX.
    let mut n: u64 = 0;
    for &d in number {
        n = n.saturating_mul(10).saturating_add(u64::from(d - b'0'));
    }
    Some(n.wrapping_mul(mul))
}

/// `save`: pairs of `seconds changes` (seconds at least 1, changes at
/// least 0); a single empty word clears them.
fn parse_save(value: &[u8]) -> Result<String, String> {
    let invalid = || "Invalid save parameters".to_string();
    if value.is_empty() {
        return Ok(String::new());
    }
    let words: Vec<&[u8]> = value.split(|&b| b == b' ').collect();
    if !words.len().is_multiple_of(2) {
        return Err(invalid());
    }
    let mut shown = Vec::with_capacity(words.len());
    for (j, word) in words.iter().enumerate() {
        let n = strtoll(word).ok_or_else(invalid)?;
        if (j % 2 == 0 && n < 1) || (j % 2 == 1 && n < 0) {
            return Err(invalid());
        }
        shown.push(n.to_string());
    }
    Ok(shown.join(" "))
}

/// `oom-score-adj-values`: three integers in -2000..=2000.
fn parse_oom_values(value: &[u8]) -> Result<String, String> {
    let words: Vec<&[u8]> = value.split(|&b| b == b' ').collect();
    if words.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let mut shown = Vec::with_capacity(3);
    for word in words {
        match strtoll(word) {
            Some(n) if (-2000..=2000).contains(&n) => shown.push(n.to_string()),
            _ => {
                return Err(
                    "Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into(),
                )
            }
        }
    }
    Ok(shown.join(" "))
}

/// `latency-tracking-info-percentiles`: doubles from 0 to 100, shown as
/// Redis shows them (`%f` with its trailing zeros trimmed: `0.0 50.0` is
/// `0 50`).
fn parse_percentiles(value: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(value);
    let mut shown = Vec::new();
    for word in text.split_whitespace() {
        let p = crate::float::parse_double(word.as_bytes()).filter(|p| p.is_finite());
        let Some(p) = p else {
            return Err("Invalid latency-tracking-info-percentiles parameters".into());
        };
        if !(0.0..=100.0).contains(&p) {
            return Err(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                    .into(),
            );
        }
        let fixed = format!("{p:.6}");
        shown.push(
            fixed
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string(),
        );
    }
    Ok(shown.join(" "))
}

/// C's `strtoll(s, &end, 10)` with `*end == '\0'` required: optional
/// leading spaces and sign, digits (none is 0), saturating on overflow.
fn strtoll(word: &[u8]) -> Option<i64> {
    let trimmed = word.trim_ascii_start();
    let (negative, digits) = crate::float::split_sign(trimmed);
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits.is_empty() {
        // "" and "-" leave end at the start: valid only if nothing was there.
        return word.is_empty().then_some(0);
    }
    let mut n: i64 = 0;
    for &d in digits {
        let d = i64::from(d - b'0');
        n = if negative {
            n.saturating_mul(10).saturating_sub(d)
        } else {
            n.saturating_mul(10).saturating_add(d)
        };
    }
    Some(n)
}

/// `notify-keyspace-events`: Redis's `keyspaceEventsStringToFlags` and
/// back (`keyspaceEventsFlagsToString`), so `KEA` reads back as `AKE`.
fn parse_notify_flags(value: &[u8]) -> Result<String, String> {
    crate::notify::parse_flags(value)
        .map(crate::notify::flags_to_string)
        .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into())
}

/// The hard limit of the `pubsub` class in `client-output-buffer-limit`
/// (`normal 0 0 0 slave ... pubsub 33554432 8388608 60`), in bytes.
fn pubsub_hard_limit(value: &str) -> u64 {
    let mut words = value.split(' ');
    while let Some(word) = words.next() {
        if word.eq_ignore_ascii_case("pubsub") {
            return words
                .next()
                .and_then(|w| memtoull(w.as_bytes()))
                .unwrap_or(0);
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::{memtoull, parse_notify_flags, parse_save, Config};

    #[test]
    fn defaults_are_redis_7_0_15s() {
        let c = Config::default();
        assert_eq!(c.get("hash-max-listpack-entries"), "512");
        assert_eq!(c.get("hash-max-ziplist-value"), "64");
        assert_eq!(c.get("set-max-intset-entries"), "512");
        assert_eq!(c.get("zset-max-listpack-entries"), "128");
        assert_eq!(c.get("list-max-listpack-size"), "-2");
        assert_eq!(c.get("maxmemory-policy"), "noeviction");
        assert_eq!(c.get("save"), "");
        assert_eq!(c.get("appendonly"), "no");
        assert_eq!(c.get("databases"), "16");
    }

    #[test]
    fn value_notations() {
        assert_eq!(memtoull(b"1mb"), Some(1024 * 1024));
        assert_eq!(memtoull(b"2K"), Some(2000));
        assert_eq!(memtoull(b""), Some(0));
        assert_eq!(memtoull(b"-1"), None);
        assert_eq!(memtoull(b"1tb"), None);
        assert_eq!(parse_save(b"10 1").as_deref(), Ok("10 1"));
        assert!(parse_save(b"10 1 20").is_err());
        assert!(parse_save(b"0 1").is_err());
        assert_eq!(parse_notify_flags(b"KEA").as_deref(), Ok("AKE"));
        assert_eq!(parse_notify_flags(b"KEAn").as_deref(), Ok("AKE"));
        assert_eq!(parse_notify_flags(b"Ex").as_deref(), Ok("xE"));
        assert_eq!(parse_notify_flags(b"").as_deref(), Ok(""));
        assert!(parse_notify_flags(b"Q").is_err());
    }
}
