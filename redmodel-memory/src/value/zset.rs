//! The sorted set value type, and the score and lex ranges that select a
//! slice of one (the `zrangespec` / `zlexrangespec` of Redis's t_zset.c).
//!
//! A small [`ZSet`] is one packed buffer in order ([`Packed`], as Redis's
//! listpack encoding); a big one, [`Big`], keeps two views of its members,
//! as Redis's skiplist encoding does (a dict plus a skiplist):
//! - `scores`: member -> score, for ZSCORE, ZMSCORE and membership in O(1);
//! - `order`: every (score, member) pair in Redis's order (score, ties by
//!   member bytes) in an order-statistic index, [`OrderIndex`]: a list of
//!   sorted chunks of at most [`MAX_CHUNK`] entries plus a Fenwick tree of
//!   the chunk lengths. It answers "rank of" and "entry at rank" in
//!   O(log n), like the spans of Redis's skiplist.
//!
//! Each view holds the member as a [`SmallBytes`](super::small::SmallBytes): a member of up to 22
//! bytes inline, without a heap block (an `Arc<[u8]>` shared by both views
//! cost 40 bytes of heap a member more than the slots), a longer one boxed
//! in each view.
//!
//! Costs of the big form, for n members, B = [`MAX_CHUNK`], k entries in a result:
//!
//! | operation                                   | cost                     |
//! |---------------------------------------------|--------------------------|
//! | score of a member                           | O(1)                     |
//! | insert, remove, change of score             | O(log n + B) amortised ¹ |
//! | rank of a member, entry at a rank           | O(log n)                 |
//! | start and length of a score range           | O(log n)                 |
//! | iterate k entries from a rank, either way   | O(log n + k)             |
//! | remove a rank range                         | O(n / B + k)             |
//! | start and length of a lex range             | O(log n) ²               |
//!
//! ¹ A chunk that grows past B is split, one that shrinks below B / 4 is
//! merged with a neighbour; both rebuild the Fenwick tree in O(n / B).
//!
//! ² When all scores are equal, the only case for which Redis defines lex
//! ranges. Otherwise the members are not in lex order; Redis's small
//! (listpack) encoding then scans linearly from the ends, and so do we, in
//! O(n), so the replies match it exactly.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::float::split_sign;
use crate::hasher::Seeded;

/// A member's bytes, shared by the two views of a [`ZSet`].
pub(crate) type Member = super::small::SmallBytes;

/// A score with a total order. Redis never stores NaN, so `total_cmp` agrees
/// with numeric order on every stored score (and -0 is stored as 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Score(pub(crate) f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// One member in the order: by score, then by member bytes (`memcmp` order,
/// a shorter prefix first, as Redis's `sdscmp`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    score: Score,
    member: Member,
}

impl Entry {
    /// Compares this entry with the pair (`score`, `member`) without
    /// building an entry (and allocating) for it.
    fn cmp_to(&self, score: f64, member: &[u8]) -> Ordering {
        self.score
            .cmp(&Score(score))
            .then_with(|| self.member[..].cmp(member))
    }

    fn pair(&self) -> (&[u8], f64) {
        (&self.member, self.score.0)
    }
}

/// -0 and 0 are one score. Redis's small encoding stores -0 as the integer
/// 0, so ZSCORE replies "0"; we store every score that way.
fn normalize(score: f64) -> f64 {
    if score == 0.0 {
        0.0
    } else {
        score
    }
}

/// Most members a packed sorted set holds (`zset-max-listpack-entries`'s
/// default).
pub(crate) const MAX_PACKED_ENTRIES: usize = 128;
/// Longest member a packed sorted set holds (`zset-max-listpack-value`'s
/// default); below 256, so one byte encodes each length.
pub(crate) const MAX_PACKED_LEN: usize = 64;

/// A sorted set, in one of two encodings, as Redis keeps it: a small one
/// (at most [`MAX_PACKED_ENTRIES`] members of at most [`MAX_PACKED_LEN`]
/// bytes) is [`Packed`], one buffer in order, scanned linearly as Redis's
/// listpack (a hash map, an index and a shared allocation per member cost
/// 140 bytes a member); a bigger one is [`Big`], for good. The big form is
/// boxed, so that a sorted set is 24 bytes, inline in its [`Value`].
///
/// [`Value`]: super::Value
#[derive(Debug, Clone)]
pub(crate) enum ZSet {
    Packed(Packed),
    Big(Box<Big>),
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet::Packed(Packed::default())
    }
}

/// Orders (`score`, `member`) against another pair, as the sorted set does.
fn cmp_pair(score: f64, member: &[u8], other_score: f64, other: &[u8]) -> Ordering {
    Score(score)
        .cmp(&Score(other_score))
        .then_with(|| member.cmp(other))
}

