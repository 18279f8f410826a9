//! Bad data in Redis never panics a model read, and never loads as a wrong
//! value.
//!
//! Another program, a bug, or an operator with redis-cli can leave anything
//! at the keys the models read. These tests write random, hostile data with
//! raw commands into exactly those keys and fields (a "world"): wrong Redis
//! types at object, sub-object and relation keys, non-UTF-8 bytes, numbers
//! beyond every integer range, `NaN`/`inf`/`-0`/`1e999`, empty strings,
//! missing required and extra unknown fields, bad JSON, relation lists
//! holding keys of the wrong model or garbage, empty and percent-mangled
//! keys, reference fields holding another model's key, `_count` holding
//! text. Then they call every read operation of the model API and check
//! each result against an oracle written here from `docs/models.md`,
//! independently of the codec:
//!
//! - `Ok` only with the value the stored text means: `300` never loads into
//!   a `u8`, `1.5` never into an `i64`, `1e999` never into an `f64` as
//!   infinity, `class:01` never as a reference to `class:1`;
//! - otherwise a typed error naming the key, and the field where one is
//!   involved (`Decode`, `MissingField`, `UnexpectedType`, `InvalidKey`);
//! - never a panic: proptest reports a panic as a failure, and shrinks the
//!   world to the smallest one that still fails.
//!
//! Each world runs on the memory engine and on a private redis-server.
//! Sizes: `REDMODEL_BAD_INPUT_CASES` worlds per backend (default 24);
//! `REDMODEL_BAD_INPUT_SEED` replays a run (each test prints its seed).
//!
//! The key parsers get a property test of their own: parsing any text as a
//! key of any model never panics, succeeds exactly on the keys the layout
//! allows, and gives back a handle whose key is the text.

mod model_support;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use model_support::models::*;
use proptest::collection::{btree_map, btree_set, vec};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::Union;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use redmodel::model::key::encode_segment;
use redmodel::model::{
    Codec, Field, Incr, MemberList, ObjectRef, Plain, Ref, RelationRef, Scalar, Storage,
};
use redmodel::prelude::*;
use redmodel::{Error, Result};
use redmodel_suite::{backend_tests, make_ctx, Backend, Scope};
use serde::de::DeserializeOwned;
use serde::Serialize;

// ---------------------------------------------------------------------------
// Models beyond the school's: every integer width, floats, optional scalars,
// an optional reference, and single-value sub-objects of plain and JSON
// values.

/// The numeric traps' targets.
#[derive(Admin, Debug, Clone, PartialEq)]
pub struct Gauge {
    #[redmodel(pk)]
    pub id: i64,
    pub tiny: i8,
    pub small: i16,
    pub medium: i32,
    pub large: i64,
    pub byte: u8,
    pub word: u16,
    pub dword: u32,
    pub big: u64,
    pub size: usize,
    pub ratio: f32,
    pub amount: Option<f64>,
    pub delta: Option<i64>,
    pub flag: Option<bool>,
    pub owner: Option<Ref<Teacher>>,
    #[redmodel(json)]
    pub history: Vec<f64>,
    #[redmodel(default)]
    pub hits: u32,
}

/// A single-value sub-object holding a `u8` (a string at `gauge:1:level:x`).
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Gauge, single)]
pub struct Level {
    #[redmodel(pk)]
    pub name: String,
    pub value: u8,
}

/// A single-value sub-object holding JSON (`gauge:1:reading:5`).
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Gauge, single)]
pub struct Reading {
    #[redmodel(pk)]
    pub at: u64,
    #[redmodel(json)]
    pub values: Vec<i64>,
}

// ---------------------------------------------------------------------------
// The oracle of keys: docs/models.md's layout, written out again.

/// The models, as the oracle knows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tag {
    Teacher,
    Class,
    Student,
    Exam,
    Note,
    Profile,
    Gauge,
    Level,
    Reading,
}

const TAGS: [Tag; 9] = [
    Tag::Teacher,
    Tag::Class,
    Tag::Student,
    Tag::Exam,
    Tag::Note,
    Tag::Profile,
    Tag::Gauge,
    Tag::Level,
    Tag::Reading,
];

/// The type of a model's pk, as far as its key text goes.
#[derive(Clone, Copy, Debug)]
enum PkKind {
    Text,
    U32,
    U64,
    I64,
}

impl Tag {
    fn table(self) -> &'static str {
        match self {
            Tag::Teacher => "teacher",
            Tag::Class => "class",
            Tag::Student => "student",
            Tag::Exam => "exam",
            Tag::Note => "note",
            Tag::Profile => "profile",
            Tag::Gauge => "gauge",
            Tag::Level => "level",
            Tag::Reading => "reading",
        }
    }

    fn owner(self) -> Option<Tag> {
        match self {
            Tag::Exam | Tag::Note => Some(Tag::Student),
            Tag::Level | Tag::Reading => Some(Tag::Gauge),
            _ => None,
        }
    }

    fn pk(self) -> PkKind {
        match self {
            Tag::Class | Tag::Exam => PkKind::U32,
            Tag::Gauge => PkKind::I64,
            Tag::Reading => PkKind::U64,
            _ => PkKind::Text,
        }
    }

    /// Whether `text` is a key of this model in canonical form: `TABLE:PK`,
    /// or `OWNER_KEY:TABLE:PK` for a sub-object, each pk one segment.
    fn is_key(self, text: &str) -> bool {
        let segments: Vec<&str> = text.split(':').collect();
        match (self.owner(), segments.as_slice()) {
            (None, [table, pk]) => *table == self.table() && pk_segment_ok(self.pk(), pk),
            (Some(owner), [owner_table, owner_pk, table, pk]) => {
                owner.is_key(&format!("{owner_table}:{owner_pk}"))
                    && *table == self.table()
                    && pk_segment_ok(self.pk(), pk)
            }
            _ => false,
        }
    }

    /// The fields as stored, in declaration order, with what their text
    /// means.
    fn spec(self) -> Vec<FieldSpec> {
        use Kind::{Bool, Float, Int, Json, Key, Text};
        let i64s = Int(i64::MIN.into(), i64::MAX.into());
        match self {
            Tag::Teacher => vec![required("name", Text), required("subject", Text)],
            Tag::Class => vec![required("name", Text)],
            Tag::Student => vec![
                required("class", Key(Tag::Class)),
                required("chinese", i64s),
                required("english", i64s),
                required("math", i64s),
            ],
            Tag::Exam => vec![
                required("chinese", i64s),
                required("english", i64s),
                required("math", i64s),
            ],
            Tag::Note => vec![required("text", Text)],
            Tag::Profile => vec![
                required("age", Int(0, u8::MAX.into())),
                required("score", Float(Width::F64)),
                required("active", Bool),
                optional("nickname", Text),
                required("mail", Text),
                required("tags", Json(JsonKind::Strings)),
                optional("address", Json(JsonKind::Address)),
                required("extra", Json(JsonKind::CountMap)),
                defaulted("visits", Int(0, u64::MAX.into()), 0),
                defaulted("level", Int(i32::MIN.into(), i32::MAX.into()), 1),
            ],
            Tag::Gauge => vec![
                required("tiny", Int(i8::MIN.into(), i8::MAX.into())),
                required("small", Int(i16::MIN.into(), i16::MAX.into())),
                required("medium", Int(i32::MIN.into(), i32::MAX.into())),
                required("large", i64s),
                required("byte", Int(0, u8::MAX.into())),
                required("word", Int(0, u16::MAX.into())),
                required("dword", Int(0, u32::MAX.into())),
                required("big", Int(0, u64::MAX.into())),
                required("size", Int(0, usize::MAX as i128)),
                required("ratio", Float(Width::F32)),
                optional("amount", Float(Width::F64)),
                optional("delta", i64s),
                optional("flag", Bool),
                optional("owner", Key(Tag::Teacher)),
                required("history", Json(JsonKind::Floats)),
                defaulted("hits", Int(0, u32::MAX.into()), 0),
            ],
            Tag::Level => vec![required("value", Int(0, u8::MAX.into()))],
            Tag::Reading => vec![required("values", Json(JsonKind::Ints))],
        }
    }
}

/// Whether `text` is a relation list's key: `OWNER_KEY:TABLE`.
fn is_relation_key(owner: Tag, table: &str, text: &str) -> bool {
    match text.rsplit_once(':') {
        Some((owner_key, last)) => last == table && owner.is_key(owner_key),
        None => false,
    }
}

/// Bytes a key segment shows as themselves: ASCII letters, digits, `-`,
/// `.`, `@`, `_`, except a `_` that would start the pk.
fn shows_raw(byte: u8, position: usize) -> bool {
    (byte.is_ascii_alphanumeric() || b"-.@_".contains(&byte)) && !(position == 0 && byte == b'_')
}

/// The pk text of a segment in canonical form (every other byte written
/// `%XX`, uppercase hex, and nothing escaped that shows raw), or `None`.
fn unescape(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(|c| matches!(c, b'0'..=b'9' | b'A'..=b'F')) {
                return None;
            }
            let decoded = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
            if shows_raw(decoded, out.len()) {
                return None;
            }
            out.push(decoded);
            i += 3;
        } else if shows_raw(byte, out.len()) {
            out.push(byte);
            i += 1;
        } else {
            return None;
        }
    }
    String::from_utf8(out).ok()
}

fn canonical_int<T: std::str::FromStr + ToString>(text: &str) -> bool {
    text.parse::<T>().is_ok_and(|v| v.to_string() == text)
}

fn pk_segment_ok(kind: PkKind, segment: &str) -> bool {
    unescape(segment).is_some_and(|text| match kind {
        PkKind::Text => true,
        PkKind::U32 => canonical_int::<u32>(&text),
        PkKind::U64 => canonical_int::<u64>(&text),
        PkKind::I64 => canonical_int::<i64>(&text),
    })
}

// ---------------------------------------------------------------------------
// The oracle of values: what stored text means for each field type.

