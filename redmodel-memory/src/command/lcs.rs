//! `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`: the longest
//! common subsequence of two strings, step by step as Redis 7.0.15's
//! `lcsCommand` computes it, so that among equally long answers the same
//! one is chosen and the IDX ranges come in the same order.

use super::{CmdResult, Ctx, Spec};
use crate::args::{int_arg, is};
use crate::error::CmdError;
use crate::reply;
use crate::value::Value;

pub(super) const COMMANDS: &[Spec] = &[Spec {
    name: "lcs",
    arity: -3,
    handler: lcs,
}];

/// The string at `key` (empty if missing); `None` for another type.
fn string_or_empty(ctx: &mut Ctx<'_>, key: &[u8]) -> Option<Vec<u8>> {
    match ctx.value(key) {
        None => Some(Vec::new()),
        Some(Value::Str(s)) => Some(s.to_vec()),
        Some(_) => None,
    }
}

fn lcs(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    // Both keys are looked up before the type check, as in Redis.
    let a = string_or_empty(ctx, args[1]);
    let b = string_or_empty(ctx, args[2]);
    let (Some(a), Some(b)) = (a, b) else {
        return Err(CmdError::err(
            "The specified keys must contain string values",
        ));
    };
    let (mut get_len, mut get_idx, mut with_match_len) = (false, false, false);
    let mut min_match_len: i64 = 0;
    let mut j = 3;
    while let Some(&opt) = args.get(j) {
        if is(opt, "idx") {
            get_idx = true;
        } else if is(opt, "len") {
            get_len = true;
        } else if is(opt, "withmatchlen") {
            with_match_len = true;
        } else if is(opt, "minmatchlen") && j + 1 < args.len() {
            min_match_len = int_arg(args[j + 1])?.max(0);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if get_len && get_idx {
        return Err(CmdError::err(
            "If you want both the length and indexes, please just use IDX.",
        ));
    }
    let limit = u64::from(u32::MAX - 1);
    if a.len() as u64 >= limit || b.len() as u64 >= limit {
        return Err(CmdError::err("String too long for LCS"));
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    if cells.saturating_mul(4) > ctx.ks().limits().proto_max_bulk_len {
        return Err(CmdError::err(
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let table = build_table(&a, &b).ok_or_else(|| {
        CmdError::err("Insufficient memory, failed allocating transient memory for LCS")
    })?;
    let at = |i: usize, j: usize| table[j + i * (blen + 1)];
    let total = at(alen, blen);

    // Walk back from the end, collecting the common bytes and the ranges
    // of contiguous matches (as Redis emits them: last ones first).
    let compute = get_idx || !get_len;
    let mut result = vec![0u8; if compute { total as usize } else { 0 }];
    let mut idx = total as usize;
    let mut ranges = Vec::new();
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0, 0, 0);
    let (mut i, mut j) = (alen, blen);
    while compute && i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if a_start == alen {
                (a_start, a_end, b_start, b_end) = (i - 1, i - 1, j - 1, j - 1);
            } else if a_start == i && b_start == j {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if at(i - 1, j) > at(i, j - 1) {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        // Redis computes this in uint32_t even when no range is open.
        let match_len = (a_end as u32).wrapping_sub(a_start as u32).wrapping_add(1);
        if emit {
            if min_match_len == 0 || i64::from(match_len) >= min_match_len {
                let mut item = vec![
                    reply::array(vec![reply::int(a_start), reply::int(a_end)]),
                    reply::array(vec![reply::int(b_start), reply::int(b_end)]),
                ];
                if with_match_len {
                    item.push(reply::int(match_len));
                }
                ranges.push(reply::array(item));
            }
            a_start = alen;
        }
    }
    Ok(if get_idx {
        reply::map(vec![
            (reply::bulk("matches"), reply::array(ranges)),
            (reply::bulk("len"), reply::int(total)),
        ])
    } else if get_len {
        reply::int(total)
    } else {
        reply::bulk(result)
    })
}

/// The dynamic programming table: cell `j + i * (blen + 1)` holds the LCS
/// length of `a[..i]` and `b[..j]`. `None` if it cannot be allocated.
fn build_table(a: &[u8], b: &[u8]) -> Option<Vec<u32>> {
    let width = b.len() + 1;
    let cells = (a.len() + 1).checked_mul(width)?;
    let mut table: Vec<u32> = Vec::new();
    table.try_reserve_exact(cells).ok()?;
    table.resize(cells, 0);
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            table[j + i * width] = if a[i - 1] == b[j - 1] {
                table[(j - 1) + (i - 1) * width] + 1
            } else {
                table[j + (i - 1) * width].max(table[(j - 1) + i * width])
            };
        }
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    //! Every expected reply below was observed on redis-server 7.0.15.

    use redis::Value;

    use crate::command::test_util::*;

    fn range(a: (i64, i64), b: (i64, i64), len: Option<i64>) -> Value {
        let mut v = vec![ints(&[a.0, a.1]), ints(&[b.0, b.1])];
        if let Some(l) = len {
            v.push(int(l));
        }
        Value::Array(v)
    }

    #[test]
    fn lcs_replies() {
        let mut c = conn();
        run(&mut c, "MSET key1 ohmytext key2 mynewtext");
        assert_eq!(run(&mut c, "LCS key1 key2"), bulk("mytext"));
        assert_eq!(run(&mut c, "LCS key1 key2 LEN"), int(6));
        assert_eq!(
            run(&mut c, "LCS key1 key2 IDX"),
            Value::Array(vec![
                bulk("matches"),
                Value::Array(vec![
                    range((4, 7), (5, 8), None),
                    range((2, 3), (0, 1), None),
                ]),
                bulk("len"),
                int(6),
            ])
        );
        assert_eq!(
            run(&mut c, "LCS key1 key2 IDX MINMATCHLEN 4 WITHMATCHLEN"),
            Value::Array(vec![
                bulk("matches"),
                Value::Array(vec![range((4, 7), (5, 8), Some(4))]),
                bulk("len"),
                int(6),
            ])
        );
        assert_eq!(run(&mut c, "LCS key1 nokey"), bulk(""));
        assert_eq!(run(&mut c, "LCS nokey nokey2 LEN"), int(0));
        assert_eq!(
            run(&mut c, "LCS key1 key2 LEN IDX"),
            err("ERR If you want both the length and indexes, please just use IDX.")
        );
        assert_eq!(run(&mut c, "LCS key1 key2 MINMATCHLEN"), err(SYNTAX));
        assert_eq!(run(&mut c, "LCS key1 key2 MINMATCHLEN x"), err(NOT_INT));
        assert_eq!(run(&mut c, "LCS key1 key2 FOO"), err(SYNTAX));
        run(&mut c, "RPUSH l a");
        assert_eq!(
            run(&mut c, "LCS key1 l"),
            err("ERR The specified keys must contain string values")
        );
        assert_eq!(
            run(&mut c, "LCS key1"),
            err("ERR wrong number of arguments for 'lcs' command")
        );
    }
}
