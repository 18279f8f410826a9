//! The field codec: how one struct field becomes the text of one hash field,
//! and back.
//!
//! - Scalars ([`Scalar`]) are plain text that redis-cli shows readably:
//!   integers in decimal (so `HINCRBY` works on them), floats in their
//!   shortest exact form (`0.1`, `1.5`, `inf`, which `HINCRBYFLOAT`
//!   accepts), bools as `true`/`false`, strings as they are, references as
//!   the key they point to.
//! - `Option<T>`: `None` is an absent field; a missing field decodes to
//!   `None`.
//! - Fields marked `#[redmodel(json)]` hold any serde type as JSON text
//!   ([`Json`]).
//!
//! Decoding never panics: it fails with a [`FieldError`] that the caller
//! turns into an [`Error`](crate::Error) naming the key and the field.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Why one field could not be decoded. Turned into
/// [`Error::MissingField`](crate::Error::MissingField) or
/// [`Error::Decode`](crate::Error::Decode) once the key and field are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldError {
    /// The field is absent and its type has no "absent" value.
    Missing,
    /// The field holds text that is not a value of the type; says why.
    Invalid(String),
}

impl FieldError {
    /// This error, for `field` of the object at `key`.
    pub fn at(self, key: &str, field: &str) -> crate::Error {
        match self {
            FieldError::Missing => crate::Error::MissingField {
                key: key.to_string(),
                field: field.to_string(),
            },
            FieldError::Invalid(reason) => crate::Error::Decode {
                key: key.to_string(),
                field: field.to_string(),
                reason,
            },
        }
    }
}

/// A value stored as the plain text of one hash field.
///
/// Implemented for `String`, `bool`, every integer and float type and
/// [`Ref`](crate::model::Ref). Implement it for your own scalar types
/// (an enum stored by name, a date); for structured values mark the field
/// `#[redmodel(json)]` instead.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored as a plain hash field",
    label = "not a scalar field type",
    note = "mark the field `#[redmodel(json)]` to store it as JSON (it must implement serde's Serialize and Deserialize), or implement `redmodel::model::Scalar` for it"
)]
pub trait Scalar: Sized {
    /// The text stored in Redis.
    fn to_text(&self) -> Vec<u8>;
    /// Parses stored text; the error says why it is not a value of this type.
    fn from_text(raw: &[u8]) -> Result<Self, String>;
    /// [`from_text`](Self::from_text) of text the caller owns, which a
    /// type holding the bytes themselves (`String`) keeps instead of
    /// copying: what loads call, with the reply's bytes.
    fn from_owned_text(raw: Vec<u8>) -> Result<Self, String> {
        Self::from_text(&raw)
    }
    /// [`to_text`](Self::to_text) of a value the caller gives away, which
    /// a type holding its text's bytes (`String`) hands over instead of
    /// copying: what an index's upkeep calls on decoded tags.
    fn into_text(self) -> Vec<u8> {
        self.to_text()
    }
    /// Whether a value's JSON form is always a JSON string of its text
    /// (`String`'s): a tag index then reads a stored array of such
    /// strings without decoding it through serde.
    #[doc(hidden)]
    const JSON_STRING_IS_TEXT: bool = false;
}

/// Shows stored bytes in an error message, cut short if long.
pub(crate) fn shown(raw: &[u8]) -> String {
    const MAX: usize = 64;
    let text = String::from_utf8_lossy(raw);
    if text.chars().count() > MAX {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut:?}...")
    } else {
        format!("{text:?}")
    }
}

fn utf8(raw: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(raw).map_err(|_| not_utf8(raw))
}

fn not_utf8(raw: &[u8]) -> String {
    format!("{} is not UTF-8 text", shown(raw))
}

impl Scalar for String {
    fn to_text(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }

    fn from_text(raw: &[u8]) -> Result<Self, String> {
        utf8(raw).map(str::to_string)
    }

    fn from_owned_text(raw: Vec<u8>) -> Result<Self, String> {
        String::from_utf8(raw).map_err(|e| not_utf8(e.as_bytes()))
    }

    fn into_text(self) -> Vec<u8> {
        self.into_bytes()
    }

