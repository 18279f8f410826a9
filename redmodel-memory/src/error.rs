//! Error replies of the engine, with the texts Redis 7 sends.

use std::borrow::Cow;
use std::sync::LazyLock;

use redis::Value;

/// An error reply of a command. Converted to a `redis::Value::ServerError`
/// only when it is sent, so the common errors cost no allocation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CmdError {
    WrongType,
    Syntax,
    NotInteger,
    NotFloat,
    Overflow,
    NoSuchKey,
    IndexOutOfRange,
    /// Any other error; the text starts with its code (`ERR ...`).
    Other(Cow<'static, str>),
}

impl CmdError {
    /// An `ERR` error with this message.
    pub(crate) fn err(msg: impl Into<Cow<'static, str>>) -> Self {
        let msg = msg.into();
        CmdError::Other(Cow::Owned(format!("ERR {msg}")))
    }

    /// An error whose text already starts with its code.
    pub(crate) fn raw(text: impl Into<Cow<'static, str>>) -> Self {
        CmdError::Other(text.into())
    }

    /// The full error line, code first, as Redis sends it after the `-`.
    pub(crate) fn text(&self) -> &str {
        match self {
            CmdError::WrongType => {
                "WRONGTYPE Operation against a key holding the wrong kind of value"
            }
            CmdError::Syntax => "ERR syntax error",
            CmdError::NotInteger => "ERR value is not an integer or out of range",
            CmdError::NotFloat => "ERR value is not a valid float",
            CmdError::Overflow => "ERR increment or decrement would overflow",
            CmdError::NoSuchKey => "ERR no such key",
            CmdError::IndexOutOfRange => "ERR index out of range",
            CmdError::Other(text) => text,
        }
    }

    /// The error as a reply value, exactly as redis-rs parses it from a server.
    pub(crate) fn to_value(&self) -> Value {
        static CACHE: LazyLock<Vec<(CmdError, Value)>> = LazyLock::new(|| {
            [
                CmdError::WrongType,
                CmdError::Syntax,
                CmdError::NotInteger,
                CmdError::NotFloat,
                CmdError::Overflow,
                CmdError::NoSuchKey,
                CmdError::IndexOutOfRange,
            ]
            .into_iter()
            .map(|e| {
                let v = error_value(e.text());
                (e, v)
            })
            .collect()
        });
        if let Some((_, v)) = CACHE.iter().find(|(e, _)| e == self) {
            return v.clone();
        }
        error_value(self.text())
    }
}

/// Builds a `Value::ServerError` through redis-rs's own parser, so that an
/// error from the engine is indistinguishable from one read off the wire.
pub(crate) fn error_value(text: &str) -> Value {
    // Error lines cannot hold CR or LF; Redis replaces them with spaces.
    let line: String = text
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    let frame = format!("-{line}\r\n");
    match redis::parse_redis_value(frame.as_bytes()) {
        Ok(v) => v,
        // Unreachable for a well-formed error line; keep a usable reply anyway.
        Err(_) => Value::SimpleString(line),
    }
}
