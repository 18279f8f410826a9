#[derive(redmodel::Admin)]
struct Teacher {
    #[redmodel(pk)]
    id: String,
    #[redmodel(pk)]
    code: String,
}

fn main() {}