impl ZSet {
    /// Builds a sorted set from pairs; a later pair for the same member
    /// replaces the earlier one. Sorting once is cheaper than inserting one
    /// by one, which matters for ZUNIONSTORE and friends.
    pub(crate) fn from_pairs(pairs: impl IntoIterator<Item = (Vec<u8>, f64)>) -> ZSet {
        let pairs: Vec<(Vec<u8>, f64)> = pairs.into_iter().collect();
        if pairs.len() <= MAX_PACKED_ENTRIES && pairs.iter().all(|(m, _)| m.len() <= MAX_PACKED_LEN)
        {
            let mut packed = Packed::default();
            for (member, score) in &pairs {
                packed.insert(member, normalize(*score));
            }
            return ZSet::Packed(packed);
        }
        ZSet::Big(Box::new(Big::from_pairs(pairs)))
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            ZSet::Packed(p) => p.slots().count(),
            ZSet::Big(b) => b.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            ZSet::Packed(p) => p.buf.is_empty(),
            ZSet::Big(b) => b.len() == 0,
        }
    }

    pub(crate) fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Packed(p) => p.find(member).map(|slot| slot.score),
            ZSet::Big(b) => b.score(member),
        }
    }

    /// Sets `member`'s score; returns true if the member is new. A packed
    /// set that would outgrow its limits becomes big first.
    pub(crate) fn insert(&mut self, member: &[u8], score: f64) -> bool {
        let score = normalize(score);
        if let ZSet::Packed(p) = self {
            let fits = member.len() <= MAX_PACKED_LEN
                && (p.find(member).is_some() || p.slots().count() < MAX_PACKED_ENTRIES);
            if fits {
                return p.insert(member, score);
            }
            let pairs = p.slots().map(|s| (s.member.to_vec(), s.score));
            *self = ZSet::Big(Box::new(Big::from_pairs(pairs.collect::<Vec<_>>())));
        }
        match self {
            ZSet::Big(b) => b.insert(member, score),
            ZSet::Packed(_) => unreachable!("converted above"),
        }
    }

    /// Removes `member`; returns true if it was there.
    pub(crate) fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            ZSet::Packed(p) => p.remove(member),
            ZSet::Big(b) => b.remove(member),
        }
    }

    /// The 0-based rank of `member` in ascending order.
    pub(crate) fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        Some(self.partition_point(|m, s| cmp_pair(s, m, score, member) == Ordering::Less))
    }

    /// The member and score at `rank` (ascending, 0-based).
    pub(crate) fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        match self {
            ZSet::Packed(p) => p.slots().nth(rank).map(|s| (s.member, s.score)),
            ZSet::Big(b) => b.get(rank),
        }
    }

    /// Members in ascending (score, member) order.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> {
        let it: Box<dyn DoubleEndedIterator<Item = (&[u8], f64)>> = match self {
            ZSet::Packed(p) => Box::new(p.pairs().into_iter()),
            ZSet::Big(b) => Box::new(b.iter()),
        };
        it
    }

    /// Members from `rank` upwards.
    pub(crate) fn iter_from(&self, rank: usize) -> impl Iterator<Item = (&[u8], f64)> {
        let it: Box<dyn Iterator<Item = (&[u8], f64)>> = match self {
            ZSet::Packed(p) => Box::new(p.slots().skip(rank).map(|s| (s.member, s.score))),
            ZSet::Big(b) => Box::new(b.iter_from(rank)),
        };
        it
    }

    /// Members from `rank` downwards (`rank`, `rank - 1`, ... 0).
    pub(crate) fn iter_rev_from(&self, rank: usize) -> impl Iterator<Item = (&[u8], f64)> {
        let it: Box<dyn Iterator<Item = (&[u8], f64)>> = match self {
            ZSet::Packed(p) => {
                let mut pairs = p.pairs();
                pairs.truncate(rank.saturating_add(1).min(pairs.len()));
                if rank >= p.slots().count() {
                    pairs.clear();
                }
                Box::new(pairs.into_iter().rev())
            }
            ZSet::Big(b) => Box::new(b.iter_rev_from(rank)),
        };
        it
    }

    /// Removes the members of ranks `start..end`; returns how many.
    pub(crate) fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        match self {
            ZSet::Packed(p) => p.remove_ranks(start, end),
            ZSet::Big(b) => b.remove_ranks(start, end),
        }
    }

    /// Removes and returns the lowest member (or the highest if `max`).
    pub(crate) fn pop(&mut self, max: bool) -> Option<(Member, f64)> {
        match self {
            ZSet::Packed(p) => {
                let rank = if max {
                    p.slots().count().checked_sub(1)?
                } else {
                    0
                };
                let slot = p.slots().nth(rank)?;
                let popped = (Member::from(slot.member), slot.score);
                p.remove_ranks(rank, rank + 1);
                Some(popped)
            }
            ZSet::Big(b) => b.pop(max),
        }
    }

    /// The number of members for which `before` holds, given that it holds
    /// on a prefix of the order and on nothing after it.
    fn partition_point(&self, before: impl Fn(&[u8], f64) -> bool) -> usize {
        match self {
            ZSet::Packed(p) => p.slots().take_while(|s| before(s.member, s.score)).count(),
            ZSet::Big(b) => b.partition_point(before),
        }
    }

    pub(crate) fn score_start(&self, range: &ScoreRange, reverse: bool) -> Option<usize> {
        if reverse {
            let end = self.partition_point(|_, s| range.lte_max(s));
            let last = end.checked_sub(1)?;
            self.get(last)
                .is_some_and(|(_, s)| range.gte_min(s))
                .then_some(last)
        } else {
            let start = self.partition_point(|_, s| !range.gte_min(s));
            self.get(start)
                .is_some_and(|(_, s)| range.lte_max(s))
                .then_some(start)
        }
    }

    /// The ranks `start..end` of the members in a score range.
    pub(crate) fn score_span(&self, range: &ScoreRange) -> std::ops::Range<usize> {
        let start = self.partition_point(|_, s| !range.gte_min(s));
        let end = self.partition_point(|_, s| range.lte_max(s));
        start..end.max(start)
    }

    /// Whether every member has the same score, so that rank order is lex
    /// order and lex bounds can be found by bisection.
    fn lex_ordered(&self) -> bool {
        match (self.get(0), self.len().checked_sub(1)) {
            (Some((_, first)), Some(last)) => self.get(last).is_some_and(|(_, l)| l == first),
            _ => true,
        }
    }

    /// Where Redis starts a lex range: the first member in it (the last if
    /// `reverse`), as `zzlFirstInLexRange` / `zzlLastInLexRange`, including
    /// their quick refusals (an empty range, a set entirely outside it).
    pub(crate) fn lex_start(&self, range: &LexRange, reverse: bool) -> Option<usize> {
        if range.is_empty() {
            return None;
        }
        let (first, _) = self.get(0)?;
        let (last, _) = self.get(self.len().checked_sub(1)?)?;
        if !range.gte_min(last) || !range.lte_max(first) {
            return None;
        }
        let ordered = self.lex_ordered();
        if reverse {
            let pos = if ordered {
                self.partition_point(|m, _| range.lte_max(m))
                    .checked_sub(1)?
            } else {
                let from_end = self.iter().rev().position(|(m, _)| range.lte_max(m))?;
                self.len() - 1 - from_end
            };
            self.get(pos)
                .is_some_and(|(m, _)| range.gte_min(m))
                .then_some(pos)
        } else {
            let pos = if ordered {
                self.partition_point(|m, _| !range.gte_min(m))
            } else {
                self.iter().position(|(m, _)| range.gte_min(m))?
            };
            self.get(pos)
                .is_some_and(|(m, _)| range.lte_max(m))
                .then_some(pos)
        }
    }

    /// The ranks `start..end` that ZLEXCOUNT counts and ZREMRANGEBYLEX
    /// removes: from the start of the range, while members are below its max.
    pub(crate) fn lex_span(&self, range: &LexRange) -> std::ops::Range<usize> {
        let Some(start) = self.lex_start(range, false) else {
            return 0..0;
        };
        let end = if self.lex_ordered() {
            self.partition_point(|m, _| range.lte_max(m))
        } else {
            start
                + self
                    .iter_from(start)
                    .take_while(|(m, _)| range.lte_max(m))
                    .count()
        };
        start..end.max(start)
    }
}

