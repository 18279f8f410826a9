#[derive(redmodel::Admin)]
struct Teacher {
    #[redmodel(pk)]
    id: String,
    // The function's path is a string.
    #[redmodel(default = 3)]
    rank: u32,
    // A path, not an expression.
    #[redmodel(default = "rank() + 1")]
    level: u32,
}

// The pk is never missing from a hash: it has no default.
#[derive(redmodel::Admin)]
struct Class {
    #[redmodel(pk, default)]
    code: String,
}

fn main() {}
