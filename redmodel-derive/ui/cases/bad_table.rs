#[derive(redmodel::Admin)]
#[redmodel(table = "school:teacher")]
struct Teacher {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::Admin)]
#[redmodel(table = teacher)]
struct Teacher2 {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::Admin)]
#[redmodel(table)]
struct Teacher3 {
    #[redmodel(pk)]
    id: String,
}

fn main() {}
