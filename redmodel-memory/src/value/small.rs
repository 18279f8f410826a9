//! [`SmallBytes`]: an immutable byte string of 24 bytes that keeps up to
//! 22 bytes inline, for the members of big sets and sorted sets.
//!
//! A `Box<[u8]>` member costs its 16 bytes plus a heap block (24 bytes at
//! least, 40 with an `Arc`'s counts); most members are short (ids, names,
//! numbers), and inline they cost the 24 bytes of their table slot only.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Most bytes kept inline.
const INLINE: usize = 22;

/// An immutable byte string; compares, orders and hashes as its bytes, so
/// a table of them is searched with a `&[u8]`.
#[derive(Clone)]
pub(crate) enum SmallBytes {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl From<&[u8]> for SmallBytes {
    fn from(b: &[u8]) -> SmallBytes {
        let mut bytes = [0; INLINE];
        match (bytes.get_mut(..b.len()), u8::try_from(b.len())) {
            (Some(dst), Ok(len)) => {
                dst.copy_from_slice(b);
                SmallBytes::Inline { len, bytes }
            }
            _ => SmallBytes::Heap(b.into()),
        }
    }
}

impl Deref for SmallBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            SmallBytes::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            SmallBytes::Heap(b) => b,
        }
    }
}

impl Borrow<[u8]> for SmallBytes {
    fn borrow(&self) -> &[u8] {
        self
    }
}

// Hash, equality and order are the bytes' own, as `Borrow` requires.
impl Hash for SmallBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.deref().hash(state);
    }
}

impl PartialEq for SmallBytes {
    fn eq(&self, other: &Self) -> bool {
        self.deref() == other.deref()
    }
}

impl Eq for SmallBytes {}

impl PartialOrd for SmallBytes {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SmallBytes {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.deref().cmp(other.deref())
    }
}

impl std::fmt::Debug for SmallBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))
    }
}

#[cfg(test)]
mod tests {
    use super::SmallBytes;
    use std::collections::HashSet;

    #[test]
    fn inline_or_boxed_it_is_its_bytes() {
        assert_eq!(std::mem::size_of::<SmallBytes>(), 24);
        let mut set: HashSet<SmallBytes> = HashSet::new();
        for len in [0, 1, 22, 23, 100] {
            let b = vec![b'x'; len];
            let s = SmallBytes::from(&b[..]);
            assert_eq!(&s[..], &b[..]);
            assert_eq!(matches!(s, SmallBytes::Inline { .. }), len <= 22);
            set.insert(s);
        }
        assert!(set.contains(&[b'x'; 23][..]) && !set.contains(&b"y"[..]));
        assert!(SmallBytes::from(&b"ab"[..]) < SmallBytes::from(&b"abc"[..]));
    }
}
