//! MEMORY and the engine's memory estimate: what a key takes
//! ([`key_size`]), what all of them take ([`used_memory`]), as INFO
//! memory, MEMORY STATS and `maxmemory` read it.

use redis::Value as Reply;

use super::{help_reply, run_subcommand, CmdResult, Ctx, Spec, Sub};
use crate::args::is;
use crate::error::CmdError;
use crate::reply;
use crate::value::Value;
use crate::RedisVersion;

pub(super) const COMMANDS: &[Spec] = &[Spec {
    name: "memory",
    arity: -2,
    handler: memory,
}];

/// An estimate of the bytes a key and its value take: the bytes of the
/// key and of every element, plus Redis-like overheads (a 24-byte dict
/// entry and a 16-byte object header per key, 16 bytes per element). The
/// engine has no allocator to ask, so this is an estimate, not Redis's
/// `objectComputeSize`.
pub(crate) fn key_size(key: &[u8], v: &Value) -> usize {
    const PER_KEY: usize = 24 + 16;
    const PER_ELEMENT: usize = 16;
    let value = match v {
        Value::Str(s) => s.len(),
        Value::List(l) => l.iter().map(|e| e.len() + PER_ELEMENT).sum(),
        Value::Set(s) => s.iter().map(|e| e.len() + PER_ELEMENT).sum(),
        Value::Hash(h) => h.iter().map(|(f, v)| f.len() + v.len() + PER_ELEMENT).sum(),
        Value::ZSet(z) => z.iter().map(|(m, _)| m.len() + 8 + PER_ELEMENT).sum(),
        Value::Stream(s) => s.data_bytes(),
    };
    // Keys and small strings are rounded up to the allocator's 8 bytes.
    PER_KEY + (key.len() + 4).next_multiple_of(8) + value.next_multiple_of(8)
}

/// The estimated memory of all the data (see [`key_size`]). A walk over
/// every key: INFO is not a hot command.
pub(crate) fn used_memory(store: &crate::command::Store) -> u64 {
    used_memory_of(&store.dbs)
}

/// [`used_memory`] of the databases `dbs`.
pub(crate) fn used_memory_of(dbs: &[crate::keyspace::Keyspace]) -> u64 {
    let data: usize = dbs.iter().map(|ks| ks.sizes(key_size)).sum();
    (BASELINE + data) as u64
}

/// What an empty Redis reports as allocated, so an empty engine looks
/// like one ([`used_memory`]'s baseline, MEMORY STATS' `startup.allocated`).
const BASELINE: usize = 870_000;

/// The bytes of a dictionary entry, per key and per key with a TTL.
const ENTRY: usize = 24;

/// The engine's memory as INFO memory and MEMORY STATS report it: the
/// estimate of the data ([`used_memory`]) with the script and function
/// caches, its parts as Redis splits them, the peak, and the Lua states'.
pub(super) struct Report {
    pub(super) used: u64,
    pub(super) peak: u64,
    pub(super) startup: u64,
    /// Each non-empty database's dictionaries: its index, the bytes of
    /// its keys' entries and of its TTLs'.
    pub(super) dbs: Vec<(usize, u64, u64)>,
    /// What is not data: the baseline, the dictionaries, the caches.
    pub(super) overhead: u64,
    pub(super) dataset: u64,
    pub(super) keys: u64,
    /// The Lua states of EVAL and of functions.
    pub(super) vm_eval: u64,
    pub(super) vm_functions: u64,
    /// The script cache's and the function libraries' own bytes.
    pub(super) scripts_eval: u64,
    pub(super) functions: u64,
}

impl Report {
    /// The report of `store` now, which raises the peak it keeps if this
    /// is more (Redis samples its peak the same way, not on every write).
    pub(super) fn of(store: &mut crate::command::Store) -> Report {
        let version = store.version;
        let scripts_eval = store.scripts.cache_bytes();
        let functions = functions_bytes(
            store.functions.libraries().count(),
            store.functions.function_count(),
            version,
        );
        let used = used_memory(store) + scripts_eval + functions;
        store.peak_memory = store.peak_memory.max(used);
        let dbs: Vec<(usize, u64, u64)> = (store.dbs.iter().enumerate())
            .filter(|(_, ks)| ks.len() > 0)
            .map(|(i, ks)| {
                (
                    i,
                    (ks.len() * ENTRY) as u64,
                    (ks.expiring_len() * ENTRY) as u64,
                )
            })
            .collect();
        let startup = BASELINE as u64;
        let overhead = startup
            + scripts_eval
            + functions
            + dbs
                .iter()
                .map(|(_, main, expires)| main + expires)
                .sum::<u64>();
        let (fresh_eval, fresh_functions) = fresh_vm_bytes(version);
        Report {
            used,
            peak: store.peak_memory,
            startup,
            overhead,
            dataset: used.saturating_sub(overhead),
            keys: store.dbs.iter().map(|ks| ks.len() as u64).sum(),
            dbs,
            vm_eval: store.scripts.vm_bytes().unwrap_or(fresh_eval),
            vm_functions: store.functions.vm_bytes().unwrap_or(fresh_functions),
            scripts_eval,
            functions,
        }
    }

