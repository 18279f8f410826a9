//! Reading the AOF files' commands as `loadSingleAppendOnlyFile` reads
//! them, and why loading fails ([`AofError`]). (The store's side, which
//! runs them, is `crate::command::persistence`'s.)
//!
//! A command cut short at the end of a file (a crash while it was
//! written), or a `MULTI` never closed there, is found and reported with
//! the offset of the last whole command, for the loader to drop it as
//! Redis does under `aof-load-truncated yes` (in the last file only).

use std::fmt;
use std::io;

use super::propagate::Line;
use crate::args::is;
use crate::rdb::file::RdbError;

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
pub(crate) struct Parsed {
    pub(crate) lines: Vec<(Line, usize)>,
    /// The file ends inside a command (or a transaction) that starts at
    /// the end of the last whole one: where that is.
    pub(crate) truncated_at: Option<usize>,
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
pub(crate) fn parse(bytes: &[u8], mut pos: usize) -> Result<Parsed, usize> {
    let mut lines = Vec::new();
    let truncated = |lines, at| {
        Ok(Parsed {
            lines,
            truncated_at: Some(at),
        })
    };
    while pos < bytes.len() {
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
pub(crate) fn drop_open_multi(parsed: &mut Parsed, file_start: usize) {
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
