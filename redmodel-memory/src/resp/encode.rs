//! Writing replies in RESP2, the protocol Redis 7.0 speaks to a client that
//! has not sent `HELLO 3`, and in RESP3 for one that has.
//!
//! The engine's replies are typed `redis::Value`s (maps, sets, doubles...).
//! redis-rs only parses replies, so encoding is ours. In RESP2 a value that
//! only RESP3 has is sent as Redis sends it to a RESP2 client (the rules of
//! [`crate::reply::to_resp2`], applied while writing, without a copy):
//! maps flattened into arrays, sets as arrays, doubles as bulk strings,
//! booleans as `:1`/`:0`, verbatim strings as bulk strings.

use redis::{Value, VerbatimFormat};

use crate::float::format_double;

/// Appends `value` to `out` in the protocol `resp` (2 or 3).
pub(super) fn encode_in(out: &mut Vec<u8>, value: &Value, resp: u8) {
    if resp >= 3 {
        encode3(out, value);
    } else {
        encode(out, value);
    }
}

/// Appends `value` to `out` in RESP3.
pub(super) fn encode3(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Nil => out.extend_from_slice(b"_\r\n"),
        Value::Array(items) => {
            array_header(out, items.len());
            items.iter().for_each(|item| encode3(out, item));
        }
        Value::Set(items) => {
            header(out, b'~', len_i64(items.len()));
            items.iter().for_each(|item| encode3(out, item));
        }
        Value::Push { data, .. } => {
            header(out, b'>', len_i64(data.len()));
            data.iter().for_each(|item| encode3(out, item));
        }
        Value::Map(pairs) => {
            header(out, b'%', len_i64(pairs.len()));
            for (k, v) in pairs {
                encode3(out, k);
                encode3(out, v);
            }
        }
        Value::Attribute { data, attributes } => {
            header(out, b'|', len_i64(attributes.len()));
            for (k, v) in attributes {
                encode3(out, k);
                encode3(out, v);
            }
            encode3(out, data);
        }
        // Redis: `,%.17g`, and `inf` / `-inf` spelled so.
        Value::Double(d) => line(out, b',', format_double(*d).as_bytes()),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Value::BigNumber(text) => line(out, b'(', text),
        Value::VerbatimString { format, text } => {
            let format = match format {
                VerbatimFormat::Markdown => "mkd",
                VerbatimFormat::Unknown(f) if f.len() == 3 => f.as_str(),
                _ => "txt",
            };
            header(out, b'=', len_i64(text.len().saturating_add(4)));
            out.extend_from_slice(format.as_bytes());
            out.push(b':');
            out.extend_from_slice(text.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        // The rest is written as in RESP2.
        _ => encode(out, value),
    }
}

/// Appends `value` to `out` in RESP2.
pub(super) fn encode(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Nil => out.extend_from_slice(b"$-1\r\n"),
        Value::Okay => out.extend_from_slice(b"+OK\r\n"),
        Value::Int(n) => header(out, b':', *n),
        Value::BulkString(bytes) => bulk(out, bytes),
        Value::SimpleString(s) => line(out, b'+', s.as_bytes()),
        Value::Array(items) | Value::Set(items) => array(out, items),
        Value::Push { data, .. } => array(out, data),
        Value::Map(pairs) => {
            header(out, b'*', len_i64(pairs.len().saturating_mul(2)));
            for (k, v) in pairs {
                encode(out, k);
                encode(out, v);
            }
        }
        Value::Attribute { data, .. } => encode(out, data),
        Value::Double(d) => bulk(out, format_double(*d).as_bytes()),
        Value::Boolean(b) => header(out, b':', i64::from(*b)),
        Value::VerbatimString { text, .. } => bulk(out, text.as_bytes()),
        Value::ServerError(err) => {
            let mut text = err.code().as_bytes().to_vec();
            if let Some(details) = err.details() {
                text.push(b' ');
                text.extend_from_slice(details.as_bytes());
            }
            error(out, &text);
        }
        // A big number (its representation depends on redis-rs features)
        // or a kind of value newer than this code: never produced by the
        // engine, so say so rather than guess.
        _ => error(out, b"ERR reply type not representable in RESP2"),
    }
}

