//! The expected replies below were observed on redis-server 7.0.15, but
//! for a string beyond the machine's memory (where Redis would die) and the
//! last two tests, which check the scans and the overflow rules against
//! plain models.

use rand::{Rng, SeedableRng};
use redis::Value;

use super::{bit_range, count_ones, find_bit};
use crate::command::test_util::*;

const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BAD_BIT: &str = "ERR bit is not an integer or out of range";
const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

fn nil_or_ints(items: &[Option<i64>]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|i| i.map_or(Value::Nil, Value::Int))
            .collect(),
    )
}

#[test]
fn setbit_getbit() {
    let mut c = conn();
    assert_eq!(run(&mut c, "SETBIT k 7 1"), int(0));
    assert_eq!(run(&mut c, "GET k"), bulk("\x01"));
    assert_eq!(run(&mut c, "SETBIT k 7 1"), int(1));
    assert_eq!(run(&mut c, "SETBIT k 7 0"), int(1));
    assert_eq!(run(&mut c, "SETBIT k 100 1"), int(0));
    assert_eq!(run(&mut c, "STRLEN k"), int(13));
    assert_eq!(run(&mut c, "GETBIT k 100"), int(1));
    assert_eq!(run(&mut c, "GETBIT k 101"), int(0));
    assert_eq!(run(&mut c, "GETBIT k 4294967295"), int(0));
    assert_eq!(run(&mut c, "GETBIT nokey 0"), int(0));
    // A clear bit on a new key still makes the key.
    assert_eq!(run(&mut c, "SETBIT new 9 0"), int(0));
    assert_eq!(run(&mut c, "STRLEN new"), int(2));
    // Offsets: checked before the bit, the bit before the key's type.
    run(&mut c, "HSET h f v");
    for (line, expected) in [
        ("SETBIT k -1 1", BAD_OFFSET),
        ("SETBIT k abc 1", BAD_OFFSET),
        ("SETBIT k 01 1", BAD_OFFSET),
        ("SETBIT k 4294967296 1", BAD_OFFSET),
        ("SETBIT k 9223372036854775807 1", BAD_OFFSET),
        ("SETBIT k 0 2", BAD_BIT),
        ("SETBIT k 0 -1", BAD_BIT),
        ("SETBIT k 0 x", BAD_BIT),
        ("SETBIT h -1 2", BAD_OFFSET),
        ("SETBIT h 0 2", BAD_BIT),
        ("SETBIT h 0 1", WRONGTYPE),
        ("GETBIT h x", BAD_OFFSET),
        ("GETBIT h 0", WRONGTYPE),
        ("GETBIT k 4294967296", BAD_OFFSET),
    ] {
        assert_eq!(run(&mut c, line), err(expected), "{line}");
    }
}

#[test]
fn setbit_makes_raw_strings_and_keeps_the_ttl() {
    let mut c = conn();
    run(&mut c, "SET n 12 EX 100");
    assert_eq!(run(&mut c, "GETBIT n 2"), int(1));
    assert_eq!(run(&mut c, "OBJECT ENCODING n"), bulk("int"));
    // Unchanged, yet unshared as a raw string.
    assert_eq!(run(&mut c, "SETBIT n 0 0"), int(0));
    assert_eq!(run(&mut c, "OBJECT ENCODING n"), bulk("raw"));
    assert_eq!(run(&mut c, "TTL n"), int(100));
    run(&mut c, "SETBIT fresh 0 1");
    assert_eq!(run(&mut c, "OBJECT ENCODING fresh"), bulk("raw"));
}

