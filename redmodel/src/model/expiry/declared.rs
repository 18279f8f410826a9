//! The times to live a write gives: the model's default on the object's
//! key (or one given to [`insert_with_ttl`](crate::model::ObjectRef::insert_with_ttl)),
//! and each declared field TTL on the fields the write sets. They are
//! commands of the write's own plan, after the write's own commands and
//! in its group (the object's slot), so the object is never seen written
//! without them, on any backend.

use std::time::Duration;

use redis::Cmd;

use super::millis;
use crate::command::{cmd, Owned};
use crate::model::Model;
use crate::{Db, Error, Result};

/// `ttl` as PEXPIRE's whole milliseconds, refused if that is zero (a
/// `Duration` is never negative): a key or field given no time at all is
/// deleted at once, which a write asking for a TTL never means.
pub(crate) fn checked_millis(ttl: Duration) -> Result<i64> {
    match millis(ttl) {
        0 => Err(Error::InvalidTtl { ttl }),
        ms => Ok(ms),
    }
}

/// The commands giving the object at `key` (as stored) its TTLs after a
/// write: `ttl` on the key (a full write passes the model's default, or
/// the one asked for), then the declared TTL of each field of `M` among
/// `written`, the fields the write gives a value (HSET clears a field's TTL,
/// so each write of it gives the declared one again). A declared field
/// TTL on a server without hash-field expiry is [`Error::Unsupported`],
/// before anything is sent.
pub(crate) fn ttl_cmds<'a, M: Model>(
    db: &Db,
    key: &str,
    ttl: Option<Duration>,
    written: impl Iterator<Item = &'a str> + Clone,
) -> Result<Vec<Cmd>> {
    let mut cmds = Vec::new();
    if let Some(ttl) = ttl {
        cmds.push(cmd("PEXPIRE").arg(key).arg(checked_millis(ttl)?).owned());
    }
    let expiring: Vec<(&str, Duration)> = M::FIELD_TTLS
        .iter()
        .filter(|(name, _)| written.clone().any(|w| w == *name))
        .copied()
        .collect();
    if expiring.is_empty() {
        return Ok(cmds);
    }
    db.server().require_field_expiry()?;
    // One HPEXPIRE per distinct TTL: fields declared alike share one.
    let mut done: Vec<Duration> = Vec::new();
    for (_, ttl) in &expiring {
        if done.contains(ttl) {
            continue;
        }
        done.push(*ttl);
        let fields: Vec<&str> = expiring
            .iter()
            .filter(|(_, other)| other == ttl)
            .map(|(name, _)| *name)
            .collect();
        cmds.push(
            cmd("HPEXPIRE")
                .arg(key)
                .arg(checked_millis(*ttl)?)
                .arg("FIELDS")
                .arg(fields.len())
                .arg(&fields)
                .clone(),
        );
    }
    Ok(cmds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ttl_under_a_millisecond_is_refused() {
        assert!(matches!(
            checked_millis(Duration::ZERO),
            Err(Error::InvalidTtl { .. })
        ));
        assert!(matches!(
            checked_millis(Duration::from_micros(999)),
            Err(Error::InvalidTtl { .. })
        ));
        assert_eq!(checked_millis(Duration::from_millis(1)).ok(), Some(1));
    }
}
