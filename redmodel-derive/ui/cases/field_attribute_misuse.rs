#[derive(redmodel::Admin)]
#[redmodel(pk)]
struct Teacher {
    #[redmodel(pk, rename = "id")]
    id: String,
    #[redmodel(table = "x")]
    name: String,
    #[redmodel(skip, json)]
    cache: Vec<u8>,
    #[redmodel(rename = "_count")]
    count: u64,
    #[redmodel(rename = "title")]
    name2: String,
    title: String,
    #[redmodel(json = true)]
    tags: Vec<String>,
    #[redmodel(rename = "a", rename = "b")]
    twice: String,
}

fn main() {}