/// The offset limit is `proto-max-bulk-len`: the largest string SETBIT
/// makes is exactly that long, while BITFIELD may reach a field past it.
#[test]
fn offsets_obey_proto_max_bulk_len() {
    let mut c = conn();
    assert_eq!(
        run(&mut c, "CONFIG SET proto-max-bulk-len 1048576"),
        Value::Okay
    );
    assert_eq!(run(&mut c, "SETBIT k 8388608 1"), err(BAD_OFFSET));
    assert_eq!(run(&mut c, "SETBIT k 8388607 1"), int(0));
    assert_eq!(run(&mut c, "STRLEN k"), int(1_048_576));
    assert_eq!(run(&mut c, "BITCOUNT k"), int(1));
    assert_eq!(run(&mut c, "BITPOS k 1"), int(8_388_607));
    assert_eq!(run(&mut c, "BITFIELD k GET u8 #1048576"), err(BAD_OFFSET));
    assert_eq!(
        run(&mut c, "BITFIELD k SET i64 8388607 -1"),
        ints(&[i64::MIN])
    );
    assert_eq!(run(&mut c, "STRLEN k"), int(1_048_584));
}

/// With the limit configured beyond any memory, a bit far out is refused
/// with an error rather than aborting the process, and no key is left.
#[test]
fn a_string_beyond_memory_is_refused() {
    let mut c = conn();
    run(&mut c, "CONFIG SET proto-max-bulk-len 9223372036854775807");
    let oom = err("ERR out of memory growing the string");
    assert_eq!(run(&mut c, "SETBIT k 9223372036854775807 1"), oom);
    assert_eq!(run(&mut c, "BITFIELD k SET i64 #144115188075855871 1"), oom);
    assert_eq!(run(&mut c, "EXISTS k"), int(0));
    assert_eq!(run(&mut c, "GETBIT k 9223372036854775807"), int(0));
    run(&mut c, "SET k x");
    assert_eq!(run(&mut c, "SETBIT k 9223372036854775807 1"), oom);
    assert_eq!(run(&mut c, "GET k"), bulk("x"));
}

#[test]
fn bitcount() {
    let mut c = conn();
    run(&mut c, "SET s foobar");
    for (range, expected) in [
        ("", 26),
        (" 0 -1", 26),
        (" 1 1", 6),
        (" 1 -2", 18),
        (" -2 1", 0),
        (" 0 1000", 26),
        (" 4 10", 7),
        (" 100 200", 0),
        (" -6 -7", 0),
        (" 0 -1 bit", 26),
        (" 0 -1 BYTE", 26),
        (" 10 14 bit", 4),
        (" 3 29 bit", 16),
        (" 10 -34 bit", 4),
        (" 5 5 bit", 1),
        (" 48 100 bit", 0),
        (" -9223372036854775808 9223372036854775807 bit", 26),
    ] {
        assert_eq!(
            run(&mut c, &format!("BITCOUNT s{range}")),
            int(expected),
            "{range}"
        );
    }
    // The key first, then the indexes, then out-of-order negative indexes
    // answer 0 before the unit is read.
    run(&mut c, "HSET h f v");
    assert_eq!(run(&mut c, "BITCOUNT nokey a b c d"), int(0));
    assert_eq!(run(&mut c, "BITCOUNT h a"), err(WRONGTYPE));
    assert_eq!(run(&mut c, "BITCOUNT s 0"), err(SYNTAX));
    assert_eq!(run(&mut c, "BITCOUNT s a b foo"), err(NOT_INT));
    assert_eq!(run(&mut c, "BITCOUNT s -1 -2 foo"), int(0));
    assert_eq!(run(&mut c, "BITCOUNT s -2 -1 foo"), err(SYNTAX));
    assert_eq!(run(&mut c, "BITCOUNT s 0 1 bit x"), err(SYNTAX));
    run_args(&mut c, &["SET", "e", ""]);
    assert_eq!(run(&mut c, "BITCOUNT e 0 -1 bit"), int(0));
}

