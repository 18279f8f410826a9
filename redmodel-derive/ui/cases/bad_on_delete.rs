use redmodel::model::Ref;

#[derive(redmodel::Admin)]
struct Class {
    #[redmodel(pk)]
    id: u32,
}

// An unknown action.
#[derive(redmodel::Admin)]
struct Student {
    #[redmodel(pk)]
    id: String,
    #[redmodel(on_delete = "nullify")]
    class: Ref<Class>,
}

// On a field that holds no reference.
#[derive(redmodel::Admin)]
struct Teacher {
    #[redmodel(pk)]
    id: String,
    #[redmodel(on_delete = "restrict")]
    name: String,
}

// On a model: it belongs on a relation or a reference field.
#[derive(redmodel::Admin)]
#[redmodel(on_delete = "restrict")]
struct Room {
    #[redmodel(pk)]
    id: u32,
}

// Without a value.
#[derive(redmodel::Relation)]
#[redmodel(owner = Class, member = Student, on_delete)]
struct ClassStudents;

fn main() {}
