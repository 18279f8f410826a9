use redmodel::prelude::*;

#[derive(Admin)]
struct Book {
    #[redmodel(pk)]
    id: u32,
    title: String,
    #[redmodel(tags)]
    tags: Vec<String>,
}

#[derive(Admin)]
struct Author {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(sorted)]
    born: u16,
}

fn main() {
    // A filter of another model's index.
    let _ = Book::query().filter(Author::BORN_SORTED.within(1900..2000));
    // A field without an index has no index handle.
    let _ = Book::query().filter(Book::TITLE_UNIQUE.equals("x"));
    // An order by another model's sorted field.
    let _ = Book::query().order_by(Author::BORN_SORTED.desc());
}
