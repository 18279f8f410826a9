//! Shorthands for building replies, so command code reads like Redis's,
//! and the one place where a reply is lowered to RESP2.
//!
//! As in Redis (`addReplyMapLen`, `addReplySetLen`, `addReplyDouble`...),
//! a command builds its reply once, typed: maps, sets, doubles, verbatim
//! strings are the `redis::Value` variants of RESP3. What a RESP2 client
//! receives is decided afterwards, by [`to_resp2`] (the in-process
//! connection, scripts) or by the RESP2 encoder of the server, which
//! applies the same rules while it writes.

use redis::{Value, VerbatimFormat};

use super::float::format_double;

pub(crate) fn ok() -> Value {
    Value::Okay
}

pub(crate) fn int(n: impl TryInto<i64>) -> Value {
    Value::Int(n.try_into().unwrap_or(i64::MAX))
}

pub(crate) fn bulk(bytes: impl Into<Vec<u8>>) -> Value {
    Value::BulkString(bytes.into())
}

pub(crate) fn nil() -> Value {
    Value::Nil
}

pub(crate) fn simple(s: &str) -> Value {
    Value::SimpleString(s.to_string())
}

pub(crate) fn array(items: Vec<Value>) -> Value {
    Value::Array(items)
}

/// A double (ZSCORE, ZINCRBY and friends): RESP3's `,` type; a bulk
/// string in Redis's `%.17g` formatting for a RESP2 client.
pub(crate) fn double(d: f64) -> Value {
    Value::Double(d)
}

/// A map (HGETALL, CONFIG GET, HELLO...): a flat array of keys and values
/// for a RESP2 client.
pub(crate) fn map(pairs: Vec<(Value, Value)>) -> Value {
    Value::Map(pairs)
}

/// A set (SMEMBERS, SINTER...): an array for a RESP2 client.
pub(crate) fn set(items: Vec<Value>) -> Value {
    Value::Set(items)
}

/// A verbatim text (INFO, CLIENT LIST, LOLWUT...): a bulk string for a
/// RESP2 client. Text that is not UTF-8 (a client name cannot hold any,
/// so this does not happen) would be sent as a plain bulk string.
pub(crate) fn verbatim(text: impl Into<Vec<u8>>) -> Value {
    match String::from_utf8(text.into()) {
        Ok(text) => Value::VerbatimString {
            format: VerbatimFormat::Text,
            text,
        },
        Err(e) => Value::BulkString(e.into_bytes()),
    }
}

/// Lowers a typed reply to what Redis sends a RESP2 client, in place: a
/// map becomes the flat array of its keys and values, a set an array, a
/// double a bulk string (`%.17g`), a boolean `:1`/`:0`, a verbatim string
/// a bulk string of its text, a push an array. (RESP2's two nulls are one
/// `Nil`; which one goes out is the encoder's business.)
///
/// Cheap when there is nothing to do: a scalar is one match; an array is
/// walked, but its items are only rewritten where they need it.
pub(crate) fn to_resp2(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(to_resp2),
        Value::Nil
        | Value::Int(_)
        | Value::BulkString(_)
        | Value::SimpleString(_)
        | Value::Okay
        | Value::ServerError(_) => {}
        Value::Map(pairs) => {
            let mut flat = Vec::with_capacity(pairs.len().saturating_mul(2));
            for (mut k, mut v) in std::mem::take(pairs) {
                to_resp2(&mut k);
                to_resp2(&mut v);
                flat.push(k);
                flat.push(v);
            }
            *value = Value::Array(flat);
        }
        Value::Set(items) | Value::Push { data: items, .. } => {
            let mut items = std::mem::take(items);
            items.iter_mut().for_each(to_resp2);
            *value = Value::Array(items);
        }
        Value::Double(d) => *value = Value::BulkString(format_double(*d).into_bytes()),
        Value::Boolean(b) => *value = Value::Int(i64::from(*b)),
        Value::VerbatimString { text, .. } => {
            *value = Value::BulkString(std::mem::take(text).into_bytes());
        }
        Value::Attribute { data, .. } => {
            let mut data = std::mem::replace(&mut **data, Value::Nil);
            to_resp2(&mut data);
            *value = data;
        }
        // A script's `{big_number = ...}`.
        Value::BigNumber(text) => *value = Value::BulkString(std::mem::take(text)),
        // Kinds newer than this code are left as they are.
        _ => {}
    }
}

/// A list of byte strings as an array of bulk strings.
pub(crate) fn bulks<I, B>(items: I) -> Value
where
    I: IntoIterator<Item = B>,
    B: Into<Vec<u8>>,
{
    Value::Array(
        items
            .into_iter()
            .map(|b| Value::BulkString(b.into()))
            .collect(),
    )
}

/// Appends to a RESP output buffer the array of `len` bulk strings
/// `items`: the bytes a [`bulks`] reply goes out as, in RESP2 and RESP3
/// alike. For a command that writes its reply itself (see
/// `Store::reply_out`); `items` must yield exactly `len` elements.
pub(crate) fn write_bulks<'a>(
    out: &mut Vec<u8>,
    len: usize,
    items: impl Iterator<Item = &'a [u8]>,
) {
    let mut digits = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(digits.format(len).as_bytes());
    out.extend_from_slice(b"\r\n");
    for item in items {
        match item.len() {
            // A short element's header in one fixed-size copy: the digits'
            // own copy (a call to memcpy for a byte or two) cost as much
            // as the element's.
            n @ 0..=9 => out.extend_from_slice(&[b'$', b'0' + n as u8, b'\r', b'\n']),
            n => {
                out.push(b'$');
                out.extend_from_slice(digits.format(n).as_bytes());
                out.extend_from_slice(b"\r\n");
            }
        }
        out.extend_from_slice(item);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    /// An array of bulk strings as `$<len>\r\n<bytes>\r\n` items, whatever
    /// the length (a one-digit length takes a shorter path).
    #[test]
    fn write_bulks_bytes() {
        let long = vec![b'x'; 123];
        let items: [&[u8]; 5] = [b"", b"123456789", b"1234567890", b"a\r\nb", &long];
        let mut out = b"before".to_vec();
        super::write_bulks(&mut out, items.len(), items.iter().copied());
        let mut want = b"before*5\r\n$0\r\n\r\n$9\r\n123456789\r\n$10\r\n1234567890\r\n$4\r\na\r\nb\r\n$123\r\n"
            .to_vec();
        want.extend_from_slice(&long);
        want.extend_from_slice(b"\r\n");
        assert_eq!(out, want);
    }
}
