//! The oracle of values: what stored text means for each field type.

#[allow(unused_imports)]
use super::*;

/// A decoded value, whatever its Rust type, for comparing loads with the
/// oracle.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    /// An absent `Option` (or a JSON `null` in an `Option`).
    Absent,
    Str(String),
    Bool(bool),
    Int(i128),
    Float(f64),
    Key(String),
    Json(serde_json::Value),
}

impl PartialEq for Val {
    fn eq(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::Absent, Val::Absent) => true,
            (Val::Str(a), Val::Str(b)) | (Val::Key(a), Val::Key(b)) => a == b,
            (Val::Bool(a), Val::Bool(b)) => a == b,
            (Val::Int(a), Val::Int(b)) => a == b,
            // Bitwise: `-0` is not `0`; any NaN is NaN.
            (Val::Float(a), Val::Float(b)) => {
                a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan()
            }
            (Val::Json(a), Val::Json(b)) => a == b,
            _ => false,
        }
    }
}

/// A field's Rust value as a [`Val`].
pub(crate) trait ToVal {
    fn to_val(&self) -> Val;
}

impl ToVal for String {
    fn to_val(&self) -> Val {
        Val::Str(self.clone())
    }
}

impl ToVal for bool {
    fn to_val(&self) -> Val {
        Val::Bool(*self)
    }
}

macro_rules! int_to_val {
    ($($t:ty),*) => {$(
        impl ToVal for $t {
            fn to_val(&self) -> Val {
                Val::Int(*self as i128)
            }
        }
    )*};
}

int_to_val!(i8, i16, i32, i64, u8, u16, u32, u64, usize);

impl ToVal for f32 {
    fn to_val(&self) -> Val {
        Val::Float(f64::from(*self))
    }
}

impl ToVal for f64 {
    fn to_val(&self) -> Val {
        Val::Float(*self)
    }
}

impl<M: Model> ToVal for ObjectRef<M> {
    fn to_val(&self) -> Val {
        Val::Key(self.key().to_string())
    }
}

impl<T: ToVal> ToVal for Option<T> {
    fn to_val(&self) -> Val {
        self.as_ref().map_or(Val::Absent, ToVal::to_val)
    }
}

pub(crate) fn json_val(value: &impl Serialize) -> Val {
    Val::Json(serde_json::to_value(value).unwrap_or(serde_json::Value::Null))
}

impl<T: Serialize> ToVal for Vec<T> {
    fn to_val(&self) -> Val {
        json_val(self)
    }
}

impl<V: Serialize> ToVal for BTreeMap<String, V> {
    fn to_val(&self) -> Val {
        json_val(self)
    }
}

impl ToVal for Address {
    fn to_val(&self) -> Val {
        json_val(self)
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Width {
    F32,
    F64,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum JsonKind {
    Strings,
    Address,
    CountMap,
    Floats,
    Ints,
}

/// A field's type, as the oracle knows it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Text,
    Bool,
    /// An integer type, by its range.
    Int(i128, i128),
    Float(Width),
    /// A reference to a model's object.
    Key(Tag),
    Json(JsonKind),
}

/// What an absent field loads as.
#[derive(Clone, Debug)]
pub(crate) enum WhenAbsent {
    /// A required field: [`Error::MissingField`].
    Missing,
    /// `None`, or the field's default.
    Is(Val),
}

#[derive(Clone, Debug)]
pub(crate) struct FieldSpec {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) absent: WhenAbsent,
}

pub(crate) fn required(name: &'static str, kind: Kind) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        absent: WhenAbsent::Missing,
    }
}

pub(crate) fn optional(name: &'static str, kind: Kind) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        absent: WhenAbsent::Is(Val::Absent),
    }
}

pub(crate) fn defaulted(name: &'static str, kind: Kind, default: i128) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        absent: WhenAbsent::Is(Val::Int(default)),
    }
}

/// What decoding one stored field must give.
#[derive(Clone, Debug)]
pub(crate) enum Expect {
    /// Exactly this value: the text is what the codec writes for it.
    Must(Val),
    /// This value, or a decode error: the text is a lenient spelling of
    /// the value (`+5`, `007`, ` 1.5`), which the codec may refuse.
    Either(Val),
    /// A decode error: the text is not a value of the type (says why).
    Invalid(String),
    /// A missing-field error: the field is required and absent.
    Missing,
}

