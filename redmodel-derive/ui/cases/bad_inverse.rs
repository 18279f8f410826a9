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

#[derive(redmodel::Admin)]
struct Student {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::Relation)]
#[redmodel(table = "class", owner = Teacher, member = Class, inverse = ClassStudents)]
struct TeacherClasses;

#[derive(redmodel::Relation)]
#[redmodel(table = "student", owner = Class, member = Student)]
struct ClassStudents;

fn main() {}
