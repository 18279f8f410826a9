//! Typed optimistic transactions (`Db::transaction`) on every backend, in
//! the db's own key layout and in the cluster layout forced on it (a
//! cluster backend has it already): concurrent typed transfers that must
//! lose no update and keep the leaderboard equal to the fields, and each
//! way a commit can end.

use redmodel::prelude::*;
use redmodel::redis::cluster_routing::Slot;
use redmodel::{Error, KeyLayout};
use redmodel_suite::{backend_tests, Rng};

/// `wallet:1` = {points (sorted), nick (unique), tags (tags)}.
#[derive(Admin, Debug, Clone, PartialEq)]
struct Wallet {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(sorted)]
    points: i64,
    #[redmodel(unique)]
    nick: Option<String>,
    #[redmodel(tags)]
    tags: Vec<String>,
}

fn wallet(id: u32, points: i64) -> Wallet {
    Wallet {
        id,
        points,
        nick: None,
        tags: Vec::new(),
    }
}

const WALLETS: usize = 16;
const START: i64 = 1_000;
const TASKS: usize = 16;
const TRANSFERS: usize = 25;
const AMOUNT: i64 = 10;

/// `n` wallet ids whose keys share one slot, so that a transaction over
/// any two of them can run on a Redis Cluster (WATCH and EXEC on one node).
/// In the plain layout, any ids would do; the same ones are used.
fn same_slot_ids(n: usize) -> Vec<u32> {
    let slot = |id: u32| Slot::for_key(format!("wallet:{id}"));
    let first = slot(1);
    (1..).filter(|id| slot(*id) == first).take(n).collect()
}

async fn flush(db: &Db) -> redmodel::Result<()> {
    db.query::<()>(&redis::cmd("FLUSHALL")).await
}

async fn zscore(db: &Db, id: u32) -> redmodel::Result<Option<f64>> {
    db.query(
        redis::cmd("ZSCORE")
            .arg("wallet:_sorted:points")
            .arg(db.key_layout().stored(&format!("wallet:{id}")).as_ref()),
    )
    .await
}

/// One task's typed transfers: load both wallets, write both new totals
/// as absolute values (so that without WATCH a concurrent transfer would
/// be lost, and the leaderboard would drift from the fields).
async fn transfers(db: Db, ids: Vec<u32>, task: usize) -> redmodel::Result<u32> {
    let mut rng = Rng::for_task(task);
    let mut committed = 0;
    for _ in 0..TRANSFERS {
        let from = rng.below(ids.len());
        let to = (from + 1 + rng.below(ids.len() - 1)) % ids.len();
        let (from, to) = (Wallet::at(ids[from]), Wallet::at(ids[to]));
        let (from, to) = (&from, &to);
        let moved = db
            .transaction_with_attempts(10_000, |tx| async move {
                let a = tx.load(from).await?.ok_or(Error::Misuse("gone".into()))?;
                tokio::task::yield_now().await;
                let b = tx.load(to).await?.ok_or(Error::Misuse("gone".into()))?;
                tokio::task::yield_now().await;
                if a.points < AMOUNT {
                    return Ok(false);
                }
                tx.set(from, Wallet::POINTS, a.points - AMOUNT);
                tx.set(to, Wallet::POINTS, b.points + AMOUNT);
                Ok::<_, Error>(true)
            })
            .await;
        let moved = match moved {
            Ok(moved) => moved,
            // On a loaded machine a transaction may wait longer than the
            // pool allows for one of its connections (each task holds its
            // own through its retries): refused (`Error::Busy`) before it
            // read or wrote anything, it is a transfer not made, which the
            // totals below must show.
            Err(e) if e.is_transient() => {
                eprintln!("task {task}: a transfer refused as transient: {e}");
                false
            }
            Err(e) => return Err(e),
        };
        committed += u32::from(moved);
    }
    Ok(committed)
}

