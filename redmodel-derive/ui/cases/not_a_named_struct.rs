#[derive(redmodel::Admin)]
struct Teacher(String);

#[derive(redmodel::Admin)]
enum Class {
    One,
}

#[derive(redmodel::Admin)]
struct Student<T> {
    #[redmodel(pk)]
    id: T,
}

fn main() {}
