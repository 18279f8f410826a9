//! The values a key can hold, one variant per Redis type.

pub(crate) mod encoding;
pub(crate) mod hash;
pub(crate) mod list;
pub(crate) mod set;
pub(crate) mod small;
pub(crate) mod stream;
pub(crate) mod string;
pub(crate) mod zset;

use hash::HashValue;
use list::ListValue;
use set::SetValue;
use stream::Stream;
use string::StringValue;
use zset::ZSet;

/// Bytes as Redis stores them: binary safe.
pub(crate) type Bytes = Vec<u8>;

/// The value stored under a key, 32 bytes: a string keeps up to 30 bytes
/// inline (see [`StringValue`]), every other variant is at most 24 bytes
/// (the big forms of hashes, sets and sorted sets, and streams, are
/// boxed), since a keyspace entry is as large as its largest variant.
#[derive(Debug, Clone)]
#[allow(clippy::box_collection)]
pub(crate) enum Value {
    Str(StringValue),
    Hash(HashValue),
    List(ListValue),
    Set(SetValue),
    ZSet(ZSet),
    Stream(Box<Stream>),
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
            Value::Stream(_) => "stream",
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
            // A stream stays when its last entry goes (its groups and
            // counters live on), as in Redis.
            Value::Stream(_) => false,
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

/// `kind!(Variant, Type)` for a variant holding `Type` itself;
/// `kind!(Variant, Box<Type>)` for one holding it boxed.
macro_rules! kind {
    ($variant:ident, Box<$ty:ty>) => {
        kind!(@impl $variant, $ty, |v| Value::$variant(Box::new(v)));
    };
    ($variant:ident, $ty:ty) => {
        kind!(@impl $variant, $ty, Value::$variant);
    };
    (@impl $variant:ident, $ty:ty, $wrap:expr) => {
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
                ($wrap)(self)
            }
        }
    };
}

kind!(Str, StringValue);
kind!(Hash, HashValue);
kind!(List, ListValue);
kind!(Set, SetValue);
kind!(ZSet, ZSet);
kind!(Stream, Box<Stream>);
