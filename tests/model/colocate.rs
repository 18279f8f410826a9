//! Slot groups (`#[redmodel(slot_group = "...")]`) on every backend: an
//! order placement where customers, products with stock and orders share
//! one group. In the cluster layout the group's objects (with their
//! sub-objects and relation lists) are in one slot, the one `CLUSTER
//! KEYSLOT` names, so a typed transaction across a customer, its products
//! and the new order commits as one MULTI/EXEC, and racing buyers never
//! sell more than the stock. The plain layout stores the same keys without
//! a tag.

use std::sync::Arc;

use redmodel::model::check::check;
use redmodel::prelude::*;
use redmodel::{Error, KeyLayout};
use redmodel_suite::backend_tests;

/// `colo_customer:c1`, with a unique email.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "colo_customer", slot_group = "colo_shop")]
struct Customer {
    #[redmodel(pk)]
    id: String,
    #[redmodel(unique)]
    email: String,
    spent: i64,
}

/// `colo_product:p1`, with its stock and tags.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "colo_product", slot_group = "colo_shop")]
struct Product {
    #[redmodel(pk)]
    id: String,
    price: i64,
    stock: i64,
    #[redmodel(tags)]
    tags: Vec<String>,
}

/// `colo_order:1`, naming its customer, with a unique code, in a sorted
/// index by total.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "colo_order", slot_group = "colo_shop")]
struct Order {
    #[redmodel(pk)]
    id: u64,
    customer: Ref<Customer>,
    #[redmodel(unique)]
    code: String,
    #[redmodel(sorted)]
    total: i64,
}

/// `colo_item:1`: a grouped model with an index of every kind.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "colo_item", slot_group = "colo_shop")]
struct Item {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    sku: String,
    #[redmodel(sorted)]
    price: i64,
    #[redmodel(tags)]
    tags: Vec<String>,
    #[redmodel(recent = 5)]
    seen: Option<u64>,
}

fn item(id: u32, sku: &str) -> Item {
    Item {
        id,
        sku: sku.into(),
        price: i64::from(id) * 10,
        tags: vec!["red".into(), format!("t{id}")],
        seen: Some(u64::from(id)),
    }
}

/// `colo_order:1:line:1`: one product of an order, in its admin's group.
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(table = "line", owner = Order)]
struct Line {
    #[redmodel(pk)]
    n: u32,
    product: String,
    quantity: i64,
}

/// `colo_customer:c1:orders`: a customer's orders.
#[derive(Relation)]
#[redmodel(table = "orders", owner = Customer, member = Order)]
struct CustomerOrders;

/// A model outside the group, to tell the group's slot from its own.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "colo_loose")]
struct Loose {
    #[redmodel(pk)]
    id: u32,
}

/// The calls of `command` the servers of a real cluster have run so far
/// (`INFO commandstats` of every node), or `None` off a real cluster.
async fn calls(ctx_urls: Option<&[String]>, command: &str) -> Option<u64> {
    let mut total = 0;
    for url in ctx_urls? {
        let client = redis::Client::open(url.as_str()).ok()?;
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await
            .ok()?;
        total += redmodel_suite::command_calls(&info, command);
    }
    Some(total)
}

async fn flush(db: &Db) -> redmodel::Result<()> {
    db.query::<()>(&redis::cmd("FLUSHALL")).await
}

fn customer(id: &str) -> Customer {
    Customer {
        id: id.into(),
        email: format!("{id}@example.com"),
        spent: 0,
    }
}

fn product(id: &str, price: i64, stock: i64) -> Product {
    Product {
        id: id.into(),
        price,
        stock,
        tags: vec!["new".into()],
    }
}

