//! A whole RDB file, as Redis 7.0.15 writes it (`rdbSaveRio`) and reads it
//! (`rdbLoadRioWithLoadingCtx`): the `REDIS0010` signature, the aux fields,
//! the function libraries, each database's keys after `SELECTDB` and
//! `RESIZEDB`, each key's expiry time (and idle time or LFU counter under
//! an eviction policy that keeps them) before its type, name and object,
//! then `EOF` and the CRC64 of everything before it.
//!
//! The objects are the ones DUMP and RESTORE exchange: [`super::value`]
//! encodes and decodes them, here as there.
//!
//! A file is read whole into fresh keyspaces before anything of the
//! engine changes, so a corrupt or truncated file is an [`RdbError`] and
//! never a partial load.

use std::fmt;
use std::io::{self, Write};

use super::{value, Reader, Writer};
use crate::config::Limits;
use crate::keyspace::{seconds, Keyspace};
use crate::value::encoding::History;
use crate::value::Value;

/// The opcodes between keys (`RDB_OPCODE_*` in `rdb.h`).
mod opcode {
    pub(super) const FUNCTION2: u8 = super::super::OPCODE_FUNCTION2;
    /// Functions as 7.0's release candidates saved them: refused by 7.0.
    pub(super) const FUNCTION_PRE_GA: u8 = 246;
    pub(super) const MODULE_AUX: u8 = 247;
    pub(super) const IDLE: u8 = 248;
    pub(super) const FREQ: u8 = 249;
    pub(super) const AUX: u8 = 250;
    pub(super) const RESIZEDB: u8 = 251;
    pub(super) const EXPIRETIME_MS: u8 = 252;
    pub(super) const EXPIRETIME: u8 = 253;
    pub(super) const SELECTDB: u8 = 254;
    pub(super) const EOF: u8 = 255;
}

/// Why an RDB file could not be loaded (or written). Nothing of the
/// engine changes when loading fails.
#[derive(Debug)]
#[non_exhaustive]
pub enum RdbError {
    /// The file could not be read or written.
    Io(io::Error),
    /// The file does not start with `REDIS` and a version: not an RDB file.
    Signature,
    /// An RDB version Redis 7.0.15 does not read (it reads 1 to 10).
    Version(u32),
    /// The file ends before its `EOF` opcode and checksum, at this byte.
    Truncated {
        /// Where the data stops.
        offset: usize,
    },
    /// The data is not what Redis writes, from this byte on.
    Corrupt {
        /// Where the item that fails to read starts.
        offset: usize,
        /// What was being read there.
        what: &'static str,
    },
    /// The CRC64 at the end is not the checksum of the file.
    Checksum {
        /// The checksum the file's bytes have.
        computed: u64,
        /// The checksum the file ends with.
        stored: u64,
    },
    /// A database number past the engine's 16 databases.
    Database(u64),
    /// A key appears twice in one database (Redis stops on it too).
    DuplicateKey {
        /// The database.
        db: usize,
        /// The key's bytes.
        key: Vec<u8>,
    },
    /// A function library of the file does not load.
    Function(String),
}

impl fmt::Display for RdbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RdbError::Io(e) => write!(f, "RDB file: {e}"),
            RdbError::Signature => write!(f, "wrong signature: not an RDB file"),
            RdbError::Version(v) => write!(f, "can't handle RDB format version {v}"),
            RdbError::Truncated { offset } => {
                write!(
                    f,
                    "short read: the RDB file ends at byte {offset}, before its EOF"
                )
            }
            RdbError::Corrupt { offset, what } => {
                write!(f, "corrupt RDB file: bad {what} at byte {offset}")
            }
            RdbError::Checksum { computed, stored } => write!(
                f,
                "wrong RDB checksum: expected {stored:#018x}, got {computed:#018x}"
            ),
            RdbError::Database(db) => {
                write!(f, "the RDB file has database {db}, past the engine's last")
            }
            RdbError::DuplicateKey { db, key } => write!(
                f,
                "duplicated key '{}' in database {db} of the RDB file",
                String::from_utf8_lossy(key)
            ),
            RdbError::Function(e) => write!(f, "RDB file's functions: {e}"),
        }
    }
}

