//! SCAN, never KEYS: walking the keyspace without blocking the server.

use crate::{Db, Result};

/// Every key matching the glob `pattern` (escape literal parts with
/// [`glob_escape`](super::key::glob_escape)), without duplicates (SCAN may
/// return a key twice), in byte order; on a cluster, from every master.
/// Keys that are not UTF-8 cannot be model keys and are skipped.
pub(crate) async fn scan_keys(db: &Db, pattern: &str) -> Result<Vec<String>> {
    db.scan_keys(pattern).await
}
