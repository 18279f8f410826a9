#[derive(redmodel::Admin)]
#[redmodel(sync_every = 0)]
struct Teacher {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::Admin)]
#[redmodel(sync_every = "ten")]
struct Class {
    #[redmodel(pk)]
    id: u32,
}

fn main() {}