impl std::error::Error for RdbError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RdbError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for RdbError {
    fn from(e: io::Error) -> Self {
        RdbError::Io(e)
    }
}

/// A key as the file keeps it.
pub(crate) struct Item {
    pub(crate) key: Vec<u8>,
    pub(crate) value: Value,
    pub(crate) history: History,
    /// Unix ms after which the key is gone.
    pub(crate) expire_at: Option<i64>,
    /// The key's idle time in seconds, saved under an LRU policy.
    pub(crate) idle: Option<u64>,
    /// The key's LFU counter, saved under an LFU policy.
    pub(crate) freq: Option<u8>,
}

/// What a file is written from: the databases' keys (empty databases are
/// left out, as Redis leaves them), the function libraries' code, and the
/// settings that shape the bytes.
pub(crate) struct Snapshot {
    pub(crate) dbs: Vec<Vec<Item>>,
    pub(crate) functions: Vec<Vec<u8>>,
    /// `rdbcompression`: strings over 20 bytes LZF-compressed.
    pub(crate) compress: bool,
    /// `rdbchecksum`: off, the file ends with a zero checksum.
    pub(crate) checksum: bool,
    /// The `ctime` aux field, Unix seconds.
    pub(crate) ctime: i64,
    /// The `used-mem` aux field.
    pub(crate) used_mem: u64,
    /// `rdb-key-save-delay`: microseconds to wait after each key, which
    /// Redis's tests set to keep a BGSAVE running.
    pub(crate) key_delay_us: u64,
    /// The Redis version whose RDB version the file has (`REDIS0012` for
    /// 7.4) and whose `redis-ver` it names.
    pub(crate) version: crate::RedisVersion,
    /// The file is an AOF's base (the `aof-base` aux field is 1).
    pub(crate) aof_base: bool,
}

/// Writes a byte stream and the CRC64 of what went through it.
struct Sink<W> {
    out: W,
    crc: crc::Digest<'static, u64>,
}

static CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);

impl<W: Write> Sink<W> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.crc.update(bytes);
        self.out.write_all(bytes)
    }
}

/// Writes `snapshot` as Redis 7.0.15 writes an RDB file. `stop` is asked
/// between keys whether to give up (a BGSAVE that FLUSHALL cancels): it
/// then fails with [`io::ErrorKind::Interrupted`].
pub(crate) fn write(
    snapshot: &Snapshot,
    out: impl Write,
    stop: &dyn Fn() -> bool,
) -> io::Result<()> {
    let mut sink = Sink {
        out,
        crc: CRC64.digest(),
    };
    let mut w = Writer::new(snapshot.compress);
    w.raw(format!("REDIS{:04}", super::rdb_version(snapshot.version)).as_bytes());
    let ctime = snapshot.ctime.to_string();
    let used_mem = snapshot.used_mem.to_string();
    let aux = [
        ("redis-ver", snapshot.version.as_str()),
        ("redis-bits", "64"),
        ("ctime", ctime.as_str()),
        ("used-mem", used_mem.as_str()),
        ("aof-base", if snapshot.aof_base { "1" } else { "0" }),
    ];
    for (name, value) in aux {
        w.byte(opcode::AUX);
        w.string(name.as_bytes());
        w.string(value.as_bytes());
    }
    for code in &snapshot.functions {
        w.byte(opcode::FUNCTION2);
        w.string(code);
    }
    sink.put(&w.finish())?;
    for (db, items) in snapshot.dbs.iter().enumerate() {
        if items.is_empty() {
            continue;
        }
        let mut w = Writer::new(snapshot.compress);
        w.byte(opcode::SELECTDB);
        w.length(db as u64);
        w.byte(opcode::RESIZEDB);
        w.length(items.len() as u64);
        w.length(items.iter().filter(|i| i.expire_at.is_some()).count() as u64);
        sink.put(&w.finish())?;
        for item in items {
            if stop() {
                return Err(io::ErrorKind::Interrupted.into());
            }
            sink.put(&encode_item(item, snapshot.compress, snapshot.version))?;
            if snapshot.key_delay_us > 0 {
                std::thread::sleep(std::time::Duration::from_micros(snapshot.key_delay_us));
            }
        }
    }
    sink.put(&[opcode::EOF])?;
    let crc = if snapshot.checksum {
        sink.crc.clone().finalize()
    } else {
        0
    };
    sink.out.write_all(&crc.to_le_bytes())?;
    sink.out.flush()
}

