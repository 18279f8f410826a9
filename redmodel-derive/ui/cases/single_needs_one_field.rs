#[derive(redmodel::Admin)]
struct Student {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::SubObject)]
#[redmodel(owner = Student, single)]
struct Note {
    #[redmodel(pk)]
    topic: String,
    text: String,
    author: String,
}

#[derive(redmodel::Admin)]
#[redmodel(single)]
struct Flag {
    #[redmodel(pk)]
    id: String,
    on: bool,
}

fn main() {}
