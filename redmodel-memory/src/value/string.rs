//! [`StringValue`]: a string key's value, its bytes inside the keyspace
//! entry when short, as Redis's `embstr` keeps a short string inside its
//! object.
//!
//! A `Vec<u8>` would cost a heap block of its own per string key (24 bytes
//! at least, on top of the entry): a plain `SET key:i i` would take 97
//! bytes where Redis takes 73. Most values are short (numbers, ids, flags),
//! and up to [`INLINE`] bytes they live in the entry's own 32 bytes of
//! value.
//! A string edited in place (APPEND, SETRANGE, SETBIT...) becomes a
//! vector, which grows in amortized time as before (and Redis's `raw`).

use std::ops::Deref;

/// Most bytes kept inline: what a [`super::Value`]'s 32 bytes hold besides
/// the tag and the length.
const INLINE: usize = 30;

/// A string value: compares and reads as its bytes.
#[derive(Clone)]
pub(crate) enum StringValue {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Vec<u8>),
}

impl Default for StringValue {
    fn default() -> Self {
        StringValue::Inline {
            len: 0,
            bytes: [0; INLINE],
        }
    }
}

impl StringValue {
    /// The bytes as a vector to edit in place (moved out of the entry
    /// first if inline): for the commands that modify a string.
    pub(crate) fn make_mut(&mut self) -> &mut Vec<u8> {
        if let StringValue::Inline { .. } = self {
            *self = StringValue::Heap(self.to_vec());
        }
        match self {
            StringValue::Heap(v) => v,
            StringValue::Inline { .. } => unreachable!("moved to the heap above"),
        }
    }

    /// The decimal text of `n`, inline, with no allocation on the way
    /// (INCR and friends write one per call).
    pub(crate) fn from_int(n: i64) -> StringValue {
        StringValue::from(itoa::Buffer::new().format(n).as_bytes())
    }
}

impl From<&[u8]> for StringValue {
    fn from(b: &[u8]) -> Self {
        let mut bytes = [0; INLINE];
        match (bytes.get_mut(..b.len()), u8::try_from(b.len())) {
            (Some(dst), Ok(len)) => {
                dst.copy_from_slice(b);
                StringValue::Inline { len, bytes }
            }
            _ => StringValue::Heap(b.to_vec()),
        }
    }
}

impl From<Vec<u8>> for StringValue {
    /// Short bytes go inline (the vector is dropped), others keep their
    /// vector, with no copy.
    fn from(v: Vec<u8>) -> Self {
        if v.len() <= INLINE {
            StringValue::from(&v[..])
        } else {
            StringValue::Heap(v)
        }
    }
}

impl Deref for StringValue {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            StringValue::Inline { len, bytes } => {
                bytes.get(..usize::from(*len)).unwrap_or_default()
            }
            StringValue::Heap(v) => v,
        }
    }
}

impl PartialEq for StringValue {
    fn eq(&self, other: &Self) -> bool {
        self.deref() == other.deref()
    }
}

impl Eq for StringValue {}

impl std::fmt::Debug for StringValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))
    }
}

#[cfg(test)]
mod tests {
    use super::{StringValue, INLINE};

    /// Short strings are inline, long ones keep their vector; editing
    /// moves an inline string to a vector with the same bytes.
    #[test]
    fn short_strings_are_inline_and_editable() {
        assert_eq!(std::mem::size_of::<StringValue>(), 32);
        assert_eq!(std::mem::size_of::<super::super::Value>(), 32);
        for len in [0, 1, INLINE, INLINE + 1, 100] {
            let b = vec![b'x'; len];
            let s = StringValue::from(b.clone());
            assert_eq!(&s[..], &b[..]);
            assert_eq!(matches!(s, StringValue::Inline { .. }), len <= INLINE);
            assert_eq!(StringValue::from(&b[..]), s);
            let mut edited = s.clone();
            edited.make_mut().push(b'y');
            assert_eq!(edited.len(), len + 1);
            assert!(matches!(edited, StringValue::Heap(_)));
        }
    }

    #[test]
    fn integers_are_written_as_their_decimal_text() {
        for n in [0, 7, -7, 10, 12345, i64::MAX, i64::MIN] {
            let s = StringValue::from_int(n);
            assert_eq!(&s[..], n.to_string().as_bytes());
            assert!(matches!(s, StringValue::Inline { .. }));
        }
    }
}
