#[derive(redmodel::Admin)]
struct User {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(sorted)]
    name: String,
    #[redmodel(tags)]
    role: String,
}

fn main() {}
