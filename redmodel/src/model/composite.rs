//! Composite scores: several ordered dimensions packed into one
//! integer score, so that one ZRANGEBYSCORE answers a query on a prefix of
//! them.
//!
//! For example, a date and a type packed into decimal digits: 2 for the year,
//! 3 for the day of the year, 4 for a type code, so that `152003456` is
//! type 3456 on day 200 of 2015. Then `ZRANGEBYSCORE 151900000 152009999`
//! is ten days of every type, `152003578 152003578` one day and one type,
//! `152001000 152004000` one day and types 1000 to 4000. The major
//! dimension comes first; a range on a minor dimension is only a range of
//! scores when every dimension before it is fixed.
//!
//! A [`Composite`] declares the dimensions and their widths once:
//!
//! ```
//! use redmodel::model::{Composite, Dim};
//!
//! /// Year (2 digits), day of year (3 digits), type code (4 digits).
//! const DAY_TYPE: Composite<3> =
//!     Composite::new([Dim::digits("year", 2), Dim::digits("day", 3), Dim::digits("type", 4)]);
//!
//! assert_eq!(DAY_TYPE.encode([15, 200, 3456])?, 152003456);
//! assert_eq!(DAY_TYPE.decode(152003456)?, [15, 200, 3456]);
//! // Ten days, every type; one day; one day and types 1000 to 4000.
//! assert_eq!(DAY_TYPE.between(&[15, 190], &[15, 200])?, 151900000..=152009999);
//! assert_eq!(DAY_TYPE.span(&[15, 200])?, 152000000..=152009999);
//! assert_eq!(DAY_TYPE.between(&[15, 200, 1000], &[15, 200, 4000])?, 152001000..=152004000);
//! // A value wider than its dimension is an error, never a wrong score.
//! assert!(DAY_TYPE.encode([15, 1000, 0]).is_err());
//! # Ok::<(), redmodel::Error>(())
//! ```
//!
//! The score is stored in an integer field with a sorted index
//! (`#[redmodel(sorted)] score: u64`), whose
//! [`range`](crate::model::SortedIndex::range) takes these ranges. Every
//! score a composite makes is below 2^53, which a sorted set's double
//! holds exactly: a declaration whose dimensions need more is refused
//! when the constant is evaluated, at compile time.

use std::ops::RangeInclusive;

use super::index::MAX_EXACT_SCORE;
use crate::{Error, Result};

/// One dimension of a [`Composite`] score: its name (for error messages)
/// and how many values it holds, `0..size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dim {
    name: &'static str,
    size: u64,
}

impl Dim {
    /// A dimension of `n` decimal digits: values `0..10^n`, readable in
    /// the score (`15|200|3456`).
    pub const fn digits(name: &'static str, n: u32) -> Dim {
        match 10u64.checked_pow(n) {
            Some(size) => Dim { name, size },
            None => panic!("a composite dimension of this many digits cannot fit in a score"),
        }
    }

    /// A dimension of `n` bits: values `0..2^n` (the most compact packing).
    pub const fn bits(name: &'static str, n: u32) -> Dim {
        match 1u64.checked_shl(n) {
            Some(size) if n < 64 => Dim { name, size },
            _ => panic!("a composite dimension of this many bits cannot fit in a score"),
        }
    }

    /// A dimension holding the values `0..count` (mixed radix: a day of
    /// the year is `Dim::values("day", 367)`).
    pub const fn values(name: &'static str, count: u64) -> Dim {
        Dim { name, size: count }
    }

    /// The dimension's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The largest value it holds.
    pub const fn max(&self) -> u64 {
        self.size.saturating_sub(1)
    }
}

/// `N` ordered dimensions packed into one integer score below 2^53, the
/// major one first (see the [module](self) docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Composite<const N: usize> {
    dims: [Dim; N],
    /// The number of distinct scores: the product of the sizes.
    total: u64,
}

impl<const N: usize> Composite<N> {
    /// Declares the dimensions, major first. Meant for a `const`, where a
    /// declaration that does not fit is a compile error: no dimension, an
    /// empty one, or more than 2^53 distinct scores in all (use
    /// [`try_new`](Self::try_new) to check at run time).
    pub const fn new(dims: [Dim; N]) -> Self {
        match Self::try_new(dims) {
            Some(composite) => composite,
            None => panic!(
                "a composite score needs at least one dimension, each of at least one value, and at most 2^53 scores in all (a double holds integers exactly only up to 2^53)"
            ),
        }
    }