    /// `part` as a percentage of `whole` (0 of nothing).
    pub(super) fn percent(part: u64, whole: u64) -> f64 {
        if whole == 0 {
            0.0
        } else {
            part as f64 * 100.0 / whole as f64
        }
    }

    /// The data's share of what is not the baseline (INFO's
    /// `used_memory_dataset_perc`, MEMORY STATS' `dataset.percentage`).
    pub(super) fn dataset_percent(&self) -> f64 {
        Self::percent(self.dataset, self.used.saturating_sub(self.startup))
    }
}

/// The memory Redis reports for its Lua states before they run anything
/// (EVAL's, functions'): the engine starts its own on first use.
fn fresh_vm_bytes(version: RedisVersion) -> (u64, u64) {
    if version >= RedisVersion::V7_4 {
        (31_744, 32_768)
    } else {
        (32_768, 33_792)
    }
}

/// The bytes Redis's script cache takes for a script of `body_len`
/// bytes: its body and SHA1 as strings, the object and the table entry
/// that hold them, and from Redis 7.4 on its place in the cache's
/// eviction list.
pub(crate) fn script_bytes(body_len: usize, version: RedisVersion) -> usize {
    let lru = if version >= RedisVersion::V7_4 { 24 } else { 0 };
    allocation(body_len + 4) + 48 + 16 + ENTRY + lru
}

/// The bytes Redis's function libraries take beside their Lua code
/// (`functionsMemoryOverhead`): its tables, and per library and per
/// function its records and names, as Redis 7.0 and 7.4 measure them.
fn functions_bytes(libraries: usize, functions: usize, version: RedisVersion) -> u64 {
    let (empty, library, function) = if version >= RedisVersion::V7_4 {
        (376, 152, 144)
    } else {
        (200, 80, 160)
    };
    (empty + libraries * library + functions * function) as u64
}

/// The block jemalloc gives a request of `n` bytes: 8, then multiples of
/// 16 up to 128, then four sizes per doubling.
fn allocation(n: usize) -> usize {
    match n {
        0..=8 => 8,
        9..=128 => n.next_multiple_of(16),
        _ => n.next_multiple_of(n.next_power_of_two() / 8),
    }
}

/// MEMORY USAGE key [SAMPLES count] | STATS | DOCTOR | MALLOC-STATS |
/// PURGE | HELP. USAGE reports the estimate of [`key_size`]; like Redis it
/// looks at the stored key even if its time has passed, and reads every
/// element whatever SAMPLES says.
fn memory(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, SUBCOMMANDS)
}

/// MEMORY's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "doctor",
        arity: 2,
        handler: memory_doctor,
    },
    Sub {
        name: "malloc-stats",
        arity: 2,
        handler: memory_malloc_stats,
    },
    Sub {
        name: "purge",
        arity: 2,
        handler: memory_purge,
    },
    Sub {
        name: "stats",
        arity: 2,
        handler: memory_stats,
    },
    Sub {
        name: "usage",
        arity: -3,
        handler: memory_usage,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: memory_help,
    },
];

