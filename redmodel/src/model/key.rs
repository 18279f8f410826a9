//! Keys: the layout of every key the model writes, and how a pk becomes
//! one `:`-separated segment of a key, and back.
//!
//! # Key layout
//!
//! | key | Redis type | holds | example |
//! |---|---|---|---|
//! | `TABLE:PK` | hash (a string for a `single` model) | an admin object | `teacher:A` |
//! | `ADMIN_TABLE:ADMIN_PK:TABLE:PK` | hash or string | a sub-object of that admin | `student:a:exam:2024` |
//! | `OWNER_TABLE:OWNER_PK:TABLE` | list of member keys | one admin's list of a relation | `teacher:A:class` |
//! | `TABLE:_unique:FIELD:VALUE` | list of one key | the object holding a unique value | `user:_unique:name:ken%20thompson` = \[`user:1`\] |
//! | `TABLE:_sorted:FIELD` | sorted set of object keys | a sorted index, scored by the field | `user:_sorted:logins` |
//! | `TABLE:_tag:FIELD:TAG` | set of object keys | the objects with one tag | `book:_tag:tags:ruby` |
//! | `TABLE:_recent:FIELD` | list of object keys, newest first, capped | a recent list | `user:_recent:last_login` |
//!
//! A [`MemberList`](super::MemberList) may also live at any key its user
//! picks (`performance:good`), and locks at `_lock:NAME`
//! ([`lock_key`](crate::lock_key)). `PK`, `VALUE`, `TAG` and `FIELD` are
//! encoded segments (below); `TABLE` is a declared table name
//! ([`is_valid_table`]). The keys `TABLE:_...` are the model's reserved
//! namespace ([`reserved_key`]).
//!
//! # Segments
//!
//! The layout (`teacher:A`, `student:a:exam:2024`, `teacher:A:class`) tells
//! the kind of a key by its number of segments, so the whole scheme rests on
//! one rule: **an encoded pk never contains a raw `:`**. Bytes outside a
//! small plain set are percent-encoded (`%3A`, uppercase hex), so:
//!
//! - plain pks (ASCII letters, digits, `-`, `.`, `@`, `_`) stay as they are:
//!   `teacher:A`, `class:1`, `user:jane.doe@example.com`;
//! - every other pk still round-trips: `:` is `%3A`, `%` is `%25`, `*` is
//!   `%2A`, `{` is `%7B`, a space is `%20`, non-ASCII is its UTF-8 bytes
//!   (`é` is `%C3%A9`), the empty pk is the empty segment (`teacher:`);
//! - glob characters (`*?[]\`) and hash-tag braces never appear raw in an
//!   encoded pk, so SCAN patterns and cluster hash tags built from keys mean
//!   what they say;
//! - an encoded pk never *starts* with `_` (a leading `_` is `%5F`): segments
//!   starting with `_` right after a table name are reserved for index and
//!   collection keys ([`reserved_key`]), which therefore never collide with
//!   an object, a sub-object or a relation, whatever the pk.
//!
//! Parsing is strict: a segment parses only if it is exactly what encoding
//! produces (canonical escapes only), so key -> pk is the inverse of
//! pk -> key and two different pks never share a key.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::Db;

/// A value that can be a pk: a part of a Redis key.
///
/// Implemented for `String` and every integer type. Implement it for your
/// own pk types (a newtype, a UUID, a date): [`to_key_text`](KeyPart::to_key_text)
/// gives the text (any text: escaping is done for you) and
/// [`from_key_text`](KeyPart::from_key_text) must be its exact inverse.
///
/// ```
/// use std::borrow::Cow;
/// use redmodel::model::KeyPart;
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Isbn(String);
///
/// impl KeyPart for Isbn {
///     fn to_key_text(&self) -> Cow<'_, str> {
///         Cow::Borrowed(&self.0)
///     }
///     fn from_key_text(text: &str) -> Result<Self, String> {
///         if text.len() == 13 && text.bytes().all(|b| b.is_ascii_digit()) {
///             Ok(Isbn(text.to_string()))
///         } else {
///             Err(format!("`{text}` is not a 13-digit ISBN"))
///         }
///     }
/// }
/// ```
pub trait KeyPart: Sized {
    /// The pk as text, before escaping.
    fn to_key_text(&self) -> Cow<'_, str>;
    /// Parses text produced by [`to_key_text`](KeyPart::to_key_text); the
    /// error says why the text is not a pk of this type.
    fn from_key_text(text: &str) -> Result<Self, String>;

