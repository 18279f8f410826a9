//! Sorted index / leaderboard: who logs in most, users aged 18 to 35.
//!
//! `#[redmodel(sorted)] logins: u64` keeps the sorted set
//! `user:_sorted:logins` of object keys scored by the field. Every write
//! of the field updates the score in the same MULTI/EXEC;
//! [`ObjectRef::incr`](crate::model::ObjectRef::incr) increments the field
//! and the score together (`HINCRBY` + `ZINCRBY`).
//!
//! A score is a double, which holds integers exactly up to 2^53: a larger
//! integer (or a NaN) is refused with
//! [`crate::Error::ScoreOverflow`], never stored as
//! a rounded score. Composite scores ([`Composite`](crate::model::Composite))
//! pack several dimensions within that limit.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::db::query::Bounds;
use crate::model::key::{plain_sorted_key, sorted_key};
use crate::model::live::{
    existing, expiring_position, lacks, load_judged, parse_member, prune, prune_gone,
    prune_lacking, Entry, Stale, Test,
};
use crate::model::member::{stored_member, AsMember};
use crate::model::query::{Filter, Kind, OrderBy};
use crate::model::Model;
use crate::{Db, Error, Result};

/// The largest integer a double holds exactly, and so the largest score
/// magnitude an integer field may have: 2^53.
pub const MAX_EXACT_SCORE: u64 = 1 << 53;

/// A number that can be a sorted set's score: integers up to 2^53 in
/// magnitude (which a double holds exactly), and floats (not NaN).
pub trait Score: fmt::Debug {
    /// The score, or why this value cannot be one.
    fn to_score(&self) -> std::result::Result<f64, String>;
}

macro_rules! small_int_score {
    ($($t:ty),*) => {$(
        impl Score for $t {
            fn to_score(&self) -> std::result::Result<f64, String> {
                Ok(f64::from(*self))
            }
        }
    )*};
}

small_int_score!(i8, i16, i32, u8, u16, u32);

macro_rules! wide_int_score {
    ($($t:ty),*) => {$(
        impl Score for $t {
            fn to_score(&self) -> std::result::Result<f64, String> {
                let magnitude = i128::try_from(*self).map(i128::unsigned_abs).unwrap_or(u128::MAX);
                if magnitude > u128::from(MAX_EXACT_SCORE) {
                    return Err(format!(
                        "a score holds integers exactly only up to 2^53 = {MAX_EXACT_SCORE} in magnitude"
                    ));
                }
                // Exact: the magnitude is at most 2^53.
                Ok(*self as f64)
            }
        }
    )*};
}

wide_int_score!(i64, isize, u64, usize, i128, u128);

impl Score for f64 {
    fn to_score(&self) -> std::result::Result<f64, String> {
        if self.is_nan() {
            Err("a score cannot be NaN".to_string())
        } else {
            Ok(*self)
        }
    }
}

impl Score for f32 {
    fn to_score(&self) -> std::result::Result<f64, String> {
        f64::from(*self).to_score()
    }
}

/// A field type a sorted index accepts: a [`Score`], or an `Option` of
/// one (`None`: the object is not in the index).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the score of a sorted index",
    label = "not a number",
    note = "`#[redmodel(sorted)]` needs an integer or float field (or an Option of one); for several dimensions in one score, store an integer built with `redmodel::model::Composite`"
)]
pub trait Sortable {
    /// The score (`None`: not in the index), or why the value cannot be one.
    fn score(&self) -> std::result::Result<Option<f64>, String>;
}

impl<T: Score> Sortable for T {
    fn score(&self) -> std::result::Result<Option<f64>, String> {
        self.to_score().map(Some)
    }
}

impl<T: Score> Sortable for Option<T> {
    fn score(&self) -> std::result::Result<Option<f64>, String> {
        self.as_ref().map(Score::to_score).transpose()
    }
}

/// The sorted index of a numeric field of `M` (field type `T`): generated
/// by `#[redmodel(sorted)]` as `Model::FIELD_SORTED`.
pub struct SortedIndex<M, T> {
    field: &'static str,
    _marker: PhantomData<fn() -> (M, T)>,
}

impl<M, T> Clone for SortedIndex<M, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M, T> Copy for SortedIndex<M, T> {}

impl<M, T> fmt::Debug for SortedIndex<M, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SortedIndex({})", self.field)
    }
}

