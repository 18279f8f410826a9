//! Keyset cursors: where the next page of a query starts.

use std::fmt;
use std::str::FromStr;

use crate::{Error, Result};

/// Where the next page of a query starts: after the last item of the
/// page that returned it (its score and key), not at an offset, so that
/// an object that stays in the result while others write is never
/// repeated or skipped. Opaque: keep it as text ([`Display`](fmt::Display),
/// [`FromStr`]) to hand to a client and back. It belongs to its query: a
/// cursor given to another query is [`Error::Query`].
#[derive(Clone, Debug, PartialEq)]
pub struct Cursor {
    pub(super) query: u64,
    pub(super) score: f64,
    pub(super) key: String,
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}:{}:{}", self.query, self.score, self.key)
    }
}

impl FromStr for Cursor {
    type Err = Error;

    fn from_str(text: &str) -> Result<Cursor> {
        let bad = || Error::Query {
            reason: format!("`{text}` is not a cursor a query returned"),
        };
        let mut parts = text.splitn(3, ':');
        let query = parts.next().ok_or_else(bad)?;
        let score = parts.next().ok_or_else(bad)?;
        let key = parts.next().ok_or_else(bad)?;
        if query.len() != 16 {
            return Err(bad());
        }
        Ok(Cursor {
            query: u64::from_str_radix(query, 16).map_err(|_| bad())?,
            score: score.parse().map_err(|_| bad())?,
            key: key.to_string(),
        })
    }
}

/// A query's fingerprint: FNV-1a of its description, the same in every
/// process (std's hashers are seeded per process, or may change).
pub(super) fn fingerprint(description: &str) -> u64 {
    description.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_written() {
        for (score, key) in [(0.0, "book:1"), (-2.5, "a:b:c"), (f64::INFINITY, "")] {
            let cursor = Cursor {
                query: 42,
                score,
                key: key.to_string(),
            };
            assert_eq!(cursor.to_string().parse::<Cursor>().unwrap(), cursor);
        }
        for bad in [
            "",
            "x",
            "0:1:k",
            "zzzzzzzzzzzzzzzz:1:k",
            "000000000000002a:x:k",
        ] {
            assert!(
                matches!(bad.parse::<Cursor>(), Err(Error::Query { .. })),
                "{bad}"
            );
        }
    }
}