/// One key's bytes (`rdbSaveKeyValuePair`): its expiry time, idle time or
/// LFU counter, then its type, name and object.
fn encode_item(item: &Item, compress: bool, version: crate::RedisVersion) -> Vec<u8> {
    let mut w = Writer::new(compress);
    if let Some(at) = item.expire_at {
        w.byte(opcode::EXPIRETIME_MS);
        w.ms_time(at);
    }
    if let Some(idle) = item.idle {
        w.byte(opcode::IDLE);
        w.length(idle);
    }
    if let Some(freq) = item.freq {
        w.byte(opcode::FREQ);
        w.byte(freq);
    }
    let object = value::encode(&item.value, item.history, compress, version);
    if let Some((&kind, body)) = object.split_first() {
        w.byte(kind);
        w.string(&item.key);
        w.raw(body);
    }
    w.finish()
}

/// What a file holds, read whole: one keyspace per database, and the code
/// of each function library.
pub(crate) struct Loaded {
    pub(crate) dbs: Vec<Keyspace>,
    pub(crate) functions: Vec<Vec<u8>>,
    /// The keys read into `dbs`, and those dropped because their time had
    /// passed (INFO's `rdb_last_load_keys_loaded` and `_expired`).
    pub(crate) keys: LoadedKeys,
    /// The byte after the file's checksum: an AOF's commands may follow.
    pub(crate) end: usize,
}