impl Kind {
    /// What `raw`, stored in a field of this kind, means.
    pub(crate) fn expect(self, raw: &[u8]) -> Expect {
        let Ok(text) = std::str::from_utf8(raw) else {
            return match self {
                Kind::Json(kind) => expect_json(kind, raw),
                _ => Expect::Invalid("not UTF-8".into()),
            };
        };
        match self {
            Kind::Text => Expect::Must(Val::Str(text.to_string())),
            Kind::Bool => match text {
                "true" | "1" => Expect::Must(Val::Bool(true)),
                "false" | "0" => Expect::Must(Val::Bool(false)),
                _ => Expect::Invalid("not a bool".into()),
            },
            Kind::Int(lo, hi) => expect_int(text, lo, hi),
            Kind::Float(width) => expect_float(text, width),
            Kind::Key(tag) if tag.is_key(text) => Expect::Must(Val::Key(text.to_string())),
            Kind::Key(tag) => Expect::Invalid(format!("not a key of `{}`", tag.table())),
            Kind::Json(kind) => expect_json(kind, raw),
        }
    }
}

/// A decimal integer, with an optional sign, within `lo..=hi`.
pub(crate) fn expect_int(text: &str, lo: i128, hi: i128) -> Expect {
    let (negative, digits) = match text.as_bytes().split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text.as_bytes()),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Expect::Invalid("not a decimal integer".into());
    }
    let mut value: i128 = 0;
    for digit in digits {
        match value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i128::from(digit - b'0')))
        {
            Some(v) => value = v,
            None => return Expect::Invalid("beyond every integer type".into()),
        }
    }
    if negative {
        value = -value;
    }
    if value < lo || value > hi {
        Expect::Invalid(format!("{value} is outside {lo}..={hi}"))
    } else if value.to_string() == text {
        Expect::Must(Val::Int(value))
    } else {
        Expect::Either(Val::Int(value))
    }
}

/// A float: decimal with an optional exponent, or inf/infinity/nan. A
/// finite text beyond the type's range is no value of it (it must not
/// load as infinity).
pub(crate) fn expect_float(text: &str, width: Width) -> Expect {
    let trimmed = text.trim();
    let body = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    let word = ["inf", "infinity", "nan"]
        .iter()
        .any(|w| body.eq_ignore_ascii_case(w));
    if !word && !decimal_grammar(body) {
        return Expect::Invalid("not a number".into());
    }
    let (value, canonical) = match width {
        Width::F32 => match trimmed.parse::<f32>() {
            Ok(v) => (f64::from(v), v.to_string()),
            Err(_) => return Expect::Invalid("not an f32".into()),
        },
        Width::F64 => match trimmed.parse::<f64>() {
            Ok(v) => (v, v.to_string()),
            Err(_) => return Expect::Invalid("not an f64".into()),
        },
    };
    if !word && value.is_infinite() {
        Expect::Invalid(format!("a finite number beyond {width:?}'s range"))
    } else if text == canonical {
        Expect::Must(Val::Float(value))
    } else {
        Expect::Either(Val::Float(value))
    }
}

/// `digits[.digits]` or `.digits`, then an optional `e[+-]digits`.
pub(crate) fn decimal_grammar(body: &str) -> bool {
    let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e)),
        None => (body, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (mantissa, None),
    };
    let mantissa_ok = all_digits(whole)
        && fraction.is_none_or(all_digits)
        && (!whole.is_empty() || fraction.is_some_and(|f| !f.is_empty()));
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && all_digits(e)
    });
    mantissa_ok && exponent_ok
}

pub(crate) fn expect_json(kind: JsonKind, raw: &[u8]) -> Expect {
    fn decode<T: DeserializeOwned + ToVal>(raw: &[u8]) -> Expect {
        match serde_json::from_slice::<T>(raw) {
            Ok(value) => Expect::Must(value.to_val()),
            Err(e) => Expect::Invalid(format!("bad JSON here: {e}")),
        }
    }
    match kind {
        JsonKind::Strings => decode::<Vec<String>>(raw),
        JsonKind::Address => decode::<Option<Address>>(raw),
        JsonKind::CountMap => decode::<BTreeMap<String, i64>>(raw),
        JsonKind::Floats => decode::<Vec<f64>>(raw),
        JsonKind::Ints => decode::<Vec<i64>>(raw),
    }
}

/// Redis's `string2ll`: the stored integers HINCRBY accepts (no sign but
/// `-`, no leading zero, no space, at most 20 characters).
pub(crate) fn redis_int(raw: &[u8]) -> Option<i64> {
    if raw.is_empty() || raw.len() > 20 {
        return None;
    }
    if raw == b"0" {
        return Some(0);
    }
    let (negative, digits) = match raw.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, raw),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude: i128 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}