/// A bound of a score range as ZRANGE BYSCORE takes it.
fn bound_arg<S: Score>(bound: Bound<&S>, unbounded: &str) -> Result<String> {
    let arg = |s: &S, prefix: &str| -> Result<String> {
        let score = s.to_score().map_err(|reason| Error::ScoreOverflow {
            name: "a bound of the score range".to_string(),
            value: format!("{s:?}"),
            reason,
        })?;
        Ok(format!("{prefix}{}", score_arg(score)))
    };
    match bound {
        Bound::Included(s) => arg(s, ""),
        Bound::Excluded(s) => arg(s, "("),
        Bound::Unbounded => Ok(unbounded.to_string()),
    }
}

/// `range` as a query's score bounds.
fn query_bounds<S: Score>(range: &impl RangeBounds<S>) -> Result<Bounds> {
    let end = |bound: Bound<&S>, unbounded: f64| -> Result<(f64, bool)> {
        let score = |s: &S| {
            s.to_score().map_err(|reason| Error::ScoreOverflow {
                name: "a bound of the score range".to_string(),
                value: format!("{s:?}"),
                reason,
            })
        };
        Ok(match bound {
            Bound::Included(s) => (score(s)?, false),
            Bound::Excluded(s) => (score(s)?, true),
            Bound::Unbounded => (unbounded, false),
        })
    };
    let (min, min_open) = end(range.start_bound(), f64::NEG_INFINITY)?;
    let (max, max_open) = end(range.end_bound(), f64::INFINITY)?;
    Ok(Bounds {
        min,
        min_open,
        max,
        max_open,
    })
}

/// ZRANGE BYSCORE's min and max for `range`.
fn score_bounds<S: Score>(range: &impl RangeBounds<S>) -> Result<(String, String)> {
    Ok((
        bound_arg(range.start_bound(), "-inf")?,
        bound_arg(range.end_bound(), "+inf")?,
    ))
}

/// Which end of the index a walk by rank starts from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Lowest,
    Highest,
}

impl<M, T> SortedIndex<M, T> {
    /// The index of the stored field `field` (generated code calls this).
    pub const fn new(field: &'static str) -> Self {
        SortedIndex {
            field,
            _marker: PhantomData,
        }
    }

    /// The field's stored name.
    pub const fn field(&self) -> &'static str {
        self.field
    }
}

impl<M: Model, T> SortedIndex<M, T> {
    /// The sorted set's key (`user:_sorted:logins`).
    pub fn key(&self) -> String {
        plain_sorted_key(M::TABLE, self.field)
    }

    /// The sorted set's key as `db` stores it (`{shop}TABLE:_...` for a table of
    /// the slot group `shop` in the [cluster layout](crate::KeyLayout::Cluster)).
    pub fn key_in(&self, db: &Db) -> String {
        sorted_key(db, M::TABLE, self.field)
    }

    fn entry(&self, db: &Db) -> impl Fn(&str) -> Entry + use<M, T> {
        let key = self.key_in(db);
        move |_| Entry::Sorted(key.clone())
    }

    /// A [query](crate::model::query) filter: objects whose score is
    /// within `range` (`within(2020..=2024)`, `within(18..)`).
    pub fn within<S: Score>(&self, range: impl RangeBounds<S>) -> Filter<M> {
        Filter::new(query_bounds(&range).map(|bounds| Kind::Within {
            key: self.key(),
            bounds,
        }))
    }

    /// A [query](crate::model::query) order: lowest score first, ties by
    /// key.
    pub fn asc(&self) -> OrderBy<M> {
        OrderBy::new(self.key(), false)
    }

    /// A [query](crate::model::query) order: highest score first, ties by
    /// key from the last.
    pub fn desc(&self) -> OrderBy<M> {
        OrderBy::new(self.key(), true)
    }

    /// Loads the objects at `keys`, noting the gone ones in `stale`.
    async fn load_keys(
        &self,
        db: &Db,
        keys: Vec<String>,
        stale: &mut Vec<Stale>,
    ) -> Result<Vec<Result<M>>> {
        let index = self.key_in(db);
        let refs = keys
            .iter()
            .map(|k| parse_member::<M>(k, &index))
            .collect::<Result<Vec<_>>>()?;
        let expiring = expiring_position::<M>(self.field);
        load_judged(db, refs, stale, |r, values, stale| {
            let test = match values {
                None => Test::Gone,
                Some(values) if lacks(values, expiring) => Test::Absent { field: self.field },
                Some(_) => return true,
            };
            stale.push(Stale {
                object: r.key_in(db).into_owned(),
                test,
                entry: Entry::Sorted(index.clone()),
            });
            false
        })
        .await
    }

