#[derive(redmodel::Admin)]
#[redmodel(tabel = "teacher")]
struct Teacher {
    #[redmodel(pk)]
    id: String,
    #[redmodel(jsn)]
    tags: String,
}

fn main() {}
