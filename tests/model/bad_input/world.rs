//! The world: what each key holds.

#[allow(unused_imports)]
use super::*;

/// What one key holds.
#[derive(Clone, PartialEq)]
pub(crate) enum Shape {
    Absent,
    Str(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    List(Vec<Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    ZSet(BTreeSet<Vec<u8>>),
}

impl Shape {
    /// Redis has no empty aggregates: an empty one is an absent key.
    pub(crate) fn normalized(self) -> Shape {
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

pub(crate) fn show(raw: &[u8]) -> String {
    format!("\"{}\"", raw.escape_ascii())
}

pub(crate) fn show_all<'a>(items: impl IntoIterator<Item = &'a Vec<u8>>) -> String {
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
pub(crate) enum Role {
    /// An object of this model.
    Object(Tag),
    /// A list of keys of this model.
    List(Tag),
    /// No model's key, though it looks like one.
    Junk,
}

pub(crate) struct Entry {
    pub(crate) key: &'static [u8],
    pub(crate) role: Role,
}

pub(crate) const fn object(key: &'static str, tag: Tag) -> Entry {
    Entry {
        key: key.as_bytes(),
        role: Role::Object(tag),
    }
}

pub(crate) const fn list(key: &'static str, member: Tag) -> Entry {
    Entry {
        key: key.as_bytes(),
        role: Role::List(member),
    }
}

pub(crate) const fn junk(key: &'static [u8]) -> Entry {
    Entry {
        key,
        role: Role::Junk,
    }
}

/// Every key a world may fill: the models' keys (odd pks included), the
/// relation lists, and look-alikes that are no model's key.
pub(crate) const UNIVERSE: &[Entry] = &[
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

pub(crate) fn keys_with(role: Role) -> impl Iterator<Item = &'static str> {
    UNIVERSE
        .iter()
        .filter(move |e| e.role == role)
        .filter_map(|e| std::str::from_utf8(e.key).ok())
}

/// A world, plus the arguments of the reads that take some.
#[derive(Clone)]
pub(crate) struct Case {
    /// What each key of [`UNIVERSE`] holds, in order.
    pub(crate) shapes: Vec<Shape>,
    /// LRANGE bounds.
    pub(crate) ranges: Vec<(i64, i64)>,
    /// LINDEX indexes.
    pub(crate) indexes: Vec<i64>,
    /// Pages: (page, per page).
    pub(crate) pages: Vec<(u64, u64)>,
    /// Increments of the integer fields of [`INT_INCRS`], in order.
    pub(crate) int_by: Vec<i64>,
    /// Increments of the float fields of [`FLOAT_INCRS`], in order.
    pub(crate) float_by: Vec<f64>,
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
pub(crate) struct World {
    pub(crate) keys: BTreeMap<Vec<u8>, Shape>,
}

/// What a model's read of a key finds there.
pub(crate) enum View<'w> {
    WrongType(&'static str),
    Absent,
    Hash(&'w BTreeMap<Vec<u8>, Vec<u8>>),
    Single(&'w [u8]),
}

impl View<'_> {
    /// The stored text of field `name` (the one value of a single-value
    /// object, whatever the name).
    pub(crate) fn raw(&self, name: &str) -> Option<&[u8]> {
        match self {
            View::Hash(map) => map.get(name.as_bytes()).map(Vec::as_slice),
            View::Single(raw) => Some(raw),
            View::WrongType(_) | View::Absent => None,
        }
    }
}

impl World {
    pub(crate) fn new(case: &Case) -> World {
        World {
            keys: UNIVERSE
                .iter()
                .zip(&case.shapes)
                .map(|(e, s)| (e.key.to_vec(), s.clone()))
                .collect(),
        }
    }

    pub(crate) fn shape(&self, key: &str) -> &Shape {
        self.keys.get(key.as_bytes()).unwrap_or(&Shape::Absent)
    }

    pub(crate) fn view(&self, key: &str, storage: Storage) -> View<'_> {
        match (self.shape(key), storage) {
            (Shape::Absent, _) => View::Absent,
            (Shape::Hash(map), Storage::Hash) => View::Hash(map),
            (Shape::Str(raw), Storage::Single) => View::Single(raw),
            (_, Storage::Hash) => View::WrongType("hash"),
            (_, Storage::Single) => View::WrongType("string"),
        }
    }

    /// The list at `key` (`[]` if absent), or `None` if it holds another type.
    pub(crate) fn list(&self, key: &str) -> Option<Vec<&[u8]>> {
        match self.shape(key) {
            Shape::Absent => Some(Vec::new()),
            Shape::List(items) => Some(items.iter().map(Vec::as_slice).collect()),
            _ => None,
        }
    }

    /// The existing UTF-8 keys that `keep` selects, in byte order (as SCAN
    /// results are returned).
    pub(crate) fn existing_keys(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        self.keys
            .iter()
            .filter(|(_, shape)| **shape != Shape::Absent)
            .filter_map(|(key, _)| std::str::from_utf8(key).ok())
            .filter(|key| keep(key))
            .map(str::to_string)
            .collect()
    }

    /// Writes the world with raw commands, in one round trip, after
    /// FLUSHDB. Its keys are model keys in plain form, written as `db`'s
    /// key layout stores them.
    pub(crate) async fn write(&self, db: &Db) -> Result<()> {
        let mut pipe = redis::pipe();
        pipe.cmd("FLUSHDB").ignore();
        for (key, shape) in &self.keys {
            // Junk keys (not UTF-8) are written as they are.
            let stored = std::str::from_utf8(key)
                .map(|k| db.key_layout().stored(k).into_owned().into_bytes())
                .unwrap_or_else(|_| key.clone());
            let key = &stored;
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
