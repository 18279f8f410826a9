//! RESTORE of damaged payloads: whatever the bytes, an error or a value,
//! never a panic and never an allocation the payload's size does not
//! justify.
//!
//! Valid payloads of every type and encoding (the engine's own DUMPs, and
//! hand-made ones of the older encodings a real server sends) are
//! mutated: bytes flipped, inserted, removed, lengths blown up, the tail
//! cut. The footer is then made right again, so that the mutation reaches
//! the decoder instead of stopping at the checksum. A payload that still
//! decodes must give a value that DUMPs and RESTOREs again to itself, and
//! RESTORE through the command must agree.

use std::sync::LazyLock;

use proptest::prelude::*;

use super::{seal, value};
use crate::command::test_util::{conn, run};
use crate::config::Limits;
use crate::Connection;

/// The corpus, built once for all the cases.
static CORPUS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(corpus);

/// Bodies (type byte and object, no footer) of valid payloads.
fn corpus() -> Vec<Vec<u8>> {
    let mut c = conn();
    let build = [
        "SET s hello",
        "SET i -42",
        "SET long aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "RPUSH l a b 1 -2 300 70000 -9223372036854775808",
        "SADD si 1 2 3 -70000",
        "SADD ss a b c",
        "ZADD zl 1 a 2.5 b -inf c",
        "ZADD zs 1 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 2 b",
        "HSET hl f v n 1",
        "HSET hs f aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "XADD x 1-1 f v",
        "XADD x 2-1 f w g 1",
        "XADD x 3-0 h 1",
        "XDEL x 2-1",
        "XGROUP CREATE x g 0",
        "XGROUP CREATE x g2 $",
        "XREADGROUP GROUP g alice COUNT 1 STREAMS x >",
        "XGROUP CREATECONSUMER x g bob",
    ];
    for line in build {
        run(&mut c, line);
    }
    let mut bodies: Vec<Vec<u8>> = [
        "s", "i", "long", "l", "si", "ss", "zl", "zs", "hl", "hs", "x",
    ]
    .iter()
    .map(|key| dump_body(&mut c, key))
    .collect();
    // Older encodings, as a real server may send them.
    bodies.extend(OLD_BODIES.iter().map(|b| b.to_vec()));
    bodies
}

/// Hand-made bodies of the encodings only older servers write (a list
/// ziplist, a quicklist of ziplists, a hash ziplist, a zipmap, a zset
/// ziplist, text scores, a plain list), an LZF string as a real server
/// compresses it, a real server's quicklist with plain nodes, and Redis's
/// own version 1 stream (stream-cgroups.tcl).
const OLD_BODIES: &[&[u8]] = &[
    b"\x0a@ll\x00\x00\x00\x22\x00\x00\x00\x06\x00\x00\x01x\x03\xf6\x02\xc0\xd4\xfe\x04\xf0\xa0\x86\x01\x05\xe0\x00\x00\x00\x00\x00\x01\x00\x00\x0a@Fyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\xff",
    b"\x0e\x02\x10\x10\x00\x00\x00\x0d\x00\x00\x00\x02\x00\x00\x01a\x03\xf2\xff\x13\x13\x00\x00\x00\x0f\x00\x00\x00\x03\x00\x00\x01b\x03\xf3\x02\x01c\xff",
    b"\x0d  \x00\x00\x00\x1c\x00\x00\x00\x06\x00\x00\x02f1\x04\x02v1\x04\x01n\x03\xfd\x02\x03neg\x05\xfe\xff\xff",
    b"\x09\x18\x02\x03foo\x03\x00bar\x05hello\x05\x00world\xff",
    b"\x0c!!\x00\x00\x00\x1b\x00\x00\x00\x06\x00\x00\x01c\x03\x04-inf\x06\x01a\x03\xf2\x02\x01b\x03\x032.5\xff",
    b"\x03\x03\x01a\x031.5\x01b\xfe\x01c\xff",
    b"\x01\x03\x01a\x02bb\xc0\x07",
    b"\x00\xc3\x0b@x\x03abca\xe0i\x02\x01bc",
    b"\x12\x04\x02\x0e\x0e\x00\x00\x00\x02\x00\x81a\x02\x82bb\x03\xff\x01%this element is longer than ten bytes\x02\x0a\x0a\x00\x00\x00\x01\x00\x81c\x02\xff\x01\x19another long element here",
    b"\x0F\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\xC3\x40\x4A\x40\x57\x16\x57\x00\x00\x00\x23\x00\x02\x01\x04\x01\x01\x01\x84\x64\x61\x74\x61\x05\x00\x01\x03\x01\x00\x20\x01\x03\x81\x61\x02\x04\x20\x0A\x00\x01\x40\x0A\x00\x62\x60\x0A\x00\x02\x40\x0A\x00\x63\x60\x0A\x40\x22\x01\x81\x64\x20\x0A\x40\x39\x20\x0A\x00\x65\x60\x0A\x00\x05\x40\x0A\x00\x66\x20\x0A\x00\xFF\x02\x06\x00\x02\x02\x67\x31\x05\x00\x04\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x01\x03\x63\x31\x31\x3E\xF7\x83\x43\x7A\x01\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x02\x67\x32\x00\x00\x00\x00\x09\x00",
];