    /// Appends the pk to `key` as one key segment: its
    /// [`to_key_text`](KeyPart::to_key_text), escaped as
    /// [`encode_segment_into`] escapes it. Integers write their digits,
    /// which need no escape, without making a string first.
    fn write_key_segment(&self, key: &mut String) {
        encode_segment_into(key, &self.to_key_text());
    }
}

impl KeyPart for String {
    fn to_key_text(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }

    fn from_key_text(text: &str) -> Result<Self, String> {
        Ok(text.to_string())
    }
}

macro_rules! int_key_part {
    ($($t:ty),*) => {$(
        impl KeyPart for $t {
            fn to_key_text(&self) -> Cow<'_, str> {
                // itoa: `to_string` goes through the formatting machinery,
                // on every handle an integer pk makes or parses.
                Cow::Owned(itoa::Buffer::new().format(*self).to_owned())
            }

            fn write_key_segment(&self, key: &mut String) {
                key.push_str(itoa::Buffer::new().format(*self));
            }

            fn from_key_text(text: &str) -> Result<Self, String> {
                // Decimal only, in canonical form: `01`, `+1` and `-0` would
                // be second keys for the same pk.
                let value: $t = text.parse().map_err(|_| {
                    format!("`{text}` is not a {} pk", stringify!($t))
                })?;
                if itoa::Buffer::new().format(value) == text {
                    Ok(value)
                } else {
                    Err(format!("`{text}` is not the canonical form of the pk {value}"))
                }
            }
        }
    )*};
}

int_key_part!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

/// Bytes kept as they are in an encoded segment.
fn is_plain(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'@' | b'_')
}

/// Whether `byte` at position `index` of a segment is written as itself.
fn kept_raw(byte: u8, index: usize) -> bool {
    is_plain(byte) && !(index == 0 && byte == b'_')
}

/// Whether every byte of `text` is written as itself in a segment.
fn is_raw(text: &str) -> bool {
    text.bytes().enumerate().all(|(i, b)| kept_raw(b, i))
}

/// Appends `text` to `out` as one key segment (see the module doc).
pub fn encode_segment_into(out: &mut String, text: &str) {
    // Mostly nothing to escape: one copy, not a push per byte.
    if is_raw(text) {
        out.push_str(text);
        return;
    }
    for (index, byte) in text.bytes().enumerate() {
        if kept_raw(byte, index) {
            out.push(char::from(byte));
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{byte:02X}");
        }
    }
}

/// `text` as one key segment (see the module doc).
pub fn encode_segment(text: &str) -> Cow<'_, str> {
    if is_raw(text) {
        Cow::Borrowed(text)
    } else {
        let mut out = String::with_capacity(text.len() + 8);
        encode_segment_into(&mut out, text);
        Cow::Owned(out)
    }
}

/// The text of one encoded segment, or why it is not one.
///
/// Strict: only the escapes [`encode_segment`] writes are accepted.
pub fn decode_segment(segment: &str) -> Result<Cow<'_, str>, String> {
    if is_raw(segment) {
        return Ok(Cow::Borrowed(segment));
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .ok_or_else(|| format!("`{segment}` ends inside a %-escape"))?;
            let decoded = parse_upper_hex(hex).ok_or_else(|| {
                format!("`{segment}` has a bad %-escape (write %XX, uppercase hex)")
            })?;
            if kept_raw(decoded, out.len()) {
                return Err(format!(
                    "`{segment}` escapes `{}`, which is written as itself",
                    char::from(decoded)
                ));
            }
            out.push(decoded);
            i += 3;
        } else if kept_raw(byte, out.len()) {
            out.push(byte);
            i += 1;
        } else {
            return Err(format!(
                "`{segment}` holds a raw {:?}, which must be %-escaped",
                char::from(byte)
            ));
        }
    }
    String::from_utf8(out)
        .map(Cow::Owned)
        .map_err(|_| format!("`{segment}` does not decode to UTF-8 text"))
}

