//! SORT and SORT_RO, following Redis 7.0's sort.c step by step.
//!
//! - The options are parsed first, left to right (a later ASC/DESC wins, a
//!   bad LIMIT number is "value is not an integer or out of range", STORE
//!   is a syntax error in SORT_RO); only then is the key looked up, so a
//!   syntax error beats WRONGTYPE. A missing key is an empty list.
//! - `BY` a pattern without `*` (`BY nosort`) means "do not sort": a list
//!   and a sorted set keep their own order (DESC walks it backwards, LIMIT
//!   takes a window of it) and a set its iteration order, except with
//!   STORE, where a set is sorted ALPHA so that the stored list is
//!   deterministic, as Redis does.
//! - Numeric sort reads each weight the way Redis's `strtod` check does
//!   ([`weight`]): leading spaces are allowed, an empty string is 0, and
//!   anything not fully converted, NaN, or out of range (overflow and
//!   subnormal underflow, glibc's ERANGE) makes the whole command fail
//!   with "One or more scores can't be converted into double". A missing
//!   BY key weighs 0. Equal weights are ordered by the elements' bytes, so
//!   the result is deterministic; DESC reverses the whole comparison.
//! - ALPHA compares bytes (Redis's `strcoll`, in the C locale the server
//!   runs with, which stops at a NUL byte; with STORE Redis compares the
//!   full binary strings). With a BY pattern, a missing weight sorts
//!   first.
//! - Patterns ([`lookup`]): `#` is the element itself; otherwise the first
//!   `*` is replaced by the element, and a `->field` after it (with a
//!   non-empty field) reads that hash field. A key of the wrong type, or a
//!   pattern without `*`, reads as missing (a nil GET).
//! - STORE writes a list (nil GETs become empty strings), replacing the
//!   destination whatever its type and TTL, or deletes it when the result
//!   is empty; it replies with the number of stored elements.
//!
//! Where Redis leaves the order open (a set's iteration order, ties of
//! ALPHA BY weights), ours is a stable sort of the load order.

use std::cmp::Ordering;

use super::hash_expiry::expire_fields;
use super::{CmdResult, Ctx, Spec};
use crate::args::{int_arg, is};
use crate::error::CmdError;
use crate::float::parse_double;
use crate::notify::class;
use crate::reply;
use crate::value::{Bytes, Value};

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "sort",
        arity: -2,
        handler: sort,
    },
    Spec {
        name: "sort_ro",
        arity: -2,
        handler: sort_ro,
    },
];

/// The error of a weight that is not a number.
const NOT_DOUBLE: &str = "One or more scores can't be converted into double";

/// The parsed options of one SORT.
struct Options<'a> {
    desc: bool,
    alpha: bool,
    limit: Option<(i64, i64)>,
    by: Option<&'a [u8]>,
    gets: Vec<&'a [u8]>,
    store: Option<&'a [u8]>,
}

