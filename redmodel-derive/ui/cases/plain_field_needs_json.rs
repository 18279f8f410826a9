#[derive(redmodel::Admin)]
struct Teacher {
    #[redmodel(pk)]
    id: String,
    tags: Vec<String>,
}

struct NotSerde;

#[derive(redmodel::Admin)]
struct Class {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(json)]
    data: NotSerde,
}

fn main() {}
