use redmodel::prelude::*;

#[derive(Admin)]
struct Student {
    #[redmodel(pk)]
    id: String,
    math: i64,
}

async fn set(db: &Db) {
    let _ = Student::at("a").set(db, Student::MATH, "ninety").await;
}

fn main() {}
