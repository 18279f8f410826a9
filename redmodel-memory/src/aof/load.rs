//! Loading the AOF files (`loadAppendOnlyFiles`,
//! `loadSingleAppendOnlyFile`): the files the manifest names, base first,
//! each an RDB file (a base with the RDB preamble), commands, or an RDB
//! preamble followed by commands, run as a client without a connection
//! runs them, into a fresh store that replaces the dataset only once every
//! file has loaded.
//!
//! A command cut short at the end of the last file (a crash while it was
//! written), or a `MULTI` never closed there, is dropped and the file
//! truncated before it, as Redis does under `aof-load-truncated yes` (the
//! default), with a warning on standard error; anywhere else, or with
//! `aof-load-truncated no`, it is an [`AofError`], as is anything that is
//! not the commands' format.

use std::fmt;
use std::fs;
use std::io;
use std::path::Path;

use super::manifest::{self, Manifest};
use super::propagate::Line;
use crate::args::is;
use crate::command::Store;
use crate::rdb::file::RdbError;
use crate::session::Session;

/// Why the append-only files could not be loaded (or written). Nothing
/// of the engine changes when loading fails.
#[derive(Debug)]
#[non_exhaustive]
pub enum AofError {
    /// A file could not be read or written.
    Io(io::Error),
    /// The manifest is not one Redis 7.0 reads.
    Manifest(String),
    /// The AOF directory or its manifest does not exist.
    NotFound,
    /// The RDB part of a file does not load.
    Rdb {
        /// The file.
        file: String,
        /// Why.
        error: RdbError,
    },
    /// The commands of a file are not in the format Redis writes, from
    /// this byte on.
    Format {
        /// The file.
        file: String,
        /// Where the command that fails to read starts.
        offset: usize,
    },
    /// A file ends inside a command, and may not be truncated there (not
    /// the last file, or `aof-load-truncated no`).
    Truncated {
        /// The file.
        file: String,
        /// Where its last whole command ends.
        offset: usize,
    },
    /// A file names a command the engine does not know.
    UnknownCommand {
        /// The file.
        file: String,
        /// The command's name.
        command: String,
    },
}

impl fmt::Display for AofError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AofError::Io(e) => write!(f, "AOF: {e}"),
            AofError::Manifest(why) => write!(f, "invalid AOF manifest: {why}"),
            AofError::NotFound => write!(f, "no AOF manifest"),
            AofError::Rdb { file, error } => write!(f, "AOF file {file}: {error}"),
            AofError::Format { file, offset } => write!(
                f,
                "bad file format reading the append only file {file} at byte {offset}"
            ),
            AofError::Truncated { file, offset } => write!(
                f,
                "unexpected end of file reading the append only file {file} (its last whole command ends at byte {offset})"
            ),
            AofError::UnknownCommand { file, command } => write!(
                f,
                "unknown command '{command}' reading the append only file {file}"
            ),
        }
    }
}

impl std::error::Error for AofError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AofError::Io(e) => Some(e),
            AofError::Rdb { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<io::Error> for AofError {
    fn from(e: io::Error) -> Self {
        AofError::Io(e)
    }
}

/// A file's commands, each with the byte after it.
struct Parsed {
    lines: Vec<(Line, usize)>,
    /// The file ends inside a command (or a transaction) that starts at
    /// the end of the last whole one: where that is.
    truncated_at: Option<usize>,
}

/// The line from `pos` to its `\n`, without the line end, and the byte
/// after it; `None` if no `\n` follows.
fn text_line(bytes: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let rest = bytes.get(pos..)?;
    let end = rest.iter().position(|&b| b == b'\n')?;
    let line = &rest[..end];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    Some((line, pos + end + 1))
}

/// C's `atoi`/`strtol` on a header's number: leading digits, 0 if none.
fn leading_number(text: &[u8]) -> i64 {
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let n = digits
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0i64, |n, b| {
            n.saturating_mul(10).saturating_add(i64::from(b - b'0'))
        });
    if negative {
        -n
    } else {
        n
    }
}

