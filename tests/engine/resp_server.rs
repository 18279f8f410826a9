//! The memory engine served over RESP (`redmodel::memory::serve`), driven by
//! redis-rs, by raw bytes and by redis-cli, the way a real server would be.
//!
//! Expected bytes are the ones redis-server 7.0.15 sends for the same input
//! (observed with a private server). Parts that need data written with the
//! string commands run only once the engine has them (they say so when
//! they skip).

use std::process::Stdio;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{ErrorKind, RedisError, Value};
use redmodel::memory::{Engine, ServerHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// Every wait in these tests is bounded by this.
const PATIENCE: Duration = Duration::from_secs(10);

async fn start() -> (Engine, ServerHandle) {
    let engine = Engine::new();
    let server = redmodel_suite::serve_engine(engine.clone())
        .await
        .expect("bind a loopback port");
    assert_ne!(server.local_addr().port(), 0);
    (engine, server)
}

async fn redis_rs(server: &ServerHandle, db: u32) -> MultiplexedConnection {
    let url = format!("redis://{}/{db}", server.local_addr());
    let client = redis::Client::open(url).expect("valid url");
    timeout(PATIENCE, client.get_multiplexed_async_connection())
        .await
        .expect("connect in time")
        .expect("connect")
}

async fn query<T: redis::FromRedisValue>(
    conn: &mut MultiplexedConnection,
    args: &[&str],
) -> Result<T, RedisError> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async(conn).await
}

/// Whether the engine has the string commands yet (written in parallel).
fn has_strings() -> bool {
    let engine = Engine::new();
    let reply = engine.connection().execute(&[b"SET", b"k", b"v"]);
    reply == Value::Okay
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

/// A raw TCP client.
struct Raw {
    stream: TcpStream,
}

impl Raw {
    async fn connect(server: &ServerHandle) -> Raw {
        let stream = TcpStream::connect(server.local_addr())
            .await
            .expect("connect");
        Raw { stream }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("send");
    }

    /// Reads exactly `want.len()` bytes and compares them with `want`.
    async fn expect(&mut self, want: &[u8]) {
        let mut got = vec![0; want.len()];
        timeout(PATIENCE, self.stream.read_exact(&mut got))
            .await
            .expect("reply in time")
            .expect("read reply");
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want));
    }

    /// Sends `bytes` and expects `want` back.
    async fn exchange(&mut self, bytes: &[u8], want: &[u8]) {
        self.send(bytes).await;
        self.expect(want).await;
    }

    /// The server closes the connection without sending anything more.
    async fn expect_closed(&mut self) {
        let mut rest = Vec::new();
        timeout(PATIENCE, self.stream.read_to_end(&mut rest))
            .await
            .expect("close in time")
            .ok();
        assert_eq!(String::from_utf8_lossy(&rest), "", "bytes before close");
    }

    /// The connection is still served.
    async fn expect_open(&mut self) {
        self.exchange(b"*1\r\n$4\r\nPING\r\n", b"+PONG\r\n").await;
    }
}

