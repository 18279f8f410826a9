//! `Db::server`: the name and version of the server behind a `Db`, learnt
//! once when it connects.

use redmodel::{Db, ServerInfo, ServerName};
use redmodel_suite::{backend_tests, private_server_or_skip, server_binary};

backend_tests! {
    /// Every backend names its server, for no round trip: the memory
    /// engine the Redis it emulates (7.0.15, or 7.4.1 in 7.4 mode), a server (the engine served over RESP
    /// included) what its own `INFO server` says.
    async fn a_db_knows_its_servers_name_and_version(ctx) -> redmodel::Result<()> {
        let before = ctx.db.round_trips();
        let server = ctx.db.server();
        assert_eq!(ctx.db.round_trips(), before, "Db::server sends nothing");
        let node = ctx
            .url()
            .or_else(|| ctx.cluster_urls().and_then(|urls| urls.first().map(String::as_str)));
        let expected = match (node, ctx.db.engine()) {
            (None, Some(engine)) => format!("redis {}", engine.version()),
            (None, None) => format!("redis {}", redmodel::memory::REDIS_VERSION),
            (Some(url), _) => info_server(url).await,
        };
        assert_eq!(server.to_string(), expected, "on {}", ctx.backend);
        // A clone, and a handle in another key layout, share what was learnt.
        let other = ctx.db.with_key_layout(redmodel::KeyLayout::Cluster);
        assert_eq!(other.server(), server);
        Ok(())
    }
}

/// `NAME VERSION` from the `INFO server` of the node at `url`, read by a
/// client of the test's own: `server_name` (Valkey; absent on Redis) and
/// the version under that name, else `redis_version`.
async fn info_server(url: &str) -> String {
    let client = redis::Client::open(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{url}: INFO server: {e}"));
    let field = |name: &str| {
        info.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k == name).then(|| v.trim().to_string())
        })
    };
    let name = field("server_name").unwrap_or_else(|| "redis".to_string());
    let version = field(&format!("{name}_version"))
        .or_else(|| field("redis_version"))
        .unwrap_or_else(|| panic!("{url}: no version in INFO server:\n{info}"));
    format!("{name} {version}")
}

/// The private server is the binary the suite runs (`redis-server` on the
/// `PATH`, or `REDIS_SERVER_BIN`): its `--version` names the server and
/// version the `Db` learnt, so a run on another version tests that
/// version. A RESP3 connection (HELLO's reply a map) learns the same.
#[tokio::test]
async fn the_private_server_is_the_binary_the_suite_runs() {
    let Some(server) = private_server_or_skip("the_private_server_is_the_binary_the_suite_runs")
    else {
        return;
    };
    let db = Db::connect(&server.url()).await.expect("connect");
    let learnt: ServerInfo = db.server();
    let out = std::process::Command::new(server_binary())
        .arg("--version")
        .output()
        .expect("redis-server --version");
    // "Redis server v=7.0.15 sha=..." or "Valkey server v=8.0.1 sha=...".
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(" v={} ", learnt.version())),
        "the Db learnt {learnt}, the binary says {text}"
    );
    let name = match learnt.name() {
        ServerName::Redis => "Redis server",
        ServerName::Valkey => "Valkey server",
        other => panic!("an unexpected server {other}: {text}"),
    };
    assert!(
        text.starts_with(name),
        "the Db learnt {learnt}, the binary says {text}"
    );

    let resp3 = Db::connect(&format!("{}?protocol=resp3", server.url()))
        .await
        .expect("connect with RESP3");
    assert_eq!(resp3.server(), learnt);
}