    const JSON_STRING_IS_TEXT: bool = true;
}

impl Scalar for bool {
    fn to_text(&self) -> Vec<u8> {
        if *self {
            b"true".to_vec()
        } else {
            b"false".to_vec()
        }
    }

    /// `true`/`false` as written, and `1`/`0` as other programs often write.
    fn from_text(raw: &[u8]) -> Result<Self, String> {
        match raw {
            b"true" | b"1" => Ok(true),
            b"false" | b"0" => Ok(false),
            _ => Err(format!("{} is not a bool (true or false)", shown(raw))),
        }
    }
}

macro_rules! integer_scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            /// The decimal digits, written by `itoa` (a third of the cost
            /// of `to_string`'s formatter, on every write of the field).
            fn to_text(&self) -> Vec<u8> {
                itoa::Buffer::new().format(*self).as_bytes().to_vec()
            }

            fn from_text(raw: &[u8]) -> Result<Self, String> {
                let text = utf8(raw)?;
                text.parse::<$t>().map_err(|e| {
                    use std::num::IntErrorKind::*;
                    match e.kind() {
                        PosOverflow | NegOverflow => format!(
                            "{} is out of range for {}", shown(raw), stringify!($t)
                        ),
                        _ => format!("{} is not an integer ({})", shown(raw), stringify!($t)),
                    }
                })
            }
        }
    )*};
}

integer_scalar!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

macro_rules! float_scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            /// The shortest text that reads back as the same number
            /// (`0.1`, `1.5`, `100`, `inf`, `-inf`), which Redis's float
            /// commands accept.
            fn to_text(&self) -> Vec<u8> {
                self.to_string().into_bytes()
            }

            /// Accepts what Redis writes (`10.5`, `3.0000000000000004`,
            /// `inf`, `-inf`, `1e+20`) and the usual decimal forms.
            ///
            /// A finite number beyond the type's range is refused: Rust's
            /// parser rounds it to infinity, but Redis's long doubles hold
            /// such numbers (`HINCRBYFLOAT` can store `1e999`, or a sum
            /// past `f32::MAX` in an `f32` field), and only the word `inf`
            /// means infinity.
            fn from_text(raw: &[u8]) -> Result<Self, String> {
                let text = utf8(raw)?.trim();
                let value = text.parse::<$t>().map_err(|_| {
                    format!("{} is not a number ({})", shown(raw), stringify!($t))
                })?;
                if value.is_infinite() && !names_infinity(text) {
                    return Err(format!(
                        "{} is out of range for {}",
                        shown(raw),
                        stringify!($t)
                    ));
                }
                Ok(value)
            }
        }
    )*};
}

/// Whether `text` spells infinity (`inf`, `-Infinity`...) rather than a
/// finite number too large for the type.
fn names_infinity(text: &str) -> bool {
    let word = text.strip_prefix(['+', '-']).unwrap_or(text);
    word.eq_ignore_ascii_case("inf") || word.eq_ignore_ascii_case("infinity")
}

float_scalar!(f32, f64);

/// A value that can be one hash field: a [`Scalar`], or an `Option` of one
/// (`None` being an absent field). What a field without `#[redmodel(json)]`
/// must implement.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored as a plain hash field",
    label = "not a scalar field type",
    note = "mark the field `#[redmodel(json)]` to store it as JSON (it must implement serde's Serialize and Deserialize), or implement `redmodel::model::Scalar` for it"
)]
pub trait FieldValue: Sized {
    /// Whether every value is stored ([`to_field`](Self::to_field) is
    /// never `None`): true of a [`Scalar`], false of an `Option`. Only a
    /// hint that lets a read skip work; `false` is always safe.
    const ALWAYS_STORED: bool = false;

    /// The stored text, or `None` for an absent field.
    fn to_field(&self) -> Option<Vec<u8>>;
    /// Decodes a field (`None` if it is absent).
    fn from_field(raw: Option<&[u8]>) -> Result<Self, FieldError>;
    /// [`from_field`](Self::from_field) of bytes the caller owns (see
    /// [`Scalar::from_owned_text`]).
    fn from_owned_field(raw: Option<Vec<u8>>) -> Result<Self, FieldError> {
        Self::from_field(raw.as_deref())
    }
}

