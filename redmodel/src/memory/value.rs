//! The values a key can hold, one variant per Redis type.

use std::collections::{HashSet, VecDeque};

use super::hash::HashValue;
use super::zset::ZSet;

/// Bytes as Redis stores them: binary safe.
pub(crate) type Bytes = Vec<u8>;

/// The value stored under a key.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    Str(Bytes),
    Hash(HashValue),
    List(VecDeque<Bytes>),
    Set(HashSet<Bytes>),
    ZSet(ZSet),
}

impl Value {
    /// The name TYPE replies with.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
        }
    }

    /// Aggregates left empty are deleted, as in Redis.
    pub(crate) fn is_empty_aggregate(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::Hash(h) => h.is_empty(),
            Value::List(l) => l.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
        }
    }
}

/// One Redis type, so that commands can ask the keyspace for "the hash at
/// this key" and get WRONGTYPE for anything else.
pub(crate) trait Kind: Sized + Default {
    fn of(value: &Value) -> Option<&Self>;
    fn of_mut(value: &mut Value) -> Option<&mut Self>;
    fn wrap(self) -> Value;
}

macro_rules! kind {
    ($variant:ident, $ty:ty) => {
        impl Kind for $ty {
            fn of(value: &Value) -> Option<&Self> {
                match value {
                    Value::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn of_mut(value: &mut Value) -> Option<&mut Self> {
                match value {
                    Value::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(self) -> Value {
                Value::$variant(self)
            }
        }
    };
}

kind!(Str, Bytes);
kind!(Hash, HashValue);
kind!(List, VecDeque<Bytes>);
kind!(Set, HashSet<Bytes>);
kind!(ZSet, ZSet);
