//! INFO as Redis writes it: every section's fields, by name and in
//! order, against a private redis-server's. The values are each side's
//! own (memory, clocks, counters), so only the names are compared; the
//! lines that name instances (a command's stats, an error code's, a
//! database's) are left out, and the engine's own `engine` line, which
//! INFO's readers skip as they skip any line they do not know.

use redmodel::memory::{Engine, RedisVersion};
use redmodel_suite::{private_server_or_skip, RedisServer};

/// Each section's title and its field names, in order.
type Sections = Vec<(String, Vec<String>)>;

/// The sections of an `INFO everything` reply.
fn sections(info: &str) -> Sections {
    let mut sections: Sections = Vec::new();
    for line in info.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(title) = line.strip_prefix("# ") {
            sections.push((title.to_string(), Vec::new()));
            continue;
        }
        let Some((name, _)) = line.split_once(':') else {
            continue;
        };
        let per_instance = ["cmdstat_", "errorstat_", "latency_percentiles_usec_"]
            .iter()
            .any(|p| name.starts_with(p))
            || (name.starts_with("db") && name[2..].parse::<u32>().is_ok());
        if per_instance || name == "engine" {
            continue;
        }
        if let Some((_, fields)) = sections.last_mut() {
            fields.push(name.to_string());
        }
    }
    sections
}

/// The real server's `INFO everything`.
fn real_info(server: &RedisServer) -> String {
    let mut conn = server.client().get_connection().expect("a connection");
    redis::cmd("INFO")
        .arg("everything")
        .query(&mut conn)
        .expect("INFO")
}

/// The engine's `INFO everything`.
fn engine_info(engine: &Engine) -> String {
    match engine.connection().execute(&[&b"INFO"[..], b"everything"]) {
        redis::Value::BulkString(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        redis::Value::VerbatimString { text, .. } => text,
        other => panic!("INFO replied {other:?}"),
    }
}

/// Panics with every section whose fields differ between `real` and
/// `engine`, and how.
fn assert_same_fields(real: &str, engine: &str) {
    let (real, engine) = (sections(real), sections(engine));
    let titles = |s: &Sections| s.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>();
    assert_eq!(titles(&engine), titles(&real), "the sections");
    let mut differ = Vec::new();
    for ((title, want), (_, got)) in real.iter().zip(&engine) {
        if want != got {
            let missing: Vec<&String> = want.iter().filter(|f| !got.contains(f)).collect();
            let extra: Vec<&String> = got.iter().filter(|f| !want.contains(f)).collect();
            differ.push(format!(
                "{title}: missing {missing:?}, not Redis's {extra:?}, order {}",
                if missing.is_empty() && extra.is_empty() {
                    "differs"
                } else {
                    "unchecked"
                }
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "INFO's fields differ:\n{}",
        differ.join("\n")
    );
}

/// The real server's `redis_version`, as (major, minor).
fn version(info: &str) -> (u32, u32) {
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or_default()
        .trim();
    let mut parts = version.split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Compares the engine's INFO fields with a private server's, if that
/// server is Redis `version` (else says the test is skipped).
fn compare_with_server(test: &str, version_wanted: (u32, u32), engine: Engine) {
    let Some(server) = private_server_or_skip(test) else {
        return;
    };
    let real = real_info(&server);
    if version(&real) != version_wanted {
        eprintln!("{test}: skipped, the redis-server found is not {version_wanted:?}");
        return;
    }
    assert_same_fields(&real, &engine_info(&engine));
}

#[test]
fn info_lists_the_fields_of_redis_70_in_its_order() {
    compare_with_server(
        "info_lists_the_fields_of_redis_70_in_its_order",
        (7, 0),
        Engine::new(),
    );
}

#[test]
fn info_v74_lists_the_fields_of_redis_74_in_its_order() {
    compare_with_server(
        "info_v74_lists_the_fields_of_redis_74_in_its_order",
        (7, 4),
        Engine::new().with_version(RedisVersion::V7_4),
    );
}