/// A decoded value, whatever its Rust type, for comparing loads with the
/// oracle.
#[derive(Clone, Debug)]
enum Val {
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
trait ToVal {
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

fn json_val(value: &impl Serialize) -> Val {
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
enum Width {
    F32,
    F64,
}

#[derive(Clone, Copy, Debug)]
enum JsonKind {
    Strings,
    Address,
    CountMap,
    Floats,
    Ints,
}

/// A field's type, as the oracle knows it.
#[derive(Clone, Copy, Debug)]
enum Kind {
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
enum WhenAbsent {
    /// A required field: [`Error::MissingField`].
    Missing,
    /// `None`, or the field's default.
    Is(Val),
}

#[derive(Clone, Debug)]
struct FieldSpec {
    name: &'static str,
    kind: Kind,
    absent: WhenAbsent,
}

fn required(name: &'static str, kind: Kind) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        absent: WhenAbsent::Missing,
    }
}

fn optional(name: &'static str, kind: Kind) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        absent: WhenAbsent::Is(Val::Absent),
    }
}

fn defaulted(name: &'static str, kind: Kind, default: i128) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        absent: WhenAbsent::Is(Val::Int(default)),
    }
}

/// What decoding one stored field must give.
#[derive(Clone, Debug)]
enum Expect {
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
    fn expect(self, raw: &[u8]) -> Expect {
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
fn expect_int(text: &str, lo: i128, hi: i128) -> Expect {
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
fn expect_float(text: &str, width: Width) -> Expect {
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
fn decimal_grammar(body: &str) -> bool {
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

fn expect_json(kind: JsonKind, raw: &[u8]) -> Expect {
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
fn redis_int(raw: &[u8]) -> Option<i64> {
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

// ---------------------------------------------------------------------------
// The world: what each key holds.

/// What one key holds.
#[derive(Clone, PartialEq)]
enum Shape {
    Absent,
    Str(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    List(Vec<Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    ZSet(BTreeSet<Vec<u8>>),
}

impl Shape {
    /// Redis has no empty aggregates: an empty one is an absent key.
    fn normalized(self) -> Shape {
        let empty = match &self {
            Shape::Hash(m) => m.is_empty(),
            Shape::List(l) => l.is_empty(),
            Shape::Set(s) | Shape::ZSet(s) => s.is_empty(),
            Shape::Absent | Shape::Str(_) => false,
        };
        if empty {
            Shape::Absent
        } else {
            self
        }
    }
}

fn show(raw: &[u8]) -> String {
    format!("\"{}\"", raw.escape_ascii())
}

fn show_all<'a>(items: impl IntoIterator<Item = &'a Vec<u8>>) -> String {
    items
        .into_iter()
        .map(|i| show(i))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Absent => f.write_str("absent"),
            Shape::Str(v) => write!(f, "string {}", show(v)),
            Shape::Hash(m) => {
                let fields: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{}: {}", show(k), show(v)))
                    .collect();
                write!(f, "hash {{{}}}", fields.join(", "))
            }
            Shape::List(items) => write!(f, "list [{}]", show_all(items)),
            Shape::Set(items) => write!(f, "set {{{}}}", show_all(items)),
            Shape::ZSet(items) => write!(f, "zset {{{}}}", show_all(items)),
        }
    }
}

/// What a key is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// An object of this model.
    Object(Tag),
    /// A list of keys of this model.
    List(Tag),
    /// No model's key, though it looks like one.
    Junk,
}

struct Entry {
    key: &'static [u8],
    role: Role,
}

const fn object(key: &'static str, tag: Tag) -> Entry {
    Entry {
        key: key.as_bytes(),
        role: Role::Object(tag),
    }
}

const fn list(key: &'static str, member: Tag) -> Entry {
    Entry {
        key: key.as_bytes(),
        role: Role::List(member),
    }
}

const fn junk(key: &'static [u8]) -> Entry {
    Entry {
        key,
        role: Role::Junk,
    }
}

/// Every key a world may fill: the models' keys (odd pks included), the
/// relation lists, and look-alikes that are no model's key.
const UNIVERSE: &[Entry] = &[
    object("teacher:A", Tag::Teacher),
    object("teacher:B", Tag::Teacher),
    object("teacher:", Tag::Teacher),
    object("teacher:%3A", Tag::Teacher),
    object("teacher:%5Fx", Tag::Teacher),
    object("teacher:%C3%A9", Tag::Teacher),
    object("class:1", Tag::Class),
    object("class:2", Tag::Class),
    object("class:4294967295", Tag::Class),
    object("student:a", Tag::Student),
    object("student:b", Tag::Student),
    object("student:", Tag::Student),
    object("student:a:exam:2024", Tag::Exam),
    object("student:a:exam:0", Tag::Exam),
    object("student:b:exam:1", Tag::Exam),
    object("student::exam:1", Tag::Exam),
    object("student:a:note:home", Tag::Note),
    object("student:a:note:%5F", Tag::Note),
    object("profile:p", Tag::Profile),
    object("profile:q", Tag::Profile),
    object("gauge:1", Tag::Gauge),
    object("gauge:-5", Tag::Gauge),
    object("gauge:1:level:x", Tag::Level),
    object("gauge:1:level:", Tag::Level),
    object("gauge:1:reading:5", Tag::Reading),
    object("gauge:-5:reading:18446744073709551615", Tag::Reading),
    list("teacher:A:class", Tag::Class),
    list("teacher:%3A:class", Tag::Class),
    list("class:1:teacher", Tag::Teacher),
    list("class:1:student", Tag::Student),
    list("class:2:student", Tag::Student),
    list("performance:good", Tag::Student),
    junk(b"teacher:_x"),
    junk(b"teacher:%41"),
    junk(b"teacher:a%3ab"),
    junk(b"teacher:%3a"),
    junk(b"teacher:*"),
    junk(b"teacher:a b"),
    junk(b"teacher:%"),
    junk(b"teacher:%5"),
    junk(b"teacher:%ZZ"),
    junk(b"teacher:%FF"),
    junk(b"teacher:A:class:x"),
    junk(b"teacher:A:exam:1"),
    junk(b"teacher:\xff"),
    junk(b"TEACHER:A"),
    junk(b"teacher"),
    junk(b"teacher:A:"),
    junk(b"class:01"),
    junk(b"class:-1"),
    junk(b"class:+1"),
    junk(b"class:-0"),
    junk(b"class:4294967296"),
    junk(b"class:"),
    junk(b"class:1.0"),
    junk(b"class:%31"),
    junk(b"class: 1"),
    junk(b"class:\xc3"),
    junk(b"student:a:exam:01"),
    junk(b"student:a:exam:x"),
    junk(b"student:a:exam:"),
    junk(b"student:a:exam:-1"),
    junk(b"student:%ZZ:exam:1"),
    junk(b"student:a:exam:1:x"),
    junk(b"student:a:exam:\xff"),
    junk(b"student:a:note:_x"),
    junk(b"gauge:-0"),
    junk(b"gauge:+1"),
    junk(b"gauge:01"),
    junk(b"gauge:9223372036854775808"),
    junk(b"gauge:1:reading:-1"),
    junk(b"gauge:1:level:x:y"),
    junk(b"profile:p%"),
    junk(b""),
    junk(b":"),
];

fn keys_with(role: Role) -> impl Iterator<Item = &'static str> {
    UNIVERSE
        .iter()
        .filter(move |e| e.role == role)
        .filter_map(|e| std::str::from_utf8(e.key).ok())
}

/// A world, plus the arguments of the reads that take some.
#[derive(Clone)]
struct Case {
    /// What each key of [`UNIVERSE`] holds, in order.
    shapes: Vec<Shape>,
    /// LRANGE bounds.
    ranges: Vec<(i64, i64)>,
    /// LINDEX indexes.
    indexes: Vec<i64>,
    /// Pages: (page, per page).
    pages: Vec<(u64, u64)>,
    /// Increments of the integer fields of [`INT_INCRS`], in order.
    int_by: Vec<i64>,
    /// Increments of the float fields of [`FLOAT_INCRS`], in order.
    float_by: Vec<f64>,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (entry, shape) in UNIVERSE.iter().zip(&self.shapes) {
            if *shape != Shape::Absent {
                writeln!(f, "  {} => {shape:?}", show(entry.key))?;
            }
        }
        writeln!(f, "  ranges {:?}, indexes {:?}", self.ranges, self.indexes)?;
        writeln!(f, "  pages {:?}", self.pages)?;
        write!(f, "  incr by {:?} / {:?}", self.int_by, self.float_by)
    }
}

/// The keys' contents, by key.
struct World {
    keys: BTreeMap<Vec<u8>, Shape>,
}

/// What a model's read of a key finds there.
enum View<'w> {
    WrongType(&'static str),
    Absent,
    Hash(&'w BTreeMap<Vec<u8>, Vec<u8>>),
    Single(&'w [u8]),
}

impl View<'_> {
    /// The stored text of field `name` (the one value of a single-value
    /// object, whatever the name).
    fn raw(&self, name: &str) -> Option<&[u8]> {
        match self {
            View::Hash(map) => map.get(name.as_bytes()).map(Vec::as_slice),
            View::Single(raw) => Some(raw),
            View::WrongType(_) | View::Absent => None,
        }
    }
}

impl World {
    fn new(case: &Case) -> World {
        World {
            keys: UNIVERSE
                .iter()
                .zip(&case.shapes)
                .map(|(e, s)| (e.key.to_vec(), s.clone()))
                .collect(),
        }
    }

    fn shape(&self, key: &str) -> &Shape {
        self.keys.get(key.as_bytes()).unwrap_or(&Shape::Absent)
    }

    fn view(&self, key: &str, storage: Storage) -> View<'_> {
        match (self.shape(key), storage) {
            (Shape::Absent, _) => View::Absent,
            (Shape::Hash(map), Storage::Hash) => View::Hash(map),
            (Shape::Str(raw), Storage::Single) => View::Single(raw),
            (_, Storage::Hash) => View::WrongType("hash"),
            (_, Storage::Single) => View::WrongType("string"),
        }
    }

    /// The list at `key` (`[]` if absent), or `None` if it holds another type.
    fn list(&self, key: &str) -> Option<Vec<&[u8]>> {
        match self.shape(key) {
            Shape::Absent => Some(Vec::new()),
            Shape::List(items) => Some(items.iter().map(Vec::as_slice).collect()),
            _ => None,
        }
    }

    /// The existing UTF-8 keys that `keep` selects, in byte order (as SCAN
    /// results are returned).
    fn existing_keys(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        self.keys
            .iter()
            .filter(|(_, shape)| **shape != Shape::Absent)
            .filter_map(|(key, _)| std::str::from_utf8(key).ok())
            .filter(|key| keep(key))
            .map(str::to_string)
            .collect()
    }

    /// Writes the world with raw commands, in one round trip, after
    /// FLUSHDB.
    async fn write(&self, db: &Db) -> Result<()> {
        let mut pipe = redis::pipe();
        pipe.cmd("FLUSHDB").ignore();
        for (key, shape) in &self.keys {
            match shape {
                Shape::Absent => {}
                Shape::Str(v) => {
                    pipe.cmd("SET").arg(key).arg(v).ignore();
                }
                Shape::Hash(map) => {
                    let cmd = pipe.cmd("HSET").arg(key);
                    for (field, value) in map {
                        cmd.arg(field).arg(value);
                    }
                    cmd.ignore();
                }
                Shape::List(items) => {
                    pipe.cmd("RPUSH").arg(key).arg(items).ignore();
                }
                Shape::Set(items) => {
                    pipe.cmd("SADD").arg(key).arg(items).ignore();
                }
                Shape::ZSet(items) => {
                    let cmd = pipe.cmd("ZADD").arg(key);
                    for (score, member) in items.iter().enumerate() {
                        cmd.arg(score).arg(member);
                    }
                    cmd.ignore();
                }
            }
        }
        db.query_pipeline::<()>(&pipe).await
    }
}

// ---------------------------------------------------------------------------
// Generators.

/// Text that is hostile to some field type: numbers at and past every
/// range, float words, spacing, JSON good and bad, keys good and bad.
const TEXT_ATOMS: &[&str] = &[
    "",
    " ",
    "0",
    "-0",
    "+0",
    "00",
    "1",
    "-1",
    "+1",
    "007",
    " 1",
    "1 ",
    "1\n",
    "0x10",
    "1_000",
    "1,5",
    "127",
    "128",
    "-128",
    "-129",
    "255",
    "256",
    "300",
    "-300",
    "32767",
    "32768",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "-18446744073709551616",
    "170141183460469231731687303715884105728",
    "999999999999999999999999999999999999999999999999",
    "1.5",
    "-1.5",
    "1.0",
    "1.",
    ".5",
    "-.5",
    ".",
    "1e3",
    "1E3",
    "1e",
    "e1",
    "1e+20",
    "1e-7",
    "1e308",
    "1.7976931348623157e308",
    "1.8e308",
    "1e999",
    "-1e999",
    "1e-999",
    "3.4028235e38",
    "3.5e38",
    "1e39",
    "-1e39",
    "1e-46",
    "NaN",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "+inf",
    "Inf",
    "INF",
    "infinity",
    "-Infinity",
    "infinit",
    "true",
    "false",
    "True",
    "TRUE",
    "yes",
    "on",
    "null",
    "[]",
    "{}",
    "[\"a\"]",
    "[1,2]",
    "[1.5]",
    "[1e999]",
    "[9223372036854775808]",
    "[\"a\",1]",
    "[",
    "]",
    "[] ",
    "[]x",
    "{\"city\":\"Paris\"}",
    "{\"city\":1}",
    "{\"city\":\"P\",\"zip\":null}",
    "{\"zip\":\"1\"}",
    "{\"city\":\"a\",\"city\":\"b\"}",
    "{\"x\":1}",
    "{\"x\":1.5}",
    "{\"x\":9223372036854775808}",
    "{\"x\":\"1\"}",
    "\"text\"",
    "class:1",
    "class:2",
    "class:01",
    "class:-1",
    "class:",
    "class:1:teacher",
    "class:%31",
    "class:4294967296",
    "teacher:A",
    "teacher:",
    "teacher:%3A",
    "teacher:%3a",
    "teacher:_x",
    "teacher:%5Fx",
    "teacher:A:class",
    "teacher:*",
    "teacher:%",
    "teacher:%ZZ",
    "student:a",
    "student:b",
    "student:",
    "student:a:exam:2024",
    "gauge:1",
    "gauge:-0",
    "profile:p",
    ":",
    "::",
    "%",
    "%25",
    "_count",
    "é",
    "\u{0}",
    "\u{feff}1",
    "\u{ff11}",
    "1\u{a0}",
];

/// Bytes that are not UTF-8, alone and inside otherwise good text.
const BYTE_ATOMS: &[&[u8]] = &[
    b"\xff",
    b"\xc3",
    b"\xc3\x28",
    b"1\xff",
    b"\x80\x80",
    b"\xed\xa0\x80",
    b"teacher:\xff",
    b"class:\xc3",
    b"\"\xff\"",
    b"[\"\xff\"]",
];

fn atom() -> BoxedStrategy<Vec<u8>> {
    let leaf = prop_oneof![
        12 => select(TEXT_ATOMS).prop_map(|s| s.as_bytes().to_vec()),
        3 => select(BYTE_ATOMS).prop_map(<[u8]>::to_vec),
        1 => vec(any::<u8>(), 0..12),
        1 => any::<String>().prop_map(String::into_bytes),
        1 => (1usize..400).prop_map(|n| "9".repeat(n).into_bytes()),
        1 => (1usize..300).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n)).into_bytes()),
    ]
    .boxed();
    prop_oneof![
        6 => leaf.clone(),
        1 => (leaf.clone(), leaf).prop_map(|(mut a, b)| { a.extend(b); a }),
    ]
    .boxed()
}

/// Keys of model `tag` in canonical form: the universe's, some of objects
/// that are never written, and random pks.
fn key_of(tag: Tag) -> BoxedStrategy<String> {
    let mut known: Vec<String> = keys_with(Role::Object(tag)).map(str::to_string).collect();
    known.extend(
        match tag {
            Tag::Teacher => &["teacher:Z"][..],
            Tag::Class => &["class:3", "class:0"][..],
            Tag::Student => &["student:zz"][..],
            _ => &[][..],
        }
        .iter()
        .map(|k| k.to_string()),
    );
    let random_pk: BoxedStrategy<String> = match tag.pk() {
        PkKind::Text => any::<String>().boxed(),
        PkKind::U32 => any::<u32>().prop_map(|n| n.to_string()).boxed(),
        PkKind::U64 => any::<u64>().prop_map(|n| n.to_string()).boxed(),
        PkKind::I64 => any::<i64>().prop_map(|n| n.to_string()).boxed(),
    };
    let owner: BoxedStrategy<Option<String>> = match tag.owner() {
        Some(owner) => key_of(owner).prop_map(Some).boxed(),
        None => Just(None).boxed(),
    };
    let table = tag.table();
    let random = (owner, random_pk).prop_map(move |(owner, pk)| {
        let owner = owner.map(|o| format!("{o}:")).unwrap_or_default();
        format!("{owner}{table}:{}", encode_segment(&pk))
    });
    prop_oneof![3 => select(known), 1 => random].boxed()
}

/// Text that `kind` reads as a value (mostly), in the codec's own spelling.
fn valid(kind: Kind) -> BoxedStrategy<Vec<u8>> {
    fn json(value: impl Serialize) -> Vec<u8> {
        serde_json::to_vec(&value).unwrap_or_default()
    }
    match kind {
        Kind::Text => any::<String>().prop_map(String::into_bytes).boxed(),
        Kind::Bool => select(&["true", "false", "1", "0"][..])
            .prop_map(|s| s.as_bytes().to_vec())
            .boxed(),
        Kind::Int(lo, hi) => (lo..=hi).prop_map(|v| v.to_string().into_bytes()).boxed(),
        Kind::Float(Width::F32) => any::<f32>()
            .prop_map(|v| v.to_string().into_bytes())
            .boxed(),
        Kind::Float(Width::F64) => any::<f64>()
            .prop_map(|v| v.to_string().into_bytes())
            .boxed(),
        Kind::Key(tag) => key_of(tag).prop_map(String::into_bytes).boxed(),
        Kind::Json(JsonKind::Strings) => vec(any::<String>(), 0..3).prop_map(json).boxed(),
        Kind::Json(JsonKind::Address) => {
            proptest::option::of((any::<String>(), proptest::option::of(any::<String>())))
                .prop_map(|a| json(a.map(|(city, zip)| Address { city, zip })))
                .boxed()
        }
        Kind::Json(JsonKind::CountMap) => btree_map(any::<String>(), any::<i64>(), 0..3)
            .prop_map(json)
            .boxed(),
        Kind::Json(JsonKind::Floats) => vec(any::<f64>(), 0..3).prop_map(json).boxed(),
        Kind::Json(JsonKind::Ints) => vec(any::<i64>(), 0..3).prop_map(json).boxed(),
    }
}

fn field_value(kind: Kind) -> BoxedStrategy<Vec<u8>> {
    prop_oneof![5 => valid(kind), 2 => atom()].boxed()
}

/// Hash field names besides the declared ones.
fn extra_name() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        3 => select(&["nope", "", "NAME", "name ", "Name", "_count", "value", "class", "tags"][..])
            .prop_map(|s| s.as_bytes().to_vec()),
        1 => vec(any::<u8>(), 0..6),
    ]
    .boxed()
}