/// Parses `args[2..]` as sortCommandGeneric does: an option whose
/// arguments are missing is a syntax error. In cluster mode, BY with a
/// pattern and GET (which read other keys, in any slot) are refused.
/// Without read access to every key (ACL: `every_key`), BY with a
/// pattern and GET are refused too.
fn parse<'a>(
    args: &[&'a [u8]],
    readonly: bool,
    cluster: bool,
    every_key: bool,
) -> Result<Options<'a>, CmdError> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: None,
        by: None,
        gets: Vec::new(),
        store: None,
    };
    let mut j = 2;
    while let Some(&arg) = args.get(j) {
        let left = args.len() - j - 1;
        if is(arg, "asc") {
            o.desc = false;
        } else if is(arg, "desc") {
            o.desc = true;
        } else if is(arg, "alpha") {
            o.alpha = true;
        } else if is(arg, "limit") && left >= 2 {
            o.limit = Some((int_arg(args[j + 1])?, int_arg(args[j + 2])?));
            j += 2;
        } else if !readonly && is(arg, "store") && left >= 1 {
            o.store = Some(args[j + 1]);
            j += 1;
        } else if is(arg, "by") && left >= 1 {
            if cluster && args[j + 1].contains(&b'*') {
                return Err(CmdError::err("BY option of SORT denied in Cluster mode."));
            }
            if !every_key && args[j + 1].contains(&b'*') {
                return Err(CmdError::err(
                    "BY option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            o.by = Some(args[j + 1]);
            j += 1;
        } else if is(arg, "get") && left >= 1 {
            if cluster {
                return Err(CmdError::err("GET option of SORT denied in Cluster mode."));
            }
            if !every_key {
                return Err(CmdError::err(
                    "GET option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            o.gets.push(args[j + 1]);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

fn sort(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, false)
}

fn sort_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, true)
}

/// What was sorted: its type decides how "do not sort" behaves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    List,
    Set,
    ZSet,
}

/// The elements of the value at `key` in their own order (a sorted set by
/// rank), with its type; a missing key is an empty list.
fn elements(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<(Source, Vec<Bytes>), CmdError> {
    Ok(match ctx.value(key) {
        None => (Source::List, Vec::new()),
        Some(Value::List(l)) => (Source::List, l.iter().map(<[u8]>::to_vec).collect()),
        Some(Value::Set(s)) => (Source::Set, s.iter().map(|m| m.into_owned()).collect()),
        Some(Value::ZSet(z)) => (Source::ZSet, z.iter().map(|(m, _)| m.to_vec()).collect()),
        Some(_) => return Err(CmdError::WrongType),
    })
}

/// The window `LIMIT offset count` selects among `len` elements, as
/// Redis clamps it (a negative count means "to the end").
fn window(limit: Option<(i64, i64)>, len: usize) -> std::ops::Range<usize> {
    let (offset, count) = limit.unwrap_or((0, -1));
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let start = offset.clamp(0, len_i);
    if start >= len_i {
        return 0..0;
    }
    let count = count.clamp(-1, len_i);
    let end = if count < 0 {
        len_i
    } else {
        start.saturating_add(count).min(len_i)
    };
    let as_usize = |n: i64| usize::try_from(n).unwrap_or(0);
    as_usize(start)..as_usize(end.max(start))
}

fn run(ctx: &mut Ctx<'_>, args: &[&[u8]], readonly: bool) -> CmdResult {
    let every_key = crate::acl::caller_reads_every_key(&ctx.store.acl, args);
    let mut o = parse(args, readonly, ctx.store.cluster_enabled, every_key)?;
    let (source, mut items) = elements(ctx, args[1])?;
    let mut dontsort = o.by.is_some_and(|p| !p.contains(&b'*'));
    // Redis sorts a set anyway where its order must be the same
    // everywhere: stored, or returned to a script.
    if dontsort && source == Source::Set && (o.store.is_some() || ctx.store.in_script) {
        dontsort = false;
        o.alpha = true;
        o.by = None;
    }
    if dontsort {
        if o.desc && source != Source::Set {
            items.reverse();
        }
    } else {
        sort_items(ctx, &o, &mut items)?;
    }
    let range = window(o.limit, items.len());
    let chosen = items.get(range).unwrap_or_default();
    let output = output(ctx, &o.gets, chosen);
    match o.store {
        None => Ok(reply::array(
            output
                .into_iter()
                .map(|v| v.map_or_else(reply::nil, reply::bulk))
                .collect(),
        )),
        Some(dest) => {
            let stored = crate::value::list::ListValue::from_elements(
                output.into_iter().map(Option::unwrap_or_default),
            );
            let n = stored.len();
            // Redis counts a change per element stored, or one for the
            // destination deleted.
            if n > 0 {
                ctx.set(dest, Value::List(stored), false);
                ctx.notify(class::LIST, "sortstore", dest);
                ctx.changes(n);
            } else if ctx.remove(dest) {
                ctx.modified(dest);
                ctx.notify(class::GENERIC, "del", dest);
                ctx.changes(1);
            }
            Ok(reply::int(n))
        }
    }
}

/// The reply's elements: each chosen element, or the GET patterns' values
/// for each (`None`: missing).
fn output(ctx: &mut Ctx<'_>, gets: &[&[u8]], chosen: &[Bytes]) -> Vec<Option<Bytes>> {
    if gets.is_empty() {
        return chosen.iter().cloned().map(Some).collect();
    }
    let mut out = Vec::with_capacity(chosen.len().saturating_mul(gets.len()));
    for element in chosen {
        for pattern in gets {
            out.push(lookup(ctx, pattern, element));
        }
    }
    out
}

/// What one element is sorted by.
enum Weight {
    /// Numeric: the weight (0 when the BY key is missing).
    Number(f64),
    /// ALPHA with BY: the weight's bytes, `None` (first) when missing.
    Text(Option<Bytes>),
    /// ALPHA without BY: the element itself.
    Element,
}

/// Sorts `items` by their weights; fails if a numeric weight is not a
/// number.
fn sort_items(ctx: &mut Ctx<'_>, o: &Options<'_>, items: &mut Vec<Bytes>) -> Result<(), CmdError> {
    let mut bad = false;
    let mut weighted: Vec<(Weight, Bytes)> = Vec::with_capacity(items.len());
    for element in items.drain(..) {
        let by = match o.by {
            Some(pattern) => lookup(ctx, pattern, &element),
            None => None,
        };
        let w = match (o.alpha, o.by.is_some()) {
            (true, true) => Weight::Text(by),
            (true, false) => Weight::Element,
            (false, has_by) => {
                let text = if has_by {
                    by.as_deref()
                } else {
                    Some(&element[..])
                };
                match text.map(weight) {
                    Some(Some(n)) => Weight::Number(n),
                    Some(None) => {
                        bad = true;
                        Weight::Number(0.0)
                    }
                    None => Weight::Number(0.0),
                }
            }
        };
        weighted.push((w, element));
    }
    if bad {
        return Err(CmdError::err(NOT_DOUBLE));
    }
    let store = o.store.is_some();
    weighted.sort_by(|(wa, a), (wb, b)| {
        let cmp = compare(wa, a, wb, b, store);
        if o.desc {
            cmp.reverse()
        } else {
            cmp
        }
    });
    items.extend(weighted.into_iter().map(|(_, e)| e));
    Ok(())
}

/// Redis's `sortCompare`, ascending.
fn compare(wa: &Weight, a: &[u8], wb: &Weight, b: &[u8], store: bool) -> Ordering {
    let text = |x: &[u8], y: &[u8]| {
        if store {
            x.cmp(y)
        } else {
            c_str(x).cmp(c_str(y))
        }
    };
    match (wa, wb) {
        (Weight::Number(x), Weight::Number(y)) => x
            .partial_cmp(y)
            .filter(|o| o.is_ne())
            .unwrap_or_else(|| a.cmp(b)),
        (Weight::Text(x), Weight::Text(y)) => match (x, y) {
            (Some(x), Some(y)) => text(x, y),
            (x, y) => x.is_some().cmp(&y.is_some()),
        },
        _ => text(a, b),
    }
}

/// A byte string as C's string functions see it: up to its first NUL.
fn c_str(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

/// A numeric weight as SORT reads it with `strtod`: the C string (up to a
/// NUL) after leading white space must convert entirely; the empty string
/// is 0 (nothing to convert, nothing left over); NaN and ERANGE results
/// (overflow, and glibc's underflow to a subnormal or zero) are refused.
fn weight(bytes: &[u8]) -> Option<f64> {
    let text = c_str(bytes);
    if text.is_empty() {
        return Some(0.0);
    }
    let start = text.iter().position(|b| !is_c_space(*b))?;
    let value = parse_double(&text[start..])?;
    (value == 0.0 || value.is_normal() || value.is_infinite()).then_some(value)
}

/// C's `isspace` in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The value a BY or GET pattern names for `element` (Redis's
/// `lookupKeyByPattern`): `#` is the element; the first `*` is replaced
/// by it, and a non-empty `->field` after the `*` reads a hash field.
///
/// In Redis Cluster, SORT refuses BY and GET patterns (the keys they name
/// may live in other slots); this engine has no cluster mode.
fn lookup(ctx: &mut Ctx<'_>, pattern: &[u8], element: &[u8]) -> Option<Bytes> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let after = &pattern[star + 1..];
    let (postfix, field) = match after.windows(2).position(|w| w == b"->") {
        Some(arrow) if arrow + 2 < after.len() => (&after[..arrow], Some(&after[arrow + 2..])),
        _ => (after, None),
    };
    let mut key = Vec::with_capacity(pattern.len() + element.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(postfix);
    let Some(field) = field else {
        return match ctx.value(&key)? {
            Value::Str(s) => Some(s.to_vec()),
            _ => None,
        };
    };
    // The key is read first (a hit, even if its field's TTL then empties
    // it); a field past its TTL (Redis 7.4) is deleted on the way, as
    // Redis's `hashTypeGetValueObject` does for SORT and SORT_RO alike.
    if !ctx.contains(&key) {
        return None;
    }
    expire_fields(ctx, &key, &[field]);
    // Read once already: not another read.
    match ctx.value_for_write(&key)? {
        Value::Hash(h) => h.get(field).map(<[u8]>::to_vec),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use redis::Value;

    const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

    fn nil() -> Value {
        Value::Nil
    }

    #[test]
    fn numeric_sort_reads_weights_like_strtod() {
        let mut c = conn();
        run_args(
            &mut c,
            &["RPUSH", "l", " 5", "", "3", "0x10", "inf", "-inf", "+2"],
        );
        assert_eq!(
            run(&mut c, "SORT l"),
            bulks(&["-inf", "", "+2", "3", " 5", "0x10", "inf"])
        );
        for bad in ["1e-310", "1e400", "nan", "5 ", " ", "abc"] {
            let mut c = conn();
            run_args(&mut c, &["RPUSH", "b", "1", bad]);
            assert_eq!(run(&mut c, "SORT b"), err(NOT_DOUBLE), "{bad:?}");
            // No STORE happens either.
            assert_eq!(run(&mut c, "SORT b STORE d"), err(NOT_DOUBLE));
            assert_eq!(run(&mut c, "EXISTS d"), int(0));
            // Not sorting reads no weight.
            assert_eq!(run(&mut c, "SORT b BY nosort"), bulks(&["1", bad]));
        }
    }

    #[test]
    fn equal_scores_order_by_element_bytes_and_desc_reverses_all() {
        let mut c = conn();
        run(&mut c, "RPUSH l b a 1 c 01 1.0");
        assert_eq!(run(&mut c, "MSET w_a 1 w_b 1 w_c 0"), Value::Okay);
        assert_eq!(
            run(&mut c, "SORT l BY w_*"),
            bulks(&["01", "1", "1.0", "c", "a", "b"])
        );
        assert_eq!(
            run(&mut c, "SORT l BY w_* DESC"),
            bulks(&["b", "a", "c", "1.0", "1", "01"])
        );
        run(&mut c, "RPUSH n 2 01 1 1.0");
        assert_eq!(run(&mut c, "SORT n"), bulks(&["01", "1", "1.0", "2"]));
        assert_eq!(run(&mut c, "SORT n DESC"), bulks(&["2", "1.0", "1", "01"]));
    }

    #[test]
    fn alpha_compares_bytes() {
        let mut c = conn();
        run(&mut c, "SADD a b B a A 10 9 é e");
        let order = ["10", "9", "A", "B", "a", "b", "e", "é"];
        assert_eq!(run(&mut c, "SORT a ALPHA"), bulks(&order));
        assert_eq!(run(&mut c, "SORT a ALPHA STORE d"), int(8));
        assert_eq!(run(&mut c, "LRANGE d 0 -1"), bulks(&order));
        assert_eq!(
            run(&mut c, "SORT a ALPHA DESC LIMIT 0 2"),
            bulks(&["é", "e"])
        );
        // Not numbers: without ALPHA it fails.
        assert_eq!(run(&mut c, "SORT a"), err(NOT_DOUBLE));
    }

    #[test]
    fn by_and_get_patterns() {
        let mut c = conn();
        run(&mut c, "RPUSH l 3 1 2");
        run(&mut c, "MSET w_1 b w_2 a w_3 c");
        assert_eq!(
            run(&mut c, "SORT l BY w_* ALPHA GET # GET w_* GET nothing"),
            Value::Array(vec![
                bulk("2"),
                bulk("a"),
                nil(),
                bulk("1"),
                bulk("b"),
                nil(),
                bulk("3"),
                bulk("c"),
                nil(),
            ])
        );
        run(&mut c, "HSET h_1 f 30");
        run(&mut c, "HSET h_2 f 20");
        // A missing weight is 0; `*->` with no field names the key `1->`.
        assert_eq!(
            run(&mut c, "SORT l BY h_*->f GET h_*->f GET h_*->"),
            Value::Array(vec![nil(), nil(), bulk("20"), nil(), bulk("30"), nil()])
        );
        run(&mut c, "SET x_1-> s");
        assert_eq!(
            run(&mut c, "SORT l BY nosort GET x_*-> GET h_*->f GET w_*->f"),
            Value::Array(vec![
                nil(),
                nil(),
                nil(),
                bulk("s"),
                bulk("30"),
                nil(),
                nil(),
                bulk("20"),
                nil(),
            ])
        );
        // Only the first `*` is replaced; a key of the wrong type is nil.
        run(&mut c, "SET k1* v");
        assert_eq!(
            run(&mut c, "SORT l GET k*\\* GET k** GET h_*"),
            Value::Array(vec![
                nil(),
                bulk("v"),
                nil(),
                nil(),
                nil(),
                nil(),
                nil(),
                nil(),
                nil(),
            ])
        );
    }

    #[test]
    fn nosort_keeps_the_native_order_and_limits_windows() {
        let mut c = conn();
        run(&mut c, "RPUSH l 3 1 2");
        assert_eq!(run(&mut c, "SORT_RO l BY nosort"), bulks(&["3", "1", "2"]));
        assert_eq!(
            run(&mut c, "SORT_RO l BY nosort DESC LIMIT 1 5"),
            bulks(&["1", "3"])
        );
        run(&mut c, "ZADD z 3 a 1 b 2 c");
        assert_eq!(run(&mut c, "SORT z BY nosort"), bulks(&["b", "c", "a"]));
        assert_eq!(run(&mut c, "SORT z BY # DESC LIMIT 1 1"), bulks(&["c"]));
        assert_eq!(run(&mut c, "SORT z ALPHA"), bulks(&["a", "b", "c"]));
        // A set BY nosort with STORE is sorted ALPHA.
        run(&mut c, "SADD s c 10 b 9");
        assert_eq!(run(&mut c, "SORT s BY nosort STORE d"), int(4));
        assert_eq!(run(&mut c, "LRANGE d 0 -1"), bulks(&["10", "9", "b", "c"]));
        for (limit, want) in [
            ("0 0", &[][..]),
            ("-5 2", &["3", "1"][..]),
            ("2 -1", &["2"][..]),
            ("3 1", &[][..]),
            ("1 9223372036854775807", &["1", "2"][..]),
            (
                "-9223372036854775808 -9223372036854775808",
                &["3", "1", "2"][..],
            ),
        ] {
            assert_eq!(
                run(&mut c, &format!("SORT l BY nosort LIMIT {limit}")),
                bulks(want),
                "{limit}"
            );
        }
        assert_eq!(run(&mut c, "SORT l LIMIT 1 1"), bulks(&["2"]));
        assert_eq!(
            run(&mut c, "SORT l LIMIT 1 1 GET # GET #"),
            bulks(&["2", "2"])
        );
    }

    #[test]
    fn errors_come_in_redis_order() {
        let mut c = conn();
        run(&mut c, "SET s x");
        run(&mut c, "RPUSH l 1");
        assert_eq!(run(&mut c, "SORT l LIMIT 0"), err(SYNTAX));
        assert_eq!(run(&mut c, "SORT l LIMIT x 1"), err(NOT_INT));
        assert_eq!(run(&mut c, "SORT_RO l STORE d"), err(SYNTAX));
        assert_eq!(run(&mut c, "SORT l BY"), err(SYNTAX));
        assert_eq!(run(&mut c, "SORT l GET"), err(SYNTAX));
        assert_eq!(run(&mut c, "SORT s"), err(WRONGTYPE));
        assert_eq!(run(&mut c, "SORT s LIMIT x 1"), err(NOT_INT));
        assert_eq!(
            run(&mut c, "SORT"),
            err("ERR wrong number of arguments for 'sort' command")
        );
        run(&mut c, "HSET h f v");
        assert_eq!(run(&mut c, "SORT h BY nosort"), err(WRONGTYPE));
    }

    #[test]
    fn store_replaces_or_deletes_the_destination() {
        let mut c = conn();
        run(&mut c, "SET d x");
        run(&mut c, "EXPIRE d 100");
        assert_eq!(run(&mut c, "SORT nokey STORE d"), int(0));
        assert_eq!(run(&mut c, "EXISTS d"), int(0));
        run(&mut c, "RPUSH l 2 1");
        run(&mut c, "SET d x");
        run(&mut c, "EXPIRE d 100");
        assert_eq!(run(&mut c, "SORT l GET # GET w_* STORE d"), int(4));
        assert_eq!(run(&mut c, "LRANGE d 0 -1"), bulks(&["1", "", "2", ""]));
        assert_eq!(run(&mut c, "TTL d"), int(-1));
        assert_eq!(run(&mut c, "SORT l STORE l"), int(2));
        assert_eq!(run(&mut c, "LRANGE l 0 -1"), bulks(&["1", "2"]));
        // WATCH sees a store, and a delete, but not an empty result on a
        // missing destination.
        assert_watch(&["RPUSH l 1"], "d", "SORT l STORE d", true);
        assert_watch(&["SET d x"], "d", "SORT none STORE d", true);
        assert_watch(&[], "d", "SORT none STORE d", false);
        assert_watch(&["RPUSH l 1"], "l", "SORT l", false);
    }
}
