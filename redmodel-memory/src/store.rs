//! All numbered databases of one engine.

use super::keyspace::Keyspace;

/// The number of databases, as Redis's default `databases 16`.
pub(crate) const DATABASES: usize = 16;

#[derive(Debug)]
pub(crate) struct Store {
    pub(crate) dbs: Vec<Keyspace>,
}

impl Default for Store {
    fn default() -> Self {
        Store {
            dbs: (0..DATABASES).map(|_| Keyspace::default()).collect(),
        }
    }
}