#[test]
fn bitpos() {
    let mut c = conn();
    run_args(&mut c, &["SET", "s", "\x00\x00\x0f\u{7f}"]);
    for (args, expected) in [
        ("1", 20),
        ("1 3", 25),
        ("1 0 1", -1),
        ("1 3 2", -1),
        ("1 21 -1 bit", 21),
        ("1 24 24 bit", -1),
        ("1 -100 -1 bit", 20),
        ("0", 0),
        ("0 2", 16),
        ("0 2 2", 16),
        ("0 20 23 bit", -1),
        ("0 20 24 bit", 24),
    ] {
        assert_eq!(
            run(&mut c, &format!("BITPOS s {args}")),
            int(expected),
            "{args}"
        );
    }
    // A clear bit past an all-ones string: just past it when no end was
    // given, not found when it was.
    run_args(&mut c, &["SET", "f", "\u{7f}"]);
    run(&mut c, "SETBIT f 0 1");
    assert_eq!(run(&mut c, "BITPOS f 0"), int(8));
    assert_eq!(run(&mut c, "BITPOS f 0 0"), int(8));
    assert_eq!(run(&mut c, "BITPOS f 0 0 -1"), int(-1));
    assert_eq!(run(&mut c, "BITPOS f 0 1"), int(-1));
    assert_eq!(run(&mut c, "BITPOS nokey 0"), int(0));
    assert_eq!(run(&mut c, "BITPOS nokey 1 x"), int(-1));
    run_args(&mut c, &["SET", "e", ""]);
    assert_eq!(run(&mut c, "BITPOS e 0"), int(-1));
    // The bit first, then the key, then start, unit and end.
    run(&mut c, "HSET h f v");
    assert_eq!(
        run(&mut c, "BITPOS nokey 2"),
        err("ERR The bit argument must be 1 or 0.")
    );
    assert_eq!(run(&mut c, "BITPOS h x"), err(NOT_INT));
    assert_eq!(run(&mut c, "BITPOS h 1 x"), err(WRONGTYPE));
    assert_eq!(run(&mut c, "BITPOS s 1 0 x foo"), err(SYNTAX));
    assert_eq!(run(&mut c, "BITPOS s 1 0 x bit"), err(NOT_INT));
    assert_eq!(run(&mut c, "BITPOS s 1 0 1 bit x"), err(SYNTAX));
}

#[test]
fn bitop() {
    let mut c = conn();
    run_args(&mut c, &["SET", "a", "\u{7f}\x0f"]);
    run_args(&mut c, &["SET", "b", "\x0f"]);
    assert_eq!(run(&mut c, "BITOP AND d a b"), int(2));
    assert_eq!(run(&mut c, "GET d"), bulk("\x0f\x00"));
    assert_eq!(run(&mut c, "BITOP or d a b nokey"), int(2));
    assert_eq!(run(&mut c, "GET d"), bulk("\u{7f}\x0f"));
    assert_eq!(run(&mut c, "BITOP XOR d a b"), int(2));
    assert_eq!(run(&mut c, "GET d"), bulk("\x70\x0f"));
    assert_eq!(run(&mut c, "BITOP NOT d b"), int(1));
    assert_eq!(run(&mut c, "STRLEN d"), int(1));
    assert_eq!(run(&mut c, "BITCOUNT d"), int(4));
    assert_eq!(run(&mut c, "OBJECT ENCODING d"), bulk("raw"));
    // All sources empty: the destination is deleted.
    run(&mut c, "SET d x EX 100");
    assert_eq!(run(&mut c, "BITOP AND d nokey"), int(0));
    assert_eq!(run(&mut c, "EXISTS d"), int(0));
    // The destination's TTL and type do not matter.
    run(&mut c, "HSET d f v");
    assert_eq!(run(&mut c, "BITOP OR d b"), int(1));
    assert_eq!(run(&mut c, "TTL d"), int(-1));
    assert_eq!(run(&mut c, "BITOP AND d nokey d b"), int(1));
    run(&mut c, "HSET h f v");
    assert_eq!(run(&mut c, "BITOP OR d nokey h"), err(WRONGTYPE));
    assert_eq!(run(&mut c, "BITOP FOO d a"), err(SYNTAX));
    assert_eq!(
        run(&mut c, "BITOP NOT d a b"),
        err("ERR BITOP NOT must be called with a single source key.")
    );
}