/// A big sorted set: members ordered by (score, member), and each
/// member's score (Redis's skiplist encoding).
#[derive(Debug, Clone, Default)]
pub(crate) struct Big {
    scores: HashMap<Member, f64, Seeded>,
    order: OrderIndex<Entry>,
}

impl Big {
    /// Builds a sorted set from pairs; a later pair for the same member
    /// replaces the earlier one. Sorting once is cheaper than inserting one
    /// by one, which matters for ZUNIONSTORE and friends.
    fn from_pairs(pairs: impl IntoIterator<Item = (Vec<u8>, f64)>) -> Big {
        let mut scores: HashMap<Member, f64, Seeded> = HashMap::default();
        for (member, score) in pairs {
            scores.insert(Member::from(&member[..]), normalize(score));
        }
        let mut entries: Vec<Entry> = scores
            .iter()
            .map(|(member, &score)| Entry {
                score: Score(score),
                member: member.clone(),
            })
            .collect();
        entries.sort_unstable();
        Big {
            scores,
            order: OrderIndex::from_sorted(entries),
        }
    }

    fn len(&self) -> usize {
        self.scores.len()
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets `member`'s score; returns true if the member is new.
    fn insert(&mut self, member: &[u8], score: f64) -> bool {
        let score = normalize(score);
        let existing = self
            .scores
            .get_key_value(member)
            .map(|(key, &old)| (key.clone(), old));
        match existing {
            Some((key, old)) => {
                if old != score {
                    self.order.remove_by(|e| e.cmp_to(old, member));
                    self.order.insert(Entry {
                        score: Score(score),
                        member: key,
                    });
                    if let Some(s) = self.scores.get_mut(member) {
                        *s = score;
                    }
                }
                false
            }
            None => {
                let key = Member::from(member);
                self.order.insert(Entry {
                    score: Score(score),
                    member: key.clone(),
                });
                self.scores.insert(key, score);
                true
            }
        }
    }

    /// Removes `member`; returns true if it was there.
    fn remove(&mut self, member: &[u8]) -> bool {
        match self.scores.remove(member) {
            Some(score) => {
                self.order.remove_by(|e| e.cmp_to(score, member));
                true
            }
            None => false,
        }
    }

    /// The member and score at `rank` (ascending, 0-based).
    fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        self.order.get(rank).map(Entry::pair)
    }

    /// Members in ascending (score, member) order.
    fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        self.order.iter().map(Entry::pair)
    }

    /// Members from `rank` upwards.
    fn iter_from(&self, rank: usize) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        self.order.iter_from(rank).map(Entry::pair)
    }

    /// Members from `rank` downwards (`rank`, `rank - 1`, ... 0).
    fn iter_rev_from(&self, rank: usize) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        self.order.iter_rev_from(rank).map(Entry::pair)
    }

    /// Removes the members of ranks `start..end`; returns how many.
    fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let removed = self.order.drain_ranks(start, end);
        for e in &removed {
            self.scores.remove(&e.member);
        }
        removed.len()
    }

    /// Removes and returns the lowest member (or the highest if `max`).
    fn pop(&mut self, max: bool) -> Option<(Member, f64)> {
        let rank = if max { self.len().checked_sub(1)? } else { 0 };
        let entry = self.order.remove_at(rank)?;
        self.scores.remove(&entry.member);
        Some((entry.member, entry.score.0))
    }

    /// Where Redis starts a score range: the first member in it (the last
    /// if `reverse`), as `zslFirstInRange` / `zslLastInRange`.
    /// The number of entries for which `before` holds, given that it holds
    /// on a prefix of the order.
    fn partition_point(&self, before: impl Fn(&[u8], f64) -> bool) -> usize {
        self.order.partition_point(|e| before(&e.member, e.score.0))
    }
}

/// A small sorted set in one buffer, in (score, member) order: for each
/// member its score (see [`encode_score`]), its length (one byte) and its
/// bytes. Kept at its exact size: small sorted sets are many.
#[derive(Debug, Clone, Default)]
pub(crate) struct Packed {
    buf: Vec<u8>,
}

/// Writes a score as a tag byte then, as a listpack stores a whole number
/// as an integer: tag 1, 2 or 4 and an integer of that many bytes if the
/// score is one (most scores are: counters, timestamps, ranks), else tag 8
/// and the double's 8 bytes. Little-endian; every form reads back exact.
fn encode_score(buf: &mut Vec<u8>, score: f64) {
    // -0 is stored as 0 (see `normalize`), so the sign survives too.
    let whole = score.fract() == 0.0 && score.abs() < 2_147_483_648.0;
    let n = score as i64;
    let width: usize = match n {
        _ if !whole => 8,
        -128..=127 => 1,
        -32_768..=32_767 => 2,
        _ => 4,
    };
    buf.push(u8::try_from(width).unwrap_or(8));
    if width == 8 {
        buf.extend_from_slice(&score.to_le_bytes());
    } else {
        buf.extend_from_slice(&n.to_le_bytes()[..width]);
    }
}

/// Reads a score [`encode_score`] wrote at the start of `bytes`: the score
/// and the width after the tag.
fn decode_score(bytes: &[u8]) -> Option<(f64, usize)> {
    let (&tag, rest) = bytes.split_first()?;
    let width = usize::from(tag);
    let raw = rest.get(..width)?;
    if width == 8 {
        return Some((f64::from_le_bytes(raw.try_into().ok()?), 8));
    }
    let negative = raw.last().is_some_and(|b| b & 0x80 != 0);
    let mut full = [if negative { 0xff } else { 0 }; 8];
    full.get_mut(..width)?.copy_from_slice(raw);
    Some((i64::from_le_bytes(full) as f64, width))
}