/// Reads the commands of `bytes` from `pos` as Redis's loader reads them.
/// `Err` is the offset of a command that is not in the format.
fn parse(bytes: &[u8], mut pos: usize) -> Result<Parsed, usize> {
    let mut lines = Vec::new();
    let truncated = |lines, at| {
        Ok(Parsed {
            lines,
            truncated_at: Some(at),
        })
    };
    'commands: while pos < bytes.len() {
        let start = pos;
        let Some((header, next)) = text_line(bytes, pos) else {
            if bytes[pos] == b'#' {
                break;
            }
            return truncated(lines, start);
        };
        pos = next;
        if header.first() == Some(&b'#') {
            continue;
        }
        if header.first() != Some(&b'*') {
            return Err(start);
        }
        let argc = leading_number(&header[1..]);
        if argc < 1 {
            return Err(start);
        }
        let mut line = Vec::new();
        for _ in 0..argc {
            let Some((arg_header, next)) = text_line(bytes, pos) else {
                return truncated(lines, start);
            };
            if arg_header.first() != Some(&b'$') {
                return Err(start);
            }
            let len = usize::try_from(leading_number(&arg_header[1..])).map_err(|_| start)?;
            let Some(arg) = bytes.get(next..).and_then(|rest| rest.get(..len)) else {
                return truncated(lines, start);
            };
            // The line end after the argument: two bytes, not checked.
            if bytes.len() < next + len + 2 {
                return truncated(lines, start);
            }
            line.push(arg.to_vec());
            pos = next + len + 2;
            if pos > bytes.len() {
                break 'commands;
            }
        }
        lines.push((line, pos));
    }
    Ok(Parsed {
        lines,
        truncated_at: None,
    })
}

/// A transaction never closed at the end of `parsed` is dropped, as a
/// truncated command is.
fn drop_open_multi(parsed: &mut Parsed, file_start: usize) {
    let mut open: Option<usize> = None;
    for (i, (line, _)) in parsed.lines.iter().enumerate() {
        let name = &line[0];
        if is(name, "multi") {
            open = Some(i);
        } else if is(name, "exec") || is(name, "discard") {
            open = None;
        }
    }
    if let Some(i) = open {
        let at = if i == 0 {
            file_start
        } else {
            parsed.lines[i - 1].1
        };
        parsed.lines.truncate(i);
        parsed.truncated_at = Some(parsed.truncated_at.map_or(at, |t| t.min(at)));
    }
}

/// The time a loading command runs at: none, so that no key expires while
/// the files load (Redis expires nothing while loading) and a TTL already
/// past is kept as the file sets it, for the expiry cycle to take.
const LOAD_NOW: i64 = 0;