#[test]
fn bitfield_basics() {
    let mut c = conn();
    assert_eq!(
        run(&mut c, "BITFIELD k SET i8 0 -100 GET i8 0 GET u8 0"),
        ints(&[0, -100, 156])
    );
    assert_eq!(
        run(
            &mut c,
            "BITFIELD k SET u8 0 255 GET u8 0 SET i5 3 -7 GET i5 3"
        ),
        ints(&[156, 255, -1, -7])
    );
    assert_eq!(
        run(
            &mut c,
            "BITFIELD k SET i8 #1 1 SET i8 #2 2 GET i16 8 GET u4 #4"
        ),
        ints(&[0, 0, 258, 0])
    );
    // The regression of Redis issue #3564.
    run(&mut c, "DEL k");
    assert_eq!(
        run(
            &mut c,
            "BITFIELD k SET i8 0 10 SET i8 64 10 INCRBY i8 10 99900"
        ),
        ints(&[0, 0, 60])
    );
    assert_eq!(run(&mut c, "BITFIELD k"), empty());
    assert_eq!(run(&mut c, "BITFIELD nokey GET u8 0"), ints(&[0]));
    assert_eq!(run(&mut c, "EXISTS nokey"), int(0));
    assert_eq!(run(&mut c, "BITFIELD_RO k GET i8 0"), ints(&[10]));
    assert_eq!(
        run(&mut c, "BITFIELD_RO k GET u8 0 SET u8 0 1"),
        err("ERR BITFIELD_RO only supports the GET subcommand")
    );
    // `#N` products wrap as Redis's long long does: 2^61 * 8 is offset 0.
    assert_eq!(
        run(&mut c, "BITFIELD k GET u8 #2305843009213693952"),
        ints(&[10])
    );
    assert_eq!(
        run(&mut c, "BITFIELD k GET i8 #9223372036854775807"),
        err(BAD_OFFSET)
    );
}

#[test]
fn bitfield_errors_in_order() {
    let mut c = conn();
    run(&mut c, "HSET h f v");
    for (line, expected) in [
        ("BITFIELD h GET u64 0", BAD_TYPE),
        ("BITFIELD h GET i65 0", BAD_TYPE),
        ("BITFIELD h GET i0 0", BAD_TYPE),
        ("BITFIELD h GET I8 0", BAD_TYPE),
        ("BITFIELD h GET i08 0", BAD_TYPE),
        ("BITFIELD h GET i8 -1", BAD_OFFSET),
        ("BITFIELD h GET i8 #", BAD_OFFSET),
        ("BITFIELD h GET i8 #-1", BAD_OFFSET),
        ("BITFIELD h GET i8", SYNTAX),
        ("BITFIELD h SET i8 0", SYNTAX),
        ("BITFIELD h FOO", SYNTAX),
        ("BITFIELD h OVERFLOW", SYNTAX),
        (
            "BITFIELD h OVERFLOW foo",
            "ERR Invalid OVERFLOW type specified",
        ),
        ("BITFIELD h SET i8 0 x", NOT_INT),
        ("BITFIELD h GET i8 0 SET i8 0 x", NOT_INT),
        (
            "BITFIELD_RO h SET i8 0 1",
            "ERR BITFIELD_RO only supports the GET subcommand",
        ),
        ("BITFIELD h", WRONGTYPE),
        ("BITFIELD h GET i8 0", WRONGTYPE),
        ("BITFIELD h SET i8 0 1", WRONGTYPE),
    ] {
        assert_eq!(run(&mut c, line), err(expected), "{line}");
    }
    assert_eq!(run(&mut c, "BITFIELD k GET u8 0 FOO"), err(SYNTAX));
    assert_eq!(run(&mut c, "EXISTS k"), int(0));
    // The type's width ends at a NUL byte, as the C string does.
    assert_eq!(
        run_args(&mut c, &["BITFIELD", "k", "GET", "i8\0x", "0"]),
        ints(&[0])
    );
}