backend_tests! {
    /// 16 tasks x 25 typed transfers between 16 wallets: the total is
    /// unchanged and every wallet's score in the sorted index equals its
    /// field, in both layouts.
    exclusive async fn typed_transfers_keep_the_total_and_the_index(ctx) -> redmodel::Result<()> {
        let ids = same_slot_ids(WALLETS);
        for db in ctx.layouts() {
            flush(&db).await?;
            let started = std::time::Instant::now();
            for id in &ids {
                wallet(*id, START).insert(&db).await?;
            }
            let tasks: Vec<_> = (0..TASKS)
                .map(|task| tokio::spawn(transfers(db.clone(), ids.clone(), task)))
                .collect();
            let mut committed = 0;
            for task in tasks {
                committed += task.await.expect("transfer task panicked")?;
            }
            let mut total = 0;
            for id in &ids {
                let w = Wallet::at(*id).load(&db).await?.expect("wallet");
                total += w.points;
                assert_eq!(
                    zscore(&db, *id).await?,
                    Some(w.points as f64),
                    "the index follows wallet {id} ({:?} layout)",
                    db.key_layout()
                );
            }
            assert_eq!(total, START * WALLETS as i64, "no update lost ({:?} layout)", db.key_layout());
            eprintln!(
                "{} ({:?} layout): {committed} transfers committed in {:?}",
                ctx.backend,
                db.key_layout(),
                started.elapsed()
            );
            assert!(committed > (TASKS * TRANSFERS / 2) as u32, "only {committed} committed");
            assert_eq!(Wallet::POINTS_SORTED.len(&db).await?, WALLETS as u64);
        }
        Ok(())
    }

    /// A write of an indexed field through a transaction keeps each kind
    /// of index (unique claim and release, tag sets, sorted score), counts
    /// a full write, and a delete takes the object out of every index.
    exclusive async fn typed_writes_keep_every_index(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&db).await?;
            let w = Wallet::at(1);
            let w = &w;
            db.transaction(|tx| async move {
                tx.insert(w, &Wallet { nick: Some("ada".into()), tags: vec!["red".into()], ..wallet(1, 5) });
                Ok::<_, Error>(())
            })
            .await?;
            assert_eq!(w.write_count(&db).await?, 1);
            assert_eq!(Wallet::NICK_UNIQUE.find(&db, "ada").await?.map(|w| w.id), Some(1));
            assert_eq!(Wallet::TAGS_TAGS.with(&db, "red").await?.len(), 1);

            db.transaction(|tx| async move {
                let n = tx.get(w, Wallet::POINTS).await?.unwrap_or(0);
                tx.set_many(w, [Wallet::NICK.to(Some("bob".to_string())), Wallet::TAGS.to(vec!["blue".to_string()])]);
                tx.set(w, Wallet::POINTS, n + 1);
                Ok::<_, Error>(())
            })
            .await?;
            assert_eq!(Wallet::NICK_UNIQUE.find(&db, "ada").await?, None, "old value released");
            assert_eq!(Wallet::NICK_UNIQUE.find(&db, "bob").await?.map(|w| w.points), Some(6));
            assert!(Wallet::TAGS_TAGS.with(&db, "red").await?.is_empty());
            assert_eq!(Wallet::TAGS_TAGS.with(&db, "blue").await?.len(), 1);
            assert_eq!(zscore(&db, 1).await?, Some(6.0));

            db.transaction(|tx| async move {
                tx.delete(w);
                Ok::<_, Error>(())
            })
            .await?;
            assert!(!w.exists(&db).await?);
            assert_eq!(zscore(&db, 1).await?, None);
            let holder: Option<String> = db.query(redis::cmd("LINDEX").arg("wallet:_unique:nick:bob").arg(0)).await?;
            assert_eq!(holder, None, "unique entry released");
            let n: u64 = db.query(redis::cmd("SCARD").arg(Wallet::TAGS_TAGS.key_in(&db, "blue").unwrap())).await?;
            assert_eq!(n, 0, "tag entry removed");
        }
        Ok(())
    }

    /// A transaction that writes an object whose key another program
    /// filled with another type is refused whole, naming the key: the
    /// other object it writes, and that object's index entry, stay as
    /// they were.
    exclusive async fn a_commit_over_a_key_of_another_type_writes_nothing(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&db).await?;
            let ids = same_slot_ids(2);
            wallet(ids[0], 5).insert(&db).await?;
            let plain = format!("wallet:{}", ids[1]);
            let stored = db.key_layout().stored(&plain).into_owned();
            db.query::<()>(redis::cmd("RPUSH").arg(&stored).arg("x")).await?;
            let (a, b) = (Wallet::at(ids[0]), Wallet::at(ids[1]));
            let (a, b) = (&a, &b);
            let err = db
                .transaction(|tx| async move {
                    tx.set(a, Wallet::POINTS, 6);
                    tx.set(b, Wallet::POINTS, 7);
                    Ok::<_, Error>(())
                })
                .await
                .unwrap_err();
            assert!(
                matches!(&err, Error::UnexpectedType { key, expected: "hash" } if *key == plain),
                "{err:?} ({:?} layout)",
                db.key_layout()
            );
            assert_eq!(a.load(&db).await?, Some(wallet(ids[0], 5)), "{:?} layout", db.key_layout());
            assert_eq!(zscore(&db, ids[0]).await?, Some(5.0));
        }
        Ok(())
    }

    /// What a commit refuses writes nothing at all, not even the
    /// transaction's other writes: a unique value another object holds,
    /// one value claimed twice in one transaction, a field write on a
    /// missing object, a score that cannot be one.
    exclusive async fn a_refused_commit_writes_nothing(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&db).await?;
            let ids = same_slot_ids(3);
            let ids = &ids;
            let (a, b, c) = (&Wallet::at(ids[0]), &Wallet::at(ids[1]), &Wallet::at(ids[2]));
            Wallet { nick: Some("ada".into()), ..wallet(ids[0], 1) }.insert(&db).await?;
            wallet(ids[1], 2).insert(&db).await?;

            let taken = db
                .transaction(|tx| async move {
                    tx.set(a, Wallet::POINTS, 100);
                    tx.set(b, Wallet::NICK, Some("ada".to_string()));
                    Ok::<_, Error>(())
                })
                .await
                .unwrap_err();
            assert!(matches!(&taken, Error::Unique { field: "nick", .. }), "{taken}");

            let twice = db
                .transaction(|tx| async move {
                    tx.set(b, Wallet::NICK, Some("cy".to_string()));
                    tx.insert(c, &Wallet { nick: Some("cy".into()), ..wallet(ids[2], 3) });
                    Ok::<_, Error>(())
                })
                .await
                .unwrap_err();
            assert!(matches!(&twice, Error::Unique { value, .. } if value == "cy"), "{twice}");

            let missing = db
                .transaction(|tx| async move {
                    tx.set(a, Wallet::POINTS, 100);
                    tx.set(c, Wallet::POINTS, 3);
                    Ok::<_, Error>(())
                })
                .await
                .unwrap_err();
            assert!(matches!(&missing, Error::NotFound { key } if *key == format!("wallet:{}", ids[2])), "{missing}");

            let overflow = db
                .transaction(|tx| async move {
                    tx.set(a, Wallet::POINTS, 100);
                    tx.set(b, Wallet::POINTS, 1 << 60);
                    Ok::<_, Error>(())
                })
                .await
                .unwrap_err();
            assert!(matches!(overflow, Error::ScoreOverflow { .. }), "{overflow}");

            assert_eq!(a.load(&db).await?.map(|w| w.points), Some(1), "{:?} layout", db.key_layout());
            assert_eq!(b.load(&db).await?, Some(wallet(ids[1], 2)));
            assert!(!c.exists(&db).await?);
            assert_eq!(Wallet::NICK_UNIQUE.find(&db, "cy").await?, None);
            assert_eq!(zscore(&db, ids[0]).await?, Some(1.0));
        }
        Ok(())
    }

    /// A write that lands between a step's read and its commit makes the
    /// step run again, on the new value: nothing of the first attempt is
    /// written. A field write on an object the step saw missing is
    /// `NotFound`; a delete then a field write of one object too.
    exclusive async fn a_concurrent_write_reruns_the_step(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&db).await?;
            wallet(1, 10).insert(&db).await?;
            let (w, other) = (&Wallet::at(1), &db);
            let attempts = db
                .transaction(|tx| async move {
                    let points = tx.get(w, Wallet::POINTS).await?.unwrap_or(0);
                    if tx.attempt() == 1 {
                        // Another client's write, after the WATCH.
                        w.set(other, Wallet::POINTS, 50).await?;
                    }
                    tx.set(w, Wallet::POINTS, points + 1);
                    Ok::<_, Error>(tx.attempt())
                })
                .await?;
            assert_eq!(attempts, 2);
            assert_eq!(w.get(&db, Wallet::POINTS).await?, Some(51));
            assert_eq!(zscore(&db, 1).await?, Some(51.0));

            let gone = Wallet::at(2);
            let gone = &gone;
            let err = db
                .transaction(|tx| async move {
                    assert_eq!(tx.load(gone).await?, None);
                    tx.set(gone, Wallet::POINTS, 1);
                    Ok::<_, Error>(())
                })
                .await
                .unwrap_err();
            assert!(matches!(&err, Error::NotFound { key } if key == "wallet:2"), "{err}");
            let err = db
                .transaction(|tx| async move {
                    tx.delete(w);
                    tx.set(w, Wallet::POINTS, 1);
                    Ok::<_, Error>(())
                })
                .await
                .unwrap_err();
            assert!(matches!(&err, Error::NotFound { .. }), "{err}");
            assert!(w.exists(&db).await?, "nothing written");
            assert!(!gone.exists(&db).await?);
        }
        Ok(())
    }

    /// In the cluster layout, a transaction's keys must share a slot: one
    /// in another slot is refused before anything is sent.
    exclusive async fn a_transaction_across_slots_is_refused(ctx) -> redmodel::Result<()> {
        let db = ctx.db.with_key_layout(KeyLayout::Cluster);
        flush(&db).await?;
        let slot = |id: u32| Slot::for_key(format!("wallet:{id}"));
        let far = (2..).find(|id| slot(*id) != slot(1)).expect("another slot");
        wallet(1, 1).insert(&db).await?;
        wallet(far, 1).insert(&db).await?;
        let (a, b) = (&Wallet::at(1), &Wallet::at(far));
        let err = db
            .transaction(|tx| async move {
                tx.load(a).await?;
                tx.set(b, Wallet::POINTS, 7);
                Ok::<_, Error>(())
            })
            .await
            .unwrap_err();
        assert!(matches!(&err, Error::CrossSlot { keys } if keys.len() == 2), "{err}");
        assert_eq!(b.get(&db, Wallet::POINTS).await?, Some(1));
        Ok(())
    }
}

