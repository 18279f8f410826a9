#[derive(redmodel::Admin)]
struct Teacher {
    id: String,
    name: String,
}

fn main() {}