/// A value of any Redis type but `not`.
fn other_type(not: &'static str) -> BoxedStrategy<Shape> {
    let mut shapes: Vec<BoxedStrategy<Shape>> = Vec::new();
    if not != "string" {
        shapes.push(atom().prop_map(Shape::Str).boxed());
    }
    if not != "hash" {
        shapes.push(
            btree_map(extra_name(), atom(), 1..3)
                .prop_map(Shape::Hash)
                .boxed(),
        );
    }
    if not != "list" {
        shapes.push(vec(atom(), 1..3).prop_map(Shape::List).boxed());
    }
    shapes.push(btree_set(atom(), 1..3).prop_map(Shape::Set).boxed());
    shapes.push(btree_set(atom(), 1..3).prop_map(Shape::ZSet).boxed());
    Union::new(shapes).prop_map(Shape::normalized).boxed()
}

/// A hash field and its value, or nothing.
type NamedValue = Option<(Vec<u8>, Vec<u8>)>;

/// An object's hash: all declared fields valid, or all but one (changed
/// to a hostile atom, or removed), or each field at random; plus unknown
/// fields and a `_count`. (With fields corrupted independently, a model of
/// 16 fields would almost never load, and the success path would go
/// untested.)
fn object_hash(tag: Tag) -> BoxedStrategy<Shape> {
    let spec = tag.spec();
    let named = |value: BoxedStrategy<Option<Vec<u8>>>, name: &'static str| {
        value
            .prop_map(move |v| v.map(|v| (name.as_bytes().to_vec(), v)))
            .boxed()
    };
    let clean: Vec<BoxedStrategy<NamedValue>> = spec
        .iter()
        .map(|s| named(valid(s.kind).prop_map(Some).boxed(), s.name))
        .collect();
    let random: Vec<BoxedStrategy<NamedValue>> = spec
        .iter()
        .map(|s| {
            named(
                proptest::option::weighted(0.9, field_value(s.kind)).boxed(),
                s.name,
            )
        })
        .collect();
    let one_off = (
        clean.clone(),
        0..spec.len().max(1),
        proptest::option::of(atom()),
    )
        .prop_map(|(mut fields, i, replacement)| {
            if let Some(field) = fields.get_mut(i) {
                *field = field
                    .take()
                    .and_then(|(name, _)| Some((name, replacement?)));
            }
            fields
        });
    let fields = prop_oneof![2 => clean, 3 => one_off, 3 => random];
    let count = prop_oneof![
        2 => Just(None),
        2 => any::<u16>().prop_map(|n| Some(n.to_string().into_bytes())),
        1 => atom().prop_map(Some),
    ];
    (fields, vec((extra_name(), atom()), 0..3), count)
        .prop_map(|(fields, extras, count)| {
            let mut map: BTreeMap<Vec<u8>, Vec<u8>> = fields.into_iter().flatten().collect();
            map.extend(extras);
            if let Some(count) = count {
                map.insert(b"_count".to_vec(), count);
            }
            Shape::Hash(map).normalized()
        })
        .boxed()
}

fn shape_for(role: Role) -> BoxedStrategy<Shape> {
    match role {
        Role::Object(tag) if tag.owner().is_some() && is_single(tag) => {
            let kind = tag.spec().first().map_or(Kind::Text, |s| s.kind);
            prop_oneof![
                1 => Just(Shape::Absent),
                6 => field_value(kind).prop_map(Shape::Str),
                1 => other_type("string"),
            ]
            .boxed()
        }
        Role::Object(tag) => prop_oneof![
            1 => Just(Shape::Absent),
            8 => object_hash(tag),
            1 => other_type("hash"),
        ]
        .boxed(),
        Role::List(member) => {
            let item = prop_oneof![
                4 => key_of(member).prop_map(String::into_bytes),
                1 => key_of(Tag::Teacher).prop_map(String::into_bytes),
                1 => key_of(Tag::Exam).prop_map(String::into_bytes),
                2 => atom(),
            ];
            prop_oneof![
                1 => Just(Shape::Absent),
                6 => vec(item, 1..6).prop_map(Shape::List),
                1 => other_type("list"),
            ]
            .boxed()
        }
        Role::Junk => prop_oneof![
            2 => Just(Shape::Absent),
            1 => object_hash(Tag::Teacher),
            1 => other_type("hash"),
        ]
        .boxed(),
    }
}

fn is_single(tag: Tag) -> bool {
    matches!(tag, Tag::Note | Tag::Level | Tag::Reading)
}

const BOUNDS: &[i64] = &[0, 1, 2, -1, -2, 3, 5, -100, 100, i64::MAX, i64::MIN];

fn case() -> impl Strategy<Value = Case> {
    let shapes: Vec<BoxedStrategy<Shape>> = UNIVERSE.iter().map(|e| shape_for(e.role)).collect();
    let bound = || select(BOUNDS);
    let page_number = select(&[0u64, 1, 2, 7, u64::MAX / 2, u64::MAX][..]);
    let per_page = select(&[0u64, 1, 2, 3, 1000, u64::MAX][..]);
    let int_by = select(&[0i64, 1, -1, 7, 255, -300, i64::MAX, i64::MIN][..]);
    let float_by = select(&[0.0f64, 1.5, -1.5, 1e10, -1e10, 1e38, 1e300][..]);
    (
        shapes,
        vec((bound(), bound()), 1..3),
        vec(bound(), 1..3),
        vec((page_number, per_page), 1..3),
        vec(int_by, INT_INCRS),
        vec(float_by, FLOAT_INCRS),
    )
        .prop_map(|(shapes, ranges, indexes, pages, int_by, float_by)| Case {
            shapes,
            ranges,
            indexes,
            pages,
            int_by,
            float_by,
        })
}

// ---------------------------------------------------------------------------
// Typed reads of each model.

/// A model the checks know: its oracle tag, its values as [`Val`]s, and
/// its typed field reads (which need the field handles by name).
trait Probe: Model + fmt::Debug {
    const TAG: Tag;

    /// The data fields' values, in declaration order.
    fn vals(&self) -> Vec<Val>;

    /// Every field read on its own (HGET; GET of a single value), typed.
    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)>;

    /// Fields read together (HMGET), typed, with the names read.
    async fn field_sets(db: &Db, h: &ObjectRef<Self>)
        -> Vec<(Vec<&'static str>, Result<Vec<Val>>)>;
}

fn opt_val<T: ToVal>(value: Option<T>) -> Val {
    value.as_ref().map_or(Val::Absent, ToVal::to_val)
}

macro_rules! each_field {
    ($db:expr, $h:expr; $($field:expr),+ $(,)?) => {
        vec![$(($field.name(), $h.get($db, $field).await.map(|v| v.map(|v| v.to_val())))),+]
    };
}

macro_rules! field_set {
    ($db:expr, $h:expr; $($field:expr => $i:tt),+ $(,)?) => {
        (
            vec![$($field.name()),+],
            $h.get_fields($db, ($($field,)+)).await.map(|t| vec![$(opt_val(t.$i)),+]),
        )
    };
}

