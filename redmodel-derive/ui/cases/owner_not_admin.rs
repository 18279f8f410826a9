#[derive(redmodel::Admin)]
struct Student {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::SubObject)]
#[redmodel(owner = Student)]
struct Exam {
    #[redmodel(pk)]
    year: u32,
}

#[derive(redmodel::SubObject)]
#[redmodel(owner = Exam)]
struct Question {
    #[redmodel(pk)]
    number: u32,
}

fn main() {}
