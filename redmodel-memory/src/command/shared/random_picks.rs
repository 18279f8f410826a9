//! The elements SRANDMEMBER, HRANDFIELD and ZRANDMEMBER pick, shared by
//! the set, hash and sorted set families.

use rand::seq::index;
use rand::Rng;

use crate::error::CmdError;

/// The most picks SRANDMEMBER, ZRANDMEMBER or HRANDFIELD with a negative
/// count may reply with. Redis has no limit: it builds such a reply until
/// the client is dropped or the machine runs out of memory (the kernel
/// killed it for `HRANDFIELD h -4611686018427387903 WITHVALUES`). An
/// in-process engine must not take its host down, so it refuses instead.
/// This is the one place where the engine's reply differs from Redis's.
const MAX_RANDOM_REPLY: u64 = 1 << 24;

/// What SRANDMEMBER, HRANDFIELD and ZRANDMEMBER reply with for a count,
/// as Redis's `*RandMemberWithCountCommand`s decide it.
pub(crate) enum RandomPicks {
    /// Every element once, in the collection's own order.
    All,
    /// The positions of the picked elements, in reply order.
    Ranks(Vec<usize>),
}

impl RandomPicks {
    /// Picks among `len` elements: a negative `count` makes `|count|`
    /// independent draws, repeats allowed (refused past
    /// [`MAX_RANDOM_REPLY`]); a positive one distinct elements, all of them
    /// if `count` is not smaller than `len`.
    pub(crate) fn new(count: i64, len: usize) -> Result<RandomPicks, CmdError> {
        let mut rng = rand::rng();
        if count < 0 {
            if len == 0 {
                return Ok(RandomPicks::Ranks(Vec::new()));
            }
            let n = count.unsigned_abs();
            if n > MAX_RANDOM_REPLY {
                return Err(CmdError::err(format!(
                    "value is out of range: the in-memory engine builds at most {MAX_RANDOM_REPLY} random elements per reply"
                )));
            }
            let draws = (0..n).map(|_| rng.random_range(0..len));
            return Ok(RandomPicks::Ranks(draws.collect()));
        }
        let n = usize::try_from(count).unwrap_or(usize::MAX);
        if n >= len {
            return Ok(RandomPicks::All);
        }
        Ok(RandomPicks::Ranks(
            index::sample(&mut rng, len, n).into_vec(),
        ))
    }

    /// The picked elements of `all` (the collection in its own order).
    pub(crate) fn select<T: Clone>(self, all: Vec<T>) -> Vec<T> {
        match self {
            RandomPicks::All => all,
            RandomPicks::Ranks(ranks) => {
                ranks.iter().filter_map(|&i| all.get(i).cloned()).collect()
            }
        }
    }
}
