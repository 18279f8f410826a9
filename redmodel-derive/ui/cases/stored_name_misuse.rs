#[derive(redmodel::Admin)]
struct Teacher {
    #[redmodel(pk)]
    id: String,
    // A hash field has a name.
    #[redmodel(rename = "")]
    nickname: String,
    // The write count's field.
    _count: u64,
}

fn main() {}