/// MEMORY STATS: Redis's fields, names and types, in its order; the
/// values are the engine's estimates ([`key_size`], [`BASELINE`]), and
/// what it does not have (replication, AOF, an allocator to ask) reads as
/// none. A `db.N` entry for each database with keys, as Redis lists them.
fn memory_stats(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let report = Report::of(ctx.store);
    let field = |name: &str, value: Reply| (reply::bulk(name), value);
    let mut fields = vec![
        field("peak.allocated", reply::int(report.peak)),
        field("total.allocated", reply::int(report.used)),
        field("startup.allocated", reply::int(report.startup)),
        field("replication.backlog", reply::int(0)),
        field("clients.slaves", reply::int(0)),
        field("clients.normal", reply::int(0)),
        field("cluster.links", reply::int(0)),
        field("aof.buffer", reply::int(0)),
        field("lua.caches", reply::int(report.scripts_eval)),
        field("functions.caches", reply::int(report.functions)),
    ];
    for &(i, main, expires) in &report.dbs {
        fields.push(field(
            &format!("db.{i}"),
            reply::map(vec![
                field("overhead.hashtable.main", reply::int(main)),
                field("overhead.hashtable.expires", reply::int(expires)),
                field("overhead.hashtable.slot-to-keys", reply::int(0)),
            ]),
        ));
    }
    let net = report.used.saturating_sub(report.startup);
    let per_key = net.checked_div(report.keys).unwrap_or(0);
    fields.extend([
        field("overhead.total", reply::int(report.overhead)),
        field("keys.count", reply::int(report.keys)),
        field("keys.bytes-per-key", reply::int(per_key)),
        field("dataset.bytes", reply::int(report.dataset)),
        field(
            "dataset.percentage",
            reply::double(report.dataset_percent()),
        ),
        field(
            "peak.percentage",
            reply::double(Report::percent(report.used, report.peak)),
        ),
        field("allocator.allocated", reply::int(report.used)),
        field("allocator.active", reply::int(report.used)),
        field("allocator.resident", reply::int(report.used)),
        field("allocator-fragmentation.ratio", reply::double(1.0)),
        field("allocator-fragmentation.bytes", reply::int(0)),
        field("allocator-rss.ratio", reply::double(1.0)),
        field("allocator-rss.bytes", reply::int(0)),
        field("rss-overhead.ratio", reply::double(1.0)),
        field("rss-overhead.bytes", reply::int(0)),
        field("fragmentation", reply::double(1.0)),
        field("fragmentation.bytes", reply::int(0)),
    ]);
    Ok(reply::map(fields))
}

/// MEMORY DOCTOR: Redis's report, which for an instance under 5 MB is its
/// "too little memory" text; above, the engine has no fragmentation,
/// peaks or big buffers to report, so Redis's "no issue" text.
fn memory_doctor(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let text = if used_memory(ctx.store) < 5 * 1024 * 1024 {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector \
         can't be used in these conditions. Please, leave for your mission on Earth and fill \
         it with some data. The new Sam and I will be back to our programming as soon as I \
         finished rebooting.\n"
    } else {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for \
         what occurs on this base.\n"
    };
    Ok(reply::verbatim(text))
}

/// MEMORY MALLOC-STATS: Redis's reply when built without jemalloc (INFO's
/// `mem_allocator` is the engine's own).
fn memory_malloc_stats(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::bulk("Stats not supported for the current allocator"))
}

/// MEMORY PURGE: nothing to give back, as Redis without jemalloc.
fn memory_purge(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::ok())
}

fn memory_usage(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut j = 3;
    while let Some(&opt) = args.get(j) {
        if is(opt, "samples") && j + 1 < args.len() {
            if crate::args::int_arg(args[j + 1])? < 0 {
                return Err(CmdError::Syntax);
            }
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let key = args[2];
    Ok(ctx
        .ks()
        .stored(key)
        .map_or_else(reply::nil, |e| reply::int(key_size(key, &e.value))))
}

fn memory_help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "memory",
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    ))
}

/// Redis's `bytesToHuman`: `B`, `K`, `M`, `G`... with two decimals.
pub(super) fn human_bytes(n: u64) -> String {
    let d = n as f64;
    const UNITS: &[(f64, &str)] = &[
        (1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0, "P"),
        (1024.0 * 1024.0 * 1024.0 * 1024.0, "T"),
        (1024.0 * 1024.0 * 1024.0, "G"),
        (1024.0 * 1024.0, "M"),
        (1024.0, "K"),
    ];
    if n < 1024 {
        return format!("{n}B");
    }
    for &(size, unit) in UNITS {
        if d >= size {
            return format!("{:.2}{unit}", d / size);
        }
    }
    format!("{n}B")
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use crate::command::test_util::*;

    #[test]
    fn memory_usage_replies() {
        let mut c = conn();
        run(&mut c, "HSET h a b");
        assert!(matches!(run(&mut c, "MEMORY USAGE h"), Value::Int(n) if n > 0));
        assert!(matches!(run(&mut c, "MEMORY USAGE h SAMPLES 0"), Value::Int(n) if n > 0));
        assert_eq!(run(&mut c, "MEMORY USAGE nokey"), Value::Nil);
        assert_eq!(run(&mut c, "MEMORY USAGE h SAMPLES x"), err(NOT_INT));
        assert_eq!(run(&mut c, "MEMORY USAGE h SAMPLES -1"), err(SYNTAX));
        assert_eq!(run(&mut c, "MEMORY USAGE h foo"), err(SYNTAX));
        assert_eq!(
            run(&mut c, "MEMORY foo"),
            err("ERR unknown subcommand 'foo'. Try MEMORY HELP.")
        );
        assert_eq!(
            run(&mut c, "MEMORY USAGE"),
            err("ERR wrong number of arguments for 'memory|usage' command")
        );
    }
}