/// The shop of the order-placement tests: `customer:1`, `product:1` =
/// {stock (sorted), sold, price}, `order:1` = {customer, total (sorted)}
/// with its lines `order:1:line:0`, and `customer:1:order` = [order:1]
/// kept in step with `order:1:customer` = [customer:1].
mod shop {
    use super::*;

    #[derive(Admin, Debug, Clone, PartialEq)]
    pub struct Customer {
        #[redmodel(pk)]
        pub id: u32,
        pub name: String,
    }

    #[derive(Admin, Debug, Clone, PartialEq)]
    pub struct Product {
        #[redmodel(pk)]
        pub id: u32,
        #[redmodel(sorted)]
        pub stock: i64,
        pub sold: u64,
        pub price: i64,
    }

    #[derive(Admin, Debug, Clone, PartialEq)]
    pub struct Order {
        #[redmodel(pk)]
        pub id: u32,
        pub customer: u32,
        #[redmodel(sorted)]
        pub total: i64,
    }

    #[derive(SubObject, Debug, Clone, PartialEq)]
    #[redmodel(owner = Order)]
    pub struct Line {
        #[redmodel(pk)]
        pub n: u32,
        pub product: u32,
        pub qty: i64,
    }

    #[derive(Relation)]
    #[redmodel(table = "order", owner = Customer, member = Order, inverse = OrderCustomer)]
    pub struct CustomerOrders;