impl Probe for Teacher {
    const TAG: Tag = Tag::Teacher;

    fn vals(&self) -> Vec<Val> {
        vec![self.name.to_val(), self.subject.to_val()]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h; Teacher::NAME, Teacher::SUBJECT)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![field_set!(db, h; Teacher::SUBJECT => 0, Teacher::NAME => 1)]
    }
}

impl Probe for Class {
    const TAG: Tag = Tag::Class;

    fn vals(&self) -> Vec<Val> {
        vec![self.name.to_val()]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h; Class::NAME)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![field_set!(db, h; Class::NAME => 0)]
    }
}

impl Probe for Student {
    const TAG: Tag = Tag::Student;

    fn vals(&self) -> Vec<Val> {
        vec![
            self.class.to_val(),
            self.chinese.to_val(),
            self.english.to_val(),
            self.math.to_val(),
        ]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h; Student::CLASS, Student::CHINESE, Student::ENGLISH, Student::MATH)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![
            field_set!(db, h; Student::MATH => 0, Student::CLASS => 1),
            field_set!(db, h;
                Student::CLASS => 0, Student::CHINESE => 1, Student::ENGLISH => 2, Student::MATH => 3),
        ]
    }
}

impl Probe for Exam {
    const TAG: Tag = Tag::Exam;

    fn vals(&self) -> Vec<Val> {
        vec![
            self.chinese.to_val(),
            self.english.to_val(),
            self.math.to_val(),
        ]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h; Exam::CHINESE, Exam::ENGLISH, Exam::MATH)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![field_set!(db, h; Exam::CHINESE => 0, Exam::ENGLISH => 1, Exam::MATH => 2)]
    }
}

impl Probe for Profile {
    const TAG: Tag = Tag::Profile;

    fn vals(&self) -> Vec<Val> {
        vec![
            self.age.to_val(),
            self.score.to_val(),
            self.active.to_val(),
            self.nickname.to_val(),
            self.email.to_val(),
            self.tags.to_val(),
            self.address.to_val(),
            self.extra.to_val(),
            self.visits.to_val(),
            self.level.to_val(),
        ]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h;
            Profile::AGE, Profile::SCORE, Profile::ACTIVE, Profile::NICKNAME, Profile::EMAIL,
            Profile::TAGS, Profile::ADDRESS, Profile::EXTRA, Profile::VISITS, Profile::LEVEL)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![
            field_set!(db, h;
                Profile::AGE => 0, Profile::SCORE => 1, Profile::ACTIVE => 2,
                Profile::NICKNAME => 3, Profile::EMAIL => 4),
            field_set!(db, h;
                Profile::TAGS => 0, Profile::ADDRESS => 1, Profile::EXTRA => 2,
                Profile::VISITS => 3, Profile::LEVEL => 4),
        ]
    }
}

impl Probe for Gauge {
    const TAG: Tag = Tag::Gauge;

    fn vals(&self) -> Vec<Val> {
        vec![
            self.tiny.to_val(),
            self.small.to_val(),
            self.medium.to_val(),
            self.large.to_val(),
            self.byte.to_val(),
            self.word.to_val(),
            self.dword.to_val(),
            self.big.to_val(),
            self.size.to_val(),
            self.ratio.to_val(),
            self.amount.to_val(),
            self.delta.to_val(),
            self.flag.to_val(),
            self.owner.to_val(),
            self.history.to_val(),
            self.hits.to_val(),
        ]
    }

    async fn each_field(db: &Db, h: &ObjectRef<Self>) -> Vec<(&'static str, Result<Option<Val>>)> {
        each_field!(db, h;
            Gauge::TINY, Gauge::SMALL, Gauge::MEDIUM, Gauge::LARGE, Gauge::BYTE, Gauge::WORD,
            Gauge::DWORD, Gauge::BIG, Gauge::SIZE, Gauge::RATIO, Gauge::AMOUNT, Gauge::DELTA,
            Gauge::FLAG, Gauge::OWNER, Gauge::HISTORY, Gauge::HITS)
    }

    async fn field_sets(
        db: &Db,
        h: &ObjectRef<Self>,
    ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
        vec![
            field_set!(db, h;
                Gauge::TINY => 0, Gauge::SMALL => 1, Gauge::MEDIUM => 2, Gauge::LARGE => 3,
                Gauge::BYTE => 4, Gauge::WORD => 5, Gauge::DWORD => 6, Gauge::BIG => 7),
            field_set!(db, h;
                Gauge::SIZE => 0, Gauge::RATIO => 1, Gauge::AMOUNT => 2, Gauge::DELTA => 3,
                Gauge::FLAG => 4, Gauge::OWNER => 5, Gauge::HISTORY => 6, Gauge::HITS => 7),
        ]
    }
}

/// `get_value` of a single-value model, as its one field read.
macro_rules! single_probe {
    ($model:ty, $tag:expr, $field:ident) => {
        impl Probe for $model {
            const TAG: Tag = $tag;

            fn vals(&self) -> Vec<Val> {
                vec![self.$field.to_val()]
            }

            async fn each_field(
                db: &Db,
                h: &ObjectRef<Self>,
            ) -> Vec<(&'static str, Result<Option<Val>>)> {
                vec![(
                    stringify!($field),
                    h.get_value(db).await.map(|v| v.map(|v| v.to_val())),
                )]
            }

            async fn field_sets(
                _: &Db,
                _: &ObjectRef<Self>,
            ) -> Vec<(Vec<&'static str>, Result<Vec<Val>>)> {
                Vec::new()
            }
        }
    };
}

single_probe!(Note, Tag::Note, text);
single_probe!(Level, Tag::Level, value);
single_probe!(Reading, Tag::Reading, values);

// ---------------------------------------------------------------------------
// Checks: each compares one read's result with what the world allows.

type Check = std::result::Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// One field's expectation, with its stored text for messages.
#[derive(Debug)]
struct Exp<'w> {
    field: &'static str,
    raw: Option<&'w [u8]>,
    expect: Expect,
}