    /// [`new`](Self::new), or `None` if the dimensions do not fit.
    pub const fn try_new(dims: [Dim; N]) -> Option<Self> {
        if N == 0 {
            return None;
        }
        let mut total: u64 = 1;
        let mut i = 0;
        while i < N {
            if dims[i].size == 0 {
                return None;
            }
            total = match total.checked_mul(dims[i].size) {
                Some(t) if t <= MAX_EXACT_SCORE => t,
                _ => return None,
            };
            i += 1;
        }
        Some(Composite { dims, total })
    }

    /// The dimensions, major first.
    pub const fn dims(&self) -> &[Dim; N] {
        &self.dims
    }

    /// The largest score this composite makes.
    pub const fn max_score(&self) -> u64 {
        self.total - 1
    }

    /// Packs `parts` (one per dimension, major first) into a score. A part
    /// larger than its dimension holds is an
    /// [`Error::ScoreOverflow`].
    pub fn encode(&self, parts: [u64; N]) -> Result<u64> {
        let mut score: u64 = 0;
        for (dim, part) in self.dims.iter().zip(parts) {
            check_part(dim, part)?;
            // Cannot overflow: the result stays below `total`.
            score = score * dim.size + part;
        }
        Ok(score)
    }

    /// Unpacks a score into its parts, major first. A score this
    /// composite cannot have made is an error.
    pub fn decode(&self, score: u64) -> Result<[u64; N]> {
        if score >= self.total {
            return Err(Error::ScoreOverflow {
                name: "composite score".to_string(),
                value: score.to_string(),
                reason: format!("this composite's scores are at most {}", self.max_score()),
            });
        }
        let mut parts = [0u64; N];
        let mut rest = score;
        for (part, dim) in parts.iter_mut().zip(&self.dims).rev() {
            *part = rest % dim.size;
            rest /= dim.size;
        }
        Ok(parts)
    }

    /// [`decode`](Self::decode) of a score as a sorted set returns it (a
    /// double): it must be a whole number in range.
    pub fn decode_score(&self, score: f64) -> Result<[u64; N]> {
        if !(score >= 0.0 && score.fract() == 0.0 && score < self.total as f64) {
            return Err(Error::ScoreOverflow {
                name: "composite score".to_string(),
                value: score.to_string(),
                reason: format!(
                    "this composite's scores are whole numbers from 0 to {}",
                    self.max_score()
                ),
            });
        }
        // Exact: a whole number below 2^53.
        self.decode(score as u64)
    }

    /// Every score whose leading parts are `prefix` (any number of parts,
    /// up to `N`; none is every score): one day of every type is
    /// `span(&[15, 200])`.
    pub fn span(&self, prefix: &[u64]) -> Result<RangeInclusive<u64>> {
        Ok(self.low(prefix)?..=self.high(prefix)?)
    }

    /// Every score from the first with the leading parts `from` to the
    /// last with the leading parts `to`: ten days of every type is
    /// `between(&[15, 190], &[15, 200])`, one day and types 1000 to 4000
    /// `between(&[15, 200, 1000], &[15, 200, 4000])`.
    pub fn between(&self, from: &[u64], to: &[u64]) -> Result<RangeInclusive<u64>> {
        Ok(self.low(from)?..=self.high(to)?)
    }

    /// The lowest score with the leading parts `prefix`.
    fn low(&self, prefix: &[u64]) -> Result<u64> {
        self.fill(prefix, |_| 0)
    }

    /// The highest score with the leading parts `prefix`.
    fn high(&self, prefix: &[u64]) -> Result<u64> {
        self.fill(prefix, Dim::max)
    }

    /// The score of `prefix` completed with `rest(dim)` for the other
    /// dimensions.
    fn fill(&self, prefix: &[u64], rest: impl Fn(&Dim) -> u64) -> Result<u64> {
        if prefix.len() > N {
            return Err(Error::ScoreOverflow {
                name: "composite prefix".to_string(),
                value: format!("{prefix:?}"),
                reason: format!("this composite has {N} dimensions"),
            });
        }
        let mut parts = [0u64; N];
        for (i, (part, dim)) in parts.iter_mut().zip(&self.dims).enumerate() {
            *part = match prefix.get(i) {
                Some(p) => *p,
                None => rest(dim),
            };
        }
        self.encode(parts)
    }
}