    #[derive(Relation)]
    #[redmodel(table = "customer", owner = Order, member = Customer, inverse = CustomerOrders)]
    pub struct OrderCustomer;

    /// The caller's own error: what the step aborts with.
    #[derive(Debug)]
    pub enum ShopError {
        OutOfStock,
        Db(Error),
    }

    impl From<Error> for ShopError {
        fn from(err: Error) -> Self {
            ShopError::Db(err)
        }
    }

    /// `n` ids of `table` whose keys share the slot of `customer:1`, so
    /// that one transaction can hold a customer, products and orders on a
    /// Redis Cluster (there is no co-location of other admins yet: the
    /// tests pick their ids). In the plain layout any ids would do.
    pub fn ids_beside_customer(table: &str, n: usize) -> Vec<u32> {
        let target = Slot::for_key("customer:1");
        (1..)
            .filter(|id| Slot::for_key(format!("{table}:{id}")) == target)
            .take(n)
            .collect()
    }

    /// Places order `order` for `customer` of `qty` units of each product
    /// in `items`, atomically: each product's stock goes down (an
    /// increment) and its `sold` up, one line per product, the order with
    /// its total, and the customer's link. Aborts with
    /// [`ShopError::OutOfStock`] if a product has fewer units than asked.
    pub async fn place_order(
        db: &Db,
        customer: u32,
        order: u32,
        items: &[(u32, i64)],
    ) -> Result<i64, ShopError> {
        let (customer, order) = (&Customer::at(customer), &Order::at(order));
        db.transaction_with_attempts(1_000, |tx| async move {
            let mut total = 0;
            for (n, (product, qty)) in (0..).zip(items) {
                let product_ref = Product::at(*product);
                let p = tx.load(&product_ref).await?.ok_or(ShopError::OutOfStock)?;
                tokio::task::yield_now().await;
                if p.stock < *qty {
                    return Err(ShopError::OutOfStock);
                }
                tx.incr(&product_ref, Product::STOCK, -qty).await?;
                tx.incr(&product_ref, Product::SOLD, *qty).await?;
                tx.insert(
                    &order.sub::<Line>(n),
                    &Line {
                        n,
                        product: *product,
                        qty: *qty,
                    },
                );
                total += qty * p.price;
            }
            tx.insert(
                order,
                &Order {
                    id: *order.pk(),
                    customer: *customer.pk(),
                    total,
                },
            );
            tx.link(&customer.relation::<CustomerOrders>(), order);
            Ok(total)
        })
        .await
    }

