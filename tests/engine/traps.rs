//! Differential test, hand-written: command sequences aimed at the places
//! where a Redis clone usually goes wrong, run on the memory engine and on
//! a private redis-server, every reply compared.
//!
//! The scripts are data: `tests/engine/traps/*.txt`, one file per family
//! and one test per file, in the format `tests/engine/traps/README.md`
//! describes (`== name` starts a script, then one command per line in
//! redis-cli syntax, `@N ` for another connection, `~` for a whole SCAN
//! iteration). The real server is the reference, so a script needs no
//! expected replies.
//!
//! A script that uses a command the engine does not implement yet (a
//! family still being written) is skipped, and the test prints which: it
//! gets stronger by itself as the families land.
//!
//! A file marked `# mode: wire` runs over RESP connections instead, every
//! frame each connection receives compared, pushes included (`wire`).

mod wire;

use redmodel::memory::{Engine, RedisVersion};
use redmodel_suite::diff::{engine_knows, parse_line, show, Args, Differ};
use redmodel_suite::{redis_server_available, RedisServer};

/// A private redis-server in cluster mode that serves every slot itself.
fn one_node_cluster() -> Result<RedisServer, String> {
    let server = RedisServer::builder()
        .config("cluster-enabled yes")
        .config("cluster-config-file nodes.conf")
        .start()
        .map_err(|e| e.to_string())?;
    let mut conn = server
        .client()
        .get_connection()
        .map_err(|e| e.to_string())?;
    redis::cmd("CLUSTER")
        .arg("ADDSLOTSRANGE")
        .arg(0)
        .arg(16383)
        .query::<()>(&mut conn)
        .map_err(|e| e.to_string())?;
    for _ in 0..100 {
        let info: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query(&mut conn)
            .map_err(|e| e.to_string())?;
        if info.contains("cluster_state:ok") {
            return Ok(server);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err("the one-node cluster did not reach cluster_state:ok".into())
}

/// Whether `server` is Redis 7.4 or later (INFO server's `redis_version`).
fn is_7_4_or_later(server: &RedisServer) -> bool {
    let Ok(mut conn) = server.client().get_connection() else {
        return false;
    };
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut conn)
        .unwrap_or_default();
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or_default();
    let mut parts = version
        .split('.')
        .map(|p| p.trim().parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (7, 4)
}

/// Whether `engine` (in 7.4 mode, which `engine_knows`'s scratch engine
/// is not) knows the command `name`: COMMAND INFO, which runs nothing.
fn engine_74_knows(engine: &Engine, name: &str) -> bool {
    let reply = engine
        .connection()
        .execute(&[b"COMMAND", b"INFO", name.as_bytes()]);
    matches!(reply, redis::Value::Array(items) if items.first().is_some_and(|i| *i != redis::Value::Nil))
}

/// A named script: its name and its command lines.
type Trap = (&'static str, Vec<&'static str>);

/// Reads the scripts of a trap file (`tests/engine/traps/README.md`). A
/// malformed file is a panic naming the file and line: a typo must not
/// quietly drop a script.
fn parse_traps(file: &str, text: &'static str) -> Vec<Trap> {
    let mut traps: Vec<Trap> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix("==") {
            let name = name.trim();
            assert!(
                !name.is_empty(),
                "{file}:{}: a script needs a name",
                number + 1
            );
            traps.push((name, Vec::new()));
            continue;
        }
        match traps.last_mut() {
            Some((_, lines)) => lines.push(line),
            None => panic!(
                "{file}:{}: command before the first `== name` line: {line:?}",
                number + 1
            ),
        }
    }
    assert!(!traps.is_empty(), "{file}: no script");
    for (name, lines) in &traps {
        assert!(!lines.is_empty(), "{file}: script `{name}` has no command");
    }
    traps
}

/// Scripts whose name starts with this run line by line: each line stands
/// alone, so a line whose command the engine lacks is skipped by itself
/// rather than the whole script.
const INDEPENDENT: &str = "each line: ";

/// What a line does.
#[derive(PartialEq)]
enum Kind {
    /// Runs the command and compares its reply.
    Run,
    /// `~`: runs a SCAN-family command through a whole iteration.
    WholeScan,
    /// `&N`: sends a command that blocks, its reply read later.
    Send,
    /// `?N`: reads and compares the reply of the command sent on N.
    Receive,
}

/// One parsed line of a script.
struct Line {
    text: &'static str,
    conn: usize,
    kind: Kind,
    args: Args,
}

fn parse_script(lines: &[&'static str]) -> Vec<Line> {
    lines
        .iter()
        .map(|&text| {
            let mut rest = text.trim();
            let mut conn = 0;
            let mut kind = Kind::Run;
            for (prefix, prefix_kind) in [('@', Kind::Run), ('&', Kind::Send), ('?', Kind::Receive)]
            {
                if let Some(after) = rest.strip_prefix(prefix) {
                    let (n, tail) = after.split_once(' ').unwrap_or((after, ""));
                    conn = n
                        .parse()
                        .unwrap_or_else(|_| panic!("bad connection in {text:?}"));
                    rest = tail.trim_start();
                    kind = prefix_kind;
                    break;
                }
            }
            if kind == Kind::Receive {
                assert!(rest.is_empty(), "`?N` takes no command: {text:?}");
            }
            if rest.starts_with('~') {
                kind = Kind::WholeScan;
            }
            let rest = rest.trim_start_matches('~');
            let args = parse_line(rest).unwrap_or_else(|e| panic!("bad trap line: {e}"));
            Line {
                text,
                conn,
                kind,
                args,
            }
        })
        .collect()
}

/// Runs every trap; fails listing every script where the engine and Redis
/// differ, each with its full transcript.
fn run_traps(test: &str, file: &str, text: &'static str) {
    // Parse first: a malformed file fails even where no server runs.
    let traps = parse_traps(file, text);
    if text.lines().any(|l| l.trim() == wire::MARKER) {
        return wire::run_wire_traps(test, &traps);
    }
    // `cluster_*.txt`: a one-node cluster against the engine in cluster mode.
    let cluster = file
        .rsplit('/')
        .next()
        .is_some_and(|f| f.starts_with("cluster_"));
    // `v74_*.txt`: Redis 7.4's commands, against the engine in 7.4 mode.
    let v74 = file
        .rsplit('/')
        .next()
        .is_some_and(|f| f.starts_with("v74_"));
    if !redis_server_available(test) {
        return;
    }
    let (_server, mut differ) = if cluster {
        let server = one_node_cluster().unwrap_or_else(|e| panic!("{test}: {e}"));
        let differ = Differ::with_engine(&server, Engine::new().with_cluster_mode());
        (server, differ)
    } else if v74 {
        let server = RedisServer::builder()
            .config("enable-debug-command yes")
            .start()
            .unwrap_or_else(|e| panic!("{test}: {e}"));
        if !is_7_4_or_later(&server) {
            eprintln!("{test}: skipped, the redis-server found is older than 7.4");
            return;
        }
        let engine = Engine::new().with_version(RedisVersion::V7_4);
        let differ = Differ::with_engine(&server, engine);
        (server, differ)
    } else {
        // DEBUG as the engine serves it: as Redis's test servers allow it.
        let server = RedisServer::builder()
            .config("enable-debug-command yes")
            .start()
            .unwrap_or_else(|e| panic!("{test}: {e}"));
        let differ = Differ::new(&server).expect("differ");
        (server, differ)
    };
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    let mut ran = 0;
    for (name, script) in &traps {
        let lines = parse_script(script);
        let mut lacking: Vec<String> = Vec::new();
        for line in &lines {
            let Some(cmd) = line.args.first() else {
                continue;
            };
            let cmd = String::from_utf8_lossy(cmd).to_ascii_uppercase();
            let knows = if v74 {
                engine_74_knows(differ.engine(), &cmd)
            } else {
                engine_knows(&cmd)
            };
            if !lacking.contains(&cmd) && differ.real_knows(&cmd) && !knows {
                lacking.push(cmd);
            }
        }
        let independent = name.starts_with(INDEPENDENT);
        if !lacking.is_empty() {
            skipped.push(format!("{name} (engine lacks {})", lacking.join(" ")));
            if !independent {
                continue;
            }
        }
        ran += 1;
        differ.reset();
        let mut transcript = String::new();
        let mut mismatches = 0;
        for line in &lines {
            let lacks = line.args.first().is_some_and(|c| {
                lacking.contains(&String::from_utf8_lossy(c).to_ascii_uppercase())
            });
            if lacks {
                transcript.push_str(&format!("     (skipped) {}\n", line.text));
                continue;
            }
            let result = match line.kind {
                Kind::WholeScan => differ.scan_all(line.conn, &line.args),
                Kind::Run => differ.run(line.conn, &line.args),
                Kind::Send => {
                    differ.send(line.conn, &line.args);
                    transcript.push_str(&format!("     {}  ->  (sent)\n", line.text));
                    continue;
                }
                Kind::Receive => differ.receive(line.conn),
            };
            match result {
                Ok(reply) => {
                    transcript.push_str(&format!("     {}  ->  {}\n", line.text, show(&reply)))
                }
                Err(m) => {
                    mismatches += 1;
                    transcript.push_str(&format!(
                        "  !! {}\n       redis:  {}\n       engine: {}\n",
                        line.text,
                        show(&m.expected),
                        show(&m.got)
                    ));
                }
            }
        }
        // The reads each side counted (INFO's keyspace hits and misses),
        // but for a script that scans whole: how many calls an iteration
        // takes is each side's own.
        let scans = lines.iter().any(|l| matches!(l.kind, Kind::WholeScan));
        let (real, engine) = differ.keyspace_lookups();
        if real != engine && !scans {
            mismatches += 1;
            transcript.push_str(&format!(
                "  !! keyspace hits and misses\n       redis:  {real:?}\n       engine: {engine:?}\n"
            ));
        }
        if mismatches > 0 {
            failures.push(format!(
                "trap `{name}`: {mismatches} difference(s)\n{transcript}"
            ));
        }
    }
    eprintln!("{test}: ran {ran} of {} traps", traps.len());
    if !skipped.is_empty() {
        eprintln!(
            "note: {test}: skipped {}:\n  {}",
            skipped.len(),
            skipped.join("\n  ")
        );
    }
    if !failures.is_empty() {
        panic!(
            "{test}: the engine differs from redis-server in {} trap(s):\n\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

// One test per file of `tests/engine/traps/`.
macro_rules! trap_tests {
    ($($test:ident: $file:literal,)*) => {
        $(
            #[test]
            fn $test() {
                run_traps(
                    stringify!($test),
                    concat!("tests/engine/traps/", $file),
                    include_str!(concat!("traps/", $file)),
                );
            }
        )*

        /// Every trap file is parsed by some test above, and every file
        /// parses: a file added without its line here would never run.
        #[test]
        fn every_trap_file_runs() {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/engine/traps");
            let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .filter(|name| name.ends_with(".txt"))
                .collect();
            on_disk.sort();
            let mut listed = vec![$($file.to_string()),*];
            listed.sort();
            assert_eq!(on_disk, listed, "the files of {} and the trap tests", dir.display());
            $( parse_traps($file, include_str!(concat!("traps/", $file))); )*
        }
    };
}

trap_tests! {
    traps_wrongtype: "wrongtype.txt",
    traps_encodings: "encodings.txt",
    traps_geo: "geo.txt",
    traps_empty_aggregates: "empty_aggregates.txt",
    traps_integer_edges: "integer_edges.txt",
    traps_floats: "floats.txt",
    traps_ttl_rules: "ttl_rules.txt",
    traps_transactions: "transactions.txt",
    traps_watch: "watch.txt",
    traps_select: "select.txt",
    traps_scan_and_glob: "scan_and_glob.txt",
    traps_arity: "arity.txt",
    traps_unknown_commands: "unknown_commands.txt",
    traps_sort: "sort.txt",
    traps_command_meta: "command_meta.txt",
    traps_cluster_mode: "cluster_mode.txt",
    traps_cluster_script_flags: "cluster_script_flags.txt",
    traps_scripts: "scripts.txt",
    traps_bitmaps: "bitmaps.txt",
    traps_pubsub: "pubsub.txt",
    traps_pubsub_wire: "pubsub_wire.txt",
    traps_streams: "streams.txt",
    traps_hyperloglog: "hyperloglog.txt",
    traps_blocking: "blocking.txt",
    traps_resp3: "resp3.txt",
    traps_acl: "acl.txt",
    traps_functions: "functions.txt",
    traps_dump: "dump.txt",
    traps_introspection: "introspection.txt",
    traps_tracking: "tracking.txt",
    traps_v74_acl: "v74_acl.txt",
    traps_v74_hash_field_expiry: "v74_hash_field_expiry.txt",
    traps_v74_list_encodings: "v74_list_encodings.txt",
    traps_v74_scripts: "v74_scripts.txt",
}
