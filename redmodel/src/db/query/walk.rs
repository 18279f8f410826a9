//! The walk of a query page, written once over batches of commands: run
//! natively under the engine's lock ([`InProcess`], each batch at once),
//! or from the client ([`Steps`], each batch one pipelined round trip).
//! The Lua script ([`super::lua`]) is the same walk, for a server.

use std::future::Future;

use redis::{Cmd, Value};

use super::{checked, After, Bounds, Order, Source, Test, Walk};
use crate::command::cmd;
use crate::memory::Atomic;
use crate::{Db, Error, Result};

/// The fewest candidates one chunk reads from a sorted source.
const CHUNK_MIN: usize = 16;
/// The most candidates one chunk reads and tests.
pub(super) const CHUNK_MAX: usize = 512;

/// How many candidates the first chunk of a walk for `limit` items
/// reads. Each next chunk reads twice as many, up to [`CHUNK_MAX`]: a
/// query whose tests reject most candidates reaches its page in a few
/// chunks, and one whose tests pass most reads little more than it needs.
pub(super) fn chunk(limit: Option<usize>) -> usize {
    limit.map_or(CHUNK_MAX, |l| {
        l.saturating_add(1).clamp(CHUNK_MIN, CHUNK_MAX)
    })
}

/// A page of keys: each stored key with its score (0 in key order), and
/// whether more items follow the page.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Found {
    pub(crate) items: Vec<(String, f64)>,
    pub(crate) more: bool,
}

/// Runs batches of commands, replying one value per command.
pub(super) trait Batches {
    /// Whether a batch costs no round trip, so that a read may wait for
    /// the one before it at no cost.
    const IN_PROCESS: bool;

    fn run(&mut self, cmds: Vec<Cmd>) -> impl Future<Output = Result<Vec<Value>>> + Send;
}

/// Each batch as one pipeline on the `Db` (across slots, the cluster
/// client splits it by node).
pub(super) struct Steps<'a>(pub(super) &'a Db);

impl Batches for Steps<'_> {
    const IN_PROCESS: bool = false;

    fn run(&mut self, cmds: Vec<Cmd>) -> impl Future<Output = Result<Vec<Value>>> + Send {
        let db = self.0;
        async move {
            let mut pipe = redis::pipe();
            for c in cmds {
                pipe.add_command(c);
            }
            db.read_replies(&pipe).await
        }
    }
}

/// Each batch run at once under the engine's lock, as a script's calls.
pub(super) struct InProcess<'a, 'b>(pub(super) &'a mut Atomic<'b>);

impl Batches for InProcess<'_, '_> {
    const IN_PROCESS: bool = true;

    fn run(&mut self, cmds: Vec<Cmd>) -> impl Future<Output = Result<Vec<Value>>> + Send {
        let replies = cmds
            .iter()
            .map(|c| {
                let args: Vec<&[u8]> = crate::command::args(c).flatten().collect();
                checked(self.0.call(&args))
            })
            .collect();
        std::future::ready(replies)
    }
}

/// The walk: see [`super`].
pub(super) async fn walk<B: Batches>(b: &mut B, w: &Walk) -> Result<Found> {
    let want = w.limit.map(|l| l.saturating_add(1));
    let full = |items: &Vec<(String, f64)>| want.is_some_and(|n| items.len() >= n);
    let mut size = chunk(w.limit);
    let mut items = Vec::new();
    match (w.order, &w.source) {
        (Order::Score { desc }, Source::Scores { key, bounds }) => {
            let mut resume = w.after.clone();
            loop {
                let (batch, exhausted) =
                    next_scored(b, key, *bounds, desc, resume.as_ref(), size).await?;
                let Some(last) = batch.last() else { break };
                resume = Some(After {
                    score: last.1,
                    key: last.0.clone(),
                });
                let keys: Vec<&str> = batch.iter().map(|(k, _)| k.as_str()).collect();
                let pass = passing(b, &w.tests, &keys).await?;
                for (item, ok) in batch.into_iter().zip(pass) {
                    if ok && !full(&items) {
                        items.push(item);
                    }
                }
                if full(&items) || exhausted {
                    break;
                }
                size = grown(size);
            }
        }
        (_, source) => {
            let mut keys = candidates(b, source).await?;
            keys.sort_unstable();
            keys.dedup();
            if let Some(after) = &w.after {
                keys.retain(|k| k.as_str() > after.key.as_str());
            }
            let mut rest = keys.as_slice();
            while !rest.is_empty() {
                let (part, after) = rest.split_at(size.min(rest.len()));
                rest = after;
                size = grown(size);
                let refs: Vec<&str> = part.iter().map(String::as_str).collect();
                let pass = passing(b, &w.tests, &refs).await?;
                for (key, ok) in part.iter().zip(pass) {
                    if ok && !full(&items) {
                        items.push((key.clone(), 0.0));
                    }
                }
                if full(&items) {
                    break;
                }
            }
        }
    }
    let more = full(&items);
    if let Some(limit) = w.limit {
        items.truncate(limit);
    }
    Ok(Found { items, more })
}

