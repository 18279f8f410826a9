//! The `on_delete` rules of reference fields, on every backend: a
//! required `Ref<M>` restricts its target's delete by default, an
//! `Option<Ref<M>>` is cleared by default, `on_delete = "delete"` deletes
//! the referring objects with their subtrees; a delete racing new
//! references leaves the data consistent (`check` clean); `check` names
//! each dangling reference by its rule and `repair` fixes it by that rule.

use redmodel::model::check::{check, repair, Kind};
use redmodel::model::Ref;
use redmodel::prelude::*;
use redmodel::{Db, Error};
use redmodel_suite::backend_tests;

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "rfcust")]
struct Customer {
    #[redmodel(pk)]
    id: u32,
    name: String,
}

/// A required reference with the default rule: `restrict`.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "rforder")]
struct Order {
    #[redmodel(pk)]
    id: u32,
    customer: Ref<Customer>,
}

/// A required reference whose objects go with their target.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "rfcart")]
struct Cart {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(on_delete = "delete")]
    customer: Ref<Customer>,
    #[redmodel(unique)]
    code: String,
}

/// A cart's sub-object: deleted with its cart.
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(table = "rfitem", owner = Cart)]
struct Item {
    #[redmodel(pk)]
    id: u32,
    qty: i64,
}

/// An optional reference with the default rule: `clear`.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "rfcoupon")]
struct Coupon {
    #[redmodel(pk)]
    id: u32,
    customer: Option<Ref<Customer>>,
}

async fn customer(db: &Db, id: u32) -> redmodel::Result<ObjectRef<Customer>> {
    Customer {
        id,
        name: format!("c{id}"),
    }
    .insert(db)
    .await
}

fn cart(id: u32, customer: u32) -> Cart {
    Cart {
        id,
        customer: Customer::at(customer),
        code: format!("code-{id}"),
    }
}

/// The findings of `check` about references and objects that no longer
/// load: none, on a consistent database.
async fn reference_findings(db: &Db) -> redmodel::Result<Vec<String>> {
    let report = check(db, |_| ()).await?;
    Ok(report
        .examples
        .iter()
        .filter(|f| {
            matches!(
                f.kind,
                Kind::DanglingReference | Kind::DanglingRequiredReference | Kind::Undecodable
            )
        })
        .map(ToString::to_string)
        .collect())
}

backend_tests! {
    exclusive async fn a_required_reference_restricts_the_delete_by_default(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let c1 = customer(db, 1).await?;
        Order { id: 1, customer: c1.clone() }.insert(db).await?;

        let err = c1.delete_cascade(db).await.unwrap_err();
        assert!(
            matches!(&err, Error::Restricted { key, by } if key == "rfcust:1" && by == "rforder:1"),
            "{err:?}"
        );
        assert!(Customer::load(db, 1).await?.is_some(), "a refused delete writes nothing");
        assert_eq!(Order::load(db, 1).await?.map(|o| o.customer), Some(c1.clone()));

        // Once the order names another customer, the delete goes.
        customer(db, 2).await?;
        Order::at(1).set(db, Order::CUSTOMER, Customer::at(2)).await?;
        assert!(c1.delete_cascade(db).await?);
        assert!(Order::load(db, 1).await?.is_some());
        assert_eq!(reference_findings(db).await?, Vec::<String>::new());
        Ok(())
    }
}

backend_tests! {
    exclusive async fn an_optional_reference_is_cleared_by_default(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let c1 = customer(db, 1).await?;
        Coupon { id: 1, customer: Some(c1.clone()) }.insert(db).await?;
        assert!(c1.delete_cascade(db).await?);
        assert_eq!(
            Coupon::load(db, 1).await?,
            Some(Coupon { id: 1, customer: None }),
            "the coupon stays, and loads"
        );
        assert_eq!(reference_findings(db).await?, Vec::<String>::new());
        Ok(())
    }
}

