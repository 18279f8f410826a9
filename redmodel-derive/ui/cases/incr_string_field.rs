use redmodel::prelude::*;

#[derive(Admin)]
struct Teacher {
    #[redmodel(pk)]
    id: String,
    name: String,
}

async fn bump(db: &Db) {
    let _ = Teacher::at("A").incr(db, Teacher::NAME, 1).await;
}

fn main() {}
