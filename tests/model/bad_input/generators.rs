//! Generators of hostile worlds.

#[allow(unused_imports)]
use super::*;

/// Text that is hostile to some field type: numbers at and past every
/// range, float words, spacing, JSON good and bad, keys good and bad.
pub(crate) const TEXT_ATOMS: &[&str] = &[
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
pub(crate) const BYTE_ATOMS: &[&[u8]] = &[
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

pub(crate) fn atom() -> BoxedStrategy<Vec<u8>> {
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
pub(crate) fn key_of(tag: Tag) -> BoxedStrategy<String> {
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
pub(crate) fn valid(kind: Kind) -> BoxedStrategy<Vec<u8>> {
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

pub(crate) fn field_value(kind: Kind) -> BoxedStrategy<Vec<u8>> {
    prop_oneof![5 => valid(kind), 2 => atom()].boxed()
}

/// Hash field names besides the declared ones.
pub(crate) fn extra_name() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        3 => select(&["nope", "", "NAME", "name ", "Name", "_count", "value", "class", "tags"][..])
            .prop_map(|s| s.as_bytes().to_vec()),
        1 => vec(any::<u8>(), 0..6),
    ]
    .boxed()
}

/// A value of any Redis type but `not`.
pub(crate) fn other_type(not: &'static str) -> BoxedStrategy<Shape> {
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
pub(crate) type NamedValue = Option<(Vec<u8>, Vec<u8>)>;

/// An object's hash: all declared fields valid, or all but one (changed
/// to a hostile atom, or removed), or each field at random; plus unknown
/// fields and a `_count`. (With fields corrupted independently, a model of
/// 16 fields would almost never load, and the success path would go
/// untested.)
pub(crate) fn object_hash(tag: Tag) -> BoxedStrategy<Shape> {
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

pub(crate) fn shape_for(role: Role) -> BoxedStrategy<Shape> {
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

pub(crate) fn is_single(tag: Tag) -> bool {
    matches!(tag, Tag::Note | Tag::Level | Tag::Reading)
}

pub(crate) const BOUNDS: &[i64] = &[0, 1, 2, -1, -2, 3, 5, -100, 100, i64::MAX, i64::MIN];

pub(crate) fn case() -> impl Strategy<Value = Case> {
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