/// Places order `id` for `who`: one line per product, each taking
/// `quantity` from its stock, in one typed transaction. `Ok(false)` if a
/// product lacks the stock (nothing written).
async fn place(
    db: &Db,
    id: u64,
    who: &ObjectRef<Customer>,
    products: &[ObjectRef<Product>],
    quantity: i64,
) -> redmodel::Result<bool> {
    db.transaction_with_attempts(10_000, |tx| async move {
        let buyer = tx
            .load(who)
            .await?
            .ok_or_else(|| Error::Misuse("no customer".into()))?;
        let mut total = 0;
        let mut left = Vec::new();
        for handle in products {
            let p = tx
                .load(handle)
                .await?
                .ok_or_else(|| Error::Misuse("no product".into()))?;
            // Another task's turn between the read and the write: without
            // the transaction's WATCH, two buyers would take one unit.
            tokio::task::yield_now().await;
            if p.stock < quantity {
                return Ok(false);
            }
            total += p.price * quantity;
            left.push((handle, p.stock - quantity));
        }
        let order = Order::at(id);
        for (n, (handle, stock)) in (1..).zip(&left) {
            tx.set(*handle, Product::STOCK, *stock);
            let line = Line {
                n,
                product: handle.pk().clone(),
                quantity,
            };
            tx.insert(&order.sub::<Line>(n), &line);
        }
        tx.insert(
            &order,
            &Order {
                id,
                customer: who.clone(),
                code: format!("o{id}"),
                total,
            },
        );
        tx.set(who, Customer::SPENT, buyer.spent + total);
        tx.link(&who.relation::<CustomerOrders>(), &order);
        Ok::<_, Error>(true)
    })
    .await
}

