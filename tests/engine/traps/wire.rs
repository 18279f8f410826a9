//! Trap files marked `# mode: wire`: scripts whose replies include what a
//! server pushes unasked (client-side caching's invalidations, Pub/Sub
//! messages), which in-process connections cannot receive. Both sides are
//! then RESP connections: the engine served over TCP (`memory::serve`)
//! and the private redis-server.
//!
//! After each line, every connection of the script reads what arrives
//! until the wire stays quiet for a moment, and the frames each connection
//! received (replies and pushes, in order) are compared. `$idN` in a line
//! is connection N's CLIENT ID on each side, and a reply's integer that is
//! such an id reads `$idN`, so that REDIRECT and what reports it compare.
//! `!sleep MS` waits (the active expiry cycle, for instance). Every script
//! starts on fresh connections, after FLUSHALL.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use redis::Value;
use redmodel_suite::diff::{parse_line, show};
use redmodel_suite::ServedEngine;
use redmodel_suite::{redis_server_available, RedisServer};

use super::Trap;

/// How long the wire must stay quiet before a connection has read all.
const QUIET: Duration = Duration::from_millis(40);
/// How long the commanded connection waits for the first byte of its reply.
const FIRST_BYTE: Duration = Duration::from_millis(1000);

/// The marker line of a wire trap file.
pub(super) const MARKER: &str = "# mode: wire";

/// One connection to one side.
struct Conn {
    stream: TcpStream,
    id: i64,
    /// Bytes read and not parsed yet (a frame cut by the quiet window).
    pending: Vec<u8>,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        let _ = stream.set_nodelay(true);
        let mut conn = Conn {
            stream,
            id: 0,
            pending: Vec::new(),
        };
        conn.send(&[b"CLIENT".to_vec(), b"ID".to_vec()]);
        conn.id = match conn.collect(FIRST_BYTE).first() {
            Some(Value::Int(id)) => *id,
            other => panic!("CLIENT ID on {addr}: {other:?}"),
        };
        conn
    }

    fn send(&mut self, args: &[Vec<u8>]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&out).expect("send");
    }

    /// Reads until the wire is quiet (waiting up to `first` for a first
    /// byte), and returns the complete frames received.
    fn collect(&mut self, first: Duration) -> Vec<Value> {
        let started = Instant::now();
        let mut buf = [0u8; 16 * 1024];
        loop {
            let waited = started.elapsed();
            let patience = if self.pending.is_empty() && waited < first {
                first - waited
            } else {
                QUIET
            };
            let _ = self
                .stream
                .set_read_timeout(Some(patience.max(Duration::from_millis(1))));
            match self.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(_) => break,
            }
        }
        // redis-rs's parser reads ahead: each frame is cut out first.
        let mut frames = Vec::new();
        let mut used = 0;
        while let Some(len) = frame_len(&self.pending[used..]) {
            let frame = &self.pending[used..used + len];
            frames.push(
                redis::parse_redis_value(frame)
                    .unwrap_or_else(|e| panic!("bad frame {frame:?}: {e}")),
            );
            used += len;
        }
        self.pending.drain(..used);
        frames
    }
}

/// The length of the complete RESP2/RESP3 frame at the start of `buf`,
/// `None` if it is not all there.
fn frame_len(buf: &[u8]) -> Option<usize> {
    let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
    let head = buf.first()?;
    let after = line_end + 2;
    let number = || -> Option<i64> { std::str::from_utf8(&buf[1..line_end]).ok()?.parse().ok() };
    let elements = |count: i64| -> Option<usize> {
        let mut at = after;
        for _ in 0..count.max(0) {
            at += frame_len(&buf[at..])?;
        }
        Some(at)
    };
    match head {
        b'$' | b'=' | b'!' => {
            let n = number()?;
            if n < 0 {
                return Some(after);
            }
            let end = after + n as usize + 2;
            (buf.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'>' => elements(number()?),
        b'%' => elements(2 * number()?),
        _ => Some(after),
    }
}

/// One side's connections.
struct Side {
    addr: SocketAddr,
    conns: Vec<Conn>,
}

impl Side {
    fn conn(&mut self, n: usize) -> &mut Conn {
        while self.conns.len() <= n {
            self.conns.push(Conn::open(self.addr));
        }
        &mut self.conns[n]
    }

    /// `$idN` replaced by connection N's id.
    fn substitute(&mut self, args: &[Vec<u8>]) -> Vec<Vec<u8>> {
        args.iter()
            .map(|arg| match arg.strip_prefix(b"$id") {
                Some(n) => match std::str::from_utf8(n).ok().and_then(|n| n.parse().ok()) {
                    Some(n) => self.conn(n).id.to_string().into_bytes(),
                    None => arg.clone(),
                },
                None => arg.clone(),
            })
            .collect()
    }

    /// The ids of the connections, in the reply's own words: `$idN`.
    fn normalize(&self, v: &Value) -> Value {
        let ids: Vec<i64> = self.conns.iter().map(|c| c.id).collect();
        normalize(v, &ids)
    }

    /// Runs `args` on connection `n` and returns what every connection
    /// received. Ids are read back as `$idN` in pushes and in CLIENT's
    /// replies only: elsewhere a small integer is just a number.
    fn run(&mut self, n: usize, args: &[Vec<u8>]) -> Vec<Vec<Value>> {
        let args = self.substitute(args);
        let name = args.first().cloned().unwrap_or_default();
        let (client, hello) = (
            name.eq_ignore_ascii_case(b"client"),
            name.eq_ignore_ascii_case(b"hello"),
        );
        self.conn(n).send(&args);
        let mut received: Vec<Vec<Value>> = Vec::new();
        for i in 0..self.conns.len() {
            let first = if i == n { FIRST_BYTE } else { Duration::ZERO };
            let frames = self.conns[i].collect(first);
            let shown = frames
                .iter()
                .map(|f| match f {
                    Value::Push { .. } => self.normalize(f),
                    _ if i == n && client => self.normalize(f),
                    // HELLO's map: its `id` only (`proto` is a small number).
                    Value::Map(pairs) if i == n && hello => Value::Map(
                        pairs
                            .iter()
                            .map(|(k, v)| match k {
                                Value::BulkString(b) if b == b"id" => {
                                    (k.clone(), self.normalize(v))
                                }
                                _ => (k.clone(), v.clone()),
                            })
                            .collect(),
                    ),
                    _ => f.clone(),
                })
                .collect();
            received.push(shown);
        }
        received
    }
}

fn normalize(v: &Value, ids: &[i64]) -> Value {
    match v {
        Value::Int(n) => match ids.iter().position(|id| id == n) {
            Some(i) => Value::SimpleString(format!("$id{i}")),
            None => v.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|i| normalize(i, ids)).collect()),
        Value::Set(items) => Value::Set(items.iter().map(|i| normalize(i, ids)).collect()),
        Value::Map(pairs) => Value::Map(
            pairs
                .iter()
                .map(|(k, v)| (normalize(k, ids), normalize(v, ids)))
                .collect(),
        ),
        Value::Push { kind, data } => Value::Push {
            kind: kind.clone(),
            data: data.iter().map(|i| normalize(i, ids)).collect(),
        },
        other => other.clone(),
    }
}

fn addr_of(url: &str) -> SocketAddr {
    let host = url
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_string();
    host.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| panic!("bad url {url}"))
}

