//! What the engine's data costs in memory, per object and per collection,
//! against redis-server 7.0.15 holding the same data.
//!
//! ```text
//! cargo run --release -p redmodel-memory --example memory_use [-- REDIS_PORT]
//! ```
//!
//! Each workload fills a fresh engine and reports the heap growth per
//! unit (a key, a collection), measured by a counting global allocator:
//! every live block is counted at its usable size (`malloc_usable_size`),
//! which is what the block really takes, as redis-server's `used_memory`
//! counts jemalloc's usable sizes. The same commands then go to a private
//! redis-server it starts on REDIS_PORT (6431 unless given; `--save ''
//! --appendonly no`), whose `used_memory` growth is the reference. Without
//! redis-server on the PATH, only the engine's figures are printed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicIsize, Ordering};

use redmodel_memory::{Engine, ManualClock};

extern "C" {
    /// glibc: the usable size of a block `malloc` returned.
    fn malloc_usable_size(ptr: *mut u8) -> usize;
}

/// The system allocator, counting the usable bytes of the live blocks.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

fn usable(ptr: *mut u8) -> isize {
    // SAFETY: `ptr` is a live block from the system allocator (malloc or
    // posix_memalign, both readable by malloc_usable_size), or null.
    if ptr.is_null() {
        0
    } else {
        unsafe { malloc_usable_size(ptr) as isize }
    }
}