#[test]
fn bitfield_overflow() {
    let mut c = conn();
    let mut check = |line: &str, expected: &[Option<i64>]| {
        assert_eq!(run(&mut c, line), nil_or_ints(expected), "{line}");
    };
    check("BITFIELD u SET u8 0 255 INCRBY u8 0 1", &[Some(0), Some(0)]);
    check("BITFIELD u INCRBY u8 0 -1", &[Some(255)]);
    check(
        "BITFIELD u OVERFLOW SAT INCRBY u8 0 1 INCRBY u8 0 -300 INCRBY u8 0 -1",
        &[Some(255), Some(0), Some(0)],
    );
    check(
        "BITFIELD u OVERFLOW FAIL INCRBY u8 0 -1 INCRBY u8 0 255 INCRBY u8 0 1",
        &[None, Some(255), None],
    );
    // SET checks the new value read as unsigned: -1 overflows upwards.
    check(
        "BITFIELD u OVERFLOW SAT SET u8 0 -1 GET u8 0 SET u8 0 256 GET u8 0",
        &[Some(255), Some(255), Some(255), Some(255)],
    );
    check(
        "BITFIELD u SET u8 0 -1 GET u8 0 SET u8 0 300",
        &[Some(255), Some(255), Some(255)],
    );
    check("BITFIELD u GET u8 0", &[Some(44)]);
    check(
        "BITFIELD u SET u63 0 9223372036854775807 INCRBY u63 0 1",
        &[Some(44 << 55), Some(0)],
    );
    check(
        "BITFIELD s SET i8 0 127 INCRBY i8 0 1",
        &[Some(0), Some(-128)],
    );
    check(
        "BITFIELD s OVERFLOW SAT INCRBY i8 0 -1 INCRBY i8 0 1000 INCRBY i8 0 -1000",
        &[Some(-128), Some(127), Some(-128)],
    );
    check(
        "BITFIELD s OVERFLOW FAIL INCRBY i8 0 -1 GET i8 0",
        &[None, Some(-128)],
    );
    check(
        "BITFIELD s SET i8 0 128 GET i8 0",
        &[Some(-128), Some(-128)],
    );
    // Far below the range, max - value wraps and Redis sees an overflow
    // upwards: SAT stores the maximum.
    check(
        "BITFIELD s OVERFLOW SAT SET i8 0 -9223372036854775808 GET i8 0",
        &[Some(-128), Some(127)],
    );
    check(
        "BITFIELD s OVERFLOW SAT SET i8 0 -9223372036854775680 GET i8 0",
        &[Some(127), Some(-128)],
    );
    check(
        "BITFIELD s SET i64 0 9223372036854775807 INCRBY i64 0 1 INCRBY i64 0 -1",
        &[Some(-128 << 56), Some(i64::MIN), Some(i64::MAX)],
    );
    check(
        "BITFIELD s OVERFLOW SAT INCRBY i64 0 1 SET i64 0 -1 INCRBY i64 0 -9223372036854775808",
        &[Some(i64::MAX), Some(i64::MAX), Some(i64::MIN)],
    );
    check(
        "BITFIELD s OVERFLOW FAIL SET i64 0 1 INCRBY i64 0 9223372036854775807",
        &[Some(i64::MIN), None],
    );
}

/// The string is grown once to the farthest write, even one that FAIL
/// refuses; a new key made that way is not signalled to WATCH.
#[test]
fn bitfield_growth() {
    let mut c = conn();
    assert_eq!(
        run(&mut c, "BITFIELD k OVERFLOW FAIL SET u8 100 256"),
        nil_or_ints(&[None])
    );
    assert_eq!(run(&mut c, "STRLEN k"), int(14));
    assert_eq!(run(&mut c, "OBJECT ENCODING k"), bulk("raw"));
    run(&mut c, "SET s ab EX 100");
    assert_eq!(
        run(&mut c, "BITFIELD s GET u8 #9 SET u4 #8 1"),
        ints(&[0, 0])
    );
    assert_eq!(run(&mut c, "STRLEN s"), int(5));
    assert_eq!(run(&mut c, "TTL s"), int(100));
    assert_watch(
        &[],
        "new",
        "BITFIELD new OVERFLOW FAIL INCRBY u8 0 256",
        false,
    );
}