impl<T: Scalar> FieldValue for T {
    const ALWAYS_STORED: bool = true;

    fn to_field(&self) -> Option<Vec<u8>> {
        Some(self.to_text())
    }

    fn from_field(raw: Option<&[u8]>) -> Result<Self, FieldError> {
        let raw = raw.ok_or(FieldError::Missing)?;
        T::from_text(raw).map_err(FieldError::Invalid)
    }

    fn from_owned_field(raw: Option<Vec<u8>>) -> Result<Self, FieldError> {
        let raw = raw.ok_or(FieldError::Missing)?;
        T::from_owned_text(raw).map_err(FieldError::Invalid)
    }
}

impl<T: Scalar> FieldValue for Option<T> {
    fn to_field(&self) -> Option<Vec<u8>> {
        self.as_ref().map(Scalar::to_text)
    }

    fn from_field(raw: Option<&[u8]>) -> Result<Self, FieldError> {
        raw.map(|raw| T::from_text(raw).map_err(FieldError::Invalid))
            .transpose()
    }

    fn from_owned_field(raw: Option<Vec<u8>>) -> Result<Self, FieldError> {
        raw.map(|raw| T::from_owned_text(raw).map_err(FieldError::Invalid))
            .transpose()
    }
}

/// How the values of a field of type `T` are written: [`Plain`] or [`Json`].
/// The third parameter of [`Field`](crate::model::Field).
pub trait Codec<T>: 'static {
    /// The stored text, `None` for an absent field, or why `value` cannot
    /// be written.
    fn encode(value: &T) -> Result<Option<Vec<u8>>, String>;
    /// Decodes a field (`None` if it is absent).
    fn decode(raw: Option<&[u8]>) -> Result<T, FieldError>;
    /// [`decode`](Self::decode) of bytes the caller owns, which a
    /// string can keep instead of copying.
    fn decode_owned(raw: Option<Vec<u8>>) -> Result<T, FieldError> {
        Self::decode(raw.as_deref())
    }
}

/// The codec of plain fields: [`FieldValue`] text.
#[derive(Debug, Clone, Copy)]
pub struct Plain;

/// The codec of `#[redmodel(json)]` fields: JSON text through serde.
///
/// A value that serializes to `null` (`None`) is an absent field, and an
/// absent field decodes as JSON `null`, so `Option<T>` fields stay absent
/// when they are `None`, as plain fields do.
#[derive(Debug, Clone, Copy)]
pub struct Json;

impl<T: FieldValue> Codec<T> for Plain {
    fn encode(value: &T) -> Result<Option<Vec<u8>>, String> {
        Ok(value.to_field())
    }

    fn decode(raw: Option<&[u8]>) -> Result<T, FieldError> {
        T::from_field(raw)
    }

    fn decode_owned(raw: Option<Vec<u8>>) -> Result<T, FieldError> {
        T::from_owned_field(raw)
    }
}

impl<T: Serialize + DeserializeOwned> Codec<T> for Json {
    fn encode(value: &T) -> Result<Option<Vec<u8>>, String> {
        let text = serde_json::to_vec(value).map_err(|e| format!("cannot write JSON: {e}"))?;
        Ok((text != b"null").then_some(text))
    }

    fn decode(raw: Option<&[u8]>) -> Result<T, FieldError> {
        match raw {
            Some(raw) => serde_json::from_slice(raw).map_err(|e| {
                FieldError::Invalid(format!("{} is not valid JSON here: {e}", shown(raw)))
            }),
            None => serde_json::from_slice(b"null").map_err(|_| FieldError::Missing),
        }
    }
}

/// A numeric field type: what [`ObjectRef::incr`](crate::model::ObjectRef::incr)
/// accepts. Integers use `HINCRBY`, floats `HINCRBYFLOAT`; an `Option` of
/// either counts from 0 when absent, as Redis does.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a numeric field: only integer and float fields can be incremented",
    label = "this field cannot be incremented",
    note = "use `set` to change a field of type `{Self}`"
)]
pub trait Incr {
    /// The increment's type (`i64` for integers, `f64` for floats).
    type By: redis::ToRedisArgs + Send + Sync;
    /// The type of the value after the increment.
    type Output: Scalar;
    /// `HINCRBY` or `HINCRBYFLOAT`.
    const COMMAND: &'static str;