    /// The `n` objects with the highest scores, highest first, loaded in
    /// a batch per [`LOAD_BATCH`](crate::model::LOAD_BATCH) objects. One
    /// that does not decode (bad data) fails the read: see
    /// [`top_each`](Self::top_each) for the others.
    pub async fn top(&self, db: &Db, n: u64) -> Result<Vec<M>> {
        self.walk(db, End::Highest, n).await?.into_iter().collect()
    }

    /// Like [`top`](Self::top), with one result per object: an object
    /// that does not decode is an error in its own place, and the others
    /// load. The outer error is the request's.
    pub async fn top_each(&self, db: &Db, n: u64) -> Result<Vec<Result<M>>> {
        self.walk(db, End::Highest, n).await
    }

    /// The `n` objects with the lowest scores, lowest first.
    pub async fn bottom(&self, db: &Db, n: u64) -> Result<Vec<M>> {
        self.walk(db, End::Lowest, n).await?.into_iter().collect()
    }

    /// Like [`bottom`](Self::bottom), with one result per object.
    pub async fn bottom_each(&self, db: &Db, n: u64) -> Result<Vec<Result<M>>> {
        self.walk(db, End::Lowest, n).await
    }

    /// The first `n` live objects from one end: reads windows by rank
    /// (normally one), skipping the entries of gone objects, then prunes
    /// those.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "sorted_walk", index = self.field))]
    async fn walk(&self, db: &Db, end: End, n: u64) -> Result<Vec<Result<M>>> {
        let key = self.key_in(db);
        let mut out = Vec::new();
        let mut stale = Vec::new();
        let mut start: u64 = 0;
        while (out.len() as u64) < n {
            let want = n - out.len() as u64;
            let window = want.saturating_add(stale.len() as u64).min(i64::MAX as u64);
            let stop = start.saturating_add(window - 1).min(i64::MAX as u64);
            let mut cmd = cmd("ZRANGE");
            cmd.arg(&key).arg(start).arg(stop);
            if end == End::Highest {
                cmd.arg("REV");
            }
            let keys: Vec<String> = db.read_cached(&cmd).await?;
            let fetched = keys.len() as u64;
            let objects = self.load_keys(db, keys, &mut stale).await?;
            out.extend(
                objects
                    .into_iter()
                    .take(usize::try_from(want).unwrap_or(usize::MAX)),
            );
            if fetched < window {
                break;
            }
            start = start.saturating_add(fetched);
        }
        prune(db, stale).await?;
        Ok(out)
    }

    /// The objects whose score is within `range`, lowest first
    /// (`range(&db, 18..=35)`). Exclusive bounds (`18..35`) and open ends
    /// (`18..`) are ZRANGE's `(35` and `+inf`.
    pub async fn range<S: Score>(&self, db: &Db, range: impl RangeBounds<S>) -> Result<Vec<M>> {
        self.by_score(db, &range, false)
            .await?
            .into_iter()
            .collect()
    }

