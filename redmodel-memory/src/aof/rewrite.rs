//! The AOF rewrite: a new base file from a copy of the dataset, written
//! off the engine's lock, then the manifest switched to it
//! (`rewriteAppendOnlyFileBackground` and `backgroundRewriteDoneHandler`).
//!
//! With `aof-use-rdb-preamble yes` (the default) the base is an RDB file;
//! without, the commands that rebuild the dataset
//! (`rewriteAppendOnlyFileRio`): `SET`, `RPUSH`, `SADD`, `ZADD` and
//! `HMSET` of at most 64 elements each, `PEXPIREAT` for a TTL, `FUNCTION
//! LOAD` for each library. A stream, or a hash with field TTLs, is
//! written as the `RESTORE` of its DUMP payload, which keeps all of it
//! (Redis writes a stream's entries, groups and consumers as XADD, XSETID,
//! XGROUP and XCLAIM commands).

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::{encode, manifest, Files, State};
use crate::rdb::file::{self, Item, Snapshot};
use crate::value::Value;

/// Elements per command of a command-form base (`AOF_REWRITE_ITEMS_PER_CMD`).
const ITEMS_PER_COMMAND: usize = 64;

/// The rewrite's thread: writes the base, then, unless the rewrite was
/// stopped, makes it the manifest's.
pub(super) fn run(files: &Mutex<Files>, snapshot: &Snapshot, preamble: bool) {
    static REWRITES: AtomicU64 = AtomicU64::new(0);
    let n = REWRITES.fetch_add(1, Ordering::Relaxed);
    let temp = files
        .lock()
        .dir
        .join(format!("temp-rewriteaof-bg-{}-{n}.aof", std::process::id()));
    let written = write_base(snapshot, preamble, &temp, &|| files.lock().cancelled);
    let mut f = files.lock();
    let done = match written {
        Ok(()) if !f.cancelled => finish(&mut f, &temp, preamble),
        Ok(()) => Ok(()),
        Err(e) => Err(e),
    };
    if done.is_err() || f.cancelled {
        let _ = fs::remove_file(&temp);
    }
    if done.is_err() && !f.cancelled {
        f.last_rewrite_failed = true;
        // `appendonly yes` waits for a rewrite that succeeds.
        if f.state == State::WaitRewrite {
            f.scheduled = true;
        }
    }
    f.rewriting = false;
}

/// The base written to `temp` becomes the manifest's, with the
/// incremental file opened when the rewrite started; the files it
/// replaces are deleted.
fn finish(f: &mut Files, temp: &Path, preamble: bool) -> io::Result<()> {
    let mut manifest = f.manifest.clone();
    let base = manifest.next_base(&f.filename, preamble);
    fs::rename(temp, f.dir.join(&base.name))?;
    manifest.base = Some(base.clone());
    match f.state {
        State::WaitRewrite => {
            let incr = manifest.push_incr(&f.filename);
            let temp_incr = f.dir.join(manifest::temp_incr_name(&f.filename));
            if let Err(e) = fs::rename(temp_incr, f.dir.join(&incr.name)) {
                let _ = fs::remove_file(f.dir.join(&base.name));
                return Err(e);
            }
            manifest.retire_incrs(1);
        }
        State::On => manifest.retire_incrs(1),
        State::Off => manifest.retire_incrs(0),
    }
    let old = std::mem::replace(&mut f.manifest, manifest);
    if let Err(e) = f.persist_manifest() {
        f.manifest = old;
        let _ = fs::remove_file(f.dir.join(&base.name));
        return Err(e);
    }
    f.delete_history();
    f.rewrites += 1;
    f.last_rewrite_failed = false;
    if f.state == State::WaitRewrite {
        f.state = State::On;
    }
    Ok(())
}

/// Writes a base file of `snapshot` at `path`, synced; removed again if
/// anything fails. `stop` is asked between keys whether to give up.
pub(crate) fn write_base(
    snapshot: &Snapshot,
    preamble: bool,
    path: &Path,
    stop: &dyn Fn() -> bool,
) -> io::Result<()> {
    let written = (|| -> io::Result<()> {
        let mut out = BufWriter::new(fs::File::create(path)?);
        if preamble {
            file::write(snapshot, &mut out, stop)?;
        } else {
            write_commands(snapshot, &mut out, stop)?;
        }
        let f = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        f.sync_all()
    })();
    if written.is_err() {
        let _ = fs::remove_file(path);
    }
    written
}

/// A command-form base: the functions, then each database's keys.
fn write_commands(
    snapshot: &Snapshot,
    out: &mut impl Write,
    stop: &dyn Fn() -> bool,
) -> io::Result<()> {
    let mut buf = Vec::new();
    for code in &snapshot.functions {
        encode(
            &mut buf,
            &[b"FUNCTION".to_vec(), b"LOAD".to_vec(), code.clone()],
        );
    }
    out.write_all(&buf)?;
    for (db, items) in snapshot.dbs.iter().enumerate() {
        if items.is_empty() {
            continue;
        }
        buf.clear();
        encode(&mut buf, &[b"SELECT".to_vec(), db.to_string().into_bytes()]);
        out.write_all(&buf)?;
        for item in items {
            if stop() {
                return Err(io::ErrorKind::Interrupted.into());
            }
            buf.clear();
            item_commands(item, snapshot, &mut buf);
            out.write_all(&buf)?;
            if snapshot.key_delay_us > 0 {
                std::thread::sleep(std::time::Duration::from_micros(snapshot.key_delay_us));
            }
        }
    }
    out.flush()
}

/// The commands that rebuild one key (`rewriteAppendOnlyFileRio`'s body).
fn item_commands(item: &Item, snapshot: &Snapshot, out: &mut Vec<u8>) {
    let key = &item.key;
    let batched = |out: &mut Vec<u8>, cmd: &[u8], elems: Vec<Vec<u8>>, per: usize| {
        for chunk in elems.chunks(ITEMS_PER_COMMAND * per) {
            let mut line = vec![cmd.to_vec(), key.clone()];
            line.extend(chunk.iter().cloned());
            encode(out, &line);
        }
    };
    match &item.value {
        Value::Str(s) => encode(out, &[b"SET".to_vec(), key.clone(), s.to_vec()]),
        Value::List(l) => batched(out, b"RPUSH", l.iter().map(<[u8]>::to_vec).collect(), 1),
        Value::Set(s) => batched(out, b"SADD", s.iter().map(|m| m.to_vec()).collect(), 1),
        Value::ZSet(z) => {
            let elems = z
                .iter()
                .flat_map(|(m, score)| {
                    [crate::float::format_double(score).into_bytes(), m.to_vec()]
                })
                .collect();
            batched(out, b"ZADD", elems, 2);
        }
        Value::Hash(h) if !matches!(h, crate::value::hash::HashValue::Expiring(_)) => {
            let elems = h
                .iter()
                .flat_map(|(f, v)| [f.to_vec(), v.to_vec()])
                .collect();
            batched(out, b"HMSET", elems, 2);
        }
        _ => {
            let body = crate::rdb::value::encode(
                &item.value,
                item.history,
                snapshot.compress,
                snapshot.version,
            );
            let payload = crate::rdb::seal_as(body, snapshot.version);
            encode(
                out,
                &[b"RESTORE".to_vec(), key.clone(), b"0".to_vec(), payload],
            );
        }
    }
    if let Some(at) = item.expire_at {
        encode(
            out,
            &[
                b"PEXPIREAT".to_vec(),
                key.clone(),
                at.to_string().into_bytes(),
            ],
        );
    }
}