    /// `current` (absent: 0) plus `by`, or why Redis would refuse the
    /// increment or the field's type cannot hold its result: what a
    /// [`Transaction::incr`](crate::Transaction::incr) writes, computed
    /// from the value it read under WATCH.
    fn add(current: Option<Self::Output>, by: &Self::By) -> Result<Self::Output, String>;
}

macro_rules! incr_int {
    ($($t:ty),*) => {$(
        impl Incr for $t {
            type By = i64;
            type Output = $t;
            const COMMAND: &'static str = "HINCRBY";

            fn add(current: Option<$t>, by: &i64) -> Result<$t, String> {
                let current = i64::try_from(current.unwrap_or(0))
                    .map_err(|_| "the value is not an integer Redis can increment".to_string())?;
                let sum = current
                    .checked_add(*by)
                    .ok_or_else(|| "increment or decrement would overflow".to_string())?;
                <$t>::try_from(sum)
                    .map_err(|_| format!("{sum} does not fit a {}", stringify!($t)))
            }
        }
    )*};
}

incr_int!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl Incr for f64 {
    type By = f64;
    type Output = f64;
    const COMMAND: &'static str = "HINCRBYFLOAT";

    fn add(current: Option<f64>, by: &f64) -> Result<f64, String> {
        finite(current.unwrap_or(0.0) + by)
    }
}

impl Incr for f32 {
    type By = f64;
    type Output = f32;
    const COMMAND: &'static str = "HINCRBYFLOAT";

    fn add(current: Option<f32>, by: &f64) -> Result<f32, String> {
        // Narrowed as the field's codec narrows the text Redis would store.
        let wide = finite(f64::from(current.unwrap_or(0.0)) + by)?;
        let sum = wide as f32;
        if sum.is_finite() {
            Ok(sum)
        } else {
            Err(format!("{wide} does not fit a f32"))
        }
    }
}

/// `sum`, unless Redis would refuse it (HINCRBYFLOAT stores no NaN or
/// infinity).
fn finite(sum: f64) -> Result<f64, String> {
    if sum.is_finite() {
        Ok(sum)
    } else {
        Err("increment would produce NaN or Infinity".to_string())
    }
}

impl<T: Incr> Incr for Option<T> {
    type By = T::By;
    type Output = T::Output;
    const COMMAND: &'static str = T::COMMAND;

    fn add(current: Option<T::Output>, by: &T::By) -> Result<T::Output, String> {
        T::add(current, by)
    }
}

/// What a setter accepts for a field of type `T`: a `T`, or for
/// convenience a `&str` for a `String`, a `T` for an `Option<T>`.
///
/// A trait of our own rather than `Into<T>`, so that an integer literal
/// takes the field's type (`set(Class::SIZE, 30)` on a `u32` field).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a value for a field of type `{T}`",
    label = "expected a `{T}` here",
    note = "a field handle fixes the type of the values it reads and writes"
)]
pub trait IntoValue<T> {
    /// The value.
    fn into_value(self) -> T;
}

impl<T> IntoValue<T> for T {
    fn into_value(self) -> T {
        self
    }
}

impl<T> IntoValue<Option<T>> for T {
    fn into_value(self) -> Option<T> {
        Some(self)
    }
}

impl IntoValue<String> for &str {
    fn into_value(self) -> String {
        self.to_string()
    }
}

impl IntoValue<String> for &String {
    fn into_value(self) -> String {
        self.clone()
    }
}

