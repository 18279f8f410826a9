//! SCAN, never KEYS: walking the keyspace without blocking the server.

use std::collections::BTreeSet;

use crate::{Db, Result};

/// How many keys one SCAN call asks the server to look at.
const SCAN_COUNT: u64 = 1000;

/// Every key matching the glob `pattern` (escape literal parts with
/// [`glob_escape`](super::key::glob_escape)), without duplicates (SCAN may
/// return a key twice), in byte order. Keys that are not UTF-8 cannot be
/// model keys and are skipped.
pub(crate) async fn scan_keys(db: &Db, pattern: &str) -> Result<Vec<String>> {
    let mut keys = BTreeSet::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, batch): (u64, Vec<Vec<u8>>) = db
            .query(
                redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(pattern)
                    .arg("COUNT")
                    .arg(SCAN_COUNT),
            )
            .await?;
        keys.extend(batch.into_iter().filter_map(|k| String::from_utf8(k).ok()));
        if next == 0 {
            return Ok(keys.into_iter().collect());
        }
        cursor = next;
    }
}