impl<'w> Exp<'w> {
    /// Loading the whole object: an absent field is `None`, its default,
    /// or missing.
    fn on_load(spec: &FieldSpec, raw: Option<&'w [u8]>) -> Exp<'w> {
        let expect = match (raw, &spec.absent) {
            (Some(raw), _) => spec.kind.expect(raw),
            (None, WhenAbsent::Missing) => Expect::Missing,
            (None, WhenAbsent::Is(value)) => Expect::Must(value.clone()),
        };
        Exp {
            field: spec.name,
            raw,
            expect,
        }
    }

    /// Reading the field alone: an absent field is `None`.
    fn on_read(spec: &FieldSpec, raw: Option<&'w [u8]>) -> Exp<'w> {
        Exp {
            field: spec.name,
            raw,
            expect: raw.map_or(Expect::Must(Val::Absent), |raw| spec.kind.expect(raw)),
        }
    }

    fn must_fail(&self) -> bool {
        matches!(self.expect, Expect::Invalid(_) | Expect::Missing)
    }

    /// Whether `err` is an error this field may cause at `key`.
    fn allows(&self, key: &str, err: &Error) -> bool {
        match (&self.expect, err) {
            (
                Expect::Invalid(_) | Expect::Either(_),
                Error::Decode {
                    key: k,
                    field,
                    reason,
                },
            ) => k == key && field == self.field && !reason.is_empty(),
            (Expect::Missing, Error::MissingField { key: k, field }) => {
                k == key && field == self.field
            }
            _ => false,
        }
    }

    fn stored(&self) -> String {
        self.raw.map_or("nothing".to_string(), show)
    }
}

/// Decoded values (or the error) against the fields' expectations, which
/// are decoded in order: the error must come from the first field that
/// cannot be decoded.
fn check_decoded(key: &str, exps: &[Exp<'_>], got: std::result::Result<Vec<Val>, &Error>) -> Check {
    match got {
        Ok(vals) => {
            ensure!(
                vals.len() == exps.len(),
                "{key}: {} values for {} fields",
                vals.len(),
                exps.len()
            );
            for (exp, val) in exps.iter().zip(&vals) {
                match &exp.expect {
                    Expect::Must(want) | Expect::Either(want) => ensure!(
                        val == want,
                        "{key} field `{}` holds {}: it loaded as {val:?}, but that text means {want:?}",
                        exp.field,
                        exp.stored()
                    ),
                    Expect::Invalid(why) => {
                        return Err(format!(
                            "{key} field `{}` holds {} ({why}), yet it loaded as {val:?} instead of failing",
                            exp.field,
                            exp.stored()
                        ))
                    }
                    Expect::Missing => {
                        return Err(format!(
                            "{key} lacks the required field `{}`, yet it loaded as {val:?}",
                            exp.field
                        ))
                    }
                }
            }
            Ok(())
        }
        Err(err) => {
            let Some(position) = exps.iter().position(|exp| exp.allows(key, err)) else {
                return Err(format!(
                    "{key}: the error {err:?} is not one that its fields allow: {exps:?}"
                ));
            };
            if let Some(earlier) = exps.iter().take(position).find(|e| e.must_fail()) {
                return Err(format!(
                    "{key}: the error is about `{}`, but `{}` (holding {}) comes first and cannot be decoded",
                    exps.get(position).map_or("?", |e| e.field),
                    earlier.field,
                    earlier.stored()
                ));
            }
            Ok(())
        }
    }
}

fn check_wrong_type<T: fmt::Debug>(
    key: &str,
    expected: &str,
    got: std::result::Result<T, &Error>,
) -> Check {
    match got {
        Err(Error::UnexpectedType {
            key: k,
            expected: e,
        }) if k == key && *e == expected => Ok(()),
        other => Err(format!(
            "{key} holds another type than a {expected}: expected UnexpectedType naming it, got {other:?}"
        )),
    }
}

/// A load (`load`, `get_many`, `Admin::get`...) of the object at `key`.
fn check_load(
    key: &str,
    view: &View<'_>,
    spec: &[FieldSpec],
    got: std::result::Result<Option<Vec<Val>>, &Error>,
) -> Check {
    match view {
        View::WrongType(expected) => check_wrong_type(key, expected, got),
        View::Absent => match got {
            Ok(None) => Ok(()),
            other => Err(format!("{key} is absent: expected Ok(None), got {other:?}")),
        },
        View::Hash(_) | View::Single(_) => {
            let exps: Vec<Exp<'_>> = spec
                .iter()
                .map(|s| Exp::on_load(s, view.raw(s.name)))
                .collect();
            match got {
                Ok(Some(vals)) => check_decoded(key, &exps, Ok(vals)),
                Ok(None) => Err(format!("{key} exists, yet it loaded as None")),
                Err(err) => check_decoded(key, &exps, Err(err)),
            }
        }
    }
}

fn loaded<M: Probe>(got: &Result<Option<M>>) -> std::result::Result<Option<Vec<Val>>, &Error> {
    got.as_ref().map(|o| o.as_ref().map(Probe::vals))
}

/// Reads of some fields (HGET, HMGET, GET): absent fields are `None`.
fn check_fields(
    key: &str,
    view: &View<'_>,
    spec: &[FieldSpec],
    names: &[&str],
    got: std::result::Result<Vec<Val>, &Error>,
) -> Check {
    match view {
        View::WrongType(expected) => check_wrong_type(key, expected, got),
        _ => {
            let exps: Vec<Exp<'_>> = names
                .iter()
                .filter_map(|name| spec.iter().find(|s| s.name == *name))
                .map(|s| Exp::on_read(s, view.raw(s.name)))
                .collect();
            check_decoded(key, &exps, got)
        }
    }
}

/// `load_map` / `get_fields_map`: the present fields among `names`, as text.
fn check_text_map(
    key: &str,
    view: &View<'_>,
    names: &[&str],
    absent_is_none: bool,
    got: std::result::Result<Option<BTreeMap<String, String>>, &Error>,
) -> Check {
    match view {
        View::WrongType(expected) => check_wrong_type(key, expected, got),
        View::Absent => {
            let want = if absent_is_none {
                None
            } else {
                Some(BTreeMap::new())
            };
            ensure!(
                matches!(&got, Ok(map) if *map == want),
                "{key} is absent: expected Ok({want:?}), got {got:?}"
            );
            Ok(())
        }
        View::Hash(_) | View::Single(_) => {
            let mut want = BTreeMap::new();
            let mut not_text = None;
            for name in names {
                if let Some(raw) = view.raw(name) {
                    match std::str::from_utf8(raw) {
                        Ok(text) => {
                            want.insert(name.to_string(), text.to_string());
                        }
                        Err(_) => {
                            not_text = Some(*name);
                            break;
                        }
                    }
                }
            }
            match (not_text, &got) {
                (None, Ok(Some(map))) if *map == want => Ok(()),
                (
                    Some(field),
                    Err(Error::Decode {
                        key: k, field: f, ..
                    }),
                ) if k == key && f == field => Ok(()),
                _ => Err(format!(
                    "{key}: reading {names:?} as text: expected {}, got {got:?}",
                    match not_text {
                        Some(field) => format!("a decode error for the non-UTF-8 `{field}`"),
                        None => format!("{want:?}"),
                    }
                )),
            }
        }
    }
}

/// A batch load of `keys`, in order; `present_only`: absent objects are
/// left out of the result (`scan_objects`, relation loads) rather than `None`.
fn check_many<M: Probe>(
    world: &World,
    keys: &[String],
    got: std::result::Result<Vec<Option<Vec<Val>>>, &Error>,
    present_only: bool,
) -> Check {
    let spec = M::TAG.spec();
    let views: Vec<(&str, View<'_>)> = keys
        .iter()
        .map(|k| (k.as_str(), world.view(k, M::STORAGE)))
        .collect();
    match got {
        Ok(objects) => {
            let expected: Vec<&(&str, View<'_>)> = views
                .iter()
                .filter(|(_, v)| !(present_only && matches!(v, View::Absent)))
                .collect();
            ensure!(
                objects.len() == expected.len(),
                "loading {keys:?}: {} results for {} objects",
                objects.len(),
                expected.len()
            );
            for ((key, view), object) in expected.into_iter().zip(objects) {
                check_load(key, view, &spec, Ok(object))?;
            }
            Ok(())
        }
        Err(err) => {
            ensure!(
                views
                    .iter()
                    .any(|(key, view)| check_load(key, view, &spec, Err(err)).is_ok()),
                "loading {keys:?}: the error {err:?} is not one that any of them allows"
            );
            Ok(())
        }
    }
}

fn many_vals<M: Probe>(
    got: &Result<Vec<Option<M>>>,
) -> std::result::Result<Vec<Option<Vec<Val>>>, &Error> {
    got.as_ref().map(|objects| {
        objects
            .iter()
            .map(|o| o.as_ref().map(Probe::vals))
            .collect()
    })
}

fn present_vals<M: Probe>(
    got: &Result<Vec<M>>,
) -> std::result::Result<Vec<Option<Vec<Val>>>, &Error> {
    got.as_ref()
        .map(|objects| objects.iter().map(|o| Some(o.vals())).collect())
}

fn keys_of<M: Model>(got: &Result<Vec<ObjectRef<M>>>) -> std::result::Result<Vec<String>, &Error> {
    got.as_ref()
        .map(|refs| refs.iter().map(|r| r.key().to_string()).collect())
}

fn handle<M: Model>(key: &str) -> std::result::Result<ObjectRef<M>, String> {
    ObjectRef::<M>::parse(key).map_err(|e| format!("the universe's key {key} does not parse: {e}"))
}

/// Every per-object read of every object of model `M` in the universe,
/// the batch reads, and the scans.
async fn check_model<M: Probe>(db: &Db, world: &World) -> Check {
    let spec = M::TAG.spec();
    let keys: Vec<String> = keys_with(Role::Object(M::TAG))
        .map(str::to_string)
        .collect();
    for key in &keys {
        let h = handle::<M>(key)?;
        let view = world.view(key, M::STORAGE);
        let exists = h.exists(db).await;
        let absent = *world.shape(key) == Shape::Absent;
        ensure!(
            matches!(exists, Ok(e) if e != absent),
            "{key}: exists gave {exists:?} for {:?}",
            world.shape(key)
        );
        let ttl = h.ttl(db).await;
        ensure!(
            matches!(
                (&ttl, absent),
                (Ok(redmodel::model::Ttl::Missing), true)
                    | (Ok(redmodel::model::Ttl::Persistent), false)
            ),
            "{key}: ttl gave {ttl:?}"
        );
        check_load(key, &view, &spec, loaded(&h.load(db).await))?;
        check_text_map(
            key,
            &view,
            M::FIELDS,
            true,
            h.load_map(db).await.as_ref().map(Clone::clone),
        )?;
        for (name, got) in M::each_field(db, &h).await {
            check_fields(
                key,
                &view,
                &spec,
                &[name],
                got.as_ref().map(|v| vec![v.clone().unwrap_or(Val::Absent)]),
            )?;
        }
        for (names, got) in M::field_sets(db, &h).await {
            check_fields(key, &view, &spec, &names, got.as_ref().map(Clone::clone))?;
        }
        if M::STORAGE == Storage::Hash {
            check_hash_only(db, world, &h).await?;
        }
    }
    let handles: Vec<ObjectRef<M>> = keys
        .iter()
        .map(|k| handle::<M>(k))
        .collect::<std::result::Result<_, _>>()?;
    let mut batch = handles.clone();
    batch.extend(handles.iter().rev().cloned());
    let batch_keys: Vec<String> = batch.iter().map(|h| h.key().to_string()).collect();
    check_many::<M>(
        world,
        &batch_keys,
        many_vals(&ObjectRef::get_many(db, &batch).await),
        false,
    )?;
    let got = ObjectRef::<M>::get_many(db, &[]).await;
    ensure!(
        matches!(&got, Ok(v) if v.is_empty()),
        "get_many of nothing gave {got:?}"
    );

    let scanned = world.existing_keys(|k| M::TAG.is_key(k));
    let got = ObjectRef::<M>::scan(db).await;
    ensure!(
        keys_of(&got).as_ref().ok() == Some(&scanned),
        "scan of `{}`: expected {scanned:?}, got {:?}",
        M::TABLE,
        keys_of(&got)
    );
    check_many::<M>(
        world,
        &scanned,
        present_vals(&ObjectRef::<M>::scan_objects(db).await),
        true,
    )
}

/// The reads only hash models have: fields by name, the write count,
/// building from a map.
async fn check_hash_only<M: Probe>(db: &Db, world: &World, h: &ObjectRef<M>) -> Check {
    let key = h.key();
    let view = world.view(key, Storage::Hash);
    let mut names: Vec<&str> = M::FIELDS.to_vec();
    names.extend(["_count", "nope", ""]);
    names.extend(M::FIELDS.first());
    let got = h.get_fields_map(db, &names).await;
    check_text_map(
        key,
        &view,
        &names,
        false,
        got.as_ref().map(|m| Some(m.clone())),
    )?;

    let got = h.write_count(db).await;
    match view.raw("_count") {
        _ if matches!(view, View::WrongType(_)) => check_wrong_type(key, "hash", got.as_ref())?,
        None => ensure!(
            matches!(got, Ok(0)),
            "{key}: no `_count`, yet write_count gave {got:?}"
        ),
        Some(raw) => {
            let exp = Exp {
                field: "_count",
                raw: Some(raw),
                expect: Kind::Int(0, u64::MAX.into()).expect(raw),
            };
            check_decoded(key, &[exp], got.as_ref().map(|n| vec![n.to_val()]))?;
        }
    }

    if let View::Hash(map) = &view {
        let entries: Vec<(&str, &Vec<u8>)> = map
            .iter()
            .filter_map(|(k, v)| Some((std::str::from_utf8(k).ok()?, v)))
            .collect();
        let spec = M::TAG.spec();
        let got = h.build_from_map(entries);
        check_load(key, &view, &spec, got.as_ref().map(|m| Some(m.vals())))?;
        let values: Vec<Option<&Vec<u8>>> =
            spec.iter().map(|s| map.get(s.name.as_bytes())).collect();
        let got = h.build_from_values(values);
        check_load(key, &view, &spec, got.as_ref().map(|m| Some(m.vals())))?;
    }
    Ok(())
}

/// The wrappers of admin models: get / exists / get_many by pk, scan.
async fn check_admin<M: Probe + Admin>(db: &Db, world: &World) -> Check {
    let spec = M::TAG.spec();
    let handles: Vec<ObjectRef<M>> = keys_with(Role::Object(M::TAG))
        .map(handle::<M>)
        .collect::<std::result::Result<_, _>>()?;
    for h in &handles {
        let key = h.key();
        check_load(
            key,
            &world.view(key, Storage::Hash),
            &spec,
            loaded(&M::get(db, h.pk().clone()).await),
        )?;
        let exists = M::exists(db, h.pk().clone()).await;
        ensure!(
            matches!(exists, Ok(e) if e == (*world.shape(key) != Shape::Absent)),
            "{key}: Admin::exists gave {exists:?}"
        );
    }
    let keys: Vec<String> = handles.iter().map(|h| h.key().to_string()).collect();
    let got = M::get_many(db, handles.iter().map(|h| h.pk().clone())).await;
    check_many::<M>(world, &keys, many_vals(&got), false)?;
    let got = M::scan(db).await;
    let scanned = world.existing_keys(|k| M::TAG.is_key(k));
    ensure!(
        keys_of(&got).as_ref().ok() == Some(&scanned),
        "Admin::scan of `{}`: expected {scanned:?}, got {:?}",
        M::TABLE,
        keys_of(&got)
    );
    Ok(())
}

/// An admin's scans of its sub-objects of model `S`.
async fn check_subs<A: Admin, S: Probe + Model<Owner = A>>(
    db: &Db,
    world: &World,
    admin: &str,
) -> Check {
    let owner = handle::<A>(admin)?;
    let prefix = format!("{admin}:");
    let want = world.existing_keys(|k| S::TAG.is_key(k) && k.starts_with(&prefix));
    let got = owner.scan_subs::<S>(db).await;
    ensure!(
        keys_of(&got).as_ref().ok() == Some(&want),
        "{admin}: scan_subs of `{}`: expected {want:?}, got {:?}",
        S::TABLE,
        keys_of(&got)
    );
    let got = owner.scan_sub_keys::<S>(db).await;
    ensure!(
        got.as_ref().ok() == Some(&want),
        "{admin}: scan_sub_keys of `{}`: expected {want:?}, got {got:?}",
        S::TABLE
    );
    check_many::<S>(
        world,
        &want,
        present_vals(&owner.scan_sub_objects::<S>(db).await),
        true,
    )
}

/// LRANGE's view of a list of `len` items: the indexes it returns.
fn lrange(len: usize, start: i64, stop: i64) -> std::ops::Range<usize> {
    let len = len as i64;
    let start = if start < 0 {
        len.saturating_add(start)
    } else {
        start
    }
    .max(0);
    let stop = if stop < 0 {
        len.saturating_add(stop)
    } else {
        stop
    };
    if start > stop || start >= len {
        return 0..0;
    }
    start as usize..(stop.min(len - 1) + 1) as usize
}

/// The page's LRANGE bounds, or `None` for an empty page.
fn page_bounds(page: u64, per_page: u64) -> Option<(i64, i64)> {
    if per_page == 0 {
        return None;
    }
    let start = i64::try_from(page.checked_mul(per_page)?).ok()?;
    let stop = (start as u64).checked_add(per_page - 1)?;
    Some((start, i64::try_from(stop).unwrap_or(i64::MAX)))
}

/// Member keys read from the list at `list_key`: each must be a key of
/// `tag`; the first that is not must be an InvalidKey error naming it and
/// the list.
fn check_members(
    list_key: &str,
    tag: Tag,
    items: Option<&[&[u8]]>,
    got: std::result::Result<Vec<String>, &Error>,
) -> Check {
    let Some(items) = items else {
        return check_wrong_type(list_key, "list", got);
    };
    let first_bad = items
        .iter()
        .find(|item| !std::str::from_utf8(item).is_ok_and(|k| tag.is_key(k)));
    match (first_bad, &got) {
        (None, Ok(keys)) => {
            let want: Vec<String> = items
                .iter()
                .map(|i| String::from_utf8_lossy(i).into_owned())
                .collect();
            ensure!(
                *keys == want,
                "{list_key}: expected members {want:?}, got {keys:?}"
            );
            Ok(())
        }
        (Some(bad), Err(Error::InvalidKey { key, model, reason }))
            if *key == String::from_utf8_lossy(bad)
                && *model == tag.table()
                && reason.contains(list_key) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "{list_key}: members {}: expected {}, got {got:?}",
            items.iter().map(|i| show(i)).collect::<Vec<_>>().join(", "),
            match first_bad {
                Some(bad) => format!("InvalidKey naming {} and the list", show(bad)),
                None => "them all".to_string(),
            }
        )),
    }
}

/// Member objects loaded from a list: the member keys must be good, and
/// then the objects load as [`check_many`] says, absent ones left out.
fn check_member_objects<M: Probe>(
    world: &World,
    list_key: &str,
    items: Option<&[&[u8]]>,
    got: &Result<Vec<M>>,
) -> Check {
    let Some(items) = items else {
        return check_wrong_type(list_key, "list", got.as_ref().map(|v| v.len()));
    };
    let keys: Option<Vec<String>> = items
        .iter()
        .map(|i| {
            std::str::from_utf8(i)
                .ok()
                .filter(|k| M::TAG.is_key(k))
                .map(str::to_string)
        })
        .collect();
    match keys {
        Some(keys) => check_many::<M>(world, &keys, present_vals(got), true),
        None => check_members(
            list_key,
            M::TAG,
            Some(items),
            got.as_ref().map(|v| vec![format!("{} objects", v.len())]),
        ),
    }
}

/// Every read of the list of `M` keys at `key`.
async fn check_list<M: Probe>(db: &Db, world: &World, key: &str, case: &Case) -> Check {
    let list = MemberList::<M>::at(key);
    let items = world.list(key);
    let items = items.as_deref();
    let got = list.count(db).await;
    match items {
        Some(items) => ensure!(
            matches!(got, Ok(n) if n == items.len() as u64),
            "{key}: count gave {got:?} for {} items",
            items.len()
        ),
        None => check_wrong_type(key, "list", got.as_ref())?,
    }
    check_members(key, M::TAG, items, keys_of(&list.members(db).await))?;
    check_member_objects(world, key, items, &list.load_all(db).await)?;
    restore_list(db, key, items).await?;
    for &(start, stop) in &case.ranges {
        let part = items.map(|items| {
            items
                .get(lrange(items.len(), start, stop))
                .unwrap_or_default()
        });
        check_members(
            key,
            M::TAG,
            part,
            keys_of(&list.range(db, start, stop).await),
        )?;
        check_member_objects(world, key, part, &list.load(db, start, stop).await)?;
        restore_list(db, key, items).await?;
    }
    for &(page, per_page) in &case.pages {
        let part = items.map(|items| match page_bounds(page, per_page) {
            Some((start, stop)) => items
                .get(lrange(items.len(), start, stop))
                .unwrap_or_default(),
            None => &[],
        });
        let got = list.page(db, page, per_page).await;
        // An empty page is answered without asking Redis.
        if page_bounds(page, per_page).is_none() {
            ensure!(
                matches!(&got, Ok(v) if v.is_empty()),
                "{key}: empty page gave {got:?}"
            );
        } else {
            check_members(key, M::TAG, part, keys_of(&got))?;
            check_member_objects(world, key, part, &list.load_page(db, page, per_page).await)?;
            restore_list(db, key, items).await?;
        }
    }
    for &index in &case.indexes {
        let part = items.map(|items| {
            let len = items.len() as i64;
            let i = if index < 0 {
                len.saturating_add(index)
            } else {
                index
            };
            usize::try_from(i)
                .ok()
                .and_then(|i| items.get(i..i + 1))
                .unwrap_or_default()
        });
        let got = list.index(db, index).await;
        check_members(
            key,
            M::TAG,
            part,
            got.as_ref()
                .map(|o| o.iter().map(|h| h.key().to_string()).collect()),
        )?;
    }
    Ok(())
}

/// The reads a relation handle adds to its list's.
async fn check_relation<R: Relation>(db: &Db, world: &World, key: &str) -> Check
where
    R::Member: Probe,
{
    let rel = RelationRef::<R>::parse(key)
        .map_err(|e| format!("{key} does not parse as a relation: {e}"))?;
    ensure!(rel.key() == key, "{key} parsed as {}", rel.key());
    let items = world.list(key);
    check_members(
        key,
        <R::Member as Probe>::TAG,
        items.as_deref(),
        keys_of(&rel.members(db).await),
    )?;
    check_member_objects(world, key, items.as_deref(), &rel.load_members(db).await)?;
    restore_list(db, key, items.as_deref()).await
}

/// Loading members prunes the entries of objects that are gone (issue 5:
/// reads leave no trace of deleted objects), so after a load the list is
/// put back as the world wrote it: every check reads the same world.
async fn restore_list(db: &Db, key: &str, items: Option<&[&[u8]]>) -> Check {
    let Some(items) = items else {
        return Ok(());
    };
    let mut pipe = redis::pipe();
    pipe.atomic().cmd("DEL").arg(key).ignore();
    if !items.is_empty() {
        pipe.cmd("RPUSH").arg(key).arg(items).ignore();
    }
    db.query_pipeline::<()>(&pipe)
        .await
        .map_err(|e| format!("{key}: could not restore the list: {e}"))
}

/// `get_or`: the default when the field or the object is absent, else as
/// `get`.
async fn check_get_or<M: Probe, T: ToVal + Clone, C: Codec<T>>(
    db: &Db,
    world: &World,
    key: &str,
    field: Field<M, T, C>,
    default: T,
) -> Check {
    let got = handle::<M>(key)?.get_or(db, field, default.clone()).await;
    let got = got.as_ref().map(|v| vec![v.to_val()]);
    let view = world.view(key, Storage::Hash);
    match view.raw(field.name()) {
        None if !matches!(view, View::WrongType(_)) => ensure!(
            matches!(&got, Ok(v) if *v == vec![default.to_val()]),
            "{key} `{}` is absent: get_or gave {got:?}, expected the default",
            field.name()
        ),
        _ => check_fields(key, &view, &M::TAG.spec(), &[field.name()], got)?,
    }
    Ok(())
}

/// Following reference fields: the referenced object loads as its key's
/// content says.
async fn check_references(db: &Db, world: &World) -> Check {
    let class_spec = Tag::Class.spec();
    let teacher_spec = Tag::Teacher.spec();
    for key in keys_with(Role::Object(Tag::Student)) {
        let h = handle::<Student>(key)?;
        if let Ok(Some(class)) = h.get(db, Student::CLASS).await {
            let ck = class.key();
            check_load(
                ck,
                &world.view(ck, Storage::Hash),
                &class_spec,
                loaded(&class.load(db).await),
            )?;
        }
        if let Ok(Some(student)) = h.load(db).await {
            let ck = student.class.key();
            check_load(
                ck,
                &world.view(ck, Storage::Hash),
                &class_spec,
                loaded(&student.class.load(db).await),
            )?;
        }
    }
    for key in keys_with(Role::Object(Tag::Gauge)) {
        let h = handle::<Gauge>(key)?;
        if let Ok(Some(Some(owner))) = h.get(db, Gauge::OWNER).await {
            let tk = owner.key();
            check_load(
                tk,
                &world.view(tk, Storage::Hash),
                &teacher_spec,
                loaded(&owner.load(db).await),
            )?;
        }
    }
    Ok(())
}

const INT_INCRS: usize = 8;
const FLOAT_INCRS: usize = 3;

/// HINCRBY on a field whose stored text may be anything: Redis's own
/// integer rules, then the field's range.
async fn check_incr_int<M: Model, T>(
    db: &Db,
    world: &World,
    key: &str,
    field: Field<M, T, Plain>,
    by: i64,
    (lo, hi): (i128, i128),
) -> Check
where
    T: Incr<By = i64>,
    T::Output: ToVal + fmt::Debug,
{
    let h = handle::<M>(key)?;
    let name = field.name();
    let got = h.incr(db, field, by).await;
    let raw = match world.view(key, Storage::Hash) {
        View::WrongType(expected) => return check_wrong_type(key, expected, got.as_ref()),
        view => view.raw(name).map(<[u8]>::to_vec),
    };
    let old = raw.as_deref().map_or(Some(0), redis_int);
    let context = format!(
        "{key} `{name}` holding {} incremented by {by}",
        raw.as_deref().map_or("nothing".into(), show)
    );
    let is_decode = |got: &Result<T::Output>| matches!(got, Err(Error::Decode { key: k, field: f, .. }) if k == key && f == name);
    match old.map(|old| old.checked_add(by)) {
        None => ensure!(
            is_decode(&got),
            "{context}: expected a decode error naming the field, got {got:?}"
        ),
        Some(None) => ensure!(
            matches!(&got, Err(Error::Server(e)) if e.to_string().contains("overflow")),
            "{context}: expected Redis's overflow error, got {got:?}"
        ),
        Some(Some(new)) if (lo..=hi).contains(&i128::from(new)) => {
            ensure!(
                matches!(&got, Ok(v) if v.to_val() == Val::Int(new.into())),
                "{context}: expected Ok({new}), got {got:?}"
            );
            let stored: Option<String> = db
                .query(redis::cmd("HGET").arg(key).arg(name))
                .await
                .map_err(|e| format!("{context}: HGET: {e}"))?;
            ensure!(
                stored == Some(new.to_string()),
                "{context}: stored {stored:?}"
            );
        }
        Some(Some(new)) => ensure!(
            is_decode(&got),
            "{context}: {new} is out of the field's range: expected a decode error, got {got:?}"
        ),
    }
    Ok(())
}

/// HINCRBYFLOAT: Redis's long doubles may accept texts (hex, `1e999`) and
/// give results that the field's type cannot hold; those must be decode
/// errors, never infinity. Plain starting values must just work.
async fn check_incr_float<M: Model, T>(
    db: &Db,
    world: &World,
    key: &str,
    field: Field<M, T, Plain>,
    by: f64,
    width: Width,
) -> Check
where
    T: Incr<By = f64>,
    T::Output: ToVal + fmt::Debug,
{
    let h = handle::<M>(key)?;
    let name = field.name();
    let got = h.incr(db, field, by).await;
    let raw = match world.view(key, Storage::Hash) {
        View::WrongType(expected) => return check_wrong_type(key, expected, got.as_ref()),
        view => view.raw(name).map(<[u8]>::to_vec),
    };
    let context = format!(
        "{key} `{name}` holding {} incremented by {by}",
        raw.as_deref().map_or("nothing".into(), show)
    );
    // A plain start: absent, or the codec's own text of a modest number.
    let plain = match raw.as_deref() {
        None => Some(0.0),
        Some(raw) => match expect_float(std::str::from_utf8(raw).unwrap_or("x"), width) {
            Expect::Must(Val::Float(x)) if x.abs() < 1e30 => Some(x),
            _ => None,
        },
    };
    let must_work = plain.map(|x| x + by).filter(|sum| sum.abs() < 1e30);
    match &got {
        Ok(value) => {
            let Val::Float(v) = value.to_val() else {
                return Err(format!("{context}: not a float: {value:?}"));
            };
            ensure!(
                v.is_finite(),
                "{context}: Redis stores finite numbers only, yet incr gave {v}"
            );
            let stored: Option<Vec<u8>> = db
                .query(redis::cmd("HGET").arg(key).arg(name))
                .await
                .map_err(|e| format!("{context}: HGET: {e}"))?;
            let reread = stored.as_deref().map(|s| Kind::Float(width).expect(s));
            ensure!(
                matches!(&reread, Some(Expect::Must(r) | Expect::Either(r)) if *r == Val::Float(v)),
                "{context}: incr gave {v}, but the field now holds {:?}",
                stored.as_deref().map(show)
            );
            if let Some(sum) = must_work {
                let want = match width {
                    Width::F32 => f64::from(sum as f32),
                    Width::F64 => sum,
                };
                let tolerance = match width {
                    Width::F32 => 1e-6,
                    Width::F64 => 1e-12,
                } * want.abs().max(1.0);
                let close = (v - want).abs() <= tolerance;
                ensure!(close, "{context}: expected about {want}, got {v}");
            }
        }
        Err(Error::Decode {
            key: k, field: f, ..
        }) if k == key && f == name => {
            ensure!(
                must_work.is_none(),
                "{context}: a plain increment failed: {got:?}"
            )
        }
        Err(Error::Server(e)) if e.to_string().contains("NaN or Infinity") => {
            ensure!(
                must_work.is_none(),
                "{context}: a plain increment failed: {got:?}"
            )
        }
        Err(_) => {
            return Err(format!(
                "{context}: expected a value or a decode error, got {got:?}"
            ))
        }
    }
    Ok(())
}

/// Increments of corrupted fields, last (they write).
async fn check_increments(db: &Db, world: &World, case: &Case) -> Check {
    let by = |i: usize| case.int_by.get(i).copied().unwrap_or(1);
    let fby = |i: usize| case.float_by.get(i).copied().unwrap_or(1.5);
    let u8s = (0, i128::from(u8::MAX));
    let i64s = (i128::from(i64::MIN), i128::from(i64::MAX));
    check_incr_int(
        db,
        world,
        "gauge:1",
        Gauge::TINY,
        by(0),
        (i8::MIN.into(), i8::MAX.into()),
    )
    .await?;
    check_incr_int(db, world, "gauge:1", Gauge::BYTE, by(1), u8s).await?;
    check_incr_int(db, world, "gauge:1", Gauge::LARGE, by(2), i64s).await?;
    check_incr_int(
        db,
        world,
        "gauge:1",
        Gauge::BIG,
        by(3),
        (0, u64::MAX.into()),
    )
    .await?;
    check_incr_int(db, world, "gauge:-5", Gauge::DELTA, by(4), i64s).await?;
    check_incr_int(db, world, "profile:p", Profile::AGE, by(5), u8s).await?;
    check_incr_int(db, world, "student:a", Student::MATH, by(6), i64s).await?;
    check_incr_int(db, world, "student:a:exam:2024", Exam::MATH, by(7), i64s).await?;
    check_incr_float(db, world, "gauge:1", Gauge::RATIO, fby(0), Width::F32).await?;
    check_incr_float(db, world, "gauge:-5", Gauge::AMOUNT, fby(1), Width::F64).await?;
    check_incr_float(db, world, "profile:p", Profile::SCORE, fby(2), Width::F64).await
}

/// One world: write it, then every read.
async fn run_case(db: &Db, case: &Case) -> Check {
    let world = World::new(case);
    world
        .write(db)
        .await
        .map_err(|e| format!("writing the world: {e}"))?;

    check_model::<Teacher>(db, &world).await?;
    check_model::<Class>(db, &world).await?;
    check_model::<Student>(db, &world).await?;
    check_model::<Exam>(db, &world).await?;
    check_model::<Note>(db, &world).await?;
    check_model::<Profile>(db, &world).await?;
    check_model::<Gauge>(db, &world).await?;
    check_model::<Level>(db, &world).await?;
    check_model::<Reading>(db, &world).await?;

    check_admin::<Teacher>(db, &world).await?;
    check_admin::<Student>(db, &world).await?;
    check_admin::<Gauge>(db, &world).await?;
    check_admin::<Class>(db, &world).await?;
    check_admin::<Profile>(db, &world).await?;
    check_get_or(db, &world, "profile:p", Profile::AGE, 7).await?;
    check_get_or(db, &world, "profile:q", Profile::TAGS, vec!["t".into()]).await?;
    check_get_or(db, &world, "teacher:A", Teacher::NAME, "nobody".into()).await?;

    check_subs::<Student, Exam>(db, &world, "student:a").await?;
    check_subs::<Student, Exam>(db, &world, "student:").await?;
    check_subs::<Student, Note>(db, &world, "student:a").await?;
    check_subs::<Gauge, Level>(db, &world, "gauge:1").await?;
    check_subs::<Gauge, Reading>(db, &world, "gauge:-5").await?;

    for entry in UNIVERSE {
        let (Role::List(member), Ok(key)) = (entry.role, std::str::from_utf8(entry.key)) else {
            continue;
        };
        match member {
            Tag::Class => check_list::<Class>(db, &world, key, case).await?,
            Tag::Teacher => check_list::<Teacher>(db, &world, key, case).await?,
            Tag::Student => check_list::<Student>(db, &world, key, case).await?,
            other => return Err(format!("no list of {other:?} expected")),
        }
    }
    check_relation::<TeacherClasses>(db, &world, "teacher:A:class").await?;
    check_relation::<TeacherClasses>(db, &world, "teacher:%3A:class").await?;
    check_relation::<ClassTeachers>(db, &world, "class:1:teacher").await?;
    check_relation::<ClassStudents>(db, &world, "class:1:student").await?;
    check_relation::<ClassStudents>(db, &world, "class:2:student").await?;

    check_references(db, &world).await?;

    let size = redmodel::model::dbsize(db).await;
    let want = world.keys.values().filter(|s| **s != Shape::Absent).count() as u64;
    ensure!(
        matches!(size, Ok(n) if n == want),
        "dbsize gave {size:?}, expected {want}"
    );

    check_increments(db, &world, case).await
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Runs random worlds on one backend, shrinking a failing one.
fn hostile_worlds(backend: Backend) {
    let name = format!("model_bad_input::hostile_worlds_{}", backend.name());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let Some(ctx) = runtime.block_on(make_ctx(backend, Scope::Exclusive, &name)) else {
        return;
    };
    let cases = env_number("REDMODEL_BAD_INPUT_CASES", 24) as u32;
    let seed = std::env::var("REDMODEL_BAD_INPUT_SEED")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("{name}: {cases} worlds; REDMODEL_BAD_INPUT_SEED={seed}");
    let mut seed_bytes = [0u8; 32];
    for (i, chunk) in seed_bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes(),
        );
    }
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 1000,
        // Each step replays a whole world: bound the time, not only the steps.
        max_shrink_time: 60_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let result = runner.run(&case(), |case| {
        runtime
            .block_on(run_case(&ctx.db, &case))
            .map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => eprintln!("{name}: {cases} worlds read back as the oracle says"),
        Err(TestError::Fail(reason, case)) => panic!(
            "{name} (REDMODEL_BAD_INPUT_SEED={seed}): {reason}\nsmallest failing world:\n{case:?}"
        ),
        Err(e) => panic!("{name} (REDMODEL_BAD_INPUT_SEED={seed}): {e}"),
    }
}

#[test]
fn hostile_worlds_memory() {
    hostile_worlds(Backend::Memory);
}

#[test]
fn hostile_worlds_redis() {
    hostile_worlds(Backend::Redis);
}

// ---------------------------------------------------------------------------
// The oracle itself, and the key parsers against it.

/// The oracle's field lists are the models' (names and order).
#[test]
fn the_oracle_knows_the_models_fields() {
    let names = |tag: Tag| tag.spec().iter().map(|s| s.name).collect::<Vec<_>>();
    assert_eq!(names(Tag::Teacher), Teacher::FIELDS);
    assert_eq!(names(Tag::Class), Class::FIELDS);
    assert_eq!(names(Tag::Student), Student::FIELDS);
    assert_eq!(names(Tag::Exam), Exam::FIELDS);
    assert_eq!(names(Tag::Note), Note::FIELDS);
    assert_eq!(names(Tag::Profile), Profile::FIELDS);
    assert_eq!(names(Tag::Gauge), Gauge::FIELDS);
    assert_eq!(names(Tag::Level), Level::FIELDS);
    assert_eq!(names(Tag::Reading), Reading::FIELDS);
    for tag in TAGS {
        assert_eq!(
            is_single(tag),
            matches!(tag, Tag::Note | Tag::Level | Tag::Reading)
        );
    }
    assert_eq!(Note::STORAGE, Storage::Single);
    assert_eq!(Level::STORAGE, Storage::Single);
    assert_eq!(Reading::STORAGE, Storage::Single);
}

/// The oracle's verdicts on a few texts, written out by hand.
#[test]
fn the_oracle_reads_text_as_documented() {
    let u8s = Kind::Int(0, 255);
    let i64s = Kind::Int(i64::MIN.into(), i64::MAX.into());
    assert!(matches!(u8s.expect(b"300"), Expect::Invalid(_)));
    assert!(matches!(u8s.expect(b"255"), Expect::Must(Val::Int(255))));
    assert!(matches!(u8s.expect(b"-0"), Expect::Either(Val::Int(0))));
    assert!(matches!(i64s.expect(b"1.5"), Expect::Invalid(_)));
    assert!(matches!(
        i64s.expect(b"9223372036854775808"),
        Expect::Invalid(_)
    ));
    assert!(matches!(i64s.expect(b"+7"), Expect::Either(Val::Int(7))));
    let f64s = Kind::Float(Width::F64);
    assert!(matches!(f64s.expect(b"1e999"), Expect::Invalid(_)));
    assert!(matches!(f64s.expect(b"inf"), Expect::Must(Val::Float(v)) if v == f64::INFINITY));
    assert!(matches!(f64s.expect(b"-0"), Expect::Must(Val::Float(v)) if v.is_sign_negative()));
    assert!(matches!(f64s.expect(b"NaN"), Expect::Must(Val::Float(v)) if v.is_nan()));
    assert!(matches!(f64s.expect(b"0x10"), Expect::Invalid(_)));
    assert!(matches!(f64s.expect(b"1e3"), Expect::Either(Val::Float(v)) if v == 1000.0));
    assert!(matches!(
        Kind::Float(Width::F32).expect(b"1e39"),
        Expect::Invalid(_)
    ));
    assert!(matches!(Kind::Bool.expect(b"yes"), Expect::Invalid(_)));
    assert!(matches!(Kind::Text.expect(b"\xff"), Expect::Invalid(_)));
    assert!(matches!(
        Kind::Key(Tag::Class).expect(b"class:01"),
        Expect::Invalid(_)
    ));
    assert!(matches!(
        Kind::Key(Tag::Class).expect(b"teacher:A"),
        Expect::Invalid(_)
    ));
    assert_eq!(redis_int(b"-9223372036854775808"), Some(i64::MIN));
    assert_eq!(redis_int(b"9223372036854775808"), None);
    assert_eq!(redis_int(b"+1"), None);
    assert_eq!(redis_int(b"-0"), None);
    assert_eq!(redis_int(b"007"), None);
    assert_eq!(lrange(3, 0, -1), 0..3);
    assert_eq!(lrange(3, -100, 100), 0..3);
    assert_eq!(lrange(3, i64::MIN, i64::MAX), 0..3);
    assert_eq!(lrange(3, 2, 1), 0..0);
    assert_eq!(lrange(3, 5, 9), 0..0);
    assert_eq!(page_bounds(u64::MAX, 2), None);
}

/// Every key of the universe has the role the oracle gives it, and the
/// parsers agree.
#[test]
fn the_universe_is_labelled_right() {
    for entry in UNIVERSE {
        let Ok(text) = std::str::from_utf8(entry.key) else {
            assert_eq!(entry.role, Role::Junk, "{}", show(entry.key));
            continue;
        };
        let models: Vec<Tag> = TAGS.iter().copied().filter(|t| t.is_key(text)).collect();
        let parsers: Vec<Tag> = TAGS.iter().copied().filter(|t| parses(*t, text)).collect();
        assert_eq!(
            models, parsers,
            "{text}: the oracle and the parsers disagree"
        );
        match entry.role {
            Role::Object(tag) => assert_eq!(models, vec![tag], "{text}"),
            Role::List(_) | Role::Junk => {
                assert!(models.is_empty(), "{text} is a key of {models:?}")
            }
        }
    }
    for key in ["teacher:A:class", "teacher:%3A:class"] {
        assert!(is_relation_key(Tag::Teacher, "class", key));
        assert!(RelationRef::<TeacherClasses>::parse(key).is_ok());
    }
    assert!(!is_relation_key(Tag::Teacher, "class", "teacher:_x:class"));
}

fn parses(tag: Tag, text: &str) -> bool {
    match tag {
        Tag::Teacher => ObjectRef::<Teacher>::parse(text).is_ok(),
        Tag::Class => ObjectRef::<Class>::parse(text).is_ok(),
        Tag::Student => ObjectRef::<Student>::parse(text).is_ok(),
        Tag::Exam => ObjectRef::<Exam>::parse(text).is_ok(),
        Tag::Note => ObjectRef::<Note>::parse(text).is_ok(),
        Tag::Profile => ObjectRef::<Profile>::parse(text).is_ok(),
        Tag::Gauge => ObjectRef::<Gauge>::parse(text).is_ok(),
        Tag::Level => ObjectRef::<Level>::parse(text).is_ok(),
        Tag::Reading => ObjectRef::<Reading>::parse(text).is_ok(),
    }
}

/// Pieces that random keys are made of: tables, separators, escapes good
/// and bad, canonical and non-canonical numbers.
const KEY_PIECES: &[&str] = &[
    "teacher",
    "class",
    "student",
    "exam",
    "note",
    "profile",
    "gauge",
    "level",
    "reading",
    ":",
    ":",
    ":",
    "A",
    "a",
    "x",
    "1",
    "0",
    "-",
    "-0",
    "-5",
    "01",
    "2024",
    "+1",
    "%",
    "%3A",
    "%3a",
    "%5F",
    "_",
    "%41",
    "%C3",
    "%A9",
    "%C3%A9",
    "%FF",
    "%2",
    "%ZZ",
    "é",
    "*",
    "{",
    "}",
    " ",
    "@",
    ".",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
];

fn key_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => vec(select(KEY_PIECES), 0..8).prop_map(|pieces| pieces.concat()),
        1 => any::<String>(),
        1 => select(UNIVERSE.iter().filter_map(|e| std::str::from_utf8(e.key).ok()).collect::<Vec<_>>())
            .prop_map(str::to_string),
    ]
}

/// `ObjectRef::<M>::parse` of `text`: succeeds exactly on the keys of
/// `tag`, gives back the text as the key, re-encodes to it, and otherwise
/// is an InvalidKey naming the text and the model.
fn parse_agrees<M: Model>(tag: Tag, text: &str) -> std::result::Result<(), TestCaseError> {
    match ObjectRef::<M>::parse(text) {
        Ok(h) => {
            prop_assert!(tag.is_key(text), "{text} parsed as a key of `{}`", M::TABLE);
            prop_assert_eq!(h.key(), text);
            let again = ObjectRef::<M>::new(h.owner().clone(), h.pk().clone());
            prop_assert_eq!(again.key(), text, "re-encoding the parsed pk");
            prop_assert_eq!(again, h);
        }
        Err(Error::InvalidKey { key, model, reason }) => {
            prop_assert!(
                !tag.is_key(text),
                "{text} refused as a key of `{}`: {reason}",
                M::TABLE
            );
            prop_assert_eq!(key, text);
            prop_assert_eq!(model, M::TABLE);
            prop_assert!(!reason.is_empty());
        }
        Err(other) => prop_assert!(false, "{text}: {other:?}"),
    }
    Ok(())
}

/// A reference field's text, through the codec: the same verdict.
fn reference_agrees<M: Model>(tag: Tag, raw: &[u8]) -> std::result::Result<(), TestCaseError> {
    let oracle = std::str::from_utf8(raw).is_ok_and(|t| tag.is_key(t));
    match <Ref<M> as Scalar>::from_text(raw) {
        Ok(r) => {
            prop_assert!(
                oracle,
                "{} decoded as a reference to `{}`",
                show(raw),
                M::TABLE
            );
            prop_assert_eq!(r.key().as_bytes(), raw);
        }
        Err(reason) => {
            prop_assert!(!oracle, "{} refused as a reference: {reason}", show(raw));
            prop_assert!(!reason.is_empty());
        }
    }
    Ok(())
}

fn relation_agrees<R: Relation>(owner: Tag, text: &str) -> std::result::Result<(), TestCaseError> {
    let oracle = is_relation_key(owner, R::TABLE, text);
    match RelationRef::<R>::parse(text) {
        Ok(rel) => {
            prop_assert!(oracle, "{text} parsed as a relation `{}`", R::TABLE);
            prop_assert_eq!(rel.key(), text);
            let again = RelationRef::<R>::new(rel.owner().clone());
            prop_assert_eq!(again.key(), text);
        }
        Err(Error::InvalidKey { key, .. }) => {
            prop_assert!(!oracle, "{text} refused as a relation `{}`", R::TABLE);
            prop_assert_eq!(key, text);
        }
        Err(other) => prop_assert!(false, "{text}: {other:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        env_number("REDMODEL_BAD_INPUT_CASES", 24).saturating_mul(64).min(u64::from(u32::MAX)) as u32
    ))]