    /// What the shop holds for order `order`: the order, its lines, and
    /// whether each side of the customer's link lists it.
    pub async fn order_state(
        db: &Db,
        customer: u32,
        order: u32,
    ) -> redmodel::Result<(Option<Order>, Vec<Line>, bool, bool)> {
        let order = Order::at(order);
        let mut lines = Vec::new();
        for n in 0..4 {
            if let Some(line) = order.sub::<Line>(n).load(db).await? {
                lines.push(line);
            }
        }
        let customer = Customer::at(customer);
        let listed = customer
            .relation::<CustomerOrders>()
            .members(db)
            .await?
            .contains(&order);
        let back = order
            .relation::<OrderCustomer>()
            .members(db)
            .await?
            .contains(&customer);
        Ok((order.load(db).await?, lines, listed, back))
    }

    pub async fn stock_score(db: &Db, product: u32) -> redmodel::Result<Option<f64>> {
        db.query(
            redis::cmd("ZSCORE").arg("product:_sorted:stock").arg(
                db.key_layout()
                    .stored(&format!("product:{product}"))
                    .as_ref(),
            ),
        )
        .await
    }
}

use shop::{
    ids_beside_customer, order_state, place_order, stock_score, Customer, CustomerOrders, Line,
    Order, Product, ShopError,
};

