#[derive(redmodel::Admin)]
struct Student {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::SubObject)]
#[redmodel(owner = "Student")]
struct Exam {
    #[redmodel(pk)]
    year: u32,
}

fn main() {}