fn shown(frames: &[Value]) -> String {
    if frames.is_empty() {
        return "(nothing)".into();
    }
    frames
        .iter()
        .map(show_frame)
        .collect::<Vec<_>>()
        .join(" ; ")
}

fn show_frame(v: &Value) -> String {
    match v {
        Value::Push { kind, data } => format!(
            ">{kind:?} [{}]",
            data.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        other => show(other),
    }
}

/// Runs the scripts of a wire trap file; fails listing every script where
/// the engine and Redis differ.
pub(super) fn run_wire_traps(test: &str, traps: &[Trap]) {
    if !redis_server_available(test) {
        return;
    }
    let server = RedisServer::start().unwrap_or_else(|e| panic!("{test}: {e}"));
    let engine = ServedEngine::start().unwrap_or_else(|e| panic!("{test}: {e}"));
    let mut failures = Vec::new();
    for (name, script) in traps {
        let mut real = Side {
            addr: server.addr(),
            conns: Vec::new(),
        };
        let mut mem = Side {
            addr: addr_of(&engine.url),
            conns: Vec::new(),
        };
        for side in [&mut real, &mut mem] {
            side.run(0, &[b"FLUSHALL".to_vec()]);
            side.run(
                0,
                &[
                    b"CONFIG".to_vec(),
                    b"SET".to_vec(),
                    b"tracking-table-max-keys".to_vec(),
                    b"1000000".to_vec(),
                ],
            );
        }
        let mut transcript = String::new();
        let mut mismatches = 0;
        for &text in script {
            if let Some(ms) = text.strip_prefix("!sleep ") {
                let ms: u64 = ms.trim().parse().expect("!sleep MS");
                std::thread::sleep(Duration::from_millis(ms));
                transcript.push_str(&format!("     {text}\n"));
                continue;
            }
            let (n, rest) = match text.strip_prefix('@') {
                Some(after) => {
                    let (n, tail) = after.split_once(' ').unwrap_or((after, ""));
                    (n.parse().expect("bad connection"), tail.trim_start())
                }
                None => (0usize, text),
            };
            let args = parse_line(rest).unwrap_or_else(|e| panic!("bad trap line: {e}"));
            let want = real.run(n, &args);
            let got = mem.run(n, &args);
            let conns = want.len().max(got.len());
            for i in 0..conns {
                let (w, g) = (
                    want.get(i).cloned().unwrap_or_default(),
                    got.get(i).cloned().unwrap_or_default(),
                );
                let who = if i == n {
                    text.to_string()
                } else {
                    format!("  (then on @{i})")
                };
                if w == g {
                    if i == n || !w.is_empty() {
                        transcript.push_str(&format!("     {who}  ->  {}\n", shown(&w)));
                    }
                } else {
                    mismatches += 1;
                    transcript.push_str(&format!(
                        "  !! {who}\n       redis:  {}\n       engine: {}\n",
                        shown(&w),
                        shown(&g)
                    ));
                }
            }
        }
        if mismatches > 0 {
            failures.push(format!(
                "trap `{name}`: {mismatches} difference(s)\n{transcript}"
            ));
        }
    }
    eprintln!("{test}: ran {} traps over the wire", traps.len());
    if !failures.is_empty() {
        panic!(
            "{test}: the engine differs from redis-server in {} trap(s):\n\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}