backend_tests! {
    exclusive async fn delete_deletes_the_referrers_with_their_subtrees(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let c1 = customer(db, 1).await?;
        for id in [1, 2] {
            let cart = cart(id, 1).insert(db).await?;
            Item { id: 1, qty: 3 }.insert_at(db, &cart).await?;
        }
        customer(db, 2).await?;
        cart(3, 2).insert(db).await?;

        assert!(c1.delete_cascade(db).await?);
        for id in [1, 2] {
            assert!(!Cart::at(id).exists(db).await?, "cart {id} goes with its customer");
            assert_eq!(
                Cart::at(id).tree_keys(db).await?,
                [ctx.stored(&format!("rfcart:{id}"))],
                "nothing is left under cart {id}"
            );
            let code = format!("code-{id}");
            assert_eq!(Cart::CODE_UNIQUE.find(db, code).await?, None, "its unique entry goes too");
        }
        assert!(Cart::at(3).exists(db).await?, "another customer's cart stays");
        assert_eq!(reference_findings(db).await?, Vec::<String>::new());

        // A restrict referrer refuses the delete before any referrer goes.
        cart(4, 2).insert(db).await?;
        Order { id: 1, customer: Customer::at(2) }.insert(db).await?;
        let err = Customer::at(2).delete_cascade(db).await.unwrap_err();
        assert!(matches!(&err, Error::Restricted { by, .. } if by == "rforder:1"), "{err:?}");
        assert!(Cart::at(3).exists(db).await? && Cart::at(4).exists(db).await?);
        Ok(())
    }
}

backend_tests! {
    /// A customer deleted while clients write orders, carts and coupons
    /// that name it: whichever way they interleave, `check` finds no
    /// dangling reference and no object that does not load. Each write
    /// either lands before the delete (which then refuses, deletes the
    /// cart, or clears the coupon) or fails with `NotFound`.
    exclusive async fn a_delete_racing_new_references_leaves_check_clean(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        for round in 0..16u32 {
            let id = 100 + round;
            let target = customer(db, id).await?;
            let delete = {
                let (db, target) = (db.clone(), target.clone());
                tokio::spawn(async move { target.delete_cascade(&db).await })
            };
            for _ in 0..round % 4 {
                tokio::task::yield_now().await;
            }
            let writes = [
                Order { id, customer: target.clone() }.insert(db).await.map(drop),
                cart(id, id).insert(db).await.map(drop),
                Coupon { id, customer: Some(target.clone()) }.insert(db).await.map(drop),
            ];
            race_settled(writes, delete).await?;
            assert_eq!(reference_findings(db).await?, Vec::<String>::new(), "round {round}");
            // Clear the way for the next round's customer.
            Order::at(id).delete(db).await?;
        }
        Ok(())
    }
}

backend_tests! {
    /// Objects moved to a customer while it is deleted: whichever way
    /// they interleave, each keeps a reference that holds. A move that
    /// lands first is seen by the delete (refused for an order, the cart
    /// deleted with the customer); one that loses fails with `NotFound`
    /// and leaves the object as it was, its index entries included.
    exclusive async fn a_reference_moved_to_an_object_being_deleted_leaves_the_referrer_whole(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let home = customer(db, 1).await?;
        for round in 0..16u32 {
            let id = 200 + round;
            let target = customer(db, id).await?;
            Order { id, customer: home.clone() }.insert(db).await?;
            cart(id, 1).insert(db).await?;
            let delete = {
                let (db, target) = (db.clone(), target.clone());
                tokio::spawn(async move { target.delete_cascade(&db).await })
            };
            for _ in 0..round % 4 {
                tokio::task::yield_now().await;
            }
            let moves = [
                Order::at(id).set(db, Order::CUSTOMER, target.clone()).await,
                Cart::at(id)
                    .set_many(db, [Cart::CUSTOMER.to(target.clone()), Cart::CODE.to(format!("moved-{id}"))])
                    .await,
            ];
            for moved in moves {
                match moved {
                    Ok(()) | Err(Error::NotFound { .. }) => {}
                    Err(other) => return Err(other),
                }
            }
            match delete.await.expect("the delete task") {
                Ok(_) | Err(Error::Restricted { .. }) => {}
                Err(other) => return Err(other),
            }
            let order = Order::load(db, id).await?.expect("an order is never deleted by a move");
            if !target.exists(db).await? {
                assert_eq!(order.customer, home, "round {round}: the order names the customer that stays");
                // A cart whose move landed first went with the customer.
                if let Some(cart) = Cart::load(db, id).await? {
                    let code = format!("code-{id}");
                    assert_eq!((&cart.customer, &cart.code), (&home, &code), "round {round}");
                    assert_eq!(Cart::CODE_UNIQUE.find(db, code).await?, Some(cart.clone()));
                }
                assert_eq!(Cart::CODE_UNIQUE.find(db, format!("moved-{id}")).await?, None);
            }
            assert_eq!(reference_findings(db).await?, Vec::<String>::new(), "round {round}");
            Order::at(id).delete(db).await?;
            Cart::at(id).delete(db).await?;
            Customer::at(id).delete(db).await?;
        }
        Ok(())
    }
}

