//! The key layout, and the property that makes it safe: any pk round-trips
//! key -> parse -> same pk, and no two different things (objects of two
//! models, a sub-object, a relation, an index key) ever share a key.

use crate::models::*;
use proptest::prelude::*;
use redmodel::model::key::{glob_escape, reserved_key};
use redmodel::model::{ObjectRef, RelationRef};
use redmodel::prelude::*;

/// A relation whose table is also a sub-object's table, to make the
/// non-collision property harder to satisfy.
#[derive(Relation)]
#[redmodel(table = "note", owner = Student, member = Teacher)]
struct StudentNotes;

#[test]
fn plain_pks_give_the_documented_layout() {
    assert_eq!(Teacher::at("A").key(), "teacher:A");
    assert_eq!(Class::at(1).key(), "class:1");
    assert_eq!(
        Student::at("a").sub::<Exam>(2024).key(),
        "student:a:exam:2024"
    );
    assert_eq!(
        Student::at("a").sub::<Note>("home").key(),
        "student:a:note:home"
    );
    assert_eq!(
        Teacher::at("A").relation::<TeacherClasses>().key(),
        "teacher:A:class"
    );
    assert_eq!(
        Class::at(1).relation::<ClassTeachers>().key(),
        "class:1:teacher"
    );
    assert_eq!(
        Class::at(2).relation::<ClassStudents>().key(),
        "class:2:student"
    );
    assert_eq!(
        Teacher::at("jane.doe@example.com").key(),
        "teacher:jane.doe@example.com"
    );
    assert_eq!(Teacher::at("x-1_2").key(), "teacher:x-1_2");
}

#[test]
fn special_pks_are_escaped() {
    assert_eq!(Teacher::at("a:b").key(), "teacher:a%3Ab");
    assert_eq!(Teacher::at("50%").key(), "teacher:50%25");
    assert_eq!(Teacher::at("*").key(), "teacher:%2A");
    assert_eq!(Teacher::at("{x}").key(), "teacher:%7Bx%7D");
    assert_eq!(Teacher::at("a b").key(), "teacher:a%20b");
    assert_eq!(Teacher::at("").key(), "teacher:");
    assert_eq!(Teacher::at("é").key(), "teacher:%C3%A9");
    assert_eq!(Teacher::at("_idx").key(), "teacher:%5Fidx");
    assert_eq!(
        Student::at("a:b").sub::<Note>("c:d").key(),
        "student:a%3Ab:note:c%3Ad"
    );
}

#[test]
fn parse_rejects_what_encoding_never_produces() {
    for bad in [
        "teacher",
        "teacher:a:b",
        "teacher:a%3ab",
        "teacher:%41",
        "teacher:_x",
        "class:1",
        "teachers:A",
        "teacher:A:class",
    ] {
        let err = ObjectRef::<Teacher>::parse(bad).unwrap_err();
        assert!(
            matches!(err, redmodel::Error::InvalidKey { ref key, .. } if key == bad),
            "{bad}: {err}"
        );
    }
    for bad in [
        "class:01",
        "class:+1",
        "class:-1",
        "class:x",
        "class:4294967296",
    ] {
        assert!(ObjectRef::<Class>::parse(bad).is_err(), "{bad}");
    }
    assert!(ObjectRef::<Exam>::parse("student:a:exam").is_err());
    assert!(ObjectRef::<Exam>::parse("student:a:b:exam:1").is_err());
    assert!(RelationRef::<TeacherClasses>::parse("teacher:A:classes").is_err());
    assert!(RelationRef::<TeacherClasses>::parse("teacher:A:B:class").is_err());
}

#[test]
fn parse_gives_back_the_handle() {
    let exam = ObjectRef::<Exam>::parse("student:a:exam:2024").unwrap();
    assert_eq!(exam.owner(), &Student::at("a"));
    assert_eq!(*exam.pk(), 2024);
    let rel = RelationRef::<TeacherClasses>::parse("teacher:A:class").unwrap();
    assert_eq!(rel.owner(), &Teacher::at("A"));
}

