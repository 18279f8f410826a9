//! The sorted set value type.

use std::collections::{BTreeSet, HashMap};

use super::value::Bytes;

/// A score with a total order. Redis never stores NaN, so `total_cmp` agrees
/// with numeric order on every stored score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Score(pub(crate) f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Members ordered by (score, member), and each member's score.
#[derive(Debug, Clone, Default)]
pub(crate) struct ZSet {
    scores: HashMap<Bytes, f64>,
    ordered: BTreeSet<(Score, Bytes)>,
}

impl ZSet {
    pub(crate) fn len(&self) -> usize {
        self.scores.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    pub(crate) fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets `member`'s score; returns true if the member is new.
    pub(crate) fn insert(&mut self, member: &[u8], score: f64) -> bool {
        // -0.0 and 0.0 are one score to Redis.
        let score = if score == 0.0 { 0.0 } else { score };
        match self.scores.get_mut(member) {
            Some(old) => {
                if *old != score {
                    self.ordered.remove(&(Score(*old), member.to_vec()));
                    self.ordered.insert((Score(score), member.to_vec()));
                    *old = score;
                }
                false
            }
            None => {
                self.scores.insert(member.to_vec(), score);
                self.ordered.insert((Score(score), member.to_vec()));
                true
            }
        }
    }

    /// Removes `member`; returns true if it was there.
    pub(crate) fn remove(&mut self, member: &[u8]) -> bool {
        match self.scores.remove(member) {
            Some(score) => {
                self.ordered.remove(&(Score(score), member.to_vec()));
                true
            }
            None => false,
        }
    }

    /// Members in ascending (score, member) order.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> {
        self.ordered.iter().map(|(s, m)| (m.as_slice(), s.0))
    }
}
