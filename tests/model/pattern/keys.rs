//! Index and collection keys never collide with model keys, whatever the
//! pk and whatever the indexed values: the property test of
//! `tests/model_keys.rs`, extended to every kind of index key the derive
//! generates (unique entries, sorted sets, tag sets, recent lists),
//! including fields stored under names that need escaping.

use proptest::prelude::*;
use redmodel::model::{ObjectRef, RelationRef};
use redmodel::prelude::*;

#[derive(Admin, Debug, Clone, PartialEq)]
struct User {
    #[redmodel(pk)]
    id: String,
    #[redmodel(unique)]
    name: String,
    /// A stored name with a `:` and a `_`: escaped in index keys.
    #[redmodel(unique, rename = "e:mail_")]
    email: String,
    #[redmodel(sorted)]
    score: i64,
    #[redmodel(tags)]
    tags: Vec<String>,
    #[redmodel(recent = 10)]
    seen: Option<u64>,
}

/// A second model whose table is a prefix of nothing and whose relation
/// table is an index kind's name, to make collisions more likely.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "user_x")]
struct Other {
    #[redmodel(pk)]
    id: String,
}

#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = User, table = "unique")]
struct Unique {
    #[redmodel(pk)]
    id: String,
    v: String,
}

#[derive(Relation)]
#[redmodel(table = "sorted", owner = User, member = Other)]
struct Sorted;

#[derive(Debug, Clone, PartialEq)]
enum Thing {
    User(String),
    Other(String),
    Sub(String, String),
    Rel(String),
    ByName(String),
    ByEmail(String),
    ScoreRank,
    Tag(String),
    SeenRecent,
}

impl Thing {
    fn key(&self) -> String {
        match self {
            Thing::User(pk) => User::at(pk).into_key(),
            Thing::Other(pk) => Other::at(pk).into_key(),
            Thing::Sub(owner, pk) => User::at(owner).sub::<Unique>(pk).into_key(),
            Thing::Rel(owner) => User::at(owner).relation::<Sorted>().key().to_string(),
            Thing::ByName(v) => User::NAME_UNIQUE.key(v).unwrap().unwrap(),
            Thing::ByEmail(v) => User::EMAIL_UNIQUE.key(v).unwrap().unwrap(),
            Thing::ScoreRank => User::SCORE_SORTED.key(),
            Thing::Tag(t) => User::TAGS_TAGS.key(t).unwrap(),
            Thing::SeenRecent => User::SEEN_RECENT.key(),
        }
    }

    fn is_index(&self) -> bool {
        !matches!(
            self,
            Thing::User(_) | Thing::Other(_) | Thing::Sub(..) | Thing::Rel(_)
        )
    }

    /// Every model parser that accepts `key`.
    fn parse_all(key: &str) -> Vec<Thing> {
        let mut out = Vec::new();
        if let Ok(r) = ObjectRef::<User>::parse(key) {
            out.push(Thing::User(r.pk().clone()));
        }
        if let Ok(r) = ObjectRef::<Other>::parse(key) {
            out.push(Thing::Other(r.pk().clone()));
        }
        if let Ok(r) = ObjectRef::<Unique>::parse(key) {
            out.push(Thing::Sub(r.owner().pk().clone(), r.pk().clone()));
        }
        if let Ok(r) = RelationRef::<Sorted>::parse(key) {
            out.push(Thing::Rel(r.owner().pk().clone()));
        }
        out
    }
}

/// Texts rich in what matters: separators, escapes, globs, braces, a
/// leading `_`, index kind names, and anything at all.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[:%*{}\\[\\]?\\\\ _a-cA-C0-9é\\-.@]{0,6}",
        ".{0,8}",
        Just(String::new()),
        Just("_unique".to_string()),
        Just("_sorted:score".to_string()),
        Just("name:x".to_string()),
        Just("unique".to_string()),
    ]
}

fn thing() -> impl Strategy<Value = Thing> {
    prop_oneof![
        text().prop_map(Thing::User),
        text().prop_map(Thing::Other),
        (text(), text()).prop_map(|(o, p)| Thing::Sub(o, p)),
        text().prop_map(Thing::Rel),
        text().prop_map(Thing::ByName),
        text().prop_map(Thing::ByEmail),
        Just(Thing::ScoreRank),
        text().prop_map(Thing::Tag),
        Just(Thing::SeenRecent),
    ]
}

#[test]
fn the_documented_layout() {
    assert_eq!(
        User::NAME_UNIQUE.key("ken thompson").unwrap().unwrap(),
        "user:_unique:name:ken%20thompson"
    );
    assert_eq!(
        User::EMAIL_UNIQUE.key("a@b.c").unwrap().unwrap(),
        "user:_unique:e%3Amail_:a@b.c"
    );
    assert_eq!(User::SCORE_SORTED.key(), "user:_sorted:score");
    assert_eq!(
        User::TAGS_TAGS.key("c++").unwrap(),
        "user:_tag:tags:c%2B%2B"
    );
    assert_eq!(User::SEEN_RECENT.key(), "user:_recent:seen");
    assert_eq!(User::at("_unique").key(), "user:%5Funique");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// An index key is no model's key; a model key parses back to exactly
    /// the thing that made it.
    #[test]
    fn index_keys_are_no_model_key(thing in thing()) {
        let key = thing.key();
        let parsed = Thing::parse_all(&key);
        if thing.is_index() {
            prop_assert!(parsed.is_empty(), "{} parsed as {:?}", key, parsed);
        } else {
            prop_assert_eq!(parsed, vec![thing.clone()], "key {}", key);
        }
    }

    /// Two different things never share a key.
    #[test]
    fn different_things_have_different_keys(a in thing(), b in thing()) {
        if a != b {
            prop_assert_ne!(a.key(), b.key(), "{:?} and {:?}", a, b);
        }
    }
}
