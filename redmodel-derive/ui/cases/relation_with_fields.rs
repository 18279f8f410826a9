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

#[derive(redmodel::Relation)]
#[redmodel(owner = Teacher, member = Class)]
struct TeacherClasses {
    since: u32,
}

#[derive(redmodel::Relation)]
#[redmodel(owner = Teacher)]
struct NoMember;

#[derive(redmodel::Relation)]
struct NoOwner;

#[derive(redmodel::Relation)]
#[redmodel(owner = Teacher, member = Class, sync_every = 3)]
struct Counted;

fn main() {}