fn parse_upper_hex(hex: &[u8]) -> Option<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    match hex {
        [hi, lo] => Some(digit(*hi)? * 16 + digit(*lo)?),
        _ => None,
    }
}

/// A pk as one encoded key segment.
pub fn encode_pk<P: KeyPart>(pk: &P) -> String {
    encode_segment(&pk.to_key_text()).into_owned()
}

/// Parses one encoded segment as a pk; the error says why it is not one.
pub fn decode_pk<P: KeyPart>(segment: &str) -> Result<P, String> {
    let text = decode_segment(segment)?;
    P::from_key_text(&text)
}

/// Escapes the glob characters of `literal` for a SCAN MATCH pattern, so it
/// matches only itself.
pub fn glob_escape(literal: &str) -> Cow<'_, str> {
    let special = |c: char| matches!(c, '*' | '?' | '[' | ']' | '\\');
    if !literal.contains(special) {
        return Cow::Borrowed(literal);
    }
    let mut out = String::with_capacity(literal.len() + 4);
    for c in literal.chars() {
        if special(c) {
            out.push('\\');
        }
        out.push(c);
    }
    Cow::Owned(out)
}

/// Whether `table` is usable as a table name: non-empty, made of ASCII
/// letters, digits, `_`, `-` and `.`, and not starting with `_`. The derive
/// checks this at compile time; this is the same rule for code that builds
/// keys by hand.
pub fn is_valid_table(table: &str) -> bool {
    !table.is_empty()
        && !table.starts_with('_')
        && table
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A key in the reserved namespace of `table`: `TABLE:_NAME:PART:...`, with
/// each part encoded like a pk.
///
/// Index and collection keys (unique lookups, leaderboards, tag sets) live
/// here. Because an encoded pk never starts with `_`, such a key can never
/// be an object's, a sub-object's or a relation's key, whatever the pks.
/// `name` must be a valid table name (it is written as is).
///
/// ```
/// use redmodel::model::key::reserved_key;
/// assert_eq!(reserved_key("user", "unique", &["email", "a@b.c"]), "user:_unique:email:a@b.c");
/// assert_eq!(reserved_key("book", "tag", &["c++"]), "book:_tag:c%2B%2B");
/// ```
pub fn reserved_key(table: &str, name: &str, parts: &[&str]) -> String {
    let mut key = String::with_capacity(table.len() + name.len() + 16);
    reserved_key_into(&mut key, table, name, parts);
    key
}

/// [`reserved_key`], appended to `key`.
fn reserved_key_into(key: &mut String, table: &str, name: &str, parts: &[&str]) {
    key.push_str(table);
    key.push_str(":_");
    key.push_str(name);
    for part in parts {
        key.push(':');
        encode_segment_into(key, part);
    }
}

/// The segment after `TABLE:_` in the keys of each kind of index (what
/// [`IndexKind::name`](super::IndexKind::name) says).
pub(crate) const UNIQUE: &str = "unique";
/// See [`UNIQUE`].
pub(crate) const SORTED: &str = "sorted";
/// See [`UNIQUE`].
pub(crate) const TAG: &str = "tag";
/// See [`UNIQUE`].
pub(crate) const RECENT: &str = "recent";

/// The key of a unique entry, `TABLE:_unique:FIELD:VALUE`, as `db`
/// stores it. The index keys are built here alone, each through the
/// database's key layout (`{shop}order:_unique:ref:R` for a table of the
/// slot group `shop` in the cluster layout); the `plain_` builders give the
/// plain form, for messages and the public `key` methods.
pub(crate) fn unique_key(db: &Db, table: &str, field: &str, value: &str) -> String {
    stored(db, plain_unique_key(table, field, value))
}

/// The key of a sorted index, `TABLE:_sorted:FIELD`, as `db` stores it.
pub(crate) fn sorted_key(db: &Db, table: &str, field: &str) -> String {
    stored(db, plain_sorted_key(table, field))
}

/// The key of one tag's set, `TABLE:_tag:FIELD:TAG`, as `db` stores it.
pub(crate) fn tag_key(db: &Db, table: &str, field: &str, tag: &str) -> String {
    stored(db, plain_tag_key(table, field, tag))
}

/// [`tag_key`], built in `buf` (emptied first), which a write keeps for
/// its next tag's key: borrowed from `buf` where `db` stores keys as
/// they are.
pub(crate) fn tag_key_in<'b>(
    db: &Db,
    buf: &'b mut String,
    table: &str,
    field: &str,
    tag: &str,
) -> Cow<'b, str> {
    buf.clear();
    reserved_key_into(buf, table, TAG, &[field, tag]);
    db.stored(buf)
}