    /// The objects whose score is within `range`, highest first.
    pub async fn range_rev<S: Score>(&self, db: &Db, range: impl RangeBounds<S>) -> Result<Vec<M>> {
        self.by_score(db, &range, true).await?.into_iter().collect()
    }

    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "sorted_range", index = self.field))]
    async fn by_score<S: Score>(
        &self,
        db: &Db,
        range: &impl RangeBounds<S>,
        rev: bool,
    ) -> Result<Vec<Result<M>>> {
        let keys = self.keys_by_score(db, range, rev).await?;
        let mut stale = Vec::new();
        let objects = self.load_keys(db, keys, &mut stale).await?;
        prune(db, stale).await?;
        Ok(objects)
    }

    async fn keys_by_score<S: Score>(
        &self,
        db: &Db,
        range: &impl RangeBounds<S>,
        rev: bool,
    ) -> Result<Vec<String>> {
        let (min, max) = score_bounds(range)?;
        let mut cmd = cmd("ZRANGE");
        cmd.arg(self.key_in(db));
        if rev {
            cmd.arg(max).arg(min).arg("BYSCORE").arg("REV");
        } else {
            cmd.arg(min).arg(max).arg("BYSCORE");
        }
        db.read_cached(&cmd).await
    }

    /// How many live objects have a score within `range` (the members in
    /// the range, checked to exist; entries of gone objects are pruned).
    pub async fn count<S: Score>(&self, db: &Db, range: impl RangeBounds<S>) -> Result<u64> {
        let keys = self.keys_by_score(db, &range, false).await?;
        self.count_live(db, keys).await
    }

    /// How many live objects the index holds.
    pub async fn len(&self, db: &Db) -> Result<u64> {
        let keys: Vec<String> = db
            .read(cmd("ZRANGE").arg(self.key_in(db)).arg(0).arg(-1))
            .await?;
        self.count_live(db, keys).await
    }

    /// Whether the index holds no live object.
    pub async fn is_empty(&self, db: &Db) -> Result<bool> {
        Ok(self.top(db, 1).await?.is_empty())
    }

    /// How many of `keys` are live objects; the entries of the others are pruned.
    async fn count_live(&self, db: &Db, keys: Vec<String>) -> Result<u64> {
        let live = existing(db, &keys).await?;
        let alive = live.iter().filter(|l| **l).count() as u64;
        if alive < keys.len() as u64 {
            let gone: Vec<String> = keys
                .into_iter()
                .zip(live)
                .filter(|(_, l)| !l)
                .map(|(k, _)| k)
                .collect();
            prune_gone(db, &gone, self.entry(db)).await?;
        }
        Ok(alive)
    }

    /// The position of `member` from the highest score (0 = first on the
    /// leaderboard); `None` if it is not in the index (or gone). Entries
    /// of gone objects ranked above it are not counted (and are pruned).
    pub async fn rank_from_top(&self, db: &Db, member: impl AsMember<M>) -> Result<Option<u64>> {
        self.rank(db, stored_member(db, member)?, End::Highest)
            .await
    }

    /// The position of `member` from the lowest score (0 = lowest).
    pub async fn rank_from_bottom(&self, db: &Db, member: impl AsMember<M>) -> Result<Option<u64>> {
        self.rank(db, stored_member(db, member)?, End::Lowest).await
    }

    async fn rank(&self, db: &Db, member: String, end: End) -> Result<Option<u64>> {
        let key = self.key_in(db);
        let command = if end == End::Highest {
            "ZREVRANK"
        } else {
            "ZRANK"
        };
        let mut pipe = redis::pipe();
        pipe.command(command).arg(&key).arg(&member);
        pipe.command("EXISTS").arg(&member);
        let (rank, exists): (Option<u64>, bool) = db.read_pipeline(&pipe).await?;
        let Some(rank) = rank else {
            return Ok(None);
        };
        if !exists {
            prune_gone(db, &[member], self.entry(db)).await?;
            return Ok(None);
        }
        if rank == 0 {
            return Ok(Some(0));
        }
        let mut cmd = cmd("ZRANGE");
        cmd.arg(&key).arg(0).arg(rank - 1);
        if end == End::Highest {
            cmd.arg("REV");
        }
        let above: Vec<String> = db.read_cached(&cmd).await?;
        Ok(Some(self.count_live(db, above).await?))
    }

    /// The score of `member` (ZSCORE); `None` if it is not in the index
    /// (or gone, whose entry is then pruned).
    pub async fn score(&self, db: &Db, member: impl AsMember<M>) -> Result<Option<f64>> {
        let member = stored_member(db, member)?;
        let mut pipe = redis::pipe();
        pipe.command("ZSCORE").arg(self.key_in(db)).arg(&member);
        pipe.command("EXISTS").arg(&member);
        let (score, exists): (Option<f64>, bool) = db.read_pipeline(&pipe).await?;
        if score.is_some() && !exists {
            prune_gone(db, &[member], self.entry(db)).await?;
            return Ok(None);
        }
        Ok(score)
    }

    /// Removes the entries of every gone object, and of every object
    /// whose field expired (a field declared with a TTL), in a full pass.
    /// Returns how many were removed.
    pub async fn prune(&self, db: &Db) -> Result<u64> {
        let keys: Vec<String> = db
            .read(cmd("ZRANGE").arg(self.key_in(db)).arg(0).arg(-1))
            .await?;
        prune_lacking::<M>(db, &keys, self.field, self.entry(db)).await
    }
}