#[test]
fn watch_sees_only_real_changes() {
    let setup = ["SETBIT k 0 1", "SET s foo", "SET d x"];
    for (change, touches) in [
        ("SETBIT k 0 1", false),
        ("SETBIT k 1 0", false),
        ("SETBIT k 0 0", true),
        ("SETBIT k 8 0", true),
        ("GETBIT k 0", false),
        ("BITCOUNT k", false),
        ("BITPOS k 1", false),
        ("BITFIELD k GET u8 0", false),
        ("BITFIELD k SET u8 0 128", false),
        ("BITFIELD k INCRBY u8 0 0", false),
        ("BITFIELD k SET u8 0 1", true),
        ("BITFIELD k SET u1 8 0", true),
        ("BITFIELD k OVERFLOW FAIL INCRBY u8 0 128", false),
        ("BITOP AND k nokey", true),
        ("BITOP AND d nokey", true),
        ("BITOP AND k s", true),
        ("SETBIT new 0 0", true),
    ] {
        let key = if change.contains(" d ") {
            "d"
        } else if change.contains("new") {
            "new"
        } else {
            "k"
        };
        assert_watch(&setup, key, change, touches);
    }
    assert_watch(&[], "d", "BITOP AND d nokey", false);
}

/// The word-at-a-time scans agree with a bit-by-bit reading on random
/// strings and ranges.
#[test]
fn scans_agree_with_bit_by_bit() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for _ in 0..2000 {
        let len = rng.random_range(0..40);
        let dense = rng.random_bool(0.5);
        let s: Vec<u8> = (0..len)
            .map(|_| match rng.random_range(0..4) {
                0 => rng.random(),
                _ if dense => 0xFF,
                _ => 0,
            })
            .collect();
        let bit_at = |i: u64| s[(i / 8) as usize] & (0x80 >> (i % 8)) != 0;
        let bits = len as i64 * 8;
        let start = rng.random_range(-bits - 3..bits + 3);
        let end = rng.random_range(-bits - 3..bits + 3);
        let in_bits = rng.random_bool(0.5);
        let Some((first, last)) = bit_range(start, end, s.len(), in_bits) else {
            continue;
        };
        assert!(last < bits as u64, "{start} {end} {in_bits} {len}");
        let ones = (first..=last).filter(|&i| bit_at(i)).count() as u64;
        assert_eq!(count_ones(&s, first, last), ones, "{s:?} {first} {last}");
        for bit in [false, true] {
            let expected = (first..=last).find(|&i| bit_at(i) == bit);
            assert_eq!(
                find_bit(&s, first, last, bit),
                expected,
                "{s:?} {first} {last} {bit}"
            );
        }
    }
}

/// INCRBY on a value within its field: an overflow exactly when the exact
/// sum leaves the field's range; WRAP keeps the low bits, SAT clamps.
#[test]
fn incrby_overflow_matches_exact_arithmetic() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut c = conn();
    for _ in 0..500 {
        let signed = rng.random_bool(0.5);
        let bits: u32 = rng.random_range(1..=if signed { 64 } else { 63 });
        let (min, max): (i128, i128) = if signed {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        let value = rng.random_range(min..=max);
        let incr: i64 = match rng.random_range(0..3) {
            0 => rng.random(),
            1 => rng.random_range(-300..300),
            _ => i64::try_from(max - value + 1).unwrap_or(i64::MAX),
        };
        let sum = value + i128::from(incr);
        let span = max - min + 1;
        let wrapped = (sum - min).rem_euclid(span) + min;
        let saturated = sum.clamp(min, max);
        let ty = format!("{}{bits}", if signed { 'i' } else { 'u' });
        for (mode, expected) in [
            ("WRAP", Some(wrapped)),
            ("SAT", Some(saturated)),
            ("FAIL", (min..=max).contains(&sum).then_some(sum)),
        ] {
            let line =
                format!("BITFIELD k SET {ty} 0 {value} OVERFLOW {mode} INCRBY {ty} 0 {incr}");
            let Value::Array(replies) = run(&mut c, &line) else {
                panic!("{line}");
            };
            let got = match replies.get(1) {
                Some(Value::Int(n)) => Some(i128::from(*n)),
                _ => None,
            };
            assert_eq!(got, expected, "{line}");
        }
    }
}