impl Store {
    /// Loads the AOF files `dir`'s manifest names (`appendfilename`
    /// `filename`) in place of the dataset and functions: all or nothing.
    pub(crate) fn load_aof(
        &mut self,
        dir: &Path,
        filename: &str,
        now: i64,
    ) -> Result<(), AofError> {
        let manifest_path = dir.join(manifest::manifest_name(filename));
        let manifest = match fs::read(&manifest_path) {
            Ok(text) => Manifest::parse(&text).map_err(AofError::Manifest)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(AofError::NotFound),
            Err(e) => return Err(e.into()),
        };
        let mut scratch = self.scratch();
        let mut session = Session::default();
        let files: Vec<_> = manifest.to_load().cloned().collect();
        let load_truncated = self.config.get("aof-load-truncated") == "yes";
        for (i, info) in files.iter().enumerate() {
            let last = i + 1 == files.len();
            let path = dir.join(&info.name);
            let bytes = fs::read(&path)?;
            if bytes.is_empty() {
                continue;
            }
            let mut start = 0;
            if bytes.starts_with(b"REDIS") {
                start =
                    scratch
                        .load_rdb_prefix(&bytes, LOAD_NOW)
                        .map_err(|error| AofError::Rdb {
                            file: info.name.clone(),
                            error,
                        })?;
            }
            let mut parsed = parse(&bytes, start).map_err(|offset| AofError::Format {
                file: info.name.clone(),
                offset,
            })?;
            drop_open_multi(&mut parsed, start);
            if let Some(offset) = parsed.truncated_at {
                if !last || !load_truncated {
                    return Err(AofError::Truncated {
                        file: info.name.clone(),
                        offset,
                    });
                }
            }
            for (line, _) in &parsed.lines {
                let known = is(&line[0], "multi")
                    || is(&line[0], "exec")
                    || is(&line[0], "discard")
                    || crate::command::lookup_in(&line[0], scratch.version).is_some();
                if !known {
                    return Err(AofError::UnknownCommand {
                        file: info.name.clone(),
                        command: String::from_utf8_lossy(&line[0]).into_owned(),
                    });
                }
                let args: Vec<&[u8]> = line.iter().map(Vec::as_slice).collect();
                session.execute(&mut scratch, &args, LOAD_NOW);
            }
            if let Some(offset) = parsed.truncated_at {
                eprintln!(
                    "!!! Warning: short read while loading the AOF file {}: truncating it at offset {offset} (aof-load-truncated is enabled)",
                    info.name
                );
                let f = fs::OpenOptions::new().write(true).open(&path)?;
                f.set_len(offset as u64)?;
            }
        }
        let functions: Vec<Vec<u8>> = scratch
            .functions
            .libraries()
            .map(|l| l.code.clone())
            .collect();
        self.adopt(&mut scratch.dbs, &functions, now)
            .map_err(|e| AofError::Rdb {
                file: manifest::manifest_name(filename),
                error: e,
            })?;
        Ok(())
    }

    /// An empty store with this one's settings, for files to load into:
    /// no memory limit or replica rule to refuse a write, no events.
    fn scratch(&self) -> Store {
        let mut config = self.config.clone();
        for (name, value) in [
            ("maxmemory", "0"),
            ("min-replicas-to-write", "0"),
            ("notify-keyspace-events", ""),
        ] {
            let _ = config.set_at_start(name, value.as_bytes());
        }
        let mut scratch = Store {
            config,
            version: self.version,
            ..Store::default()
        };
        scratch.scripts.version = self.version;
        scratch.functions.version = self.version;
        let limits = scratch.config.limits();
        scratch.notify_flags = 0;
        for ks in &mut scratch.dbs {
            ks.set_limits(limits);
        }
        scratch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_and_a_cut_one_is_found() {
        let file = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n#annotation\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
        let parsed = parse(file, 0).expect("well formed");
        assert_eq!(parsed.lines.len(), 2);
        assert_eq!(parsed.truncated_at, None);
        for cut in 1..file.len() {
            match parse(&file[..cut], 0) {
                Ok(p) => {
                    let whole = p.lines.last().map_or(0, |l| l.1);
                    assert!(p.truncated_at.is_none_or(|at| at >= whole), "cut at {cut}");
                }
                Err(_) => panic!("a cut file is truncated, not corrupt (cut at {cut})"),
            }
        }
    }

    #[test]
    fn a_line_that_is_no_command_is_a_format_error() {
        assert_eq!(parse(b"*1\r\n$4\r\nPING\r\nGARBAGE\r\n", 0).err(), Some(14));
        assert_eq!(parse(b"*0\r\n", 0).err(), Some(0));
        assert_eq!(parse(b"*1\r\nxx\r\n", 0).err(), Some(0));
    }

    #[test]
    fn an_open_transaction_at_the_end_is_dropped() {
        let file = b"*1\r\n$4\r\nPING\r\n*1\r\n$5\r\nMULTI\r\n*1\r\n$4\r\nPING\r\n";
        let mut parsed = parse(file, 0).expect("well formed");
        drop_open_multi(&mut parsed, 0);
        assert_eq!(parsed.lines.len(), 1);
        assert_eq!(parsed.truncated_at, Some(14));
    }
}