/// Reads an RDB file of any version Redis 7.0.15 reads, into
/// `databases` keyspaces that have `limits`. Keys whose time passed
/// before `now` are dropped, as a master drops them. The CRC64 is checked
/// when `verify` (`rdbchecksum yes`) and the file has one.
pub(crate) fn read(
    bytes: &[u8],
    databases: usize,
    limits: &Limits,
    now: i64,
    verify: bool,
    redis: crate::RedisVersion,
) -> Result<Loaded, RdbError> {
    let version = signature(bytes, redis)?;
    let mut r = Reader::new(&bytes[9..]);
    let at = |r: &Reader<'_>| bytes.len() - r.remaining();
    let mut dbs: Vec<Keyspace> = (0..databases)
        .map(|_| {
            let mut ks = Keyspace::default();
            ks.set_limits(*limits);
            ks
        })
        .collect();
    let mut functions = Vec::new();
    let mut keys = LoadedKeys::default();
    let mut db = 0usize;
    let mut expire_at: Option<i64> = None;
    let mut idle: Option<u64> = None;
    let mut freq: Option<u8> = None;
    loop {
        let start = at(&r);
        let Some(op) = r.byte() else {
            return Err(RdbError::Truncated { offset: start });
        };
        let bad = |what| RdbError::Corrupt {
            offset: start,
            what,
        };
        match op {
            opcode::EOF => break,
            opcode::SELECTDB => {
                let n = r.length().ok_or_else(|| bad("SELECTDB"))?;
                db = usize::try_from(n)
                    .ok()
                    .filter(|&n| n < databases)
                    .ok_or(RdbError::Database(n))?;
            }
            opcode::RESIZEDB => {
                r.length().ok_or_else(|| bad("RESIZEDB"))?;
                r.length().ok_or_else(|| bad("RESIZEDB"))?;
            }
            opcode::EXPIRETIME_MS => {
                expire_at = Some(r.ms_time().ok_or_else(|| bad("expire time"))?);
            }
            opcode::EXPIRETIME => {
                let s = r.take(4).ok_or_else(|| bad("expire time"))?;
                let s = i32::from_le_bytes([s[0], s[1], s[2], s[3]]);
                expire_at = Some(i64::from(s) * 1000);
            }
            opcode::IDLE => idle = Some(r.length().ok_or_else(|| bad("idle time"))?),
            opcode::FREQ => freq = Some(r.byte().ok_or_else(|| bad("LFU counter"))?),
            opcode::AUX => {
                r.string().ok_or_else(|| bad("aux field"))?;
                r.string().ok_or_else(|| bad("aux field"))?;
            }
            opcode::FUNCTION2 => functions.push(r.bytes().ok_or_else(|| bad("function"))?),
            opcode::FUNCTION_PRE_GA => return Err(bad("function (pre-release format)")),
            opcode::MODULE_AUX => return Err(bad("module aux data (no modules)")),
            super::kind::MODULE | super::kind::MODULE_2 => {
                return Err(bad("module value (no modules)"))
            }
            kind if !is_object_type(kind) || !super::reads_type(kind, redis) => {
                return Err(bad("type (none this Redis version reads)"))
            }
            kind => {
                let key = r.bytes().ok_or_else(|| bad("key"))?;
                let (value, history) =
                    value::decode_object(kind, &mut r, limits).ok_or_else(|| bad("value"))?;
                let ks = &mut dbs[db];
                if ks.exists_raw(&key) {
                    return Err(RdbError::DuplicateKey { db, key });
                }
                let (at_ms, idle_s, counter) = (expire_at.take(), idle.take(), freq.take());
                if at_ms.is_some_and(|at| at < now) {
                    keys.expired += 1;
                    continue;
                }
                keys.loaded += 1;
                ks.set_with_history(&key, value, false, history, now);
                ks.set_expire(&key, at_ms);
                if let Some(entry) = ks.entry_untouched(&key, now) {
                    if let Some(idle) = idle_s {
                        let idle = u32::try_from(idle).unwrap_or(u32::MAX);
                        entry.set_accessed(seconds(now).saturating_sub(idle));
                    }
                    if let Some(counter) = counter {
                        entry.set_freq(counter);
                    }
                }
            }
        }
    }
    if version >= 5 {
        let body_len = at(&r);
        let stored = r
            .take(8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
            .ok_or(RdbError::Truncated { offset: body_len })?;
        let computed = CRC64.checksum(&bytes[..body_len]);
        if verify && stored != 0 && stored != computed {
            return Err(RdbError::Checksum { computed, stored });
        }
    }
    Ok(Loaded {
        dbs,
        functions,
        keys,
        end: at(&r),
    })
}

/// How many keys a load read, and how many it dropped as expired.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LoadedKeys {
    pub(crate) loaded: u64,
    pub(crate) expired: u64,
}

/// Whether `kind` names an object type the engine reads
/// (`rdbIsObjectType`): 0 to 7 and 9 to 19 (RDB 10), the small sets of
/// strings and the streams with active times of RDB 11 (20 and 21), and
/// the hashes with field TTLs of RDB 12 (24 and 25); those of RDB 11 and
/// 12 in 7.4 mode only ([`super::reads_type`]).
fn is_object_type(kind: u8) -> bool {
    matches!(kind, 0..=7 | 9..=21 | 24 | 25)
}

/// The version after the `REDIS` signature (`rdbLoadRio`'s check).
fn signature(bytes: &[u8], redis: crate::RedisVersion) -> Result<u32, RdbError> {
    let head = bytes.get(..9).ok_or(RdbError::Signature)?;
    if &head[..5] != b"REDIS" {
        return Err(RdbError::Signature);
    }
    // C's `atoi` on the four bytes: leading digits, 0 if none.
    let version = head[5..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0u32, |v, b| v * 10 + u32::from(b - b'0'));
    if version < 1 || version > u32::from(super::rdb_version(redis)) {
        return Err(RdbError::Version(version));
    }
    Ok(version)
}