    /// Parsing any text as any model's key never panics and agrees with
    /// the layout; a success re-encodes to the same key.
    #[test]
    fn parsing_any_text_agrees_with_the_layout(text in key_text()) {
        parse_agrees::<Teacher>(Tag::Teacher, &text)?;
        parse_agrees::<Class>(Tag::Class, &text)?;
        parse_agrees::<Student>(Tag::Student, &text)?;
        parse_agrees::<Exam>(Tag::Exam, &text)?;
        parse_agrees::<Note>(Tag::Note, &text)?;
        parse_agrees::<Profile>(Tag::Profile, &text)?;
        parse_agrees::<Gauge>(Tag::Gauge, &text)?;
        parse_agrees::<Level>(Tag::Level, &text)?;
        parse_agrees::<Reading>(Tag::Reading, &text)?;
        relation_agrees::<TeacherClasses>(Tag::Teacher, &text)?;
        relation_agrees::<ClassTeachers>(Tag::Class, &text)?;
        relation_agrees::<ClassStudents>(Tag::Class, &text)?;
    }

    /// Reference fields holding any bytes decode exactly when they hold
    /// a key of the referenced model.
    #[test]
    fn reference_fields_of_any_bytes(raw in prop_oneof![
        key_text().prop_map(String::into_bytes),
        atom(),
    ]) {
        reference_agrees::<Class>(Tag::Class, &raw)?;
        reference_agrees::<Teacher>(Tag::Teacher, &raw)?;
        reference_agrees::<Exam>(Tag::Exam, &raw)?;
    }
}