/// One member of a [`Packed`] set, where it lies.
#[derive(Clone, Copy)]
struct PackedSlot<'a> {
    start: usize,
    end: usize,
    member: &'a [u8],
    score: f64,
}

impl Packed {
    fn slots(&self) -> impl Iterator<Item = PackedSlot<'_>> {
        let buf = &self.buf;
        let mut at = 0;
        std::iter::from_fn(move || {
            let (score, width) = decode_score(buf.get(at..)?)?;
            let len_at = at + 1 + width;
            let len = usize::from(*buf.get(len_at)?);
            let member = buf.get(len_at + 1..len_at + 1 + len)?;
            let slot = PackedSlot {
                start: at,
                end: len_at + 1 + len,
                member,
                score,
            };
            at = slot.end;
            Some(slot)
        })
    }

    fn pairs(&self) -> Vec<(&[u8], f64)> {
        self.slots().map(|s| (s.member, s.score)).collect()
    }

    fn find(&self, member: &[u8]) -> Option<PackedSlot<'_>> {
        self.slots().find(|s| s.member == member)
    }

    /// Sets `member`'s score (at most [`MAX_PACKED_LEN`] bytes); true if
    /// the member is new.
    fn insert(&mut self, member: &[u8], score: f64) -> bool {
        let existing = self.find(member).map(|s| (s.start..s.end, s.score));
        if let Some((_, old)) = &existing {
            if *old == score {
                return false;
            }
        }
        let mut encoded = Vec::with_capacity(10 + member.len());
        encode_score(&mut encoded, score);
        encoded.push(u8::try_from(member.len()).unwrap_or(u8::MAX));
        encoded.extend_from_slice(member);
        if let Some((span, _)) = &existing {
            self.buf.drain(span.clone());
        }
        let at = self
            .slots()
            .find(|s| cmp_pair(s.score, s.member, score, member) == Ordering::Greater)
            .map_or(self.buf.len(), |s| s.start);
        self.buf.reserve_exact(encoded.len());
        self.buf.splice(at..at, encoded);
        existing.is_none()
    }

    fn remove(&mut self, member: &[u8]) -> bool {
        match self.find(member).map(|s| s.start..s.end) {
            Some(span) => {
                self.buf.drain(span);
                self.buf.shrink_to_fit();
                true
            }
            None => false,
        }
    }

    fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let spans: Vec<(usize, usize)> = self
            .slots()
            .skip(start)
            .take(end.saturating_sub(start))
            .map(|s| (s.start, s.end))
            .collect();
        let (Some(&(from, _)), Some(&(_, to))) = (spans.first(), spans.last()) else {
            return 0;
        };
        self.buf.drain(from..to);
        self.buf.shrink_to_fit();
        spans.len()
    }
}

/// A score interval of ZRANGEBYSCORE, ZCOUNT and friends: `(` before a bound
/// makes it exclusive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ScoreRange {
    min: f64,
    min_exclusive: bool,
    max: f64,
    max_exclusive: bool,
}

impl ScoreRange {
    /// Parses `min` and `max` as Redis's `zslParseRange`; `None` is Redis's
    /// "min or max is not a float".
    pub(crate) fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let (min, min_exclusive) = parse_score_bound(min)?;
        let (max, max_exclusive) = parse_score_bound(max)?;
        Some(ScoreRange {
            min,
            min_exclusive,
            max,
            max_exclusive,
        })
    }

    /// `[min, max)`: the scores of a geohash cell.
    pub(crate) fn half_open(min: f64, max: f64) -> ScoreRange {
        ScoreRange {
            min,
            min_exclusive: false,
            max,
            max_exclusive: true,
        }
    }

    pub(crate) fn gte_min(&self, score: f64) -> bool {
        if self.min_exclusive {
            score > self.min
        } else {
            score >= self.min
        }
    }

    pub(crate) fn lte_max(&self, score: f64) -> bool {
        if self.max_exclusive {
            score < self.max
        } else {
            score <= self.max
        }
    }
}

fn parse_score_bound(arg: &[u8]) -> Option<(f64, bool)> {
    let (text, exclusive) = match arg.split_first() {
        Some((b'(', rest)) => (rest, true),
        _ => (arg, false),
    };
    let value = strtod_whole(text)?;
    (!value.is_nan()).then_some((value, exclusive))
}