#[test]
fn scan_patterns_escape_glob_characters() {
    assert_eq!(glob_escape("a*b?c[d]e\\"), "a\\*b\\?c\\[d\\]e\\\\");
}

/// Everything that has a key, with its identity.
#[derive(Debug, Clone, PartialEq)]
enum Thing {
    Teacher(String),
    Student(String),
    Class(u32),
    Exam(String, u32),
    Note(String, String),
    TeacherClasses(String),
    ClassStudents(u32),
    StudentNotes(String),
    /// An index key of a table: `TABLE:_unique:PART`.
    Index(&'static str, String),
}

impl Thing {
    fn key(&self) -> String {
        match self {
            Thing::Teacher(pk) => Teacher::at(pk).into_key(),
            Thing::Student(pk) => Student::at(pk).into_key(),
            Thing::Class(pk) => Class::at(*pk).into_key(),
            Thing::Exam(s, pk) => Student::at(s).sub::<Exam>(*pk).into_key(),
            Thing::Note(s, pk) => Student::at(s).sub::<Note>(pk).into_key(),
            Thing::TeacherClasses(t) => Teacher::at(t).relation::<TeacherClasses>().key().into(),
            Thing::ClassStudents(c) => Class::at(*c).relation::<ClassStudents>().key().into(),
            Thing::StudentNotes(s) => Student::at(s).relation::<StudentNotes>().key().into(),
            Thing::Index(table, part) => reserved_key(table, "unique", &[part]),
        }
    }