backend_tests! {
    exclusive async fn check_names_dangling_references_and_repair_fixes_them_by_rule(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        customer(db, 1).await?;
        Order { id: 1, customer: Customer::at(1) }.insert(db).await?;
        let cart = cart(1, 1).insert(db).await?;
        Item { id: 1, qty: 1 }.insert_at(db, &cart).await?;
        Coupon { id: 1, customer: Some(Customer::at(1)) }.insert(db).await?;
        // Another program deletes the customer behind the model's back.
        db.query::<()>(redis::cmd("DEL").arg(ctx.stored("rfcust:1"))).await?;

        let report = check(db, |_| ()).await?;
        assert_eq!(report.count(Kind::DanglingRequiredReference), 2, "{report:?}");
        assert_eq!(report.count(Kind::DanglingReference), 1, "{report:?}");
        assert!(
            report.examples.iter().any(|f| f.kind == Kind::DanglingRequiredReference
                && f.key == "rforder:1"
                && f.detail.contains("restrict")),
            "{report:?}"
        );

        let fixed = repair(db, |_| ()).await?;
        assert_eq!(fixed.repaired.get(&Kind::DanglingRequiredReference), Some(&1));
        assert_eq!(fixed.repaired.get(&Kind::DanglingReference), Some(&1));
        assert!(!Cart::at(1).exists(db).await?, "the `delete` referrer is deleted");
        assert!(Cart::at(1).tree_keys(db).await?.len() == 1, "with its subtree");
        assert_eq!(Coupon::load(db, 1).await?, Some(Coupon { id: 1, customer: None }));
        // The `restrict` reference is left for a person: reported again.
        assert_eq!(fixed.after.count(Kind::DanglingRequiredReference), 1);
        assert_eq!(fixed.after.count(Kind::DanglingReference), 0);
        assert!(Order::load(db, 1).await?.is_some(), "left alone");
        Ok(())
    }
}

/// A customer's memo: a single-value sub-object (a string), which
/// reference fields name as they name a hash.
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(table = "rfmemo", owner = Customer, single)]
struct Memo {
    #[redmodel(pk)]
    topic: String,
    text: String,
}

/// References to a single-value target, one per rule: `restrict` (the
/// default of `Ref<M>`), `delete`, and `clear` (the default of
/// `Option<Ref<M>>`).
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "rfpin")]
struct Pin {
    #[redmodel(pk)]
    id: u32,
    memo: Ref<Memo>,
}

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "rfclip")]
struct Clip {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(on_delete = "delete")]
    memo: Ref<Memo>,
}

#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "rftack")]
struct Tack {
    #[redmodel(pk)]
    id: u32,
    memo: Option<Ref<Memo>>,
}