/// The key of a recent list, `TABLE:_recent:FIELD`, as `db` stores it.
pub(crate) fn recent_key(db: &Db, table: &str, field: &str) -> String {
    stored(db, plain_recent_key(table, field))
}

/// The plain form of [`unique_key`].
pub(crate) fn plain_unique_key(table: &str, field: &str, value: &str) -> String {
    reserved_key(table, UNIQUE, &[field, value])
}

/// The plain form of [`sorted_key`].
pub(crate) fn plain_sorted_key(table: &str, field: &str) -> String {
    reserved_key(table, SORTED, &[field])
}

/// The plain form of [`tag_key`].
pub(crate) fn plain_tag_key(table: &str, field: &str, tag: &str) -> String {
    reserved_key(table, TAG, &[field, tag])
}

/// The plain form of [`recent_key`].
pub(crate) fn plain_recent_key(table: &str, field: &str) -> String {
    reserved_key(table, RECENT, &[field])
}

/// Every key an index of kind `kind` (one of the names above) on the
/// stored field `field` of `table` may hold, as `db` stores them, as one
/// SCAN pattern: the entries of every value for unique and tag indexes,
/// the single key for sorted and recent indexes. For dropping an index,
/// and for checking one.
pub(crate) fn key_pattern(db: &Db, table: &str, field: &str, kind: &str) -> String {
    stored(db, plain_key_pattern(table, field, kind))
}

/// The plain form of [`key_pattern`].
fn plain_key_pattern(table: &str, field: &str, kind: &str) -> String {
    match kind {
        UNIQUE => format!("{}*", glob_escape(&plain_unique_key(table, field, ""))),
        TAG => format!("{}*", glob_escape(&plain_tag_key(table, field, ""))),
        _ => glob_escape(&reserved_key(table, kind, &[field])).into_owned(),
    }
}