backend_tests! {
    /// Every object key of the group's models (and each key under one) is
    /// stored behind `{colo_shop}` in the cluster layout, index keys too,
    /// in the one slot `CLUSTER KEYSLOT` gives, and without a tag in the
    /// plain layout; a typed transaction across the
    /// customer, two products and the new order commits, and scans, index
    /// reads and the consistency check find the objects.
    exclusive async fn a_group_keeps_its_keys_in_one_slot_and_transactions_across_it_commit(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&db).await?;
            let cluster = db.key_layout() == KeyLayout::Cluster;
            let who = Customer::at("c1");
            customer("c1").insert(&db).await?;
            let products = [Product::at("p1"), Product::at("p2")];
            product("p1", 3, 5).insert(&db).await?;
            product("p2", 7, 5).insert(&db).await?;
            Loose { id: 1 }.insert(&db).await?;

            assert!(place(&db, 1, &who, &products, 2).await?);

            let order = Order::at(1).load(&db).await?.expect("the order");
            assert_eq!(order.total, 2 * 3 + 2 * 7);
            assert_eq!(Customer::at("c1").load(&db).await?.expect("c1").spent, 20);
            for p in &products {
                assert_eq!(p.load(&db).await?.expect("product").stock, 3);
            }
            assert_eq!(Order::at(1).load_subs::<Line>(&db).await?.len(), 2);
            assert_eq!(who.relation::<CustomerOrders>().members(&db).await?, vec![Order::at(1)]);
            assert_eq!(Order::TOTAL_SORTED.top(&db, 5).await?, vec![order]);
            assert_eq!(
                Customer::EMAIL_UNIQUE.holder(&db, "c1@example.com").await?,
                Some(who.clone())
            );
            assert_eq!(ObjectRef::<Order>::scan(&db).await?, vec![Order::at(1)]);
            assert_eq!(Product::scan(&db).await?.len(), 2);
            let report = check(&db, |_| ()).await?;
            assert!(report.is_clean(), "{:?} layout: {report}", db.key_layout());

            let group_slot = redmodel::memory::hash_slot(b"colo_shop");
            let keys = db.scan_keys("*").await?;
            let ours = |k: &&String| k.contains("colo_") && !k.contains("colo_loose");
            let (indexes, objects): (Vec<&String>, Vec<&String>) =
                keys.iter().filter(ours).partition(|k| k.contains(":_"));
            // The customer, its list, two products, the order, its lines.
            assert_eq!(objects.len(), 7, "{objects:?}");
            // The unique (email, code), sorted and tag entries, in the
            // group's slot too.
            assert_eq!(indexes.len(), 4, "{indexes:?}");
            for key in indexes.iter().chain(&objects) {
                if cluster {
                    assert!(key.starts_with("{colo_shop}colo_"), "{key}");
                    assert_eq!(redmodel::memory::hash_slot(key.as_bytes()), group_slot, "{key}");
                } else {
                    assert!(!key.contains(['{', '}']), "{key}");
                }
            }
            if cluster {
                // An admin outside the group is in another slot: a
                // transaction across the two is refused before it sends
                // anything.
                let loose = Loose::at(1);
                let across = db
                    .transaction(|tx| {
                        let (who, loose) = (&who, &loose);
                        async move {
                            tx.load(who).await?;
                            tx.load(loose).await?;
                            Ok::<_, Error>(())
                        }
                    })
                    .await;
                assert!(matches!(across, Err(Error::CrossSlot { .. })), "{across:?}");
                assert_eq!(who.slot_in(&db), group_slot);
                assert_eq!(Order::at(1).sub::<Line>(1).slot_in(&db), group_slot);
                assert_ne!(Loose::at(1).slot_in(&db), group_slot);
                assert_eq!(Order::at(1).key_in(&db), "{colo_shop}colo_order:1");
            } else {
                assert_eq!(Order::at(1).key_in(&db), "colo_order:1");
                assert_eq!(Order::at(1).slot_in(&db), redmodel::memory::hash_slot(b"colo_order:1"));
            }
            // The server's own hash of the keys, where it runs as a
            // cluster node.
            if db.is_cluster() || db.engine().is_some_and(|e| e.is_cluster_mode()) {
                for key in keys.iter().filter(ours).map(String::as_str).chain(["colo_loose:1"]) {
                    let slot: u16 = db.query(redis::cmd("CLUSTER").arg("KEYSLOT").arg(key)).await?;
                    assert_eq!(slot, redmodel::memory::hash_slot(key.as_bytes()), "{key}");
                }
            }
        }
        Ok(())
    }

    /// 16 buyers, each a customer of their own, race for the last 10
    /// units of a product, each in a typed transaction across their
    /// customer, the product and a new order: 10 orders are placed, the
    /// stock ends at 0, and the customers paid for exactly 10. (The
    /// product's WATCH is what keeps them apart: read outside the
    /// transaction, 14 to 16 units are sold.)
    exclusive async fn racing_buyers_sell_exactly_the_stock(ctx) -> redmodel::Result<()> {
        const BUYERS: u64 = 16;
        const STOCK: i64 = 10;
        for db in ctx.layouts() {
            flush(&db).await?;
            for id in 1..=BUYERS {
                customer(&format!("b{id}")).insert(&db).await?;
            }
            product("p1", 4, STOCK).insert(&db).await?;
            let placed = Arc::new(std::sync::atomic::AtomicI64::new(0));
            let tasks: Vec<_> = (1..=BUYERS)
                .map(|id| {
                    let (db, placed) = (db.clone(), Arc::clone(&placed));
                    tokio::spawn(async move {
                        let products = [Product::at("p1")];
                        let who = Customer::at(format!("b{id}"));
                        if place(&db, id, &who, &products, 1).await? {
                            placed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        Ok::<_, Error>(())
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("buyer panicked")?;
            }
            assert_eq!(placed.load(std::sync::atomic::Ordering::SeqCst), STOCK);
            assert_eq!(Product::at("p1").load(&db).await?.expect("p1").stock, 0);
            assert_eq!(ObjectRef::<Order>::scan(&db).await?.len(), STOCK as usize);
            let (mut spent, mut orders) = (0, 0);
            for id in 1..=BUYERS {
                let who = Customer::at(format!("b{id}"));
                let paid = who.load(&db).await?.expect("a buyer").spent;
                let placed = who.relation::<CustomerOrders>().members(&db).await?;
                assert_eq!(paid, 4 * placed.len() as i64, "b{id}");
                spent += paid;
                orders += placed.len();
            }
            assert_eq!((spent, orders), (4 * STOCK, STOCK as usize));
            let report = check(&db, |_| ()).await?;
            assert!(report.is_clean(), "{:?} layout: {report}", db.key_layout());
        }
        Ok(())
    }

    /// A migration of a grouped model reads and rewrites each object at
    /// its stored key, in either layout: a field renamed outside the
    /// library (`qty` for `stock`) is renamed back.
    exclusive async fn a_migration_rewrites_grouped_objects_where_they_are_stored(ctx) -> redmodel::Result<()> {
        use redmodel::model::migrate::{migrate, Migration, PassOptions};
        for db in ctx.layouts() {
            flush(&db).await?;
            product("p9", 2, 3).insert(&db).await?;
            let key = Product::at("p9").key_in(&db).into_owned();
            db.query::<()>(redis::cmd("HDEL").arg(&key).arg("stock")).await?;
            db.query::<()>(redis::cmd("HSET").arg(&key).arg("qty").arg(3)).await?;
            assert!(Product::at("p9").load(&db).await.is_err());

            let migration = Migration::new().rename("qty", "stock");
            let report = migrate::<Product, _>(&db, &migration, PassOptions::default(), |_| {
                std::ops::ControlFlow::<()>::Continue(())
            })
            .await?;
            assert_eq!((report.objects, report.rewritten), (1, 1), "{:?} layout: {report:?}", db.key_layout());
            assert_eq!(Product::at("p9").load(&db).await?.expect("p9").stock, 3);
        }
        Ok(())
    }

    /// A query over a grouped model's indexes (tags and a sorted field,
    /// a unique value) pages as on one node in either layout: a page is
    /// the walk and the load, at most two round trips, the cluster
    /// layout's too, since every index key of the group is in its slot.
    exclusive async fn a_query_over_a_groups_indexes_pages_in_two_round_trips_on_either_layout(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&db).await?;
            for id in 1..=9 {
                item(id, &format!("q{id}")).insert(&db).await?;
            }
            let query = Item::query()
                .filter(Item::TAGS_TAGS.has("red"))
                .filter(Item::PRICE_SORTED.within(20..=80))
                .order_by(Item::PRICE_SORTED.desc())
                .limit(3);
            let mut seen = Vec::new();
            let mut cursor = None;
            loop {
                let before = db.round_trips();
                let page = query.page(&db, cursor.as_ref()).await?;
                let took = db.round_trips() - before;
                assert!(took <= 2, "{:?} layout: {took} round trips", db.key_layout());
                seen.extend(page.items.iter().map(|i| i.id));
                match page.next {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            assert_eq!(seen, [8, 7, 6, 5, 4, 3, 2], "{:?} layout", db.key_layout());
            let before = db.round_trips();
            let held = Item::query().filter(Item::SKU_UNIQUE.equals("q4")).page(&db, None).await?;
            assert!(db.round_trips() - before <= 2, "{:?} layout", db.key_layout());
            assert_eq!(held.items.iter().map(|i| i.id).collect::<Vec<_>>(), [4]);
        }
        Ok(())
    }

    /// A grouped model with unique, sorted, tag and recent indexes: in the
    /// cluster layout every key its writes leave (inserts, field writes,
    /// an increment, a delete), index entries included, is behind
    /// `{colo_shop}` in the group's slot, as `CLUSTER KEYSLOT` says where
    /// the server is a cluster node (SCAN covers every master); the index
    /// reads, `key_in` and the consistency check find them.
    exclusive async fn every_key_of_a_grouped_model_is_in_the_group_slot(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&db).await?;
            let cluster = db.key_layout() == KeyLayout::Cluster;
            for id in 1..=3 {
                item(id, &format!("s{id}")).insert(&db).await?;
            }
            Item::at(1).set(&db, Item::SKU, "s9".to_string()).await?;
            Item::at(2).set_many(&db, [Item::TAGS.to(vec!["blue".to_string()]), Item::SEEN.to(Some(7))]).await?;
            Item::at(3).incr(&db, Item::PRICE, 5).await?;
            assert!(Item::delete(&db, 2).await?);

            assert_eq!(Item::SKU_UNIQUE.holder(&db, "s9").await?, Some(Item::at(1)));
            assert_eq!(Item::SKU_UNIQUE.holder(&db, "s1").await?, None);
            let top: Vec<u32> = Item::PRICE_SORTED.top(&db, 5).await?.iter().map(|i| i.id).collect();
            assert_eq!(top, [3, 1]);
            assert_eq!(Item::TAGS_TAGS.with(&db, "red").await?.len(), 2);
            let seen: Vec<u32> = Item::SEEN_RECENT.load(&db).await?.iter().map(|i| i.id).collect();
            assert_eq!(seen, [3, 1]);
            let report = check(&db, |_| ()).await?;
            assert!(report.is_clean(), "{:?} layout: {report}", db.key_layout());

            let keys: Vec<String> = db
                .scan_keys("*")
                .await?
                .into_iter()
                .filter(|k| k.contains("colo_item"))
                .collect();
            let sku = Item::SKU_UNIQUE.key_in(&db, "s9")?.expect("an entry");
            let red = Item::TAGS_TAGS.key_in(&db, "red")?;
            for key in [&sku, &red, &Item::PRICE_SORTED.key_in(&db), &Item::SEEN_RECENT.key_in(&db)] {
                assert!(keys.contains(key), "{key} in {keys:?}");
            }
            // Two objects; the sorted index, the recent list and the tag
            // sets red, t1 and t3; two unique entries.
            assert_eq!(keys.len(), 2 + 5 + 2, "{keys:?}");
            let group_slot = redmodel::memory::hash_slot(b"colo_shop");
            let node = db.is_cluster() || db.engine().is_some_and(|e| e.is_cluster_mode());
            for key in &keys {
                if !cluster {
                    assert!(!key.contains(['{', '}']), "{key}");
                    continue;
                }
                assert!(key.starts_with("{colo_shop}colo_item:"), "{key}");
                if node {
                    let slot: u16 = db.query(redis::cmd("CLUSTER").arg("KEYSLOT").arg(key)).await?;
                    assert_eq!(slot, group_slot, "{key}");
                }
                assert_eq!(redmodel::memory::hash_slot(key.as_bytes()), group_slot, "{key}");
            }
        }
        Ok(())
    }

    /// 16 tasks insert 16 objects of a grouped model claiming one unique
    /// value at once: exactly one wins, the others are refused with
    /// [`Error::Unique`] and write nothing; one entry remains, naming the
    /// winner, and the consistency check is clean.
    exclusive async fn racing_claims_of_one_unique_value_in_a_group_leave_one_holder(ctx) -> redmodel::Result<()> {
        const TASKS: u32 = 16;
        for db in ctx.layouts() {
            flush(&db).await?;
            let start = Arc::new(tokio::sync::Barrier::new(TASKS as usize));
            let tasks: Vec<_> = (1..=TASKS)
                .map(|id| {
                    let (db, start) = (db.clone(), Arc::clone(&start));
                    tokio::spawn(async move {
                        start.wait().await;
                        item(id, "same").insert(&db).await.map(|_| id)
                    })
                })
                .collect();
            let mut winners = Vec::new();
            for task in tasks {
                match task.await.expect("a claimant panicked") {
                    Ok(id) => winners.push(id),
                    Err(Error::Unique { .. }) => {}
                    Err(other) => return Err(other),
                }
            }
            assert_eq!(winners.len(), 1, "{:?} layout: {winners:?}", db.key_layout());
            let winner = Item::at(winners[0]);
            assert_eq!(Item::SKU_UNIQUE.holder(&db, "same").await?, Some(winner.clone()));
            assert_eq!(ObjectRef::<Item>::scan(&db).await?, vec![winner.clone()]);
            let pattern = format!("{}*", Item::SKU_UNIQUE.key_in(&db, "")?.expect("a prefix"));
            let entries = db.scan_keys(&pattern).await?;
            assert_eq!(entries.len(), 1, "{entries:?}");
            let holders: Vec<String> = db.query(redis::cmd("LRANGE").arg(&entries[0]).arg(0).arg(-1)).await?;
            assert_eq!(holders, [winner.key_in(&db).into_owned()]);
            let report = check(&db, |_| ()).await?;
            assert!(report.is_clean(), "{:?} layout: {report}", db.key_layout());
        }
        Ok(())
    }

    /// On a real cluster, a typed transaction that inserts an order with a
    /// unique code and links it to its customer, across the customer and
    /// the products, is one MULTI/EXEC with its index entries: the
    /// servers run one EXEC and no script for it (the steps that follow an
    /// EXEC outside a group are scripts).
    exclusive async fn a_grouped_transaction_with_a_unique_claim_is_one_exec_on_a_cluster(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        let who = Customer::at("c1");
        customer("c1").insert(db).await?;
        let products = [Product::at("p1")];
        product("p1", 3, 5).insert(db).await?;
        let urls = ctx.cluster_urls();
        let (exec, evalsha) = (calls(urls, "exec").await, calls(urls, "evalsha").await);
        assert!(place(db, 1, &who, &products, 1).await?);
        if let (Some(exec), Some(evalsha)) = (exec, evalsha) {
            assert_eq!(calls(urls, "exec").await, Some(exec + 1));
            assert_eq!(calls(urls, "evalsha").await, Some(evalsha));
        }
        assert_eq!(Order::CODE_UNIQUE.holder(db, "o1").await?, Some(Order::at(1)));
        assert_eq!(who.relation::<CustomerOrders>().members(db).await?, vec![Order::at(1)]);
        // A second order claiming the same code is refused, and leaves
        // nothing behind.
        let taken = db
            .transaction(|tx| {
                let who = &who;
                async move {
                    let order = Order::at(2);
                    tx.insert(
                        &order,
                        &Order { id: 2, customer: who.clone(), code: "o1".into(), total: 1 },
                    );
                    tx.link(&who.relation::<CustomerOrders>(), &order);
                    Ok::<_, Error>(())
                }
            })
            .await;
        assert!(matches!(taken, Err(Error::Unique { .. })), "{taken:?}");
        assert!(Order::at(2).load(db).await?.is_none());
        let report = check(db, |_| ()).await?;
        assert!(report.is_clean(), "{report}");
        Ok(())
    }
}

/// The reference marks (`_refs`) left on the customer `id`.
async fn marks(db: &Db, id: &str) -> redmodel::Result<i64> {
    let key = Customer::at(id).key_in(db).into_owned();
    let marks: Option<i64> = db.query(redis::cmd("HGET").arg(key).arg("_refs")).await?;
    Ok(marks.unwrap_or(0))
}

/// The scripts (EVAL and EVALSHA) the servers of a real cluster have run.
async fn scripts(urls: Option<&[String]>) -> Option<u64> {
    Some(calls(urls, "eval").await? + calls(urls, "evalsha").await?)
}

backend_tests! {
    /// An order referencing its customer in the same group marks the
    /// customer in the write's own atomic unit: on a real cluster a
    /// grouped insert is one script and a grouped transaction one EXEC
    /// (no script after either), and the customer carries the mark, in
    /// either layout on every backend.
    exclusive async fn a_grouped_reference_is_marked_inside_the_writes_one_unit(ctx) -> redmodel::Result<()> {
        for db in ctx.layouts() {
            flush(&db).await?;
            let who = Customer::at("c1");
            customer("c1").insert(&db).await?;
            product("p1", 3, 5).insert(&db).await?;
            let urls = ctx.cluster_urls().filter(|_| db.is_cluster());
            let before = (calls(urls, "exec").await, scripts(urls).await, calls(urls, "hincrby").await);
            Order { id: 1, customer: who.clone(), code: "o1".into(), total: 3 }.insert(&db).await?;
            if let (Some(exec), Some(scripts_run), Some(hincrby)) = before {
                assert_eq!(scripts(urls).await, Some(scripts_run + 1), "an insert is one script");
                assert_eq!(calls(urls, "exec").await, Some(exec), "and no EXEC");
                // Its `_count` and the customer's mark, in that script.
                assert_eq!(calls(urls, "hincrby").await, Some(hincrby + 2));
            }
            assert_eq!(marks(&db, "c1").await?, 1, "{:?} layout", db.key_layout());

            let before = (calls(urls, "exec").await, scripts(urls).await, calls(urls, "hincrby").await);
            assert!(place(&db, 2, &who, &[Product::at("p1")], 1).await?);
            if let (Some(exec), Some(scripts_run), Some(hincrby)) = before {
                assert_eq!(calls(urls, "exec").await, Some(exec + 1), "a transaction is one EXEC");
                assert_eq!(scripts(urls).await, Some(scripts_run), "and no script");
                // The line's and the order's `_count`, and the mark.
                assert_eq!(calls(urls, "hincrby").await, Some(hincrby + 3));
            }
            assert_eq!(marks(&db, "c1").await?, 2, "{:?} layout", db.key_layout());
            let report = check(&db, |_| ()).await?;
            assert!(report.is_clean(), "{:?} layout: {report}", db.key_layout());
        }
        Ok(())
    }
}