/// Customer `id` with its memo `home`: the memo.
async fn memo(db: &Db, id: u32) -> redmodel::Result<ObjectRef<Memo>> {
    let owner = customer(db, id).await?;
    let text = format!("memo of {id}");
    Memo {
        topic: "home".into(),
        text,
    }
    .insert_at(db, &owner)
    .await
}

backend_tests! {
    /// A reference to a single-value sub-object marks it without
    /// changing its value, and its admin's delete applies each rule to
    /// the references to it: `restrict` refuses, `delete` deletes the
    /// referrer, `clear` removes the field; in either layout.
    exclusive async fn references_to_a_single_value_follow_their_rules(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            let db = &db;
            db.query::<()>(&redis::cmd("FLUSHALL")).await?;
            let home = memo(db, 1).await?;
            Pin { id: 1, memo: home.clone() }.insert(db).await?;
            Clip { id: 1, memo: home.clone() }.insert(db).await?;
            Tack { id: 1, memo: Some(home.clone()) }.insert(db).await?;
            assert_eq!(home.get_value(db).await?.as_deref(), Some("memo of 1"), "the marks change no byte");

            let err = Customer::at(1).delete_cascade(db).await.unwrap_err();
            assert!(
                matches!(&err, Error::Restricted { key, by } if key == "rfcust:1:rfmemo:home" && by == "rfpin:1"),
                "{err:?}"
            );
            assert!(home.exists(db).await?, "a refused delete writes nothing");
            Pin::at(1).delete(db).await?;
            assert!(Customer::at(1).delete_cascade(db).await?);
            assert!(!home.exists(db).await?);
            assert!(!Clip::at(1).exists(db).await?, "the `delete` referrer goes with it");
            assert_eq!(Tack::load(db, 1).await?, Some(Tack { id: 1, memo: None }));
            assert_eq!(reference_findings(db).await?, Vec::<String>::new(), "{:?}", db.key_layout());
        }
        Ok(())
    }
}

backend_tests! {
    /// A customer deleted while clients write references to its memo (a
    /// single value) by each rule: whichever way they interleave, `check`
    /// finds no dangling reference, in either layout. Each write lands
    /// before the delete (which then refuses, deletes the clip or clears
    /// the tack) or fails with `NotFound`. (Without the mark on the memo
    /// the delete's WATCH misses a reference written while it reads.)
    exclusive async fn a_delete_racing_new_references_to_a_single_value_leaves_check_clean(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            let db = &db;
            db.query::<()>(&redis::cmd("FLUSHALL")).await?;
            for round in 0..16u32 {
                let id = 300 + round;
                let target = memo(db, id).await?;
                let delete = {
                    let db = db.clone();
                    tokio::spawn(async move { Customer::at(id).delete_cascade(&db).await })
                };
                for _ in 0..round % 4 {
                    tokio::task::yield_now().await;
                }
                let writes = [
                    Pin { id, memo: target.clone() }.insert(db).await.map(drop),
                    Clip { id, memo: target.clone() }.insert(db).await.map(drop),
                    Tack { id, memo: Some(target.clone()) }.insert(db).await.map(drop),
                ];
                race_settled(writes, delete).await?;
                let findings = reference_findings(db).await?;
                assert_eq!(findings, Vec::<String>::new(), "{:?} round {round}", db.key_layout());
                Pin::at(id).delete(db).await?;
            }
        }
        Ok(())
    }
}

/// The outcomes of a race between a cascade delete and new references to
/// its target: a write may lose to the delete (`NotFound`) and the delete
/// may be refused by a reference that landed first (`Restricted`); any
/// other error fails the test.
async fn race_settled<T>(
    writes: [redmodel::Result<()>; 3],
    delete: tokio::task::JoinHandle<redmodel::Result<T>>,
) -> redmodel::Result<()> {
    for write in writes {
        match write {
            Ok(()) | Err(Error::NotFound { .. }) => {}
            Err(other) => return Err(other),
        }
    }
    match delete.await.expect("the delete task") {
        Ok(_) | Err(Error::Restricted { .. }) => Ok(()),
        Err(other) => Err(other),
    }
}