/// The size of the chunk after one of `size`.
fn grown(size: usize) -> usize {
    size.saturating_mul(2).min(CHUNK_MAX)
}

/// A score bound as ZRANGE BYSCORE takes it.
pub(super) fn bound_arg(score: f64, open: bool) -> String {
    let text = score_text(score);
    if open {
        format!("({text}")
    } else {
        text
    }
}

/// A score as a command argument: Rust's shortest text that parses back
/// to the same double, which Redis reads exactly; infinities as ZRANGE
/// spells them.
pub(super) fn score_text(score: f64) -> String {
    if score.is_infinite() {
        return if score > 0.0 { "+inf" } else { "-inf" }.to_string();
    }
    format!("{score}")
}

/// Whether `(score, key)` comes after `after` in the walk's order.
pub(super) fn beyond(score: f64, key: &str, after: &After, desc: bool) -> bool {
    if desc {
        score < after.score || (score == after.score && key < after.key.as_str())
    } else {
        score > after.score || (score == after.score && key > after.key.as_str())
    }
}

/// The next candidates of a sorted source after `after` (at most `n`),
/// and whether the source has no more. A run of equal scores longer than
/// `n`, all at or before `after`, is stepped over by offset.
async fn next_scored<B: Batches>(
    b: &mut B,
    key: &str,
    bounds: Bounds,
    desc: bool,
    after: Option<&After>,
    n: usize,
) -> Result<(Vec<(String, f64)>, bool)> {
    let bounds = match after {
        Some(a) if desc => bounds.and(Bounds {
            max: a.score,
            max_open: false,
            ..Bounds::ALL
        }),
        Some(a) => bounds.and(Bounds {
            min: a.score,
            min_open: false,
            ..Bounds::ALL
        }),
        None => bounds,
    };
    let (min, max) = (
        bound_arg(bounds.min, bounds.min_open),
        bound_arg(bounds.max, bounds.max_open),
    );
    let mut offset = 0usize;
    loop {
        let mut c = cmd("ZRANGE");
        c.arg(key);
        if desc {
            c.arg(&max).arg(&min).arg("BYSCORE").arg("REV");
        } else {
            c.arg(&min).arg(&max).arg("BYSCORE");
        }
        c.arg("LIMIT").arg(offset).arg(n).arg("WITHSCORES");
        let reply = one(b.run(vec![c]).await?)?;
        let got: Vec<(String, f64)> =
            redis::from_redis_value(reply).map_err(redis::RedisError::from)?;
        let count = got.len();
        let kept: Vec<(String, f64)> = got
            .into_iter()
            .filter(|(k, s)| after.is_none_or(|a| beyond(*s, k, a, desc)))
            .collect();
        if kept.is_empty() && count == n {
            offset += n;
            continue;
        }
        return Ok((kept, count < n));
    }
}

/// Every candidate of a source, in no order.
async fn candidates<B: Batches>(b: &mut B, source: &Source) -> Result<Vec<String>> {
    let c = match source {
        Source::Holder(entry) => {
            let mut c = cmd("LINDEX");
            c.arg(entry).arg(0);
            let holder: Option<String> = from(one(b.run(vec![c]).await?)?)?;
            return Ok(holder.into_iter().collect());
        }
        Source::Scores { key, bounds } => {
            let mut c = cmd("ZRANGE");
            c.arg(key)
                .arg(bound_arg(bounds.min, bounds.min_open))
                .arg(bound_arg(bounds.max, bounds.max_open))
                .arg("BYSCORE");
            c
        }
        Source::Sets { keys, all } => {
            let mut c = cmd(if *all { "SINTER" } else { "SUNION" });
            c.arg(keys);
            c
        }
        Source::List(key) => {
            let mut c = cmd("LRANGE");
            c.arg(key).arg(0).arg(-1);
            c
        }
    };
    from(one(b.run(vec![c]).await?)?)
}