fn check_part(dim: &Dim, part: u64) -> Result<()> {
    if part >= dim.size {
        return Err(Error::ScoreOverflow {
            name: dim.name.to_string(),
            value: part.to_string(),
            reason: format!("the dimension holds 0 to {}", dim.max()),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_TYPE: Composite<3> = Composite::new([
        Dim::digits("year", 2),
        Dim::digits("day", 3),
        Dim::digits("type", 4),
    ]);

    #[test]
    fn date_and_type_scores() {
        assert_eq!(DAY_TYPE.encode([15, 200, 3456]).unwrap(), 152003456);
        assert_eq!(DAY_TYPE.encode([15, 19, 0]).unwrap(), 150190000);
        assert_eq!(DAY_TYPE.encode([0, 0, 0]).unwrap(), 0);
        assert_eq!(DAY_TYPE.max_score(), 999_999_999);
        assert_eq!(DAY_TYPE.decode(152003578).unwrap(), [15, 200, 3578]);
        assert_eq!(DAY_TYPE.decode_score(152003578.0).unwrap(), [15, 200, 3578]);
        assert_eq!(
            DAY_TYPE.between(&[15, 190], &[15, 200]).unwrap(),
            151900000..=152009999
        );
        assert_eq!(
            DAY_TYPE.span(&[15, 200, 3578]).unwrap(),
            152003578..=152003578
        );
        assert_eq!(DAY_TYPE.span(&[]).unwrap(), 0..=999_999_999);
        assert_eq!(
            DAY_TYPE
                .between(&[15, 200, 1000], &[15, 200, 4000])
                .unwrap(),
            152001000..=152004000
        );
    }

    #[test]
    fn values_that_do_not_fit_are_errors() {
        let err = DAY_TYPE.encode([15, 1000, 1]).unwrap_err();
        match err {
            Error::ScoreOverflow { name, value, .. } => {
                assert_eq!(name, "day");
                assert_eq!(value, "1000");
            }
            other => panic!("{other:?}"),
        }
        assert!(DAY_TYPE.encode([100, 0, 0]).is_err());
        assert!(DAY_TYPE.span(&[15, 200, 10_000]).is_err());
        assert!(DAY_TYPE.span(&[1, 2, 3, 4]).is_err());
        assert!(DAY_TYPE.decode(1_000_000_000).is_err());
        assert!(DAY_TYPE.decode_score(1.5).is_err());
        assert!(DAY_TYPE.decode_score(-1.0).is_err());
        assert!(DAY_TYPE.decode_score(f64::NAN).is_err());
    }

    #[test]
    fn declarations_past_two_to_the_53_are_refused() {
        assert!(Composite::try_new([Dim::bits("a", 53)]).is_some());
        assert!(Composite::try_new([Dim::bits("a", 53), Dim::bits("b", 1)]).is_none());
        assert!(Composite::try_new([Dim::digits("a", 15)]).is_some());
        assert!(Composite::try_new([Dim::digits("a", 16)]).is_none());
        assert!(Composite::try_new([Dim::values("a", 0)]).is_none());
        assert!(Composite::<0>::try_new([]).is_none());
        let widest = Composite::new([Dim::bits("a", 26), Dim::bits("b", 27)]);
        assert_eq!(widest.max_score(), (1 << 53) - 1);
        let top = widest.encode([(1 << 26) - 1, (1 << 27) - 1]).unwrap();
        assert_eq!(
            widest.decode_score(top as f64).unwrap(),
            [(1 << 26) - 1, (1 << 27) - 1]
        );
    }

    #[test]
    fn mixed_radix() {
        let c = Composite::new([Dim::values("day", 367), Dim::bits("kind", 4)]);
        assert_eq!(c.encode([366, 15]).unwrap(), 366 * 16 + 15);
        assert_eq!(c.decode(366 * 16 + 15).unwrap(), [366, 15]);
        assert!(c.encode([367, 0]).is_err());
    }
}