/// The plain key `plain` as `db` stores it, without a copy where the
/// layout keeps it as it is.
pub(crate) fn stored(db: &Db, plain: String) -> String {
    match db.stored(&plain) {
        Cow::Borrowed(_) => plain,
        Cow::Owned(stored) => stored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_pks_stay_as_they_are() {
        for pk in ["A", "1", "jane.doe@example.com", "a-b_c", "2024"] {
            assert_eq!(encode_segment(pk), pk);
        }
    }

    #[test]
    fn an_integer_pk_writes_the_segment_its_text_makes() {
        let segment = |pk: &dyn Fn(&mut String)| {
            let mut key = String::new();
            pk(&mut key);
            key
        };
        for n in [0i64, 7, -7, i64::MIN, i64::MAX] {
            let text = n.to_key_text();
            assert_eq!(segment(&|k| n.write_key_segment(k)), encode_segment(&text));
        }
        assert_eq!(
            segment(&|k| u64::MAX.write_key_segment(k)),
            u64::MAX.to_string()
        );
    }

    #[test]
    fn special_characters_are_escaped() {
        assert_eq!(encode_segment("a:b"), "a%3Ab");
        assert_eq!(encode_segment("100%"), "100%25");
        assert_eq!(encode_segment("*{x} y"), "%2A%7Bx%7D%20y");
        assert_eq!(encode_segment("é"), "%C3%A9");
        assert_eq!(encode_segment("_x_y"), "%5Fx_y");
        assert_eq!(encode_segment(""), "");
    }

    #[test]
    fn decoding_is_strict() {
        assert_eq!(decode_segment("a%3Ab").unwrap(), "a:b");
        assert!(decode_segment("a%3ab").is_err(), "lowercase hex");
        assert!(decode_segment("%41").is_err(), "escaped plain letter");
        assert!(decode_segment("a:b").is_err(), "raw colon");
        assert!(decode_segment("_x").is_err(), "leading underscore");
        assert_eq!(decode_segment("%5Fx").unwrap(), "_x");
        assert!(decode_segment("%5").is_err(), "truncated escape");
        assert!(decode_segment("%FF").is_err(), "not UTF-8");
    }

    #[test]
    fn integer_pks_are_canonical() {
        assert_eq!(decode_pk::<u32>("42"), Ok(42));
        assert!(decode_pk::<u32>("042").is_err());
        assert!(decode_pk::<i64>("+1").is_err());
        assert!(decode_pk::<i64>("-0").is_err());
        assert_eq!(decode_pk::<i64>("-7"), Ok(-7));
        assert!(decode_pk::<u8>("256").is_err());
    }

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
        assert_eq!(glob_escape("teacher:A"), "teacher:A");
    }

    #[test]
    fn table_names() {
        assert!(is_valid_table("student_exam"));
        assert!(!is_valid_table("_hidden"));
        assert!(!is_valid_table("a:b"));
        assert!(!is_valid_table(""));
    }

    #[test]
    fn index_keys_follow_the_layout() {
        assert_eq!(
            plain_unique_key("user", "name", "ken thompson"),
            "user:_unique:name:ken%20thompson"
        );
        assert_eq!(plain_sorted_key("user", "logins"), "user:_sorted:logins");
        assert_eq!(
            plain_tag_key("book", "tags", "c++"),
            "book:_tag:tags:c%2B%2B"
        );
        assert_eq!(
            plain_recent_key("user", "last_login"),
            "user:_recent:last_login"
        );
        assert_eq!(
            plain_key_pattern("user", "name", UNIQUE),
            "user:_unique:name:*"
        );
        assert_eq!(plain_key_pattern("book", "tags", TAG), "book:_tag:tags:*");
        assert_eq!(
            plain_key_pattern("user", "logins", SORTED),
            "user:_sorted:logins"
        );
        assert_eq!(plain_key_pattern("user", "at", RECENT), "user:_recent:at");
        let db = Db::memory().with_key_layout(crate::KeyLayout::Cluster);
        assert_eq!(
            tag_key(&db, "book", "tags", "c++"),
            "{book:_tag:tags}:c%2B%2B"
        );
        assert_eq!(key_pattern(&db, "book", "tags", TAG), "{book:_tag:tags}:*");
        assert_eq!(sorted_key(&db, "user", "logins"), "user:_sorted:logins");
    }

    #[test]
    fn a_tag_key_built_in_a_buffer_is_the_tag_key_in_either_layout() {
        let mut buf = String::from("left over");
        for layout in [crate::KeyLayout::Plain, crate::KeyLayout::Cluster] {
            let db = Db::memory().with_key_layout(layout);
            for tag in ["c++", "rust", "a:b"] {
                let built = tag_key_in(&db, &mut buf, "book", "tags", tag).into_owned();
                assert_eq!(built, tag_key(&db, "book", "tags", tag));
            }
        }
    }
}