// SAFETY: every call is forwarded to `System`; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        LIVE.fetch_add(usable(ptr), Ordering::Relaxed);
        ptr
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc_zeroed(layout) };
        LIVE.fetch_add(usable(ptr), Ordering::Relaxed);
        ptr
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(usable(ptr), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = usable(ptr);
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_add(usable(new) - old, Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A command as its words.
type Cmd = Vec<Vec<u8>>;

fn cmd(words: &[&str]) -> Cmd {
    words.iter().map(|w| w.as_bytes().to_vec()).collect()
}

/// One workload: a name, the number of units it creates, the unit's name,
/// and its commands.
struct Workload {
    name: &'static str,
    units: usize,
    unit: &'static str,
    commands: Vec<Cmd>,
}

fn workloads() -> Vec<Workload> {
    let mut all = Vec::new();
    let n = 100_000;
    all.push(Workload {
        name: "string key (SET key:i i)",
        units: n,
        unit: "key",
        commands: (0..n)
            .map(|i| cmd(&["SET", &format!("key:{i}"), &i.to_string()]))
            .collect(),
    });
    all.push(Workload {
        name: "Student hash (4 fields + _count)",
        units: n,
        unit: "object",
        commands: (0..n)
            .map(|i| {
                let mark = |salt: usize| ((i * salt) % 41 + 60).to_string();
                cmd(&[
                    "HSET",
                    &format!("student:s{i}"),
                    "class",
                    &format!("class:{}", i % 10),
                    "chinese",
                    &mark(7),
                    "english",
                    &mark(13),
                    "math",
                    &mark(31),
                    "_count",
                    "1",
                ])
            })
            .collect(),
    });
    // Big collections: `k` keys of 1,000 members each, per collection.
    let k = 100;
    let big = |name, make: &dyn Fn(usize, usize) -> Cmd| Workload {
        name,
        units: k,
        unit: "collection",
        commands: (0..k)
            .flat_map(|c| (0..1000).map(move |i| (c, i)))
            .map(|(c, i)| make(c, i))
            .collect(),
    };
    all.push(big("set, 1,000 strings (member:i)", &|c, i| {
        cmd(&["SADD", &format!("set:{c}"), &format!("member:{i}")])
    }));
    all.push(big("set, 1,000 integers", &|c, i| {
        cmd(&["SADD", &format!("iset:{c}"), &(i * 7).to_string()])
    }));
    all.push(big("list, 1,000 strings (element:i)", &|c, i| {
        cmd(&["RPUSH", &format!("list:{c}"), &format!("element:{i}")])
    }));
    all.push(big("zset, 1,000 members (member:i, score i)", &|c, i| {
        cmd(&[
            "ZADD",
            &format!("zset:{c}"),
            &i.to_string(),
            &format!("member:{i}"),
        ])
    }));
    // Small collections: 10,000 keys of 10 members each.
    let k = 10_000;
    let small = |name, make: &dyn Fn(usize, usize) -> Cmd| Workload {
        name,
        units: k,
        unit: "collection",
        commands: (0..k)
            .flat_map(|c| (0..10).map(move |i| (c, i)))
            .map(|(c, i)| make(c, i))
            .collect(),
    };
    all.push(small("set, 10 integers", &|c, i| {
        cmd(&["SADD", &format!("s:{c}"), &(i * 1000).to_string()])
    }));
    all.push(small("set, 10 strings (member:i)", &|c, i| {
        cmd(&["SADD", &format!("s:{c}"), &format!("member:{i}")])
    }));
    all.push(small("list, 10 strings (element:i)", &|c, i| {
        cmd(&["RPUSH", &format!("l:{c}"), &format!("element:{i}")])
    }));
    all.push(small("zset, 10 members (member:i, score i)", &|c, i| {
        cmd(&[
            "ZADD",
            &format!("z:{c}"),
            &i.to_string(),
            &format!("member:{i}"),
        ])
    }));
    all
}

/// Heap bytes the engine keeps after running `w`, per unit.
fn engine_bytes(w: &Workload) -> f64 {
    let engine = Engine::with_clock(ManualClock::new(1_700_000_000_000));
    let mut conn = engine.connection();
    let before = LIVE.load(Ordering::Relaxed);
    for c in &w.commands {
        let args: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
        conn.execute(&args);
    }
    let after = LIVE.load(Ordering::Relaxed);
    drop(conn);
    drop(engine);
    (after - before) as f64 / w.units as f64
}

/// A private redis-server, shut down on drop.
struct Redis {
    conn: BufReader<TcpStream>,
}

impl Redis {
    fn start(port: u16) -> Option<Redis> {
        let status = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--daemonize", "yes"])
            .stdout(Stdio::null())
            .status()
            .ok()?;
        if !status.success() {
            return None;
        }
        for _ in 0..50 {
            if let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) {
                return Some(Redis {
                    conn: BufReader::new(stream),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        None
    }

    /// Sends `cmds` pipelined and reads (and discards) their replies,
    /// except the last one's, returned as text.
    fn run(&mut self, cmds: &[Cmd]) -> std::io::Result<String> {
        for batch in cmds.chunks(1000) {
            let mut out = Vec::new();
            for c in batch {
                out.extend(format!("*{}\r\n", c.len()).as_bytes());
                for w in c {
                    out.extend(format!("${}\r\n", w.len()).as_bytes());
                    out.extend(w);
                    out.extend(b"\r\n");
                }
            }
            self.conn.get_mut().write_all(&out)?;
            let mut last = String::new();
            for _ in batch {
                last = self.reply()?;
            }
            if batch.len() < 1000 {
                return Ok(last);
            }
        }
        Ok(String::new())
    }

    /// One reply: a status, integer or bulk string as text (enough here).
    fn reply(&mut self) -> std::io::Result<String> {
        let mut line = String::new();
        self.conn.read_line(&mut line)?;
        let line = line.trim_end().to_string();
        if line.is_empty() {
            return Ok(line); // the connection closed (SHUTDOWN)
        }
        match line.split_at(1) {
            ("$", len) => {
                let len: i64 = len.parse().unwrap_or(-1);
                if len < 0 {
                    return Ok(String::new());
                }
                let mut buf = vec![0; len as usize + 2];
                std::io::Read::read_exact(&mut self.conn, &mut buf)?;
                buf.truncate(len as usize);
                Ok(String::from_utf8_lossy(&buf).into_owned())
            }
            _ => Ok(line),
        }
    }

    fn used_memory(&mut self) -> std::io::Result<i64> {
        let info = self.run(&[cmd(&["INFO", "memory"])])?;
        Ok(info
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0))
    }

    /// `used_memory` growth per unit after running `w`; empties the server.
    fn bytes(&mut self, w: &Workload) -> std::io::Result<f64> {
        let before = self.used_memory()?;
        self.run(&w.commands)?;
        let after = self.used_memory()?;
        self.run(&[cmd(&["FLUSHALL"])])?;
        Ok((after - before) as f64 / w.units as f64)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.run(&[cmd(&["SHUTDOWN", "NOSAVE"])]);
    }
}

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(6431);
    let mut redis = Redis::start(port);
    if redis.is_none() {
        eprintln!("no redis-server on port {port}: engine figures only");
    }
    println!(
        "{:<42} {:>11} {:>10} {:>10} {:>7}",
        "workload", "unit", "engine B", "redis B", "ratio"
    );
    for w in workloads() {
        let engine = engine_bytes(&w);
        let redis = redis.as_mut().and_then(|r| r.bytes(&w).ok());
        let (redis_text, ratio) = match redis {
            Some(r) => (format!("{r:.0}"), format!("{:.2}x", engine / r)),
            None => ("n/a".into(), "".into()),
        };
        println!(
            "{:<42} {:>11} {:>10.0} {:>10} {:>7}",
            w.name, w.unit, engine, redis_text, ratio
        );
    }
}