backend_tests! {
    /// 16 tasks each order one unit of the last 10: exactly 10 orders are
    /// placed, 6 abort with the caller's `OutOfStock`, and the stock, its
    /// index, the orders, their lines and both sides of the links agree.
    exclusive async fn racing_orders_sell_exactly_the_stock(ctx) -> redmodel::Result<()> {
        const BUYERS: usize = 16;
        const LAST: i64 = 10;
        let orders = ids_beside_customer("order", BUYERS);
        let product = ids_beside_customer("product", 1)[0];
        for db in ctx.layouts() {
            flush(&db).await?;
            Customer { id: 1, name: "ada".into() }.insert(&db).await?;
            Product { id: product, stock: LAST, sold: 0, price: 3 }.insert(&db).await?;
            let tasks: Vec<_> = orders
                .iter()
                .map(|order| {
                    let (db, order) = (db.clone(), *order);
                    tokio::spawn(async move { place_order(&db, 1, order, &[(product, 1)]).await })
                })
                .collect();
            let (mut placed, mut refused) = (Vec::new(), 0);
            for (order, task) in orders.iter().zip(tasks) {
                match task.await.expect("order task panicked") {
                    Ok(total) => {
                        assert_eq!(total, 3);
                        placed.push(*order);
                    }
                    Err(ShopError::OutOfStock) => refused += 1,
                    Err(ShopError::Db(e)) => return Err(e),
                }
            }
            let layout = db.key_layout();
            assert_eq!(placed.len() as i64, LAST, "exactly the stock sold ({layout:?} layout)");
            assert_eq!(refused, BUYERS - LAST as usize);
            let p = Product::at(product).load(&db).await?.expect("product");
            assert_eq!((p.stock, p.sold), (0, LAST as u64), "{layout:?} layout");
            assert_eq!(stock_score(&db, product).await?, Some(0.0), "the index follows the stock");
            let linked = Customer::at(1).relation::<CustomerOrders>().count(&db).await?;
            assert_eq!(linked, LAST as u64);
            for order in &orders {
                let (o, lines, listed, back) = order_state(&db, 1, *order).await?;
                let is_placed = placed.contains(order);
                assert_eq!(o.is_some(), is_placed, "order {order}");
                assert_eq!(lines.len(), usize::from(is_placed), "order {order}'s lines");
                assert_eq!((listed, back), (is_placed, is_placed), "order {order}'s links");
            }
            assert_eq!(Order::TOTAL_SORTED.len(&db).await?, LAST as u64);
        }
        Ok(())
    }

    /// A step that returns the caller's error aborts with nothing written,
    /// and the error comes back unchanged: the first product's stock was
    /// already decremented in the step, the second is short. A commit the
    /// library refuses (a link to a missing customer) writes nothing
    /// either, and comes back as the caller's `Db` variant.
    exclusive async fn an_aborted_order_writes_nothing(ctx) -> redmodel::Result<()> {
        let products = ids_beside_customer("product", 2);
        let order = ids_beside_customer("order", 1)[0];
        let (a, b) = (products[0], products[1]);
        for db in ctx.layouts() {
            flush(&db).await?;
            Customer { id: 1, name: "ada".into() }.insert(&db).await?;
            Product { id: a, stock: 5, sold: 0, price: 2 }.insert(&db).await?;
            Product { id: b, stock: 1, sold: 0, price: 7 }.insert(&db).await?;

            let err = place_order(&db, 1, order, &[(a, 2), (b, 3)]).await.unwrap_err();
            assert!(matches!(err, ShopError::OutOfStock), "{err:?}");

            // `customer:9` does not exist: the link's guard refuses the
            // commit. (Its slot is not customer 1's: the plain layout
            // only.)
            if db.key_layout() == KeyLayout::Plain {
                let err = place_order(&db, 9, order, &[(a, 2)]).await.unwrap_err();
                assert!(
                    matches!(&err, ShopError::Db(Error::NotFound { key }) if key == "customer:9"),
                    "{err:?}"
                );
            }

            for (product, stock) in [(a, 5), (b, 1)] {
                let p = Product::at(product).load(&db).await?.expect("product");
                assert_eq!((p.stock, p.sold), (stock, 0), "{:?} layout", db.key_layout());
                assert_eq!(stock_score(&db, product).await?, Some(stock as f64));
            }
            assert_eq!(order_state(&db, 1, order).await?, (None, Vec::new(), false, false));
            assert_eq!(Order::TOTAL_SORTED.len(&db).await?, 0);
        }
        Ok(())
    }

    /// An order, its lines, the customer's link both ways and the stock
    /// move together: placed in one transaction, cancelled in another
    /// (unlink, sub-objects and the order deleted, the stock put back);
    /// an order's expiry is set and removed with it.
    exclusive async fn an_order_and_its_stock_move_together(ctx) -> redmodel::Result<()> {
        let products = ids_beside_customer("product", 2);
        let order_id = ids_beside_customer("order", 1)[0];
        let (a, b) = (products[0], products[1]);
        for db in ctx.layouts() {
            flush(&db).await?;
            Customer { id: 1, name: "ada".into() }.insert(&db).await?;
            Product { id: a, stock: 5, sold: 0, price: 2 }.insert(&db).await?;
            Product { id: b, stock: 4, sold: 0, price: 7 }.insert(&db).await?;

            let total = place_order(&db, 1, order_id, &[(a, 2), (b, 3)]).await.map_err(|e| match e {
                ShopError::Db(e) => e,
                ShopError::OutOfStock => Error::Misuse("out of stock".into()),
            })?;
            assert_eq!(total, 2 * 2 + 3 * 7);
            let (order, lines, listed, back) = order_state(&db, 1, order_id).await?;
            assert_eq!(order, Some(Order { id: order_id, customer: 1, total }));
            assert_eq!(lines, vec![Line { n: 0, product: a, qty: 2 }, Line { n: 1, product: b, qty: 3 }]);
            assert!(listed && back, "linked both ways");
            assert_eq!(stock_score(&db, a).await?, Some(3.0));
            assert_eq!(stock_score(&db, b).await?, Some(1.0));
            assert_eq!(Order::TOTAL_SORTED.top(&db, 1).await?[0].total, total);

            // Unpaid orders expire; paying persists it.
            let (customer, order) = (&Customer::at(1), &Order::at(order_id));
            db.transaction(|tx| async move {
                tx.expire(order, std::time::Duration::from_secs(600));
                tx.expire(&order.sub::<Line>(0u32), std::time::Duration::from_secs(600));
                Ok::<_, Error>(())
            })
            .await?;
            assert!(matches!(order.ttl(&db).await?, Ttl::Expires(d) if d.as_secs() > 500));
            assert!(matches!(order.sub::<Line>(0u32).ttl(&db).await?, Ttl::Expires(_)));
            db.transaction(|tx| async move {
                tx.persist(order);
                tx.persist(&order.sub::<Line>(0u32));
                Ok::<_, Error>(())
            })
            .await?;
            assert_eq!(order.ttl(&db).await?, Ttl::Persistent);
            assert_eq!(order.sub::<Line>(0u32).ttl(&db).await?, Ttl::Persistent);

            // The cancellation: every part of the order goes, the stock
            // comes back.
            db.transaction(|tx| async move {
                for n in 0..2u32 {
                    let line = order.sub::<Line>(n);
                    let Some(l) = tx.load(&line).await? else { continue };
                    let product = Product::at(l.product);
                    tx.incr(&product, Product::STOCK, l.qty).await?;
                    tx.incr(&product, Product::SOLD, -l.qty).await?;
                    tx.delete(&line);
                }
                tx.unlink(&customer.relation::<CustomerOrders>(), order);
                tx.delete(order);
                Ok::<_, Error>(())
            })
            .await?;
            assert_eq!(order_state(&db, 1, order_id).await?, (None, Vec::new(), false, false));
            for (product, stock) in [(a, 5), (b, 4)] {
                let p = Product::at(product).load(&db).await?.expect("product");
                assert_eq!((p.stock, p.sold), (stock, 0), "{:?} layout", db.key_layout());
                assert_eq!(stock_score(&db, product).await?, Some(stock as f64));
            }
            assert_eq!(Order::TOTAL_SORTED.len(&db).await?, 0);
        }
        Ok(())
    }

    /// 8 tasks x 25 transactions each move a random amount between a
    /// product's `stock` (sorted) and `sold` (no index) with `incr`, the
    /// same field twice in some: no update is lost, and the sorted index
    /// equals the field.
    exclusive async fn racing_increments_keep_the_sorted_index_exact(ctx) -> redmodel::Result<()> {
        const TASKS: usize = 8;
        const MOVES: usize = 25;
        const START: i64 = 1_000;
        let products = ids_beside_customer("product", 3);
        for db in ctx.layouts() {
            flush(&db).await?;
            for id in &products {
                Product { id: *id, stock: START, sold: 0, price: 1 }.insert(&db).await?;
            }
            let tasks: Vec<_> = (0..TASKS)
                .map(|task| {
                    let (db, products) = (db.clone(), products.clone());
                    tokio::spawn(async move {
                        let mut rng = Rng::for_task(task);
                        for _ in 0..MOVES {
                            let product = Product::at(products[rng.below(products.len())]);
                            let amount = rng.below(5) as i64 + 1;
                            let twice = rng.below(2) == 0;
                            let product = &product;
                            db.transaction_with_attempts(10_000, |tx| async move {
                                tx.incr(product, Product::STOCK, -amount).await?;
                                tokio::task::yield_now().await;
                                if twice {
                                    tx.incr(product, Product::STOCK, -amount).await?;
                                    tx.incr(product, Product::SOLD, amount).await?;
                                }
                                let sold = tx.incr(product, Product::SOLD, amount).await?;
                                assert!(sold >= amount as u64);
                                Ok::<_, Error>(())
                            })
                            .await?;
                        }
                        Ok::<_, Error>(())
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("increment task panicked")?;
            }
            let mut sold = 0;
            for id in &products {
                let p = Product::at(*id).load(&db).await?.expect("product");
                assert_eq!(p.stock + p.sold as i64, START, "no update lost ({:?} layout)", db.key_layout());
                assert_eq!(stock_score(&db, *id).await?, Some(p.stock as f64), "the index follows product {id}");
                sold += p.sold;
            }
            assert!(sold >= (TASKS * MOVES) as u64);
        }
        Ok(())
    }

    /// In the cluster layout, a link to an order in another slot than the
    /// customer's is refused before anything is sent, naming both keys.
    exclusive async fn a_link_across_slots_is_refused(ctx) -> redmodel::Result<()> {
        let db = ctx.db.with_key_layout(KeyLayout::Cluster);
        flush(&db).await?;
        Customer { id: 1, name: "ada".into() }.insert(&db).await?;
        let far = (1..)
            .find(|id| Slot::for_key(format!("order:{id}")) != Slot::for_key("customer:1"))
            .expect("another slot");
        let (customer, order) = (&Customer::at(1), &Order::at(far));
        let err = db
            .transaction(|tx| async move {
                tx.insert(order, &Order { id: far, customer: 1, total: 0 });
                tx.link(&customer.relation::<CustomerOrders>(), order);
                Ok::<_, Error>(())
            })
            .await
            .unwrap_err();
        assert!(matches!(&err, Error::CrossSlot { keys } if keys.len() == 2), "{err}");
        assert!(!order.exists(&db).await?);
        Ok(())
    }
}

/// Orders placed by 4 tasks while the server is killed (SIGKILL) under
/// them, with `appendonly yes` and `appendfsync always`: restarted from
/// its AOF, the server holds whole orders only. Every order there has its
/// line and both sides of its link, the product's stock and `sold` agree
/// with the orders, and every order reported placed is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_order_restarts_with_whole_orders_only() {
    use redmodel_suite::{configured_server_or_skip, RedisServer};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    const STOCK: i64 = 1_000_000;
    const PRODUCT: u32 = 7;
    let Some(mut server) = configured_server_or_skip(
        "AOF test",
        RedisServer::builder()
            .appendonly(true)
            .config("appendfsync always"),
    ) else {
        return;
    };
    let db = Db::connect(&server.url()).await.expect("connect");
    Customer {
        id: 1,
        name: "ada".into(),
    }
    .insert(&db)
    .await
    .expect("customer");
    Product {
        id: PRODUCT,
        stock: STOCK,
        sold: 0,
        price: 1,
    }
    .insert(&db)
    .await
    .expect("product");

    let placed = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..4u32)
        .map(|task| {
            let (db, placed) = (db.clone(), placed.clone());
            tokio::spawn(async move {
                for n in 0.. {
                    let order = task * 100_000 + n;
                    match place_order(&db, 1, order, &[(PRODUCT, 1)]).await {
                        Ok(_) => placed.lock().expect("not poisoned").push(order),
                        Err(_) => return,
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while placed.lock().expect("not poisoned").len() < 100 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill();
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("an order task ends once the server is gone")
            .expect("order task panicked");
    }
    let placed: Vec<u32> = placed.lock().expect("not poisoned").clone();
    assert!(
        placed.len() >= 100,
        "only {} orders before the kill",
        placed.len()
    );

    server.restart().expect("restart from the AOF");
    let deadline = Instant::now() + Duration::from_secs(30);
    while db.query::<String>(&redis::cmd("PING")).await.is_err() {
        assert!(Instant::now() < deadline, "the server never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let orders = Order::load_all(&db).await.expect("orders");
    let product = Product::at(PRODUCT)
        .load(&db)
        .await
        .expect("load")
        .expect("product");
    eprintln!(
        "{} orders placed before the kill, {} in the AOF",
        placed.len(),
        orders.len()
    );
    assert_eq!(
        product.sold,
        orders.len() as u64,
        "each order's sale and no other"
    );
    assert_eq!(
        product.stock,
        STOCK - orders.len() as i64,
        "the stock follows the orders"
    );
    assert_eq!(
        stock_score(&db, PRODUCT).await.expect("score"),
        Some(product.stock as f64)
    );
    assert_eq!(
        Customer::at(1)
            .relation::<CustomerOrders>()
            .count(&db)
            .await
            .expect("links"),
        orders.len() as u64
    );
    for order in &orders {
        let (o, lines, listed, back) = order_state(&db, 1, order.id).await.expect("order state");
        assert!(o.is_some() && listed && back, "order {} whole", order.id);
        assert_eq!(
            lines,
            vec![Line {
                n: 0,
                product: PRODUCT,
                qty: 1
            }],
            "order {}'s line",
            order.id
        );
    }
    let kept: std::collections::HashSet<u32> = orders.iter().map(|o| o.id).collect();
    let lost: Vec<&u32> = placed.iter().filter(|id| !kept.contains(id)).collect();
    assert!(lost.is_empty(), "orders reported placed and lost: {lost:?}");
}
