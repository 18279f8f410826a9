#[derive(redmodel::Admin)]
struct User {
    #[redmodel(pk, unique)]
    id: u32,
    #[redmodel(skip, sorted)]
    cache: u64,
    #[redmodel(tags, json)]
    roles: Vec<String>,
    #[redmodel(tags, unique)]
    labels: Vec<String>,
    #[redmodel(recent = 0)]
    last_login: u64,
    #[redmodel(recent)]
    last_seen: u64,
    #[redmodel(recent = "10")]
    last_post: u64,
    #[redmodel(unique = true)]
    email: String,
    #[redmodel(unique)]
    name: String,
    name_unique: String,
}

#[derive(redmodel::SubObject)]
#[redmodel(owner = User)]
struct Exam {
    #[redmodel(pk)]
    year: u32,
    #[redmodel(sorted)]
    math: i64,
}


fn main() {}