fn dump_body(c: &mut Connection, key: &str) -> Vec<u8> {
    match c.execute(&[b"DUMP", key.as_bytes()]) {
        redis::Value::BulkString(mut p) => {
            p.truncate(p.len() - 10);
            p
        }
        other => panic!("DUMP {key}: {other:?}"),
    }
}

/// One damage done to a body.
#[derive(Debug, Clone)]
enum Mutation {
    /// XOR a byte.
    Flip(usize, u8),
    /// Put a byte in.
    Insert(usize, u8),
    /// Take a range out.
    Remove(usize, usize),
    /// Cut the tail.
    Truncate(usize),
    /// Put a huge RDB length (0x81 and 8 bytes) in.
    HugeLength(usize),
    /// Put a 32-bit length tag with a huge length in.
    BigLength(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 1..=255u8).prop_map(|(i, x)| Mutation::Flip(i, x)),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        2 => (any::<usize>(), 1..8usize).prop_map(|(i, n)| Mutation::Remove(i, n)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => any::<usize>().prop_map(Mutation::HugeLength),
        1 => any::<usize>().prop_map(Mutation::BigLength),
    ]
}

fn apply(body: &mut Vec<u8>, m: &Mutation) {
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
    match *m {
        Mutation::Flip(i, x) => {
            let i = at(i, body.len());
            if let Some(b) = body.get_mut(i) {
                *b ^= x;
            }
        }
        Mutation::Insert(i, b) => {
            let i = at(i, body.len() + 1);
            body.insert(i, b);
        }
        Mutation::Remove(i, n) => {
            let i = at(i, body.len());
            let end = (i + n).min(body.len());
            body.drain(i..end);
        }
        Mutation::Truncate(i) => {
            let i = at(i, body.len());
            body.truncate(i);
        }
        Mutation::HugeLength(i) => {
            let i = at(i, body.len());
            body.splice(i..i, [0x81, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        }
        Mutation::BigLength(i) => {
            let i = at(i, body.len());
            body.splice(i..(i + 1).min(body.len()), [0x80, 0xff, 0xff, 0xff, 0xf0]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, .. ProptestConfig::default() })]

    #[test]
    fn damaged_payloads_never_panic(
        which in any::<usize>(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let bodies = &*CORPUS;
        let mut body = bodies[which % bodies.len()].clone();
        for m in &mutations {
            apply(&mut body, m);
        }
        let payload = seal(body);
        let limits = Limits::default();
        // RESTORE on the engine (as Redis 7.0) also refuses a type only
        // later versions read (a flipped type byte may name one).
        let decoded = value::decode(&payload, &limits)
            .filter(|_| {
                let tag = payload.first().copied().unwrap_or_default();
                super::reads_type(tag, crate::RedisVersion::V7_0)
            });
        let mut c = conn();
        let reply = c.execute(&[b"RESTORE", b"k", b"0", &payload]);
        match &decoded {
            None => prop_assert!(matches!(reply, redis::Value::ServerError(_))),
            Some((value, history)) => {
                prop_assert_eq!(reply, redis::Value::Okay);
                // A value that loads is a sound one: it dumps, loads
                // again, and reads the same.
                let again = seal(value::encode(value, *history, which % 2 == 0, crate::RedisVersion::V7_0));
                prop_assert!(value::decode(&again, &limits).is_some());
                let reply = c.execute(&[b"RESTORE", b"k2", b"0", &again]);
                prop_assert_eq!(reply, redis::Value::Okay);
                prop_assert_eq!(contents(&mut c, "k"), contents(&mut c, "k2"));
            }
        }
    }
}

/// What the key holds, read through commands, unordered replies sorted.
fn contents(c: &mut Connection, key: &str) -> Vec<String> {
    let kind = format!("{:?}", run(c, &format!("TYPE {key}")));
    let reads: &[&str] = match kind.as_str() {
        k if k.contains("string") => &["GET"],
        k if k.contains("list") => &["LRANGE {} 0 -1"],
        k if k.contains("zset") => &["ZRANGE {} 0 -1 WITHSCORES"],
        k if k.contains("set") => &["SORT {} ALPHA"],
        k if k.contains("hash") => &["HGETALL"],
        _ => &["XRANGE {} - +", "XINFO STREAM {} FULL"],
    };
    let mut out = vec![kind];
    for read in reads {
        let line = if read.contains("{}") {
            read.replace("{}", key)
        } else {
            format!("{read} {key}")
        };
        let reply = run(c, &line);
        let mut text = match reply {
            redis::Value::Array(items) if read.starts_with("HGETALL") => {
                let mut pairs: Vec<String> = items.chunks(2).map(|p| format!("{p:?}")).collect();
                pairs.sort();
                pairs
            }
            other => vec![format!("{other:?}")],
        };
        out.append(&mut text);
    }
    out
}

#[test]
fn every_corpus_payload_restores() {
    for body in CORPUS.iter() {
        let payload = seal(body.clone());
        assert!(
            value::decode(&payload, &Limits::default()).is_some(),
            "{body:x?}"
        );
    }
}