    /// Every parser that accepts `key`, with what it parsed.
    fn parse_all(key: &str) -> Vec<Thing> {
        let mut out = Vec::new();
        if let Ok(r) = ObjectRef::<Teacher>::parse(key) {
            out.push(Thing::Teacher(r.pk().clone()));
        }
        if let Ok(r) = ObjectRef::<Student>::parse(key) {
            out.push(Thing::Student(r.pk().clone()));
        }
        if let Ok(r) = ObjectRef::<Class>::parse(key) {
            out.push(Thing::Class(*r.pk()));
        }
        if let Ok(r) = ObjectRef::<Exam>::parse(key) {
            out.push(Thing::Exam(r.owner().pk().clone(), *r.pk()));
        }
        if let Ok(r) = ObjectRef::<Note>::parse(key) {
            out.push(Thing::Note(r.owner().pk().clone(), r.pk().clone()));
        }
        if let Ok(r) = RelationRef::<TeacherClasses>::parse(key) {
            out.push(Thing::TeacherClasses(r.owner().pk().clone()));
        }
        if let Ok(r) = RelationRef::<ClassStudents>::parse(key) {
            out.push(Thing::ClassStudents(*r.owner().pk()));
        }
        if let Ok(r) = RelationRef::<StudentNotes>::parse(key) {
            out.push(Thing::StudentNotes(r.owner().pk().clone()));
        }
        out
    }
}

/// Pks rich in the characters that matter, and any string at all.
fn pk() -> impl Strategy<Value = String> {
    prop_oneof![
        "[:%*{}\\[\\]?\\\\ _a-cA-C0-9é\\-.@]{0,6}",
        ".{0,8}",
        Just(String::new()),
        Just("class".to_string()),
        Just("_unique".to_string()),
    ]
}

fn thing() -> impl Strategy<Value = Thing> {
    prop_oneof![
        pk().prop_map(Thing::Teacher),
        pk().prop_map(Thing::Student),
        any::<u32>().prop_map(Thing::Class),
        (pk(), any::<u32>()).prop_map(|(s, y)| Thing::Exam(s, y)),
        (pk(), pk()).prop_map(|(s, t)| Thing::Note(s, t)),
        pk().prop_map(Thing::TeacherClasses),
        any::<u32>().prop_map(Thing::ClassStudents),
        pk().prop_map(Thing::StudentNotes),
        (
            prop_oneof![Just("teacher"), Just("student"), Just("class")],
            pk()
        )
            .prop_map(|(t, p)| Thing::Index(t, p)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// key -> parse -> the same thing, and no parser of another kind
    /// accepts the key; index keys are no model's key at all.
    #[test]
    fn keys_round_trip_through_exactly_one_parser(thing in thing()) {
        let key = thing.key();
        let parsed = Thing::parse_all(&key);
        match &thing {
            Thing::Index(..) => prop_assert!(parsed.is_empty(), "{key} parsed as {parsed:?}"),
            _ => prop_assert_eq!(parsed, vec![thing.clone()], "key {}", key),
        }
    }

    /// Two different things never share a key.
    #[test]
    fn different_things_have_different_keys(a in thing(), b in thing()) {
        if a != b {
            prop_assert_ne!(a.key(), b.key(), "{:?} and {:?}", a, b);
        }
    }

    /// An encoded pk never holds a character that would change a key's
    /// structure, a SCAN pattern, or a cluster hash tag.
    #[test]
    fn encoded_pks_hold_no_special_character(pk in pk()) {
        let key = Teacher::at(&pk).into_key();
        let segment = key.strip_prefix("teacher:").unwrap();
        let special = [':', '*', '?', '[', ']', '\\', '{', '}', ' '];
        prop_assert!(!segment.contains(special), "{}", segment);
        prop_assert!(!segment.starts_with('_'));
        prop_assert!(segment.is_ascii());
    }
}

/// A pk of the user's own type, through `KeyPart`.
#[derive(Clone, Debug, PartialEq)]
struct Isbn(u64);

impl redmodel::model::KeyPart for Isbn {
    fn to_key_text(&self) -> std::borrow::Cow<'_, str> {
        format!("isbn-{:013}", self.0).into()
    }

    fn from_key_text(text: &str) -> Result<Self, String> {
        let digits = text.strip_prefix("isbn-").ok_or("no isbn- prefix")?;
        if digits.len() != 13 {
            return Err(format!("{digits} is not 13 digits"));
        }
        digits.parse().map(Isbn).map_err(|e| e.to_string())
    }
}

#[derive(Admin, Debug, PartialEq)]
struct Book {
    #[redmodel(pk)]
    isbn: Isbn,
    title: String,
}

#[test]
fn custom_pk_types() {
    let book = Book::at(Isbn(9781593278281));
    assert_eq!(book.key(), "book:isbn-9781593278281");
    assert_eq!(
        ObjectRef::<Book>::parse("book:isbn-9781593278281").unwrap(),
        book
    );
    assert!(ObjectRef::<Book>::parse("book:isbn-978").is_err());
    // A text the type's own parser accepts but that is not the canonical
    // form of its pk (`+` sign) is refused, so it can never alias a key.
    assert!(ObjectRef::<Book>::parse("book:isbn-0000000000001").is_ok());
    let err = ObjectRef::<Book>::parse("book:isbn-%2B000000000001").unwrap_err();
    assert!(err.to_string().contains("canonical"), "{err}");
}

/// This binary gathers the models of many modules and example programs,
/// so it holds tables declared twice (each test keeps to its own
/// database); the registry finds every one of them.
#[test]
fn declarations_claiming_the_same_keys_are_found() {
    let conflicts = redmodel::model::conflicting_declarations();
    let keys: std::collections::BTreeSet<&str> =
        conflicts.iter().map(|c| c.keys.as_str()).collect();
    let expected = [
        "book",
        "class",
        "class:*:student",
        "class:*:teacher",
        "item",
        "login",
        "member",
        "student",
        "student:*:exam",
        "student:*:note",
        "teacher",
        "teacher:*:class",
        "user",
    ];
    assert_eq!(keys, expected.into_iter().collect());
    // A relation and a sub-object with one name under one admin.
    let notes = conflicts
        .iter()
        .find(|c| c.keys == "student:*:note")
        .expect("the note conflict");
    assert_eq!(
        notes.to_string(),
        "the relation `model::keys::StudentNotes` and the model `model::models::Note` both store their keys at `student:*:note`"
    );
}
