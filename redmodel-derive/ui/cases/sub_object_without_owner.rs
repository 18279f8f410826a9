#[derive(redmodel::SubObject)]
struct Exam {
    #[redmodel(pk)]
    year: u32,
    math: i64,
}

fn main() {}
