#[derive(redmodel::Admin)]
#[redmodel(slot_group = "{shop}")]
struct Order {
    #[redmodel(pk)]
    id: u64,
}

#[derive(redmodel::Admin)]
#[redmodel(slot_group = "shop:eu")]
struct Customer {
    #[redmodel(pk)]
    id: u64,
}

#[derive(redmodel::Admin)]
#[redmodel(slot_group = shop)]
struct Product {
    #[redmodel(pk)]
    id: u64,
}

#[derive(redmodel::SubObject)]
#[redmodel(owner = Customer, slot_group = "shop")]
struct Address {
    #[redmodel(pk)]
    id: u64,
}

fn main() {}
