use redmodel::model::Ref;

#[derive(redmodel::Admin)]
struct Customer {
    #[redmodel(pk)]
    id: u32,
}

// Clearing a required reference would leave an order that no longer loads.
#[derive(redmodel::Admin)]
struct Order {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(on_delete = "clear")]
    customer: Ref<Customer>,
}

// `cascade`, the deprecated spelling of `clear`, neither.
#[derive(redmodel::Admin)]
struct Invoice {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(on_delete = "cascade")]
    customer: Ref<Customer>,
}

// `clear` and `delete` are for reference fields, not relations.
#[derive(redmodel::Relation)]
#[redmodel(owner = Customer, member = Order, on_delete = "delete")]
struct CustomerOrders;

// Where the reference may be absent, `clear` is right.
#[derive(redmodel::Admin)]
struct Coupon {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(on_delete = "clear")]
    customer: Option<Ref<Customer>>,
}

fn main() {}