impl IntoValue<Option<String>> for &str {
    fn into_value(self) -> Option<String> {
        Some(self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_increment_sums_or_says_why_redis_or_the_type_refuses_it() {
        assert_eq!(<u8 as Incr>::add(Some(254), &1), Ok(255));
        assert!(<u8 as Incr>::add(Some(255), &1).is_err(), "past the type");
        assert!(<u32 as Incr>::add(Some(0), &-1).is_err(), "below the type");
        assert!(
            <i64 as Incr>::add(Some(i64::MAX), &1).is_err(),
            "Redis's overflow"
        );
        assert!(
            <u64 as Incr>::add(Some(u64::MAX), &0).is_err(),
            "no i64 for Redis"
        );
        assert_eq!(
            <Option<u32> as Incr>::add(None, &5),
            Ok(5),
            "absent counts from 0"
        );
        assert_eq!(<f64 as Incr>::add(Some(1.5), &0.25), Ok(1.75));
        assert!(
            <f64 as Incr>::add(Some(f64::MAX), &f64::MAX).is_err(),
            "infinite"
        );
        assert!(<f32 as Incr>::add(Some(f32::MAX), &f64::from(f32::MAX)).is_err());
    }

    #[test]
    fn owned_text_decodes_as_borrowed_text_does() {
        for raw in [&b"ken"[..], b"", b"\xff\xfe", "é".as_bytes()] {
            assert_eq!(
                String::from_owned_text(raw.to_vec()),
                String::from_text(raw)
            );
            assert_eq!(i64::from_owned_text(raw.to_vec()), i64::from_text(raw));
            assert_eq!(
                <Plain as Codec<Option<String>>>::decode_owned(Some(raw.to_vec())),
                <Plain as Codec<Option<String>>>::decode(Some(raw)),
            );
        }
        assert_eq!(
            <Plain as Codec<String>>::decode_owned(None),
            Err(FieldError::Missing)
        );
    }

    #[test]
    fn scalars_round_trip_as_readable_text() {
        assert_eq!(42i64.to_text(), b"42");
        assert_eq!(i64::from_text(b"-7"), Ok(-7));
        assert_eq!(0.1f64.to_text(), b"0.1");
        assert_eq!(
            f64::from_text(b"3.0000000000000004"),
            Ok(3.0000000000000004)
        );
        assert_eq!(f64::from_text(b"inf"), Ok(f64::INFINITY));
        assert_eq!(true.to_text(), b"true");
        assert_eq!(bool::from_text(b"0"), Ok(false));
    }

    #[test]
    fn bad_text_says_why() {
        assert!(i64::from_text(b"abc")
            .unwrap_err()
            .contains("not an integer"));
        assert!(u8::from_text(b"300").unwrap_err().contains("out of range"));
        assert!(String::from_text(&[0xff]).unwrap_err().contains("UTF-8"));
        assert!(bool::from_text(b"yes").is_err());
    }

    #[test]
    fn floats_beyond_range_are_not_infinity() {
        assert!(f64::from_text(b"1e999")
            .unwrap_err()
            .contains("out of range"));
        assert!(f64::from_text(b"-1e999").is_err());
        assert!(f32::from_text(b"1e39")
            .unwrap_err()
            .contains("out of range"));
        assert_eq!(f32::from_text(b"3.4028235e38"), Ok(f32::MAX));
        assert_eq!(f64::from_text(b"-inf"), Ok(f64::NEG_INFINITY));
        assert_eq!(f64::from_text(b"+Infinity"), Ok(f64::INFINITY));
        assert_eq!(f32::from_text(b"inf"), Ok(f32::INFINITY));
        // Underflow rounds to zero, as any decimal rounds to the nearest float.
        assert_eq!(f64::from_text(b"1e-999"), Ok(0.0));
    }

    #[test]
    fn absent_fields() {
        assert_eq!(
            <i64 as FieldValue>::from_field(None),
            Err(FieldError::Missing)
        );
        assert_eq!(<Option<i64> as FieldValue>::from_field(None), Ok(None));
        assert_eq!(<Option<i64> as FieldValue>::to_field(&None), None);
        assert_eq!(<Json as Codec<Option<Vec<u8>>>>::decode(None), Ok(None));
        assert_eq!(
            <Json as Codec<Vec<u8>>>::decode(None),
            Err(FieldError::Missing)
        );
        assert_eq!(<Json as Codec<Option<Vec<u8>>>>::encode(&None), Ok(None));
        assert_eq!(
            <Json as Codec<Vec<u8>>>::encode(&vec![1, 2]),
            Ok(Some(b"[1,2]".to_vec()))
        );
    }
}
