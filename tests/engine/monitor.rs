//! MONITOR over RESP, beside a private redis-server: the same clients run
//! the same commands on both (a MULTI/EXEC, a script, a blocked command,
//! secrets, admin commands MONITOR never shows), and the monitor's stream
//! must read the same once each line's time is blanked and each client's
//! address named by its order of appearance. CLIENT LIST's flags for a
//! monitor (`O`) and a no-evict client (`e`) are compared too.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use redmodel_suite::{redis_server_available, RedisServer, ServedEngine};

/// One connection speaking raw RESP.
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn connect(addr: &str) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    fn send(&mut self, args: &[&str]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
        }
        self.stream.write_all(&out).expect("write");
    }

    /// The next reply, as its raw bytes.
    fn read(&mut self) -> String {
        loop {
            if let Some(end) = frame_end(&self.buf, 0) {
                let frame: Vec<u8> = self.buf.drain(..end).collect();
                return String::from_utf8_lossy(&frame).into_owned();
            }
            let mut chunk = [0; 4096];
            let n = self.stream.read(&mut chunk).expect("read a reply in time");
            assert!(n > 0, "connection closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn run(&mut self, args: &[&str]) -> String {
        self.send(args);
        self.read()
    }
}

/// Where the RESP2 frame at `at` ends, if `buf` holds all of it.
fn frame_end(buf: &[u8], at: usize) -> Option<usize> {
    let line_end = at + buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
    let head = std::str::from_utf8(&buf[at + 1..line_end]).ok()?;
    let next = line_end + 2;
    match buf[at] {
        b'$' => {
            let n: i64 = head.parse().ok()?;
            if n < 0 {
                return Some(next);
            }
            let end = next + usize::try_from(n).ok()? + 2;
            (buf.len() >= end).then_some(end)
        }
        b'*' => {
            let n: i64 = head.parse().ok()?;
            (0..n.max(0)).try_fold(next, |at, _| frame_end(buf, at))
        }
        _ => Some(next),
    }
}

/// What a monitor saw of the scenario, and the CLIENT LIST flags of the
/// monitor and of a no-evict client: each MONITOR line with its time
/// blanked and its client named `c1`, `c2`... in order of appearance.
fn scenario(addr: &str) -> Vec<String> {
    let mut monitor = Client::connect(addr);
    let mut c = Client::connect(addr);
    let mut blocked = Client::connect(addr);
    c.run(&["FLUSHALL"]);
    c.run(&["FUNCTION", "FLUSH"]);
    assert_eq!(monitor.run(&["MONITOR"]), "+OK\r\n");
    let lines: &[&[&str]] = &[
        &["SET", "foo", "bar"],
        &["GET", "foo"],
        &["MULTI"],
        &["SET", "a", "1"],
        &["INCR", "a"],
        &["EXEC"],
        &["MULTI"],
        &["NOSUCH"],
        &["EXEC"],
        &["EXEC"],
        &[
            "EVAL",
            "redis.call('set', KEYS[1], ARGV[1]); redis.call('select', 2); \
             return redis.pcall('incr', KEYS[1])",
            "1",
            "foo",
            "bar",
        ],
        &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function('f', function() return redis.call('ping') end)",
        ],
        &["FCALL", "f", "0"],
        &["AUTH", "secret"],
        &["AUTH", "someone", "secret"],
        &["HELLO", "2", "AUTH", "someone", "secret"],
        &["CONFIG", "GET", "maxmemory"],
        &["SLOWLOG", "LEN"],
        &["LATENCY", "LATEST"],
        &["DEBUG", "SLEEP", "0"],
        &["CLIENT", "ID"],
        &["CLIENT", "LIST"],
        &["CLIENT", "NO-EVICT", "on"],
        &["COMMAND", "COUNT"],
        &["SELECT", "3"],
        &["SET", "x", "a\"b\\\n\t\x01\x7f"],
        &["SELECT", "0"],
        &["GET"],
        &["NOSUCH", "x"],
        &["CLIENT", "NOSUCH"],
        &["WATCH", "a"],
        &["UNWATCH"],
        &["PING"],
    ];
    for line in lines {
        c.run(line);
    }
    // A blocked command is shown once, when it blocks.
    blocked.send(&["BLPOP", "bl", "0"]);
    while !c.run(&["CLIENT", "LIST"]).contains("cmd=blpop") {
        std::thread::sleep(Duration::from_millis(10));
    }
    c.run(&["LPUSH", "bl", "x"]);
    blocked.read();
    // MONITOR in a transaction is refused when EXEC runs it.
    c.run(&["MULTI"]);
    c.run(&["MONITOR"]);
    let exec = c.run(&["EXEC"]);
    c.run(&["ECHO", "end"]);
    let mut names: HashMap<String, String> = HashMap::new();
    let mut seen = vec![format!("EXEC of MONITOR: {exec}")];
    let mut read_until = |monitor: &mut Client, seen: &mut Vec<String>, last: &str| loop {
        let line = monitor.read();
        let done = line.contains(last);
        seen.push(normalized(&line, &mut names));
        if done {
            break;
        }
    };
    read_until(&mut monitor, &mut seen, "\"end\"");
    // The monitor's own commands: shown to itself after their replies; the
    // keyspace is not for a monitor; a second MONITOR gets no reply.
    monitor.send(&["PING"]);
    monitor.send(&["GET", "a"]);
    monitor.send(&["MONITOR"]);
    monitor.send(&["CLIENT", "ID"]);
    let flags: Vec<String> = c
        .run(&["CLIENT", "LIST"])
        .lines()
        .filter_map(|l| l.split(' ').find(|w| w.starts_with("flags=")))
        .map(str::to_string)
        .collect();
    seen.push(format!("CLIENT LIST flags: {flags:?}"));
    let mut own = Vec::new();
    read_until(&mut monitor, &mut own, "\"ID\"");
    // The connection's id differs between the servers.
    seen.extend(own.into_iter().filter(|line| !line.starts_with(':')));
    // RESET ends the stream.
    assert_eq!(monitor.run(&["RESET"]), "+RESET\r\n");
    c.run(&["SET", "after", "reset"]);
    seen.push(format!("after RESET: {}", monitor.run(&["PING"])));
    seen
}

