//! Payloads of a real redis-server 7.0.15, restored; the footer.

use super::*;
use crate::config::Limits;
use crate::value::Value;

#[test]
fn crc64_is_redis_one() {
    // crc64.c's own test vector.
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
}

#[test]
fn footer_is_checked() {
    let sealed = seal(vec![0, 1, b'a']);
    assert_eq!(open(&sealed), Some(&[0, 1, b'a'][..]));
    let mut wrong = sealed.clone();
    wrong[1] = 2;
    assert_eq!(open(&wrong), None);
    assert_eq!(open(&sealed[..9]), None);
    // A later RDB version is refused even with a right checksum.
    let mut later = vec![0, 1, b'a', 11, 0];
    let crc = crc64(&later);
    later.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(open(&later), None);
}

#[test]
fn a_real_hash_listpack_restores() {
    // DUMP of HSET h a 1 b hello on redis-server 7.0.15.
    let payload =
        b"\x10\x16\x16\x00\x00\x00\x04\x00\x81a\x02\x01\x01\x81b\x02\x85hello\x06\xff\n\x00\xe8\xc5\xfe\x99\xee\x07\x95]";
    let body = open(payload).expect("footer");
    let (value, _) = value::decode(body, &Limits::default()).expect("decodes");
    let Value::Hash(h) = value else {
        panic!("a hash")
    };
    assert_eq!(h.get(b"a"), Some(&b"1"[..]));
    assert_eq!(h.get(b"b"), Some(&b"hello"[..]));
}

#[test]
fn lengths_and_strings() {
    for n in [
        0u64,
        63,
        64,
        16383,
        16384,
        u32::MAX as u64,
        u32::MAX as u64 + 1,
    ] {
        let mut out = Vec::new();
        put_length(&mut out, n);
        assert_eq!(Reader::new(&out).length(), Some(n));
    }
    for s in [
        &b""[..],
        b"0",
        b"-128",
        b"127",
        b"32767",
        b"-32769",
        b"2147483647",
        b"2147483648",
        b"01",
        b"hello",
    ] {
        for compress in [false, true] {
            let mut w = Writer::new(compress);
            w.string(s);
            assert_eq!(Reader::new(&w.finish()).bytes().as_deref(), Some(s));
        }
    }
    let text = b"compress me, compress me, compress me".to_vec();
    let mut w = Writer::new(true);
    w.string(&text);
    let out = w.finish();
    assert_eq!(out[0], 0xc3, "LZF-compressed");
    assert_eq!(Reader::new(&out).bytes(), Some(text));
    // A length the bytes cannot hold.
    let mut out = Vec::new();
    put_length(&mut out, 1 << 40);
    assert_eq!(Reader::new(&out).count(), None);
    assert_eq!(Reader::new(&out).string(), None);
}