/// Checks a score: finite or infinite, never NaN.
pub(crate) fn checked_score(name: &str, score: f64) -> Result<f64> {
    if score.is_nan() {
        return Err(Error::ScoreOverflow {
            name: name.to_string(),
            value: "NaN".to_string(),
            reason: "a sorted set's score cannot be NaN".to_string(),
        });
    }
    Ok(score)
}

/// A score as a command argument: integers exactly (`152003456`), other
/// numbers in Rust's shortest round-trip form, which Redis parses back to
/// the same double (`inf` and `-inf` included).
pub(crate) fn score_arg(score: f64) -> ScoreText {
    if score.is_infinite() {
        return ScoreText::Text(if score > 0.0 { "+inf" } else { "-inf" }.into());
    }
    // Most scores are integers: written as such without `fmt`, which costs
    // about 1,100 client instructions of an indexed insert. -0.0 keeps its
    // sign through `fmt`.
    let integer = score.fract() == 0.0 && score.abs() < 9_007_199_254_740_992.0;
    if integer && (score != 0.0 || score.is_sign_positive()) {
        return ScoreText::Int(score as i64);
    }
    ScoreText::Text(format!("{score}").into())
}

/// A score's text ([`score_arg`]): an integer's digits are written where
/// the text goes, with no string made for them, as an index write makes
/// one per object.
pub(crate) enum ScoreText {
    Int(i64),
    Text(Cow<'static, str>),
}

impl ScoreText {
    /// `f` of the text.
    pub(crate) fn with_text<T>(&self, f: impl FnOnce(&str) -> T) -> T {
        match self {
            ScoreText::Int(n) => f(itoa::Buffer::new().format(*n)),
            ScoreText::Text(text) => f(text),
        }
    }
}

impl fmt::Display for ScoreText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_text(|text| f.write_str(text))
    }
}

impl redis::ToRedisArgs for ScoreText {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        self.with_text(|text| out.write_arg(text.as_bytes()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_score_is_written_as_fmt_writes_it() {
        for score in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            152003456.0,
            9007199254740991.0,
            -9007199254740991.0,
            9007199254740992.0,
            1e300,
            0.1,
            -2.5,
            f64::MIN_POSITIVE,
        ] {
            assert_eq!(
                score_arg(score).to_string(),
                format!("{score}"),
                "{score:?}"
            );
        }
        assert_eq!(score_arg(f64::INFINITY).to_string(), "+inf");
        assert_eq!(score_arg(f64::NEG_INFINITY).to_string(), "-inf");
    }

    #[test]
    fn integer_scores_stop_at_two_to_the_53() {
        assert_eq!((1i64 << 53).to_score(), Ok(9007199254740992.0));
        assert_eq!((-(1i64 << 53)).to_score(), Ok(-9007199254740992.0));
        assert!(((1i64 << 53) + 1).to_score().is_err());
        assert!(u64::MAX.to_score().is_err());
        assert!(i64::MIN.to_score().is_err());
        assert_eq!(u8::MAX.to_score(), Ok(255.0));
        assert!(f64::NAN.to_score().is_err());
        assert_eq!(f64::INFINITY.to_score(), Ok(f64::INFINITY));
        assert_eq!(None::<i64>.score(), Ok(None));
        assert_eq!(Some(5u32).score(), Ok(Some(5.0)));
    }

    #[test]
    fn range_bounds_are_zrange_arguments() {
        assert_eq!(
            score_bounds(&(18..=35)).unwrap(),
            ("18".to_string(), "35".to_string())
        );
        assert_eq!(
            score_bounds(&(18..35)).unwrap(),
            ("18".to_string(), "(35".to_string())
        );
        assert_eq!(
            score_bounds(&(1.5..)).unwrap(),
            ("1.5".to_string(), "+inf".to_string())
        );
        assert_eq!(
            score_bounds(&(..=152003456u64)).unwrap(),
            ("-inf".to_string(), "152003456".to_string())
        );
        assert!(score_bounds(&(0..=u64::MAX)).is_err());
        assert_eq!(score_arg(f64::NEG_INFINITY).to_string(), "-inf");
        assert_eq!(score_arg(0.1).to_string(), "0.1");
        assert_eq!(score_arg(-3.0).to_string(), "-3");
    }
}