/// Which of `keys` pass every test and name an existing object: one
/// batch of the tests' reads and an EXISTS per key. In process the
/// EXISTS follow the tests, for the keys that passed them only; from the
/// client they go in the tests' batch, for every key, to save a round
/// trip.
async fn passing<B: Batches>(b: &mut B, tests: &[Test], keys: &[&str]) -> Result<Vec<bool>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let exists = |key: &str| {
        let mut c = cmd("EXISTS");
        c.arg(key);
        c
    };
    let mut cmds = tests_reads(tests, keys);
    if !B::IN_PROCESS {
        cmds.extend(keys.iter().map(|key| exists(key)));
    }
    let mut replies = b.run(cmds).await?.into_iter();
    let mut pass = tests_passed(tests, keys, &mut replies)?;
    if B::IN_PROCESS {
        let to_check: Vec<usize> = (0..keys.len()).filter(|&i| pass[i]).collect();
        let cmds = to_check.iter().map(|&i| exists(keys[i])).collect();
        replies = b.run(cmds).await?.into_iter();
        for i in to_check {
            pass[i] = from(replies.next().ok_or_else(short)?)?;
        }
    } else {
        for p in pass.iter_mut() {
            let exists: bool = from(replies.next().ok_or_else(short)?)?;
            *p &= exists;
        }
    }
    Ok(pass)
}

/// The reads of every test of `keys`, in the tests' order.
fn tests_reads(tests: &[Test], keys: &[&str]) -> Vec<Cmd> {
    let mut cmds = Vec::new();
    for test in tests {
        match test {
            Test::InSet { key, .. } => cmds.push(smismember(key, keys)),
            Test::InAnySet(sets) => cmds.extend(sets.iter().map(|s| smismember(s, keys))),
            Test::Score { key, .. } => {
                let mut c = cmd("ZMSCORE");
                c.arg(key).arg(keys);
                cmds.push(c);
            }
            Test::Holder(entry) => {
                let mut c = cmd("LINDEX");
                c.arg(entry).arg(0);
                cmds.push(c);
            }
            Test::InList(key) => {
                let mut c = cmd("LRANGE");
                c.arg(key).arg(0).arg(-1);
                cmds.push(c);
            }
        }
    }
    cmds
}

/// Which of `keys` pass every test, from the replies to
/// [`tests_reads`].
fn tests_passed(
    tests: &[Test],
    keys: &[&str],
    replies: &mut impl Iterator<Item = Value>,
) -> Result<Vec<bool>> {
    let mut next = || replies.next().ok_or_else(short);
    let mut pass = vec![true; keys.len()];
    for test in tests {
        match test {
            Test::InSet { has, .. } => {
                let member: Vec<bool> = from(next()?)?;
                and(&mut pass, member.iter().map(|m| m == has));
            }
            Test::InAnySet(sets) => {
                let mut any = vec![false; keys.len()];
                for _ in sets {
                    let member: Vec<bool> = from(next()?)?;
                    for (a, m) in any.iter_mut().zip(member) {
                        *a |= m;
                    }
                }
                and(&mut pass, any);
            }
            Test::Score { bounds, .. } => {
                let scores: Vec<Option<f64>> = from(next()?)?;
                and(
                    &mut pass,
                    scores.iter().map(|s| s.is_some_and(|s| bounds.contains(s))),
                );
            }
            Test::Holder(_) => {
                let holder: Option<String> = from(next()?)?;
                and(
                    &mut pass,
                    keys.iter().map(|k| holder.as_deref() == Some(*k)),
                );
            }
            Test::InList(_) => {
                let list: Vec<String> = from(next()?)?;
                and(&mut pass, keys.iter().map(|k| list.iter().any(|l| l == k)));
            }
        }
    }
    Ok(pass)
}

fn smismember(set: &str, keys: &[&str]) -> Cmd {
    let mut c = cmd("SMISMEMBER");
    c.arg(set).arg(keys);
    c
}

fn and(pass: &mut [bool], with: impl IntoIterator<Item = bool>) {
    for (p, w) in pass.iter_mut().zip(with) {
        *p &= w;
    }
}

fn one(replies: Vec<Value>) -> Result<Value> {
    replies.into_iter().next().ok_or_else(short)
}

fn from<T: redis::FromRedisValue>(v: Value) -> Result<T> {
    Ok(redis::from_redis_value(checked(v)?).map_err(redis::RedisError::from)?)
}

fn short() -> Error {
    Error::Reply(redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "a query's batch returned fewer replies than commands",
    )))
}