/// C's `strtod` on a whole C string, as `zslParseRange` uses it. This is
/// laxer than the parser of ZADD scores: leading white space is skipped,
/// an empty string is 0, overflow is ±inf and underflow 0 (errno is not
/// checked), hexadecimal floats are read, and the string ends at a NUL.
fn strtod_whole(bytes: &[u8]) -> Option<f64> {
    let text = bytes.split(|&b| b == 0).next().unwrap_or_default();
    if text.is_empty() {
        return Some(0.0); // nothing parsed, and the end pointer is at the end
    }
    // C's isspace; all blanks means nothing parsed, and the end pointer is
    // left at the first blank.
    let start = text
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    let body = text.get(start..).unwrap_or_default();
    let (negative, unsigned) = split_sign(body);
    let magnitude = match unsigned {
        [b'0', b'x' | b'X', hex @ ..] => parse_hex_float(hex)?,
        _ => {
            // Rust's parser accepts what strtod accepts in decimal (and
            // inf/infinity/nan); a second sign is refused by both.
            if unsigned.first().is_some_and(|c| *c == b'+' || *c == b'-') {
                return None;
            }
            std::str::from_utf8(unsigned).ok()?.parse::<f64>().ok()?
        }
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// The digits of a C99 hexadecimal float after `0x`: hex digits with an
/// optional point, then an optional binary exponent `p[+-]digits`.
fn parse_hex_float(text: &[u8]) -> Option<f64> {
    let (mantissa_text, exponent_text) = match text.iter().position(|c| matches!(c, b'p' | b'P')) {
        Some(p) => (&text[..p], Some(&text[p + 1..])),
        None => (text, None),
    };
    let mut mantissa: u64 = 0;
    let mut exponent: i64 = 0;
    let mut digits = 0usize;
    let mut seen_point = false;
    for &c in mantissa_text {
        if c == b'.' && !seen_point {
            seen_point = true;
            continue;
        }
        let d = u64::from(char::from(c).to_digit(16)?);
        digits += 1;
        if mantissa >> 60 == 0 {
            mantissa = (mantissa << 4) | d;
            if seen_point {
                exponent -= 4;
            }
        } else {
            // Beyond 64 bits: keep a sticky bit so rounding stays right.
            mantissa |= u64::from(d != 0);
            if !seen_point {
                exponent += 4;
            }
        }
    }
    if digits == 0 {
        return None;
    }
    if let Some(exp) = exponent_text {
        let (negative, exp_digits) = split_sign(exp);
        if exp_digits.is_empty() || !exp_digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let mut e: i64 = 0;
        for &c in exp_digits {
            e = (e * 10 + i64::from(c - b'0')).min(1 << 20);
        }
        exponent += if negative { -e } else { e };
    }
    // Scaling by powers of two is exact, except in the subnormal range.
    let mut value = mantissa as f64;
    let mut exponent = exponent.clamp(-4000, 4000) as i32;
    while exponent != 0 {
        let step = exponent.clamp(-1000, 1000);
        value *= 2f64.powi(step);
        exponent -= step;
    }
    Some(value)
}

/// One end of a lex range: `-` and `+` are below and above every string.
#[derive(Debug, Clone, PartialEq)]
enum LexEdge {
    Lowest,
    Highest,
    Bytes(Vec<u8>),
}

/// A lex interval of ZRANGEBYLEX, ZLEXCOUNT and friends: `[x` inclusive,
/// `(x` exclusive, `-` and `+` the extremes (exclusive, as in Redis).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LexRange {
    min: LexEdge,
    min_exclusive: bool,
    max: LexEdge,
    max_exclusive: bool,
}

impl LexRange {
    /// Parses `min` and `max` as Redis's `zslParseLexRange`; `None` is
    /// Redis's "min or max not valid string range item".
    pub(crate) fn parse(min: &[u8], max: &[u8]) -> Option<LexRange> {
        let (min, min_exclusive) = parse_lex_bound(min)?;
        let (max, max_exclusive) = parse_lex_bound(max)?;
        Some(LexRange {
            min,
            min_exclusive,
            max,
            max_exclusive,
        })
    }

    /// A range no string can be in (`sdscmplex(min, max)` > 0, or equal
    /// with an exclusive end).
    fn is_empty(&self) -> bool {
        let cmp = match (&self.min, &self.max) {
            (LexEdge::Lowest, LexEdge::Lowest) | (LexEdge::Highest, LexEdge::Highest) => {
                Ordering::Equal
            }
            (LexEdge::Lowest, _) | (_, LexEdge::Highest) => Ordering::Less,
            (LexEdge::Highest, _) | (_, LexEdge::Lowest) => Ordering::Greater,
            (LexEdge::Bytes(a), LexEdge::Bytes(b)) => a.cmp(b),
        };
        cmp == Ordering::Greater
            || (cmp == Ordering::Equal && (self.min_exclusive || self.max_exclusive))
    }

    pub(crate) fn gte_min(&self, member: &[u8]) -> bool {
        let cmp = edge_cmp(member, &self.min);
        if self.min_exclusive {
            cmp == Ordering::Greater
        } else {
            cmp != Ordering::Less
        }
    }

    pub(crate) fn lte_max(&self, member: &[u8]) -> bool {
        let cmp = edge_cmp(member, &self.max);
        if self.max_exclusive {
            cmp == Ordering::Less
        } else {
            cmp != Ordering::Greater
        }
    }
}

/// A member compared with a range edge.
fn edge_cmp(member: &[u8], edge: &LexEdge) -> Ordering {
    match edge {
        LexEdge::Lowest => Ordering::Greater,
        LexEdge::Highest => Ordering::Less,
        LexEdge::Bytes(b) => member.cmp(b),
    }
}

fn parse_lex_bound(arg: &[u8]) -> Option<(LexEdge, bool)> {
    // Redis reads `+` and `-` as C strings: a NUL after them ends the item.
    let alone = |rest: &[u8]| rest.first().is_none_or(|&c| c == 0);
    match arg.split_first() {
        Some((b'+', rest)) if alone(rest) => Some((LexEdge::Highest, true)),
        Some((b'-', rest)) if alone(rest) => Some((LexEdge::Lowest, true)),
        Some((b'(', rest)) => Some((LexEdge::Bytes(rest.to_vec()), true)),
        Some((b'[', rest)) => Some((LexEdge::Bytes(rest.to_vec()), false)),
        _ => None,
    }
}

/// Largest chunk of an [`OrderIndex`]: inserting into a chunk moves up to
/// this many entries, and a rank lookup walks log2(n / MAX_CHUNK) levels
/// of the Fenwick tree, then bisects one chunk.
const MAX_CHUNK: usize = 256;
/// A chunk smaller than this is merged with a neighbour when they fit in one.
const MIN_CHUNK: usize = MAX_CHUNK / 4;

/// An ordered sequence with O(log n) rank queries: sorted chunks, each non
/// empty, whose concatenation is sorted, and a Fenwick (binary indexed) tree
/// over the chunk lengths to turn a chunk index into a rank and back.
#[derive(Debug, Clone)]
struct OrderIndex<T> {
    chunks: Vec<Vec<T>>,
    /// `fenwick[i - 1]` holds the total length of chunks `i - lowbit(i) .. i`.
    fenwick: Vec<usize>,
    len: usize,
}

impl<T> Default for OrderIndex<T> {
    fn default() -> Self {
        OrderIndex {
            chunks: Vec::new(),
            fenwick: Vec::new(),
            len: 0,
        }
    }
}

fn lowbit(i: usize) -> usize {
    i & i.wrapping_neg()
}

impl<T: Ord> OrderIndex<T> {
    fn from_sorted(items: Vec<T>) -> Self {
        let len = items.len();
        let mut chunks = Vec::with_capacity(len / (MAX_CHUNK / 2) + 1);
        let mut items = items.into_iter().peekable();
        while items.peek().is_some() {
            chunks.push(items.by_ref().take(MAX_CHUNK / 2).collect());
        }
        let mut index = OrderIndex {
            chunks,
            fenwick: Vec::new(),
            len,
        };
        index.rebuild();
        index
    }

    fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.chunks.iter().flatten()
    }

    /// The number of entries for which `before` holds, given that it holds
    /// on a prefix of the order and on nothing after it.
    fn partition_point(&self, before: impl Fn(&T) -> bool) -> usize {
        let c = self
            .chunks
            .partition_point(|ch| ch.last().is_some_and(&before));
        match self.chunks.get(c) {
            Some(chunk) => self.prefix(c) + chunk.partition_point(&before),
            None => self.len,
        }
    }

    /// The chunk and offset of the entry at `rank`.
    fn locate(&self, rank: usize) -> Option<(usize, usize)> {
        if rank >= self.len {
            return None;
        }
        let mut pos = 0;
        let mut rest = rank;
        let mut step = self
            .fenwick
            .len()
            .checked_ilog2()
            .map_or(0, |b| 1usize << b);
        while step > 0 {
            if let Some(&n) = self.fenwick.get(pos + step - 1) {
                if n <= rest {
                    pos += step;
                    rest -= n;
                }
            }
            step /= 2;
        }
        Some((pos, rest))
    }

    fn get(&self, rank: usize) -> Option<&T> {
        let (c, i) = self.locate(rank)?;
        self.chunks.get(c)?.get(i)
    }

    fn iter_from(&self, rank: usize) -> impl Iterator<Item = &T> {
        let (c, i) = self.locate(rank).unwrap_or((self.chunks.len(), 0));
        let head = self
            .chunks
            .get(c)
            .and_then(|ch| ch.get(i..))
            .unwrap_or_default();
        let rest = self.chunks.get(c + 1..).unwrap_or_default();
        head.iter().chain(rest.iter().flatten())
    }

    fn iter_rev_from(&self, rank: usize) -> impl Iterator<Item = &T> {
        let (head, rest): (&[T], &[Vec<T>]) = match self.locate(rank) {
            Some((c, i)) => (
                self.chunks
                    .get(c)
                    .and_then(|ch| ch.get(..=i))
                    .unwrap_or_default(),
                self.chunks.get(..c).unwrap_or_default(),
            ),
            None => (&[], &[]),
        };
        head.iter()
            .rev()
            .chain(rest.iter().rev().flat_map(|ch| ch.iter().rev()))
    }

    /// Inserts `item` at its place in the order.
    fn insert(&mut self, item: T) {
        let c = self
            .chunks
            .partition_point(|ch| ch.last().is_some_and(|last| *last < item));
        // Past the last chunk's end: append to the last chunk.
        let c = c.min(self.chunks.len().saturating_sub(1));
        self.len += 1;
        let Some(chunk) = self.chunks.get_mut(c) else {
            self.chunks.push(vec![item]);
            self.rebuild();
            return;
        };
        let i = chunk.partition_point(|e| *e < item);
        // Grow by an eighth rather than double: a chunk is at most
        // MAX_CHUNK entries, so the copies stay short, and the index keeps
        // little slack (doubling left a third of it empty on average).
        if chunk.len() == chunk.capacity() {
            chunk.reserve_exact((chunk.len() / 8).max(4));
        }
        chunk.insert(i, item);
        if chunk.len() > MAX_CHUNK {
            let tail = chunk.split_off(chunk.len() / 2);
            chunk.shrink_to_fit();
            self.chunks.insert(c + 1, tail);
            self.rebuild();
        } else {
            self.fenwick_add(c, true);
        }
    }

    /// Removes the entry for which `cmp` says Equal (`cmp` orders entries
    /// against the entry sought).
    fn remove_by(&mut self, cmp: impl Fn(&T) -> Ordering) -> Option<T> {
        let c = self
            .chunks
            .partition_point(|ch| ch.last().is_some_and(|e| cmp(e) == Ordering::Less));
        let chunk = self.chunks.get_mut(c)?;
        let i = chunk.partition_point(|e| cmp(e) == Ordering::Less);
        if chunk.get(i).map(&cmp) != Some(Ordering::Equal) {
            return None;
        }
        let item = chunk.remove(i);
        self.after_remove(c);
        Some(item)
    }

    fn remove_at(&mut self, rank: usize) -> Option<T> {
        let (c, i) = self.locate(rank)?;
        let chunk = self.chunks.get_mut(c)?;
        if i >= chunk.len() {
            return None;
        }
        let item = chunk.remove(i);
        self.after_remove(c);
        Some(item)
    }

    /// Keeps the chunks balanced after one entry left chunk `c`.
    fn after_remove(&mut self, c: usize) {
        self.len -= 1;
        let n = self.chunks.get(c).map_or(0, Vec::len);
        if n == 0 {
            if c < self.chunks.len() {
                self.chunks.remove(c);
            }
            self.rebuild();
            return;
        }
        if n < MIN_CHUNK {
            let next = self.chunks.get(c + 1).map(Vec::len);
            let prev = c
                .checked_sub(1)
                .and_then(|p| self.chunks.get(p))
                .map(Vec::len);
            let merge_at = if next.is_some_and(|m| m + n <= MAX_CHUNK) {
                Some(c + 1)
            } else if prev.is_some_and(|m| m + n <= MAX_CHUNK) {
                Some(c)
            } else {
                None
            };
            if let Some(j) = merge_at {
                // Move chunk j into chunk j - 1.
                let moved = self.chunks.remove(j);
                if let Some(target) = self.chunks.get_mut(j - 1) {
                    target.extend(moved);
                }
                self.rebuild();
                return;
            }
        }
        self.fenwick_add(c, false);
    }

    /// Removes the entries of ranks `start..end` and returns them, in order.
    fn drain_ranks(&mut self, start: usize, end: usize) -> Vec<T> {
        let end = end.min(self.len);
        if start >= end {
            return Vec::new();
        }
        let mut removed = Vec::with_capacity(end - start);
        let mut kept: Vec<Vec<T>> = Vec::with_capacity(self.chunks.len());
        let mut pos = 0;
        for mut chunk in std::mem::take(&mut self.chunks) {
            let n = chunk.len();
            let lo = start.saturating_sub(pos).min(n);
            let hi = end.saturating_sub(pos).min(n);
            pos += n;
            if lo < hi {
                removed.extend(chunk.drain(lo..hi));
            }
            if chunk.is_empty() {
                continue;
            }
            match kept.last_mut() {
                Some(last)
                    if last.len() + chunk.len() <= MAX_CHUNK
                        && (last.len() < MIN_CHUNK || chunk.len() < MIN_CHUNK) =>
                {
                    last.extend(chunk)
                }
                _ => kept.push(chunk),
            }
        }
        self.chunks = kept;
        self.len -= removed.len();
        self.rebuild();
        removed
    }

    /// Total length of the chunks before chunk `c`.
    fn prefix(&self, c: usize) -> usize {
        let mut i = c;
        let mut sum = 0;
        while i > 0 {
            sum += self.fenwick.get(i - 1).copied().unwrap_or(0);
            i -= lowbit(i);
        }
        sum
    }

    /// Adds one to (or removes one from) the length of chunk `c`.
    fn fenwick_add(&mut self, c: usize, grow: bool) {
        let mut i = c + 1;
        while let Some(slot) = self.fenwick.get_mut(i - 1) {
            if grow {
                *slot += 1;
            } else {
                *slot -= 1;
            }
            i += lowbit(i);
        }
    }

    /// Rebuilds the Fenwick tree from the chunk lengths, in O(chunks).
    fn rebuild(&mut self) {
        self.fenwick.clear();
        self.fenwick.extend(self.chunks.iter().map(Vec::len));
        let m = self.fenwick.len();
        for i in 1..=m {
            let parent = i + lowbit(i);
            if parent <= m {
                let v = self.fenwick[i - 1];
                self.fenwick[parent - 1] += v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(z: &ZSet) -> Vec<(String, f64)> {
        z.iter()
            .map(|(m, s)| (String::from_utf8_lossy(m).into_owned(), s))
            .collect()
    }

    /// A model of the order: a sorted Vec, checked against the index after
    /// every step of a long pseudo-random sequence of inserts and removals,
    /// so splits, merges and the Fenwick tree are all exercised.
    #[test]
    fn order_index_matches_a_sorted_vec() {
        let mut index: OrderIndex<u32> = OrderIndex::default();
        let mut model: Vec<u32> = Vec::new();
        let mut x: u32 = 12345;
        for step in 0..20_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let v = (x >> 8) % 3000;
            let remove = model.len() > 1500 || (step % 3 == 0 && !model.is_empty());
            if remove {
                let at = (x as usize >> 4) % model.len();
                let item = model.remove(at);
                if step % 2 == 0 {
                    assert_eq!(index.remove_by(|e| e.cmp(&item)), Some(item));
                } else {
                    assert_eq!(index.remove_at(at), Some(item));
                }
            } else {
                let pos = model.partition_point(|e| *e < v);
                model.insert(pos, v);
                index.insert(v);
            }
            assert_eq!(index.len, model.len());
            if step % 97 == 0 {
                assert!(index.iter().eq(model.iter()));
                for (rank, item) in model.iter().enumerate().step_by(37) {
                    assert_eq!(index.get(rank), Some(item));
                    assert_eq!(
                        index.partition_point(|e| e < item),
                        model.partition_point(|e| e < item)
                    );
                    assert!(index.iter_from(rank).eq(model[rank..].iter()));
                    assert!(index.iter_rev_from(rank).eq(model[..=rank].iter().rev()));
                }
                assert!(index
                    .chunks
                    .iter()
                    .all(|c| !c.is_empty() && c.len() <= MAX_CHUNK));
            }
        }
        assert_eq!(index.get(model.len()), None);
        assert_eq!(index.iter_from(model.len()).count(), 0);
        assert_eq!(index.iter_rev_from(model.len()).count(), 0);
        assert_eq!(index.remove_by(|e| e.cmp(&5000)), None);
    }

    #[test]
    fn packed_scores_read_back_exact() {
        for score in [
            0.0,
            1.0,
            -1.0,
            127.0,
            128.0,
            -129.0,
            40000.0,
            -40000.0,
            2_147_483_647.0,
            -2_147_483_648.0,
            2_147_483_648.0,
            0.5,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e15,
            f64::MIN_POSITIVE,
        ] {
            let mut buf = Vec::new();
            encode_score(&mut buf, score);
            let (back, width) = decode_score(&buf).expect("decodes");
            assert_eq!(back.to_bits(), score.to_bits(), "{score}");
            assert_eq!(buf.len(), 1 + width);
        }
    }

    /// The packed form answers every query as the big form does.
    #[test]
    fn packed_and_big_forms_agree() {
        let mut packed = ZSet::default();
        let mut big = ZSet::default();
        for i in 0..MAX_PACKED_ENTRIES + 1 {
            big.insert(format!("tmp{i}").as_bytes(), 0.0);
        }
        for i in 0..MAX_PACKED_ENTRIES + 1 {
            big.remove(format!("tmp{i}").as_bytes());
        }
        assert!(matches!(big, ZSet::Big(_)));
        let mut x: u64 = 99;
        for step in 0..5000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let member = format!("m{}", (x >> 40) % 60).into_bytes();
            let score = ((x >> 20) % 7) as f64 - 3.0;
            match (x >> 33) % 7 {
                0..=3 => assert_eq!(packed.insert(&member, score), big.insert(&member, score)),
                4 => assert_eq!(packed.remove(&member), big.remove(&member)),
                5 => {
                    let max = step % 2 == 0;
                    let a = packed.pop(max).map(|(m, s)| (m.to_vec(), s));
                    let b = big.pop(max).map(|(m, s)| (m.to_vec(), s));
                    assert_eq!(a, b);
                }
                _ => {
                    let (lo, hi) = (((x >> 8) % 10) as usize, ((x >> 12) % 20) as usize);
                    assert_eq!(packed.remove_ranks(lo, hi), big.remove_ranks(lo, hi));
                }
            }
            assert!(matches!(packed, ZSet::Packed(_)));
            assert_eq!(packed.len(), big.len());
            assert!(packed.iter().eq(big.iter()));
            assert!(packed.iter().rev().eq(big.iter().rev()));
            let n = packed.len();
            for rank in [0, n / 2, n.saturating_sub(1), n, n + 3] {
                assert_eq!(packed.get(rank), big.get(rank));
                assert!(packed.iter_from(rank).eq(big.iter_from(rank)));
                assert!(packed.iter_rev_from(rank).eq(big.iter_rev_from(rank)));
            }
            assert_eq!(packed.rank(&member), big.rank(&member));
            assert_eq!(packed.score(&member), big.score(&member));
            let range = ScoreRange::parse(b"(-1", b"2").expect("valid");
            assert_eq!(packed.score_span(&range), big.score_span(&range));
            assert_eq!(
                packed.score_start(&range, true),
                big.score_start(&range, true)
            );
            let lex = LexRange::parse(b"[m2", b"(m5").expect("valid");
            assert_eq!(packed.lex_span(&lex), big.lex_span(&lex));
            assert_eq!(packed.lex_start(&lex, true), big.lex_start(&lex, true));
        }
    }

    #[test]
    fn drain_ranks_removes_a_slice_and_keeps_the_rest_indexed() {
        let mut index = OrderIndex::from_sorted((0..2000u32).collect());
        let removed = index.drain_ranks(100, 1500);
        assert_eq!(removed, (100..1500).collect::<Vec<_>>());
        let rest: Vec<u32> = (0..100).chain(1500..2000).collect();
        assert!(index.iter().eq(rest.iter()));
        for (rank, item) in rest.iter().enumerate() {
            assert_eq!(index.get(rank), Some(item));
        }
        assert!(index.drain_ranks(5, 5).is_empty());
        assert_eq!(index.drain_ranks(0, usize::MAX).len(), 600);
        assert_eq!(index.len, 0);
        assert_eq!(index.get(0), None);
    }

    #[test]
    fn ties_order_by_member_bytes_and_minus_zero_is_zero() {
        let mut z = ZSet::default();
        z.insert(b"b", 1.0);
        z.insert(b"a", 1.0);
        z.insert(b"ab", 1.0);
        z.insert(b"z", -0.0);
        assert_eq!(z.score(b"z").map(f64::to_bits), Some(0f64.to_bits()));
        assert_eq!(
            members(&z),
            [
                ("z".into(), 0.0),
                ("a".into(), 1.0),
                ("ab".into(), 1.0),
                ("b".into(), 1.0)
            ]
        );
        assert_eq!(z.rank(b"ab"), Some(2));
        assert_eq!(z.rank(b"nope"), None);
        // Re-scoring moves the member.
        assert!(!z.insert(b"a", 5.0));
        assert_eq!(z.rank(b"a"), Some(3));
        assert_eq!(
            z.pop(true).map(|(m, s)| (m.to_vec(), s)),
            Some((b"a".to_vec(), 5.0))
        );
        assert_eq!(
            z.pop(false).map(|(m, s)| (m.to_vec(), s)),
            Some((b"z".to_vec(), 0.0))
        );
        assert_eq!(z.len(), 2);
    }

    #[test]
    fn score_ranges_parse_like_strtod() {
        let r = |min: &[u8], max: &[u8]| ScoreRange::parse(min, max);
        assert_eq!(r(b"", b"").map(|r| (r.min, r.max)), Some((0.0, 0.0)));
        assert_eq!(
            r(b"(", b"5").map(|r| (r.min, r.min_exclusive)),
            Some((0.0, true))
        );
        assert_eq!(r(b" 1", b"0x10").map(|r| (r.min, r.max)), Some((1.0, 16.0)));
        assert_eq!(
            r(b"1e400", b"-1e400").map(|r| (r.min, r.max)),
            Some((f64::INFINITY, f64::NEG_INFINITY))
        );
        assert_eq!(r(b"1\0abc", b"+inf").map(|r| r.min), Some(1.0));
        assert_eq!(r(b"-0x1.8p1", b"1").map(|r| r.min), Some(-3.0));
        assert_eq!(r(b"\x0b\t1", b"1").map(|r| r.min), Some(1.0));
        for bad in [
            &b"nan"[..],
            b"1 ",
            b" ",
            b"\x0b",
            b"x",
            b"0x",
            b"1e",
            b"--1",
            b"0x1p",
            b"(nan",
        ] {
            assert_eq!(r(bad, b"1"), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn lex_ranges_parse_like_redis() {
        assert!(LexRange::parse(b"-", b"+").is_some());
        assert!(LexRange::parse(b"[a", b"(b").is_some());
        assert!(LexRange::parse(b"[", b"(").is_some());
        for bad in [&b"a"[..], b"", b"-a", b"+a", b"1"] {
            assert_eq!(LexRange::parse(bad, b"+"), None);
        }
        let empty = |a: &[u8], b: &[u8]| LexRange::parse(a, b).is_some_and(|r| r.is_empty());
        assert!(empty(b"+", b"-"));
        assert!(empty(b"-", b"-"));
        assert!(empty(b"(a", b"[a"));
        assert!(!empty(b"[a", b"[a"));
        assert!(!empty(b"-", b"[a"));
    }

    #[test]
    fn lex_ranges_on_mixed_scores_scan_like_the_small_encoding() {
        // Order by score: c(1) a(2) b(3) d(4); replies observed from Redis
        // 7.0.15 with this listpack-encoded set.
        let z = ZSet::from_pairs([
            (b"c".to_vec(), 1.0),
            (b"a".to_vec(), 2.0),
            (b"b".to_vec(), 3.0),
            (b"d".to_vec(), 4.0),
        ]);
        let range = |min: &[u8], max: &[u8]| LexRange::parse(min, max).expect("valid");
        // ZLEXCOUNT m [b + -> 4, ZRANGEBYLEX from "c".
        assert_eq!(z.lex_start(&range(b"[b", b"+"), false), Some(0));
        assert_eq!(z.lex_span(&range(b"[b", b"+")), 0..4);
        // ZREVRANGEBYLEX m + [b -> d b.
        assert_eq!(z.lex_start(&range(b"[b", b"+"), true), Some(3));
        // ZRANGEBYLEX m - [b -> empty: the first member "c" is above the max.
        assert_eq!(z.lex_start(&range(b"-", b"[b"), false), None);
        assert_eq!(z.lex_span(&range(b"-", b"[b")), 0..0);
        // ZLEXCOUNT m [a [c -> 3; ZREVRANGEBYLEX m [c [a -> b a c.
        assert_eq!(z.lex_span(&range(b"[a", b"[c")), 0..3);
        assert_eq!(z.lex_start(&range(b"[a", b"[c"), true), Some(2));
    }
}
