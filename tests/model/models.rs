//! Models shared by the model tests: the seed's school, and a model with
//! every kind of field.

use std::collections::BTreeMap;

use redmodel::model::Ref;
use redmodel::{Admin, Relation, SubObject};
use serde::{Deserialize, Serialize};

#[derive(Admin, Debug, Clone, PartialEq)]
pub struct Teacher {
    #[redmodel(pk)]
    pub id: String,
    pub name: String,
    pub subject: String,
}

#[derive(Admin, Debug, Clone, PartialEq)]
pub struct Class {
    #[redmodel(pk)]
    pub id: u32,
    pub name: String,
}

#[derive(Admin, Debug, Clone, PartialEq)]
pub struct Student {
    #[redmodel(pk)]
    pub id: String,
    pub class: Ref<Class>,
    pub chinese: i64,
    pub english: i64,
    pub math: i64,
}

#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Student)]
pub struct Exam {
    #[redmodel(pk)]
    pub year: u32,
    pub chinese: i64,
    pub english: i64,
    pub math: i64,
}

/// A single-value sub-object: a string at `student:a:note:TOPIC`.
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Student, single)]
pub struct Note {
    #[redmodel(pk)]
    pub topic: String,
    pub text: String,
}

#[derive(Relation)]
#[redmodel(table = "class", owner = Teacher, member = Class, inverse = ClassTeachers)]
pub struct TeacherClasses;

#[derive(Relation)]
#[redmodel(table = "teacher", owner = Class, member = Teacher, inverse = TeacherClasses)]
pub struct ClassTeachers;

#[derive(Relation)]
#[redmodel(table = "student", owner = Class, member = Student)]
pub struct ClassStudents;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Address {
    pub city: String,
    pub zip: Option<String>,
}

fn default_level() -> i32 {
    1
}

/// Every kind of field.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "profile", sync_every = 3)]
pub struct Profile {
    #[redmodel(pk)]
    pub user: String,
    pub age: u8,
    pub score: f64,
    pub active: bool,
    pub nickname: Option<String>,
    #[redmodel(rename = "mail")]
    pub email: String,
    #[redmodel(json)]
    pub tags: Vec<String>,
    #[redmodel(json)]
    pub address: Option<Address>,
    #[redmodel(json)]
    pub extra: BTreeMap<String, i64>,
    #[redmodel(default)]
    pub visits: u64,
    #[redmodel(default = "default_level")]
    pub level: i32,
    #[redmodel(skip)]
    pub cache: Vec<u8>,
}

impl Profile {
    pub fn sample(user: &str) -> Profile {
        Profile {
            user: user.to_string(),
            age: 30,
            score: 0.1,
            active: true,
            nickname: Some("jo".into()),
            email: "jo@example.com".into(),
            tags: vec!["a".into(), "b c".into()],
            address: Some(Address {
                city: "Paris".into(),
                zip: None,
            }),
            extra: BTreeMap::from([("x".to_string(), 1)]),
            visits: 2,
            level: 3,
            cache: Vec::new(),
        }
    }
}