#[tokio::test]
async fn redis_rs_talks_to_it_like_to_redis() {
    let (_engine, server) = start().await;
    let mut conn = redis_rs(&server, 0).await;

    let pong: String = query(&mut conn, &["PING"]).await.unwrap();
    assert_eq!(pong, "PONG");
    let binary: Vec<u8> = redis::cmd("ECHO")
        .arg(&b"\x00\xff\r\n"[..])
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(binary, b"\x00\xff\r\n");
    assert_eq!(query::<i64>(&mut conn, &["DBSIZE"]).await.unwrap(), 0);
    assert_eq!(
        query::<i64>(&mut conn, &["EXISTS", "a", "b"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        query::<String>(&mut conn, &["TYPE", "a"]).await.unwrap(),
        "none"
    );
    assert_eq!(query::<i64>(&mut conn, &["DEL", "a"]).await.unwrap(), 0);
    assert_eq!(
        query::<i64>(&mut conn, &["EXPIRE", "a", "10"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(query::<i64>(&mut conn, &["TTL", "a"]).await.unwrap(), -2);
    let (cursor, keys): (u64, Vec<String>) = query(&mut conn, &["SCAN", "0"]).await.unwrap();
    assert_eq!((cursor, keys), (0, vec![]));

    // Errors arrive as server errors with Redis's code and text.
    let err = query::<()>(&mut conn, &["GET"]).await.unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::Server(redis::ServerErrorKind::ResponseError)
    );
    let err = query::<()>(&mut conn, &["SELECT", "16"]).await.unwrap_err();
    assert_eq!(err.detail(), Some("DB index is out of range"));
    let err = query::<()>(&mut conn, &["ECHO"]).await.unwrap_err();
    assert_eq!(
        err.detail(),
        Some("wrong number of arguments for 'echo' command")
    );

    // A pipeline of 100 and a transaction.
    let mut pipe = redis::pipe();
    for i in 0..100 {
        pipe.cmd("ECHO").arg(i);
    }
    let echoed: Vec<i64> = pipe.query_async(&mut conn).await.unwrap();
    assert_eq!(echoed, (0..100).collect::<Vec<_>>());
    let (pong, size): (String, i64) = redis::pipe()
        .atomic()
        .cmd("PING")
        .cmd("DBSIZE")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!((pong.as_str(), size), ("PONG", 0));

    // Connection state: the name, the id, HELLO.
    let _: () = query(&mut conn, &["CLIENT", "SETNAME", "tester"])
        .await
        .unwrap();
    let name: Option<String> = query(&mut conn, &["CLIENT", "GETNAME"]).await.unwrap();
    assert_eq!(name.as_deref(), Some("tester"));
    let id: i64 = query(&mut conn, &["CLIENT", "ID"]).await.unwrap();
    let hello: Vec<Value> = query(&mut conn, &["HELLO", "2"]).await.unwrap();
    assert_eq!(hello[6..8], [bulk("id"), Value::Int(id)]);
    let err = query::<()>(&mut conn, &["HELLO", "4"]).await.unwrap_err();
    assert_eq!(err.code(), Some("NOPROTO"));
    // HELLO 3: the connection speaks RESP3 from the reply on.
    let Value::Map(hello) = query(&mut conn, &["HELLO", "3"]).await.unwrap() else {
        panic!("HELLO 3 did not reply with a map");
    };
    assert_eq!(hello[2], (bulk("proto"), Value::Int(3)));
    let info: Value = query(&mut conn, &["CLIENT", "INFO"]).await.unwrap();
    let Value::VerbatimString { text, .. } = info else {
        panic!("CLIENT INFO is not verbatim in RESP3: {info:?}");
    };
    assert!(text.ends_with(" resp=3\n"), "{text}");
    let echoed: Value = query(&mut conn, &["CONFIG", "GET", "maxmemory"])
        .await
        .unwrap();
    assert_eq!(echoed, Value::Map(vec![(bulk("maxmemory"), bulk("0"))]));

    server.shutdown().await;
}

#[tokio::test]
async fn each_connection_has_its_own_session() {
    let (_engine, server) = start().await;
    let mut a = redis_rs(&server, 0).await;
    let mut b = redis_rs(&server, 0).await;
    let _: () = query(&mut a, &["CLIENT", "SETNAME", "a"]).await.unwrap();
    let name: Option<String> = query(&mut b, &["CLIENT", "GETNAME"]).await.unwrap();
    assert_eq!(name, None);
    let id_a: i64 = query(&mut a, &["CLIENT", "ID"]).await.unwrap();
    let id_b: i64 = query(&mut b, &["CLIENT", "ID"]).await.unwrap();
    assert_ne!(id_a, id_b);

    // A MULTI on one connection does not queue the other's commands.
    let mut raw_a = Raw::connect(&server).await;
    raw_a
        .exchange(b"MULTI\r\nPING\r\n", b"+OK\r\n+QUEUED\r\n")
        .await;
    assert_eq!(query::<String>(&mut b, &["PING"]).await.unwrap(), "PONG");
    raw_a.exchange(b"EXEC\r\n", b"*1\r\n+PONG\r\n").await;

    if !has_strings() {
        eprintln!("note: SET is not in the engine yet; skipping the data part of this test");
        return;
    }
    // SELECT is per connection.
    let mut db3 = redis_rs(&server, 3).await;
    let _: () = query(&mut db3, &["SET", "k", "in-3"]).await.unwrap();
    assert_eq!(query::<i64>(&mut a, &["EXISTS", "k"]).await.unwrap(), 0);
    assert_eq!(query::<i64>(&mut db3, &["DBSIZE"]).await.unwrap(), 1);

    // WATCH: a write by another connection aborts EXEC, which replies with
    // the null array, as Redis does.
    let mut watcher = Raw::connect(&server).await;
    watcher
        .exchange(b"SELECT 3\r\nWATCH k\r\n", b"+OK\r\n+OK\r\n")
        .await;
    let _: () = query(&mut db3, &["SET", "k", "changed"]).await.unwrap();
    watcher
        .exchange(b"MULTI\r\nGET k\r\nEXEC\r\n", b"+OK\r\n+QUEUED\r\n*-1\r\n")
        .await;
    // Nils that Redis sends as null arrays, alone and inside EXEC.
    watcher
        .exchange(
            b"LPOP nolist 2\r\nLPOP nolist\r\nMULTI\r\nLPOP nolist 2\r\nLPOP nolist\r\nEXEC\r\n",
            b"*-1\r\n$-1\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n*-1\r\n$-1\r\n",
        )
        .await;
    // Another connection watching the same key and going away does not
    // disturb this one's transaction (that its watch is released is
    // checked by the server's unit test).
    let mut gone = Raw::connect(&server).await;
    gone.exchange(b"SELECT 3\r\nWATCH k\r\n", b"+OK\r\n+OK\r\n")
        .await;
    drop(gone);
    watcher
        .exchange(
            b"WATCH k\r\nMULTI\r\nGET k\r\nEXEC\r\n",
            b"+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n$7\r\nchanged\r\n",
        )
        .await;
    server.shutdown().await;
}

#[tokio::test]
async fn pipelined_and_inline_requests() {
    let (_engine, server) = start().await;
    let mut raw = Raw::connect(&server).await;
    // Many requests in one write, RESP and inline mixed, blank lines and
    // empty arrays skipped; the replies come back in order.
    raw.exchange(
        b"*1\r\n$4\r\nPING\r\nPING\r\n\r\n*0\r\nECHO \"a\\x41 b\" 'c\\'d'\r\nECHO x\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\nDBSIZE\r\n",
        b"+PONG\r\n+PONG\r\n-ERR wrong number of arguments for 'echo' command\r\n$1\r\nx\r\n$0\r\n\r\n:0\r\n",
    )
    .await;
    raw.exchange(b"ECHO \"a\\x41 b\"\r\n", b"$4\r\naA b\r\n")
        .await;

    // 1000 requests in one write.
    let mut many = Vec::new();
    let mut want = Vec::new();
    for i in 0..1000 {
        let arg = i.to_string();
        many.extend_from_slice(
            format!("*2\r\n$4\r\nECHO\r\n${}\r\n{arg}\r\n", arg.len()).as_bytes(),
        );
        want.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
    }
    raw.exchange(&many, &want).await;

    // A request trickling in byte by byte.
    for &b in b"*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n" {
        raw.send(&[b]).await;
    }
    raw.expect(b"$5\r\nhello\r\n").await;

    // A big argument (1 MB) in many writes.
    let big = vec![b'x'; 1 << 20];
    raw.send(format!("*2\r\n$4\r\nECHO\r\n${}\r\n", big.len()).as_bytes())
        .await;
    for chunk in big.chunks(10_000) {
        raw.send(chunk).await;
    }
    raw.send(b"\r\n").await;
    let mut want = format!("${}\r\n", big.len()).into_bytes();
    want.extend_from_slice(&big);
    want.extend_from_slice(b"\r\n");
    raw.expect(&want).await;

    // Wrong arity and unknown commands keep the connection.
    raw.exchange(
        b"PING a b\r\nNOSUCH x\r\n",
        b"-ERR wrong number of arguments for 'ping' command\r\n-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n",
    )
    .await;
    raw.expect_open().await;

    // QUIT: OK, then closed; what follows it is not run.
    raw.exchange(b"QUIT\r\nPING\r\n", b"+OK\r\n").await;
    raw.expect_closed().await;
    server.shutdown().await;
}

/// Malformed requests: Redis's error, the replies of the requests before
/// it, then the connection is closed.
#[tokio::test]
async fn protocol_errors_close_only_the_offending_connection() {
    let (_engine, server) = start().await;
    let cases: &[(&[u8], &[u8])] = &[
        (
            b"*abc\r\n",
            b"-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*2147483648\r\n",
            b"-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*1\r\n$-1\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\n$536870913\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\nx4\r\n",
            b"-ERR Protocol error: expected '$', got 'x'\r\n",
        ),
        (
            b"*1\r\n\r\n",
            b"-ERR Protocol error: expected '$', got ' '\r\n",
        ),
        (
            b"PING \"a\r\n",
            b"-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            b"PING 'a'b\r\n",
            b"-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            b"PING\r\n*1\r\n$4\r\nPING\r\n*x\r\nPING\r\n",
            b"+PONG\r\n+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n",
        ),
        // An HTTP request sent to the port: closed without a word.
        (b"POST / HTTP/1.1\r\nHost: x\r\n\r\n", b""),
    ];
    let mut bystander = redis_rs(&server, 0).await;
    for (input, want) in cases {
        let mut raw = Raw::connect(&server).await;
        raw.exchange(input, want).await;
        raw.expect_closed().await;
        let echoed: String = query(&mut bystander, &["ECHO", "still here"])
            .await
            .unwrap();
        assert_eq!(echoed, "still here");
    }

    // Too long a header or inline request.
    for (prefix, want) in [
        (
            &b"PING "[..],
            &b"-ERR Protocol error: too big inline request\r\n"[..],
        ),
        (
            b"*1",
            b"-ERR Protocol error: too big mbulk count string\r\n",
        ),
        (
            b"*1\r\n$1",
            b"-ERR Protocol error: too big bulk count string\r\n",
        ),
    ] {
        let mut raw = Raw::connect(&server).await;
        let mut input = prefix.to_vec();
        input.resize(70_000, b'1');
        raw.exchange(&input, want).await;
        raw.expect_closed().await;
    }
    server.shutdown().await;
}

/// Headers announcing gigabytes cost nothing, and a client that stops in
/// the middle of a request does not disturb anyone.
#[tokio::test]
async fn hostile_and_truncated_requests_while_another_client_is_served() {
    let (_engine, server) = start().await;
    let mut bystander = redis_rs(&server, 0).await;
    let checker = tokio::spawn(async move {
        let mut served = 0;
        for i in 0..300 {
            let want = format!("value-{i}");
            let got: String = query(&mut bystander, &["ECHO", &want]).await.unwrap();
            assert_eq!(got, want);
            served += 1;
            tokio::task::yield_now().await;
        }
        served
    });

    let mut hostile = Vec::new();
    for header in [
        &b"*2147483647\r\n"[..],
        b"*1\r\n$536870912\r\n",
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\nabc",
        b"*2\r\n$4\r\nECHO\r\n$10\r\nabc",
        b"*2\r\n$4\r\nECHO",
        b"PING \"unterminated",
    ] {
        let mut raw = Raw::connect(&server).await;
        raw.send(header).await;
        hostile.push(raw);
    }
    // A client that goes away in the middle of a request.
    let mut quitter = Raw::connect(&server).await;
    quitter.send(b"*3\r\n$3\r\nDEL\r\n$1\r\na").await;
    drop(quitter);

    assert_eq!(checker.await.unwrap(), 300);
    // The truncated requests are still waiting for their bytes: completing
    // one runs it.
    let mut waiting = hostile.remove(3);
    waiting
        .exchange(b"defghij\r\n", b"$10\r\nabcdefghij\r\n")
        .await;
    drop(hostile);

    let mut after = redis_rs(&server, 0).await;
    assert_eq!(
        query::<String>(&mut after, &["PING"]).await.unwrap(),
        "PONG"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn many_clients_at_once() {
    let (_engine, server) = start().await;
    let mut tasks = Vec::new();
    for c in 0..40 {
        let url = server.url();
        tasks.push(tokio::spawn(async move {
            let client = redis::Client::open(url).unwrap();
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            let mut pipe = redis::pipe();
            for i in 0..50 {
                pipe.cmd("ECHO").arg(format!("{c}:{i}"));
            }
            let got: Vec<String> = pipe.query_async(&mut conn).await.unwrap();
            let want: Vec<String> = (0..50).map(|i| format!("{c}:{i}")).collect();
            assert_eq!(got, want);
        }));
    }
    for t in tasks {
        timeout(PATIENCE, t).await.expect("in time").unwrap();
    }
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_closes_connections_and_the_port() {
    let (_engine, server) = start().await;
    let addr = server.local_addr();
    let mut raw = Raw::connect(&server).await;
    raw.expect_open().await;
    server.shutdown().await;
    raw.expect_closed().await;
    // The port came from the kernel's ephemeral range, where a connect
    // may pick the same port for its own end and reach itself (a TCP
    // self-connection): that is no listener.
    if let Ok(stream) = TcpStream::connect(addr).await {
        let ends = (stream.local_addr().ok(), stream.peer_addr().ok());
        assert_eq!(ends.0, ends.1, "port still open");
    }
}

#[tokio::test]
async fn redis_cli_can_use_it() {
    let Ok(version) = std::process::Command::new("redis-cli").arg("-v").output() else {
        // Under CI a missing binary is a failure, as for redis-server.
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "redis-cli is not installed (CI=true)"
        );
        println!("note: redis-cli is not installed; skipping the redis-cli checks");
        return;
    };
    assert!(version.status.success());
    let (_engine, server) = start().await;
    let port = server.local_addr().port().to_string();
    // Runs redis-cli on the server; returns its standard output and error.
    let cli = |args: &[&str], stdin: &str| {
        let port = port.clone();
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let stdin = stdin.to_string();
        tokio::task::spawn_blocking(move || {
            let mut child = std::process::Command::new("redis-cli")
                .args(["-h", "127.0.0.1", "-p", &port])
                .args(&args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run redis-cli");
            if let Some(mut input) = child.stdin.take() {
                use std::io::Write;
                input.write_all(stdin.as_bytes()).expect("write stdin");
            }
            let out = child.wait_with_output().expect("redis-cli output");
            (
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        })
    };
    let stdout = |args: &'static [&'static str], stdin: &'static str| {
        let run = cli(args, stdin);
        async move { run.await.expect("redis-cli ran").0 }
    };
    assert_eq!(stdout(&["PING"], "").await, "PONG\n");
    assert_eq!(stdout(&["ECHO", "a b"], "").await, "a b\n");
    assert_eq!(stdout(&["DBSIZE"], "").await, "0\n");
    // Outputs below are redis-cli's against redis-server 7.0.15.
    let (out, err) = cli(&["-n", "16", "PING"], "").await.unwrap();
    assert_eq!(out, "PONG\n");
    assert!(
        err.contains("SELECT 16 failed: ERR DB index is out of range"),
        "{err}"
    );
    // Commands read from standard input, one per line, on one connection.
    let out = stdout(
        &[],
        "CLIENT SETNAME cli\nCLIENT GETNAME\nSELECT 2\nEXISTS k\nECHO\n",
    )
    .await;
    assert_eq!(
        out,
        "OK\ncli\nOK\n0\nERR wrong number of arguments for 'echo' command\n\n"
    );
    if has_strings() {
        let out = stdout(&[], "SELECT 2\nSET k \"a b\"\nGET k\nSELECT 0\nGET k\n").await;
        assert_eq!(out, "OK\nOK\na b\nOK\n\n");
    } else {
        println!("note: SET is not in the engine yet; skipping the redis-cli data check");
    }
    server.shutdown().await;
}

/// In cluster mode, served over RESP, the engine is a one-node cluster
/// that cluster clients use as they would Redis Cluster: redis-rs's cluster
/// client, redmodel's cluster backend and `redis-cli -c`.
#[tokio::test]
async fn a_cluster_mode_engine_serves_cluster_clients() -> redmodel::Result<()> {
    let engine = Engine::new().with_cluster_mode();
    let server = redmodel_suite::serve_engine(engine.clone())
        .await
        .expect("bind a loopback port");
    let url = server.url();
    let port = server.local_addr().port();

    // CLUSTER SLOTS names this node at the address it listens on.
    let mut conn = redis_rs(&server, 0).await;
    let slots: Value = query(&mut conn, &["CLUSTER", "SLOTS"]).await?;
    let Value::Array(ranges) = &slots else {
        panic!("CLUSTER SLOTS: {slots:?}");
    };
    let Value::Array(range) = &ranges[0] else {
        panic!("CLUSTER SLOTS: {slots:?}");
    };
    assert_eq!(range[..2], [Value::Int(0), Value::Int(16383)]);
    assert!(
        matches!(&range[2], Value::Array(node) if node[0] == bulk("127.0.0.1") && node[1] == Value::Int(port.into())),
        "{slots:?}"
    );

    // redis-rs's cluster client: keys of many slots, one command each.
    let client = redis::cluster::ClusterClient::new(vec![url.clone()])?;
    let mut cluster = timeout(PATIENCE, client.get_async_connection())
        .await
        .expect("connect in time")?;
    for key in ["a", "b", "c", "{t}a"] {
        redis::cmd("SET")
            .arg(key)
            .arg(key)
            .query_async::<()>(&mut cluster)
            .await?;
    }
    let b: String = redis::cmd("GET").arg("b").query_async(&mut cluster).await?;
    assert_eq!(b, "b");
    let err = redis::cmd("MSET")
        .arg("a")
        .arg(1)
        .arg("b")
        .arg(2)
        .query_async::<()>(&mut redis_rs(&server, 0).await)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("CROSSSLOT"), "{err}");

    // redmodel's cluster backend over it: the cluster key layout, ordered
    // single-slot steps.
    let db = redmodel::Db::connect_cluster(&[url.as_str()]).await?;
    assert_eq!(db.key_layout(), redmodel::KeyLayout::Cluster);
    db.query::<()>(redis::cmd("SET").arg("x").arg(1)).await?;
    let keys = db.scan_keys("*").await?;
    assert!(
        keys.contains(&"x".to_string()) && keys.contains(&"{t}a".to_string()),
        "{keys:?}"
    );

    // redis-cli -c gets its replies (off the runtime that runs the server).
    let cli = tokio::task::spawn_blocking(move || {
        std::process::Command::new("redis-cli")
            .args(["-c", "-h", "127.0.0.1", "-p", &port.to_string(), "GET", "c"])
            .output()
    });
    if let Ok(out) = cli.await.expect("redis-cli task") {
        assert_eq!(String::from_utf8_lossy(&out.stdout), "c\n");
    }
    server.shutdown().await;
    Ok(())
}

/// CLIENT PAUSE WRITE over RESP: a writer's request waits, with the
/// pipelined requests after it, while a reader is served; CLIENT UNPAUSE
/// lets it go (replies as redis-server 7.0.15 sends them).
#[tokio::test]
async fn client_pause_holds_a_writer_while_a_reader_is_served() {
    let (_engine, server) = start().await;
    let mut admin = Raw::connect(&server).await;
    let mut writer = Raw::connect(&server).await;
    let mut reader = Raw::connect(&server).await;
    admin
        .exchange(b"CLIENT PAUSE 100000 WRITE\r\n", b"+OK\r\n")
        .await;
    writer.send(b"SET k 1\r\nGET k\r\n").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    reader.exchange(b"GET k\r\n", b"$-1\r\n").await;
    let mut early = [0u8; 1];
    let read = timeout(Duration::from_millis(100), writer.stream.read(&mut early)).await;
    assert!(read.is_err(), "the writer was answered during the pause");
    admin.exchange(b"CLIENT UNPAUSE\r\n", b"+OK\r\n").await;
    writer.expect(b"+OK\r\n$1\r\n1\r\n").await;
    reader.exchange(b"GET k\r\n", b"$1\r\n1\r\n").await;
}

/// SLOWLOG over RESP: an entry names the connection's address (as CLIENT
/// LIST shows it) and its name, as Redis's do.
#[tokio::test]
async fn slowlog_entries_name_the_connection() {
    let (_engine, server) = start().await;
    let mut conn = redis_rs(&server, 0).await;
    let _: () = query(&mut conn, &["CLIENT", "SETNAME", "worker"])
        .await
        .expect("setname");
    let _: () = query(
        &mut conn,
        &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
    )
    .await
    .expect("config set");
    let _: () = query(&mut conn, &["SET", "k", "v"]).await.expect("set");
    let info: String = query(&mut conn, &["CLIENT", "INFO"])
        .await
        .expect("client info");
    let addr = info
        .split(' ')
        .find_map(|f| f.strip_prefix("addr="))
        .expect("addr field")
        .to_string();
    let entries: Vec<Value> = query(&mut conn, &["SLOWLOG", "GET", "-1"])
        .await
        .expect("slowlog get");
    let set = entries
        .iter()
        .find_map(|e| match e {
            Value::Array(fields)
                if fields.get(3)
                    == Some(&Value::Array(vec![bulk("SET"), bulk("k"), bulk("v")])) =>
            {
                Some(fields.clone())
            }
            _ => None,
        })
        .expect("the SET is logged");
    assert_eq!(set[4], bulk(&addr));
    assert_eq!(set[5], bulk("worker"));
}