/// A MONITOR line without its time, its client named by its order of
/// appearance (`lua` stays).
fn normalized(line: &str, names: &mut HashMap<String, String>) -> String {
    let Some((_, rest)) = line.split_once(' ') else {
        return line.to_string();
    };
    let Some((client, args)) = rest.split_once("] ") else {
        return line.to_string();
    };
    let (db, addr) = client
        .trim_start_matches('[')
        .split_once(' ')
        .unwrap_or(("?", client));
    let count = names.len();
    let name = if addr == "lua" {
        "lua".to_string()
    } else {
        names
            .entry(addr.to_string())
            .or_insert_with(|| format!("c{}", count + 1))
            .clone()
    };
    format!("[{db} {name}] {args}")
}

#[test]
fn monitor_streams_what_redis_streams() {
    if !redis_server_available("monitor_streams_what_redis_streams") {
        return;
    }
    let real = RedisServer::builder()
        .config("enable-debug-command yes")
        .start()
        .expect("start redis-server");
    let served = ServedEngine::start().expect("serve the engine");
    let expected = scenario(&format!("127.0.0.1:{}", real.port()));
    let addr = served.url.trim_start_matches("redis://");
    let got = scenario(addr.split('/').next().unwrap_or(addr));
    // The scenario saw what it is about, on the real server too.
    for wanted in [
        "[0 lua] \"set\" \"foo\" \"bar\"",
        "\"EXEC\"",
        "(redacted)",
        "\"BLPOP\"",
    ] {
        assert!(
            expected.iter().any(|line| line.contains(wanted)),
            "redis-server's MONITOR showed no {wanted}: {expected:?}"
        );
    }
    let differences: Vec<String> = expected
        .iter()
        .zip(&got)
        .filter(|(e, g)| e != g)
        .map(|(e, g)| format!("redis:  {e:?}\nengine: {g:?}"))
        .collect();
    assert!(
        differences.is_empty() && expected.len() == got.len(),
        "MONITOR differs from redis-server's:\n{}\n\nredis-server saw:\n{}\n\nthe engine saw:\n{}",
        differences.join("\n"),
        expected.join(""),
        got.join("")
    );
}
