//! The oracle of keys: docs/models.md's layout, written out again.

#[allow(unused_imports)]
use super::*;

/// The models, as the oracle knows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tag {
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

pub(crate) const TAGS: [Tag; 9] = [
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
pub(crate) enum PkKind {
    Text,
    U32,
    U64,
    I64,
}

impl Tag {
    pub(crate) fn table(self) -> &'static str {
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

    pub(crate) fn owner(self) -> Option<Tag> {
        match self {
            Tag::Exam | Tag::Note => Some(Tag::Student),
            Tag::Level | Tag::Reading => Some(Tag::Gauge),
            _ => None,
        }
    }

    pub(crate) fn pk(self) -> PkKind {
        match self {
            Tag::Class | Tag::Exam => PkKind::U32,
            Tag::Gauge => PkKind::I64,
            Tag::Reading => PkKind::U64,
            _ => PkKind::Text,
        }
    }

    /// Whether `text` is a key of this model in canonical form: `TABLE:PK`,
    /// or `OWNER_KEY:TABLE:PK` for a sub-object, each pk one segment.
    pub(crate) fn is_key(self, text: &str) -> bool {
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
    pub(crate) fn spec(self) -> Vec<FieldSpec> {
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
pub(crate) fn is_relation_key(owner: Tag, table: &str, text: &str) -> bool {
    match text.rsplit_once(':') {
        Some((owner_key, last)) => last == table && owner.is_key(owner_key),
        None => false,
    }
}

/// Bytes a key segment shows as themselves: ASCII letters, digits, `-`,
/// `.`, `@`, `_`, except a `_` that would start the pk.
pub(crate) fn shows_raw(byte: u8, position: usize) -> bool {
    (byte.is_ascii_alphanumeric() || b"-.@_".contains(&byte)) && !(position == 0 && byte == b'_')
}

/// The pk text of a segment in canonical form (every other byte written
/// `%XX`, uppercase hex, and nothing escaped that shows raw), or `None`.
pub(crate) fn unescape(segment: &str) -> Option<String> {
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

pub(crate) fn canonical_int<T: std::str::FromStr + ToString>(text: &str) -> bool {
    text.parse::<T>().is_ok_and(|v| v.to_string() == text)
}

pub(crate) fn pk_segment_ok(kind: PkKind, segment: &str) -> bool {
    unescape(segment).is_some_and(|text| match kind {
        PkKind::Text => true,
        PkKind::U32 => canonical_int::<u32>(&text),
        PkKind::U64 => canonical_int::<u64>(&text),
        PkKind::I64 => canonical_int::<i64>(&text),
    })
}
