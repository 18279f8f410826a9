use redmodel::model::Ref;

// Fine: a model's TTL, and one on a reference field.
#[derive(redmodel::Admin)]
#[redmodel(ttl = "1h30m")]
struct Valid {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::Admin)]
#[redmodel(ttl = "0s")]
struct Zero {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::Admin)]
#[redmodel(ttl = "-5m")]
struct Negative {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::Admin)]
#[redmodel(ttl = "30")]
struct NoUnit {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::Admin)]
#[redmodel(ttl = "soon")]
struct Unreadable {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::Admin)]
#[redmodel(ttl = 30)]
struct NotAString {
    #[redmodel(pk)]
    id: String,
}

#[derive(redmodel::Admin)]
struct Session {
    #[redmodel(pk, ttl = "1h")]
    id: String,
    // Required: once expired, the object could not be read.
    #[redmodel(ttl = "10m")]
    token: String,
    #[redmodel(ttl = "0ms")]
    nonce: Option<String>,
    #[redmodel(skip, ttl = "1m")]
    cache: Option<String>,
    #[redmodel(ttl = "10m")]
    owner: Option<Ref<Valid>>,
}

#[derive(redmodel::SubObject)]
#[redmodel(owner = Session, single)]
struct Note {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(ttl = "1m")]
    text: Option<String>,
}

#[derive(redmodel::Relation)]
#[redmodel(owner = Session, member = Valid, ttl = "1h")]
struct SessionZeros;

fn main() {}