/// Appends the RESP2 null array `*-1`, which Redis sends where a command
/// that replies with an array has nothing (EXEC aborted by WATCH, LPOP with
/// a count on a missing key): `redis::Value` has one `Nil` for both nulls.
pub(super) fn null_array(out: &mut Vec<u8>) {
    out.extend_from_slice(b"*-1\r\n");
}

/// Appends an error reply; `text` starts with the error code.
pub(super) fn error(out: &mut Vec<u8>, text: &[u8]) {
    line(out, b'-', text);
}

/// Appends the header of an array of `len` replies, to be followed by them.
/// The header of a push reply of `len` items (Pub/Sub's messages and
/// confirmations): `>` in RESP3, an array in RESP2.
pub(super) fn push_header(out: &mut Vec<u8>, len: usize, resp: u8) {
    header(out, if resp >= 3 { b'>' } else { b'*' }, len_i64(len));
}

pub(super) fn array_header(out: &mut Vec<u8>, len: usize) {
    header(out, b'*', len_i64(len));
}

fn array(out: &mut Vec<u8>, items: &[Value]) {
    array_header(out, items.len());
    for item in items {
        encode(out, item);
    }
}

/// Appends a bulk string.
pub(super) fn bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    header(out, b'$', len_i64(bytes.len()));
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// A status or error line. CR and LF cannot appear in one: Redis replaces
/// them with spaces, so do we.
fn line(out: &mut Vec<u8>, kind: u8, text: &[u8]) {
    out.push(kind);
    out.extend(
        text.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.extend_from_slice(b"\r\n");
}

/// `<kind><n>\r\n`, the prefix of integers, bulk strings and arrays.
fn header(out: &mut Vec<u8>, kind: u8, n: i64) {
    out.push(kind);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn len_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::error_value;

    fn encoded(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&mut out, v);
        out
    }

    /// A script's `{big_number = ...}` in RESP3 (RESP2 clients get it
    /// lowered to a bulk string first).
    #[test]
    fn big_number_in_resp3() {
        let mut out = Vec::new();
        encode3(&mut out, &Value::BigNumber(b"12 x".to_vec()));
        assert_eq!(out, b"(12 x\r\n");
    }

    #[test]
    fn resp2_bytes() {
        let cases: Vec<(Value, &[u8])> = vec![
            (Value::Nil, b"$-1\r\n"),
            (Value::Okay, b"+OK\r\n"),
            (Value::Int(0), b":0\r\n"),
            (Value::Int(i64::MIN), b":-9223372036854775808\r\n"),
            (Value::Int(i64::MAX), b":9223372036854775807\r\n"),
            (Value::BulkString(vec![]), b"$0\r\n\r\n"),
            (
                Value::BulkString(b"a\r\nb\0".to_vec()),
                b"$5\r\na\r\nb\0\r\n",
            ),
            (Value::SimpleString("PONG".into()), b"+PONG\r\n"),
            (Value::Array(vec![]), b"*0\r\n"),
            (
                Value::Array(vec![Value::Int(1), Value::Array(vec![Value::Nil])]),
                b"*2\r\n:1\r\n*1\r\n$-1\r\n",
            ),
            (
                Value::Map(vec![(Value::BulkString(b"k".to_vec()), Value::Int(2))]),
                b"*2\r\n$1\r\nk\r\n:2\r\n",
            ),
            (Value::Boolean(true), b":1\r\n"),
            (Value::Double(1.5), b"$3\r\n1.5\r\n"),
            (error_value("ERR syntax error"), b"-ERR syntax error\r\n"),
            (
                error_value("WRONGTYPE Operation against a key holding the wrong kind of value"),
                b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            ),
            (error_value("NOPROTO"), b"-NOPROTO\r\n"),
            (
                error_value("EXECABORT Transaction discarded because of previous errors."),
                b"-EXECABORT Transaction discarded because of previous errors.\r\n",
            ),
        ];
        for (value, want) in cases {
            assert_eq!(
                String::from_utf8_lossy(&encoded(&value)),
                String::from_utf8_lossy(want),
                "{value:?}"
            );
        }
    }

    /// redis-rs's own parser reads back exactly what we wrote.
    #[test]
    fn round_trips_through_redis_rs() {
        let values = vec![
            Value::Nil,
            Value::Okay,
            Value::Int(-42),
            Value::BulkString(b"\xff\x00binary\r\n".to_vec()),
            Value::SimpleString("QUEUED".into()),
            Value::Array(vec![
                Value::BulkString(b"x".to_vec()),
                Value::Nil,
                Value::Int(7),
                Value::Array(vec![]),
                error_value("ERR value is not an integer or out of range"),
            ]),
            error_value("ERR unknown command 'FOO', with args beginning with: 'a b' "),
            error_value("MYCODE"),
        ];
        for value in values {
            let bytes = encoded(&value);
            assert_eq!(redis::parse_redis_value(&bytes).ok(), Some(value.clone()));
        }
    }

    /// RESP3 bytes as redis-server 7.0.15 sends them (`HELLO 3`, then
    /// HGETALL, SMEMBERS, ZSCORE of 0.1 and of inf, GET of a missing key,
    /// LOLWUT's verbatim text, a script's booleans).
    #[test]
    fn resp3_bytes() {
        let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let cases: Vec<(Value, &[u8])> = vec![
            (Value::Nil, b"_\r\n"),
            (Value::Okay, b"+OK\r\n"),
            (Value::Int(-3), b":-3\r\n"),
            (b("x"), b"$1\r\nx\r\n"),
            (
                Value::Map(vec![(b("a"), b("1")), (b("b"), Value::Nil)]),
                b"%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n_\r\n",
            ),
            (Value::Map(vec![]), b"%0\r\n"),
            (
                Value::Set(vec![b("y"), b("x")]),
                b"~2\r\n$1\r\ny\r\n$1\r\nx\r\n",
            ),
            (Value::Double(0.1), b",0.10000000000000001\r\n"),
            (Value::Double(1.5), b",1.5\r\n"),
            (Value::Double(f64::INFINITY), b",inf\r\n"),
            (Value::Double(f64::NEG_INFINITY), b",-inf\r\n"),
            (Value::Boolean(true), b"#t\r\n"),
            (Value::Boolean(false), b"#f\r\n"),
            (crate::reply::verbatim("hi\n"), b"=7\r\ntxt:hi\n\r\n"),
            (
                Value::Array(vec![Value::Array(vec![b("a"), Value::Double(2.0)])]),
                b"*1\r\n*2\r\n$1\r\na\r\n,2\r\n",
            ),
        ];
        for (value, want) in cases {
            let mut out = Vec::new();
            encode_in(&mut out, &value, 3);
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(want),
                "{value:?}"
            );
            // redis-rs reads back what was written.
            assert_eq!(redis::parse_redis_value(&out).ok(), Some(value));
        }
    }

    /// The RESP2 encoder applies the same rules as `reply::to_resp2`.
    #[test]
    fn resp2_encoding_matches_the_lowering() {
        let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let typed = Value::Array(vec![
            Value::Map(vec![(b("k"), Value::Set(vec![Value::Double(0.1)]))]),
            Value::Boolean(true),
            crate::reply::verbatim("t"),
            Value::Nil,
        ]);
        let mut lowered = typed.clone();
        crate::reply::to_resp2(&mut lowered);
        assert_eq!(
            lowered,
            Value::Array(vec![
                Value::Array(vec![b("k"), Value::Array(vec![b("0.10000000000000001")])]),
                Value::Int(1),
                b("t"),
                Value::Nil,
            ])
        );
        assert_eq!(encoded(&typed), encoded(&lowered));
        let mut out = Vec::new();
        encode_in(&mut out, &typed, 2);
        assert_eq!(out, encoded(&lowered));
    }

    #[test]
    fn status_lines_never_break_the_protocol() {
        let mut out = Vec::new();
        error(&mut out, b"ERR a\r\nb");
        assert_eq!(out, b"-ERR a  b\r\n");
        assert_eq!(encoded(&Value::SimpleString("x\ny".into())), b"+x y\r\n");
        let mut out = Vec::new();
        null_array(&mut out);
        assert_eq!(out, b"*-1\r\n");
    }
}