// ---------------------------------------------------------------------------
// Regressions: the bad inputs that once loaded wrongly or named no key.

/// Raw HSET of `pairs` at `key`.
async fn hset(db: &Db, key: &str, pairs: &[(&str, &str)]) -> Result<()> {
    let mut cmd = redis::cmd("HSET");
    cmd.arg(key);
    for (field, value) in pairs {
        cmd.arg(*field).arg(*value);
    }
    db.query(&cmd).await
}

fn assert_decode_error<T: fmt::Debug>(got: Result<T>, key: &str, field: &str) {
    match got {
        Err(Error::Decode {
            key: k, field: f, ..
        }) if k == key && f == field => {}
        other => panic!("expected a decode error for {key} `{field}`, got {other:?}"),
    }
}

/// A whole gauge whose fields all load, but for `ratio`.
fn gauge_fields(ratio: &str) -> Vec<(&str, &str)> {
    let mut fields: Vec<(&str, &str)> = [
        "tiny", "small", "medium", "large", "byte", "word", "dword", "big", "size",
    ]
    .iter()
    .map(|f| (*f, "1"))
    .collect();
    fields.extend([("ratio", ratio), ("history", "[]")]);
    fields
}

backend_tests! {
    /// `300` in a `u8` and `1.5` in an `i64` are decode errors naming the
    /// key and field, on every read path.
    exclusive async fn out_of_range_integers_never_load(ctx) {
        let db = &ctx.db;
        hset(db, "profile:p", &[
            ("age", "300"), ("score", "1"), ("active", "true"), ("mail", "m"),
            ("tags", "[]"), ("extra", "{}"),
        ]).await?;
        hset(db, "student:a", &[("class", "class:1"), ("chinese", "1.5"), ("english", "1"), ("math", "1")]).await?;
        assert_decode_error(Profile::at("p").load(db).await, "profile:p", "age");
        assert_decode_error(Profile::at("p").get(db, Profile::AGE).await, "profile:p", "age");
        assert_decode_error(Profile::get_many(db, ["p"]).await, "profile:p", "age");
        assert_decode_error(Student::at("a").load(db).await, "student:a", "chinese");
        assert_decode_error(Student::at("a").get(db, Student::CHINESE).await, "student:a", "chinese");
        Ok::<(), Error>(())
    }

    /// A finite number beyond a float type's range (`1e999` for an `f64`,
    /// `1e39` for an `f32`) is a decode error, not infinity; the words
    /// `inf` and `-inf` still load as infinities.
    exclusive async fn floats_beyond_range_never_load_as_infinity(ctx) {
        let db = &ctx.db;
        hset(db, "gauge:1", &gauge_fields("1e39")).await?;
        assert_decode_error(Gauge::at(1).load(db).await, "gauge:1", "ratio");
        hset(db, "gauge:1", &[("ratio", "-inf"), ("amount", "1e999")]).await?;
        assert_decode_error(Gauge::at(1).get(db, Gauge::AMOUNT).await, "gauge:1", "amount");
        hset(db, "gauge:1", &[("amount", "inf")]).await?;
        let gauge = Gauge::at(1).load(db).await?.expect("the gauge");
        assert_eq!(gauge.ratio, f32::NEG_INFINITY);
        assert_eq!(gauge.amount, Some(f64::INFINITY));
        Ok::<(), Error>(())
    }

    /// HINCRBYFLOAT computes in long doubles: a result beyond the field's
    /// type is a decode error, not infinity.
    exclusive async fn incr_beyond_a_float_range_is_a_decode_error(ctx) {
        let db = &ctx.db;
        hset(db, "gauge:1", &[("ratio", "3e38")]).await?;
        assert_decode_error(Gauge::at(1).incr(db, Gauge::RATIO, 1e38).await, "gauge:1", "ratio");
        hset(db, "gauge:1", &[("amount", "1e999")]).await?;
        assert_decode_error(Gauge::at(1).incr(db, Gauge::AMOUNT, 0.0).await, "gauge:1", "amount");
        Ok::<(), Error>(())
    }

    /// HINCRBY / HINCRBYFLOAT on a field holding text is a decode error
    /// naming the key and field.
    exclusive async fn incr_of_a_non_number_names_key_and_field(ctx) {
        let db = &ctx.db;
        hset(db, "student:a", &[("math", "fifty")]).await?;
        assert_decode_error(Student::at("a").incr(db, Student::MATH, 1).await, "student:a", "math");
        hset(db, "profile:p", &[("score", "high")]).await?;
        assert_decode_error(Profile::at("p").incr(db, Profile::SCORE, 1.0).await, "profile:p", "score");
        // Overflow stays Redis's own refusal.
        hset(db, "student:a", &[("math", "9223372036854775807")]).await?;
        let got = Student::at("a").incr(db, Student::MATH, 1).await;
        assert!(matches!(&got, Err(Error::Server(e)) if e.to_string().contains("overflow")), "{got:?}");
        Ok::<(), Error>(())
    }

    /// A list member that is not UTF-8 is an InvalidKey naming the list,
    /// not an unexpected reply.
    exclusive async fn non_utf8_list_members_name_the_list(ctx) {
        let db = &ctx.db;
        db.query::<()>(redis::cmd("RPUSH").arg("teacher:A:class").arg("class:1").arg(&b"class:\xff"[..])).await?;
        let rel = Teacher::at("A").relation::<TeacherClasses>();
        for got in [rel.members(db).await, rel.range(db, 1, 1).await] {
            match got {
                Err(Error::InvalidKey { model: "class", reason, .. }) if reason.contains("teacher:A:class") => {}
                other => panic!("expected InvalidKey naming the list, got {other:?}"),
            }
        }
        assert!(matches!(rel.index(db, 1).await, Err(Error::InvalidKey { .. })));
        assert_eq!(rel.index(db, 0).await?, Some(Class::at(1)));
        assert!(matches!(rel.load_members(db).await, Err(Error::InvalidKey { .. })));
        Ok::<(), Error>(())
    }
}
