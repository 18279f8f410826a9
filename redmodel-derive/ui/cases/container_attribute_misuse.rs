#[derive(redmodel::Admin)]
struct Teacher {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::Admin)]
struct Class {
    #[redmodel(pk)]
    id: u32,
}

// `member` and `inverse` belong to a relation.
#[derive(redmodel::Admin)]
#[redmodel(member = Class, inverse = TeacherClasses)]
struct Room {
    #[redmodel(pk)]
    id: u32,
}

// A relation is a list: it cannot be `single`.
#[derive(redmodel::Relation)]
#[redmodel(owner = Teacher, member = Class, single)]
struct TeacherClasses;

// A relation is a unit struct.
#[derive(redmodel::Relation)]
#[redmodel(owner = Teacher, member = Class)]
enum ClassTeachers {
    One,
}

// A model's type, not a number.
#[derive(redmodel::SubObject)]
#[redmodel(owner = 3)]
struct Exam {
    #[redmodel(pk)]
    year: u32,
}

fn main() {}
