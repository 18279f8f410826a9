//! The oracle itself, and the key parsers against it.

#[allow(unused_imports)]
use super::*;

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

pub(crate) fn parses(tag: Tag, text: &str) -> bool {
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
pub(crate) const KEY_PIECES: &[&str] = &[
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

pub(crate) fn key_text() -> impl Strategy<Value = String> {
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
pub(crate) fn parse_agrees<M: Model>(
    tag: Tag,
    text: &str,
) -> std::result::Result<(), TestCaseError> {
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
pub(crate) fn reference_agrees<M: Model>(
    tag: Tag,
    raw: &[u8],
) -> std::result::Result<(), TestCaseError> {
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

pub(crate) fn relation_agrees<R: Relation>(
    owner: Tag,
    text: &str,
) -> std::result::Result<(), TestCaseError> {
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
