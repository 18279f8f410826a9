//! Checks: each compares one read's result with what the world allows.

#[allow(unused_imports)]
use super::*;

pub(crate) type Check = std::result::Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// One field's expectation, with its stored text for messages.
#[derive(Debug)]
pub(crate) struct Exp<'w> {
    pub(crate) field: &'static str,
    pub(crate) raw: Option<&'w [u8]>,
    pub(crate) expect: Expect,
}

impl<'w> Exp<'w> {
    /// Loading the whole object: an absent field is `None`, its default,
    /// or missing.
    pub(crate) fn on_load(spec: &FieldSpec, raw: Option<&'w [u8]>) -> Exp<'w> {
        let expect = match (raw, &spec.absent) {
            (Some(raw), _) => spec.kind.expect(raw),
            (None, WhenAbsent::Missing) => Expect::Missing,
            (None, WhenAbsent::Is(value)) => Expect::Must(value.clone()),
        };
        Exp {
            field: spec.name,
            raw,
            expect,
        }
    }

    /// Reading the field alone: an absent field is `None`.
    pub(crate) fn on_read(spec: &FieldSpec, raw: Option<&'w [u8]>) -> Exp<'w> {
        Exp {
            field: spec.name,
            raw,
            expect: raw.map_or(Expect::Must(Val::Absent), |raw| spec.kind.expect(raw)),
        }
    }

    pub(crate) fn must_fail(&self) -> bool {
        matches!(self.expect, Expect::Invalid(_) | Expect::Missing)
    }

    /// Whether `err` is an error this field may cause at `key`.
    pub(crate) fn allows(&self, key: &str, err: &Error) -> bool {
        match (&self.expect, err) {
            (
                Expect::Invalid(_) | Expect::Either(_),
                Error::Decode {
                    key: k,
                    field,
                    reason,
                },
            ) => k == key && field == self.field && !reason.is_empty(),
            (Expect::Missing, Error::MissingField { key: k, field }) => {
                k == key && field == self.field
            }
            _ => false,
        }
    }

    pub(crate) fn stored(&self) -> String {
        self.raw.map_or("nothing".to_string(), show)
    }
}

/// Decoded values (or the error) against the fields' expectations, which
/// are decoded in order: the error must come from the first field that
/// cannot be decoded.
pub(crate) fn check_decoded(
    key: &str,
    exps: &[Exp<'_>],
    got: std::result::Result<Vec<Val>, &Error>,
) -> Check {
    match got {
        Ok(vals) => {
            ensure!(
                vals.len() == exps.len(),
                "{key}: {} values for {} fields",
                vals.len(),
                exps.len()
            );
            for (exp, val) in exps.iter().zip(&vals) {
                match &exp.expect {
                    Expect::Must(want) | Expect::Either(want) => ensure!(
                        val == want,
                        "{key} field `{}` holds {}: it loaded as {val:?}, but that text means {want:?}",
                        exp.field,
                        exp.stored()
                    ),
                    Expect::Invalid(why) => {
                        return Err(format!(
                            "{key} field `{}` holds {} ({why}), yet it loaded as {val:?} instead of failing",
                            exp.field,
                            exp.stored()
                        ))
                    }
                    Expect::Missing => {
                        return Err(format!(
                            "{key} lacks the required field `{}`, yet it loaded as {val:?}",
                            exp.field
                        ))
                    }
                }
            }
            Ok(())
        }
        Err(err) => {
            let Some(position) = exps.iter().position(|exp| exp.allows(key, err)) else {
                return Err(format!(
                    "{key}: the error {err:?} is not one that its fields allow: {exps:?}"
                ));
            };
            if let Some(earlier) = exps.iter().take(position).find(|e| e.must_fail()) {
                return Err(format!(
                    "{key}: the error is about `{}`, but `{}` (holding {}) comes first and cannot be decoded",
                    exps.get(position).map_or("?", |e| e.field),
                    earlier.field,
                    earlier.stored()
                ));
            }
            Ok(())
        }
    }
}

pub(crate) fn check_wrong_type<T: fmt::Debug>(
    key: &str,
    expected: &str,
    got: std::result::Result<T, &Error>,
) -> Check {
    match got {
        Err(Error::UnexpectedType {
            key: k,
            expected: e,
        }) if k == key && *e == expected => Ok(()),
        other => Err(format!(
            "{key} holds another type than a {expected}: expected UnexpectedType naming it, got {other:?}"
        )),
    }
}

/// A write to the object at `key`, which does not exist: refused with
/// NotFound naming it, and nothing written (the key still does not exist).
pub(crate) async fn check_not_found<T: fmt::Debug>(
    db: &Db,
    key: &str,
    got: std::result::Result<T, &Error>,
) -> Check {
    ensure!(
        matches!(got, Err(Error::NotFound { key: k }) if k == key),
        "{key} does not exist: expected NotFound naming it, got {got:?}"
    );
    let exists: bool = db
        .query(redis::cmd("EXISTS").arg(db.key_layout().stored(key)))
        .await
        .map_err(|e| format!("{key}: EXISTS: {e}"))?;
    ensure!(!exists, "{key}: a refused write created it");
    Ok(())
}

/// A load (`load`, `load_many`, `Admin::get`...) of the object at `key`.
pub(crate) fn check_load(
    key: &str,
    view: &View<'_>,
    spec: &[FieldSpec],
    got: std::result::Result<Option<Vec<Val>>, &Error>,
) -> Check {
    match view {
        View::WrongType(expected) => check_wrong_type(key, expected, got),
        View::Absent => match got {
            Ok(None) => Ok(()),
            other => Err(format!("{key} is absent: expected Ok(None), got {other:?}")),
        },
        View::Hash(_) | View::Single(_) => {
            let exps: Vec<Exp<'_>> = spec
                .iter()
                .map(|s| Exp::on_load(s, view.raw(s.name)))
                .collect();
            match got {
                Ok(Some(vals)) => check_decoded(key, &exps, Ok(vals)),
                Ok(None) => Err(format!("{key} exists, yet it loaded as None")),
                Err(err) => check_decoded(key, &exps, Err(err)),
            }
        }
    }
}

pub(crate) fn loaded<M: Probe>(
    got: &Result<Option<M>>,
) -> std::result::Result<Option<Vec<Val>>, &Error> {
    got.as_ref().map(|o| o.as_ref().map(Probe::vals))
}

/// Reads of some fields (HGET, HMGET, GET): absent fields are `None`.
pub(crate) fn check_fields(
    key: &str,
    view: &View<'_>,
    spec: &[FieldSpec],
    names: &[&str],
    got: std::result::Result<Vec<Val>, &Error>,
) -> Check {
    match view {
        View::WrongType(expected) => check_wrong_type(key, expected, got),
        _ => {
            let exps: Vec<Exp<'_>> = names
                .iter()
                .filter_map(|name| spec.iter().find(|s| s.name == *name))
                .map(|s| Exp::on_read(s, view.raw(s.name)))
                .collect();
            check_decoded(key, &exps, got)
        }
    }
}

/// `load_map` / `get_fields_map`: the present fields among `names`, as text.
pub(crate) fn check_text_map(
    key: &str,
    view: &View<'_>,
    names: &[&str],
    absent_is_none: bool,
    got: std::result::Result<Option<BTreeMap<String, String>>, &Error>,
) -> Check {
    match view {
        View::WrongType(expected) => check_wrong_type(key, expected, got),
        View::Absent => {
            let want = if absent_is_none {
                None
            } else {
                Some(BTreeMap::new())
            };
            ensure!(
                matches!(&got, Ok(map) if *map == want),
                "{key} is absent: expected Ok({want:?}), got {got:?}"
            );
            Ok(())
        }
        View::Hash(_) | View::Single(_) => {
            let mut want = BTreeMap::new();
            let mut not_text = None;
            for name in names {
                if let Some(raw) = view.raw(name) {
                    match std::str::from_utf8(raw) {
                        Ok(text) => {
                            want.insert(name.to_string(), text.to_string());
                        }
                        Err(_) => {
                            not_text = Some(*name);
                            break;
                        }
                    }
                }
            }
            match (not_text, &got) {
                (None, Ok(Some(map))) if *map == want => Ok(()),
                (
                    Some(field),
                    Err(Error::Decode {
                        key: k, field: f, ..
                    }),
                ) if k == key && f == field => Ok(()),
                _ => Err(format!(
                    "{key}: reading {names:?} as text: expected {}, got {got:?}",
                    match not_text {
                        Some(field) => format!("a decode error for the non-UTF-8 `{field}`"),
                        None => format!("{want:?}"),
                    }
                )),
            }
        }
    }
}

/// A batch load of `keys`, in order; `present_only`: absent objects are
/// left out of the result (`load_all`, relation loads) rather than `None`.
pub(crate) fn check_many<M: Probe>(
    world: &World,
    keys: &[String],
    got: std::result::Result<Vec<Option<Vec<Val>>>, &Error>,
    present_only: bool,
) -> Check {
    let spec = M::TAG.spec();
    let views: Vec<(&str, View<'_>)> = keys
        .iter()
        .map(|k| (k.as_str(), world.view(k, M::STORAGE)))
        .collect();
    match got {
        Ok(objects) => {
            let expected: Vec<&(&str, View<'_>)> = views
                .iter()
                .filter(|(_, v)| !(present_only && matches!(v, View::Absent)))
                .collect();
            ensure!(
                objects.len() == expected.len(),
                "loading {keys:?}: {} results for {} objects",
                objects.len(),
                expected.len()
            );
            for ((key, view), object) in expected.into_iter().zip(objects) {
                check_load(key, view, &spec, Ok(object))?;
            }
            Ok(())
        }
        Err(err) => {
            ensure!(
                views
                    .iter()
                    .any(|(key, view)| check_load(key, view, &spec, Err(err)).is_ok()),
                "loading {keys:?}: the error {err:?} is not one that any of them allows"
            );
            Ok(())
        }
    }
}

pub(crate) fn many_vals<M: Probe>(
    got: &Result<Vec<Option<M>>>,
) -> std::result::Result<Vec<Option<Vec<Val>>>, &Error> {
    got.as_ref().map(|objects| {
        objects
            .iter()
            .map(|o| o.as_ref().map(Probe::vals))
            .collect()
    })
}

pub(crate) fn present_vals<M: Probe>(
    got: &Result<Vec<M>>,
) -> std::result::Result<Vec<Option<Vec<Val>>>, &Error> {
    got.as_ref()
        .map(|objects| objects.iter().map(|o| Some(o.vals())).collect())
}

pub(crate) fn keys_of<M: Model>(
    got: &Result<Vec<ObjectRef<M>>>,
) -> std::result::Result<Vec<String>, &Error> {
    got.as_ref()
        .map(|refs| refs.iter().map(|r| r.key().to_string()).collect())
}

pub(crate) fn handle<M: Model>(key: &str) -> std::result::Result<ObjectRef<M>, String> {
    ObjectRef::<M>::parse(key).map_err(|e| format!("the universe's key {key} does not parse: {e}"))
}

/// Every per-object read of every object of model `M` in the universe,
/// the batch reads, and the scans.
pub(crate) async fn check_model<M: Probe>(db: &Db, world: &World) -> Check {
    let spec = M::TAG.spec();
    let keys: Vec<String> = keys_with(Role::Object(M::TAG))
        .map(str::to_string)
        .collect();
    for key in &keys {
        let h = handle::<M>(key)?;
        let view = world.view(key, M::STORAGE);
        let exists = h.exists(db).await;
        let absent = *world.shape(key) == Shape::Absent;
        ensure!(
            matches!(exists, Ok(e) if e != absent),
            "{key}: exists gave {exists:?} for {:?}",
            world.shape(key)
        );
        let ttl = h.ttl(db).await;
        ensure!(
            matches!(
                (&ttl, absent),
                (Ok(redmodel::model::Ttl::Missing), true)
                    | (Ok(redmodel::model::Ttl::Persistent), false)
            ),
            "{key}: ttl gave {ttl:?}"
        );
        check_load(key, &view, &spec, loaded(&h.load(db).await))?;
        check_text_map(
            key,
            &view,
            M::FIELDS,
            true,
            h.load_map(db).await.as_ref().map(Clone::clone),
        )?;
        for (name, got) in M::each_field(db, &h).await {
            check_fields(
                key,
                &view,
                &spec,
                &[name],
                got.as_ref().map(|v| vec![v.clone().unwrap_or(Val::Absent)]),
            )?;
        }
        for (names, got) in M::field_sets(db, &h).await {
            check_fields(key, &view, &spec, &names, got.as_ref().map(Clone::clone))?;
        }
        if M::STORAGE == Storage::Hash {
            check_hash_only(db, world, &h).await?;
        }
    }
    let handles: Vec<ObjectRef<M>> = keys
        .iter()
        .map(|k| handle::<M>(k))
        .collect::<std::result::Result<_, _>>()?;
    let mut batch = handles.clone();
    batch.extend(handles.iter().rev().cloned());
    let batch_keys: Vec<String> = batch.iter().map(|h| h.key().to_string()).collect();
    check_many::<M>(
        world,
        &batch_keys,
        many_vals(&ObjectRef::load_many(db, &batch).await),
        false,
    )?;
    let got = ObjectRef::<M>::load_many(db, &[]).await;
    ensure!(
        matches!(&got, Ok(v) if v.is_empty()),
        "load_many of nothing gave {got:?}"
    );

    let scanned = world.existing_keys(|k| M::TAG.is_key(k));
    let got = ObjectRef::<M>::scan(db).await;
    ensure!(
        keys_of(&got).as_ref().ok() == Some(&scanned),
        "scan of `{}`: expected {scanned:?}, got {:?}",
        M::TABLE,
        keys_of(&got)
    );
    check_many::<M>(
        world,
        &scanned,
        present_vals(&ObjectRef::<M>::load_all(db).await),
        true,
    )
}

/// The reads only hash models have: fields by name, the write count,
/// building from a map.
pub(crate) async fn check_hash_only<M: Probe>(db: &Db, world: &World, h: &ObjectRef<M>) -> Check {
    let key = h.key();
    let view = world.view(key, Storage::Hash);
    let mut names: Vec<&str> = M::FIELDS.to_vec();
    names.extend(["_count", "nope", ""]);
    names.extend(M::FIELDS.first());
    let got = h.get_fields_map(db, &names).await;
    check_text_map(
        key,
        &view,
        &names,
        false,
        got.as_ref().map(|m| Some(m.clone())),
    )?;

    let got = h.write_count(db).await;
    match view.raw("_count") {
        _ if matches!(view, View::WrongType(_)) => check_wrong_type(key, "hash", got.as_ref())?,
        None => ensure!(
            matches!(got, Ok(0)),
            "{key}: no `_count`, yet write_count gave {got:?}"
        ),
        Some(raw) => {
            let exp = Exp {
                field: "_count",
                raw: Some(raw),
                expect: Kind::Int(0, u64::MAX.into()).expect(raw),
            };
            check_decoded(key, &[exp], got.as_ref().map(|n| vec![n.to_val()]))?;
        }
    }

    if let View::Hash(map) = &view {
        let entries: Vec<(&str, &Vec<u8>)> = map
            .iter()
            .filter_map(|(k, v)| Some((std::str::from_utf8(k).ok()?, v)))
            .collect();
        let spec = M::TAG.spec();
        let got = h.build_from_map(entries);
        check_load(key, &view, &spec, got.as_ref().map(|m| Some(m.vals())))?;
        let values: Vec<Option<&Vec<u8>>> =
            spec.iter().map(|s| map.get(s.name.as_bytes())).collect();
        let got = h.build_from_values(values);
        check_load(key, &view, &spec, got.as_ref().map(|m| Some(m.vals())))?;
    }
    Ok(())
}

/// The wrappers of admin models: get / exists / load_many by pk, scan.
pub(crate) async fn check_admin<M: Probe + Admin>(db: &Db, world: &World) -> Check {
    let spec = M::TAG.spec();
    let handles: Vec<ObjectRef<M>> = keys_with(Role::Object(M::TAG))
        .map(handle::<M>)
        .collect::<std::result::Result<_, _>>()?;
    for h in &handles {
        let key = h.key();
        check_load(
            key,
            &world.view(key, Storage::Hash),
            &spec,
            loaded(&M::load(db, h.pk().clone()).await),
        )?;
        let exists = M::exists(db, h.pk().clone()).await;
        ensure!(
            matches!(exists, Ok(e) if e == (*world.shape(key) != Shape::Absent)),
            "{key}: Admin::exists gave {exists:?}"
        );
    }
    let keys: Vec<String> = handles.iter().map(|h| h.key().to_string()).collect();
    let got = M::load_many(db, handles.iter().map(|h| h.pk().clone())).await;
    check_many::<M>(world, &keys, many_vals(&got), false)?;
    let got = M::scan(db).await;
    let scanned = world.existing_keys(|k| M::TAG.is_key(k));
    ensure!(
        keys_of(&got).as_ref().ok() == Some(&scanned),
        "Admin::scan of `{}`: expected {scanned:?}, got {:?}",
        M::TABLE,
        keys_of(&got)
    );
    Ok(())
}

/// An admin's scans of its sub-objects of model `S`.
pub(crate) async fn check_subs<A: Admin, S: Probe + Model<Owner = A>>(
    db: &Db,
    world: &World,
    admin: &str,
) -> Check {
    let owner = handle::<A>(admin)?;
    let prefix = format!("{admin}:");
    let want = world.existing_keys(|k| S::TAG.is_key(k) && k.starts_with(&prefix));
    let got = owner.scan_subs::<S>(db).await;
    ensure!(
        keys_of(&got).as_ref().ok() == Some(&want),
        "{admin}: scan_subs of `{}`: expected {want:?}, got {:?}",
        S::TABLE,
        keys_of(&got)
    );
    let got = owner.scan_sub_keys::<S>(db).await;
    ensure!(
        got.as_ref().ok() == Some(&want),
        "{admin}: scan_sub_keys of `{}`: expected {want:?}, got {got:?}",
        S::TABLE
    );
    check_many::<S>(
        world,
        &want,
        present_vals(&owner.load_subs::<S>(db).await),
        true,
    )
}

/// LRANGE's view of a list of `len` items: the indexes it returns.
pub(crate) fn lrange(len: usize, start: i64, stop: i64) -> std::ops::Range<usize> {
    let len = len as i64;
    let start = if start < 0 {
        len.saturating_add(start)
    } else {
        start
    }
    .max(0);
    let stop = if stop < 0 {
        len.saturating_add(stop)
    } else {
        stop
    };
    if start > stop || start >= len {
        return 0..0;
    }
    start as usize..(stop.min(len - 1) + 1) as usize
}

/// The page's LRANGE bounds, or `None` for an empty page.
pub(crate) fn page_bounds(page: u64, per_page: u64) -> Option<(i64, i64)> {
    if per_page == 0 {
        return None;
    }
    let start = i64::try_from(page.checked_mul(per_page)?).ok()?;
    let stop = (start as u64).checked_add(per_page - 1)?;
    Some((start, i64::try_from(stop).unwrap_or(i64::MAX)))
}

/// Member keys read from the list at `list_key`: each must be a key of
/// `tag`; the first that is not must be an InvalidKey error naming it and
/// the list.
pub(crate) fn check_members(
    list_key: &str,
    tag: Tag,
    items: Option<&[&[u8]]>,
    got: std::result::Result<Vec<String>, &Error>,
) -> Check {
    let Some(items) = items else {
        return check_wrong_type(list_key, "list", got);
    };
    let first_bad = items
        .iter()
        .find(|item| !std::str::from_utf8(item).is_ok_and(|k| tag.is_key(k)));
    match (first_bad, &got) {
        (None, Ok(keys)) => {
            let want: Vec<String> = items
                .iter()
                .map(|i| String::from_utf8_lossy(i).into_owned())
                .collect();
            ensure!(
                *keys == want,
                "{list_key}: expected members {want:?}, got {keys:?}"
            );
            Ok(())
        }
        (Some(bad), Err(Error::InvalidKey { key, model, reason }))
            if *key == String::from_utf8_lossy(bad)
                && *model == tag.table()
                && reason.contains(list_key) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "{list_key}: members {}: expected {}, got {got:?}",
            items.iter().map(|i| show(i)).collect::<Vec<_>>().join(", "),
            match first_bad {
                Some(bad) => format!("InvalidKey naming {} and the list", show(bad)),
                None => "them all".to_string(),
            }
        )),
    }
}

/// Member objects loaded from a list: the member keys must be good, and
/// then the objects load as [`check_many`] says, absent ones left out.
pub(crate) fn check_member_objects<M: Probe>(
    world: &World,
    list_key: &str,
    items: Option<&[&[u8]]>,
    got: &Result<Vec<M>>,
) -> Check {
    let Some(items) = items else {
        return check_wrong_type(list_key, "list", got.as_ref().map(|v| v.len()));
    };
    let keys: Option<Vec<String>> = items
        .iter()
        .map(|i| {
            std::str::from_utf8(i)
                .ok()
                .filter(|k| M::TAG.is_key(k))
                .map(str::to_string)
        })
        .collect();
    match keys {
        Some(keys) => check_many::<M>(world, &keys, present_vals(got), true),
        None => check_members(
            list_key,
            M::TAG,
            Some(items),
            got.as_ref().map(|v| vec![format!("{} objects", v.len())]),
        ),
    }
}

/// Every read of the list of `M` keys at `key`.
pub(crate) async fn check_list<M: Probe>(db: &Db, world: &World, key: &str, case: &Case) -> Check {
    // The list where the world wrote it: at the key as the layout stores it.
    let list_key = db.key_layout().stored(key).into_owned();
    let list = MemberList::<M>::at(list_key.clone());
    let list_key = list_key.as_str();
    let items = world.list(key);
    let items = items.as_deref();
    let got = list.count(db).await;
    match items {
        Some(items) => ensure!(
            matches!(got, Ok(n) if n == items.len() as u64),
            "{key}: count gave {got:?} for {} items",
            items.len()
        ),
        None => check_wrong_type(list_key, "list", got.as_ref())?,
    }
    check_members(list_key, M::TAG, items, keys_of(&list.members(db).await))?;
    check_member_objects(world, list_key, items, &list.load(db).await)?;
    restore_list(db, key, items).await?;
    for &(start, stop) in &case.ranges {
        let part = items.map(|items| {
            items
                .get(lrange(items.len(), start, stop))
                .unwrap_or_default()
        });
        check_members(
            list_key,
            M::TAG,
            part,
            keys_of(&list.range(db, start, stop).await),
        )?;
        check_member_objects(
            world,
            list_key,
            part,
            &list.load_range(db, start, stop).await,
        )?;
        restore_list(db, key, items).await?;
    }
    for &(page, per_page) in &case.pages {
        let part = items.map(|items| match page_bounds(page, per_page) {
            Some((start, stop)) => items
                .get(lrange(items.len(), start, stop))
                .unwrap_or_default(),
            None => &[],
        });
        let got = list.page(db, page, per_page).await;
        // An empty page is answered without asking Redis.
        if page_bounds(page, per_page).is_none() {
            ensure!(
                matches!(&got, Ok(v) if v.is_empty()),
                "{key}: empty page gave {got:?}"
            );
        } else {
            check_members(list_key, M::TAG, part, keys_of(&got))?;
            check_member_objects(
                world,
                list_key,
                part,
                &list.load_page(db, page, per_page).await,
            )?;
            restore_list(db, key, items).await?;
        }
    }
    for &index in &case.indexes {
        let part = items.map(|items| {
            let len = items.len() as i64;
            let i = if index < 0 {
                len.saturating_add(index)
            } else {
                index
            };
            usize::try_from(i)
                .ok()
                .and_then(|i| items.get(i..i + 1))
                .unwrap_or_default()
        });
        let got = list.index(db, index).await;
        check_members(
            list_key,
            M::TAG,
            part,
            got.as_ref()
                .map(|o| o.iter().map(|h| h.key().to_string()).collect()),
        )?;
    }
    Ok(())
}

/// The reads a relation handle adds to its list's.
pub(crate) async fn check_relation<R: Relation>(db: &Db, world: &World, key: &str) -> Check
where
    R::Member: Probe,
{
    let rel = RelationRef::<R>::parse(key)
        .map_err(|e| format!("{key} does not parse as a relation: {e}"))?;
    ensure!(rel.key() == key, "{key} parsed as {}", rel.key());
    let items = world.list(key);
    check_members(
        key,
        <R::Member as Probe>::TAG,
        items.as_deref(),
        keys_of(&rel.members(db).await),
    )?;
    check_member_objects(world, key, items.as_deref(), &rel.load(db).await)?;
    restore_list(db, key, items.as_deref()).await
}

/// Loading members prunes the entries of objects that are gone (reads
/// leave no trace of deleted objects), so after a load the list is
/// put back as the world wrote it: every check reads the same world.
pub(crate) async fn restore_list(db: &Db, key: &str, items: Option<&[&[u8]]>) -> Check {
    let Some(items) = items else {
        return Ok(());
    };
    let stored = db.key_layout().stored(key);
    let mut pipe = redis::pipe();
    pipe.atomic().cmd("DEL").arg(&*stored).ignore();
    if !items.is_empty() {
        pipe.cmd("RPUSH").arg(&*stored).arg(items).ignore();
    }
    db.query_pipeline::<()>(&pipe)
        .await
        .map_err(|e| format!("{key}: could not restore the list: {e}"))
}

/// `get_or`: the default when the field or the object is absent, else as
/// `get`.
pub(crate) async fn check_get_or<M: Probe, T: ToVal + Clone, C: Codec<T>>(
    db: &Db,
    world: &World,
    key: &str,
    field: Field<M, T, C>,
    default: T,
) -> Check {
    let got = handle::<M>(key)?.get_or(db, field, default.clone()).await;
    let got = got.as_ref().map(|v| vec![v.to_val()]);
    let view = world.view(key, Storage::Hash);
    match view.raw(field.name()) {
        None if !matches!(view, View::WrongType(_)) => ensure!(
            matches!(&got, Ok(v) if *v == vec![default.to_val()]),
            "{key} `{}` is absent: get_or gave {got:?}, expected the default",
            field.name()
        ),
        _ => check_fields(key, &view, &M::TAG.spec(), &[field.name()], got)?,
    }
    Ok(())
}

/// Following reference fields: the referenced object loads as its key's
/// content says.
pub(crate) async fn check_references(db: &Db, world: &World) -> Check {
    let class_spec = Tag::Class.spec();
    let teacher_spec = Tag::Teacher.spec();
    for key in keys_with(Role::Object(Tag::Student)) {
        let h = handle::<Student>(key)?;
        if let Ok(Some(class)) = h.get(db, Student::CLASS).await {
            let ck = class.key();
            check_load(
                ck,
                &world.view(ck, Storage::Hash),
                &class_spec,
                loaded(&class.load(db).await),
            )?;
        }
        if let Ok(Some(student)) = h.load(db).await {
            let ck = student.class.key();
            check_load(
                ck,
                &world.view(ck, Storage::Hash),
                &class_spec,
                loaded(&student.class.load(db).await),
            )?;
        }
    }
    for key in keys_with(Role::Object(Tag::Gauge)) {
        let h = handle::<Gauge>(key)?;
        if let Ok(Some(Some(owner))) = h.get(db, Gauge::OWNER).await {
            let tk = owner.key();
            check_load(
                tk,
                &world.view(tk, Storage::Hash),
                &teacher_spec,
                loaded(&owner.load(db).await),
            )?;
        }
    }
    Ok(())
}

pub(crate) const INT_INCRS: usize = 8;
pub(crate) const FLOAT_INCRS: usize = 3;

/// HINCRBY on a field whose stored text may be anything: Redis's own
/// integer rules, then the field's range.
pub(crate) async fn check_incr_int<M: Model, T>(
    db: &Db,
    world: &World,
    key: &str,
    field: Field<M, T, Plain>,
    by: i64,
    (lo, hi): (i128, i128),
) -> Check
where
    T: Incr<By = i64>,
    T::Output: ToVal + fmt::Debug,
{
    let h = handle::<M>(key)?;
    let name = field.name();
    let got = h.incr(db, field, by).await;
    let raw = match world.view(key, Storage::Hash) {
        View::WrongType(expected) => return check_wrong_type(key, expected, got.as_ref()),
        View::Absent => return check_not_found(db, key, got.as_ref()).await,
        view => view.raw(name).map(<[u8]>::to_vec),
    };
    let old = raw.as_deref().map_or(Some(0), redis_int);
    let context = format!(
        "{key} `{name}` holding {} incremented by {by}",
        raw.as_deref().map_or("nothing".into(), show)
    );
    let is_decode = |got: &Result<T::Output>| matches!(got, Err(Error::Decode { key: k, field: f, .. }) if k == key && f == name);
    match old.map(|old| old.checked_add(by)) {
        None => ensure!(
            is_decode(&got),
            "{context}: expected a decode error naming the field, got {got:?}"
        ),
        Some(None) => ensure!(
            matches!(&got, Err(Error::Server(e)) if e.to_string().contains("overflow")),
            "{context}: expected Redis's overflow error, got {got:?}"
        ),
        Some(Some(new)) if (lo..=hi).contains(&i128::from(new)) => {
            ensure!(
                matches!(&got, Ok(v) if v.to_val() == Val::Int(new.into())),
                "{context}: expected Ok({new}), got {got:?}"
            );
            let stored: Option<String> = db
                .query(
                    redis::cmd("HGET")
                        .arg(db.key_layout().stored(key))
                        .arg(name),
                )
                .await
                .map_err(|e| format!("{context}: HGET: {e}"))?;
            ensure!(
                stored == Some(new.to_string()),
                "{context}: stored {stored:?}"
            );
        }
        Some(Some(new)) => ensure!(
            is_decode(&got),
            "{context}: {new} is out of the field's range: expected a decode error, got {got:?}"
        ),
    }
    Ok(())
}

/// HINCRBYFLOAT: Redis's long doubles may accept texts (hex, `1e999`) and
/// give results that the field's type cannot hold; those must be decode
/// errors, never infinity. Plain starting values must just work.
pub(crate) async fn check_incr_float<M: Model, T>(
    db: &Db,
    world: &World,
    key: &str,
    field: Field<M, T, Plain>,
    by: f64,
    width: Width,
) -> Check
where
    T: Incr<By = f64>,
    T::Output: ToVal + fmt::Debug,
{
    let h = handle::<M>(key)?;
    let name = field.name();
    let got = h.incr(db, field, by).await;
    let raw = match world.view(key, Storage::Hash) {
        View::WrongType(expected) => return check_wrong_type(key, expected, got.as_ref()),
        View::Absent => return check_not_found(db, key, got.as_ref()).await,
        view => view.raw(name).map(<[u8]>::to_vec),
    };
    let context = format!(
        "{key} `{name}` holding {} incremented by {by}",
        raw.as_deref().map_or("nothing".into(), show)
    );
    // A plain start: absent, or the codec's own text of a modest number.
    let plain = match raw.as_deref() {
        None => Some(0.0),
        Some(raw) => match expect_float(std::str::from_utf8(raw).unwrap_or("x"), width) {
            Expect::Must(Val::Float(x)) if x.abs() < 1e30 => Some(x),
            _ => None,
        },
    };
    let must_work = plain.map(|x| x + by).filter(|sum| sum.abs() < 1e30);
    match &got {
        Ok(value) => {
            let Val::Float(v) = value.to_val() else {
                return Err(format!("{context}: not a float: {value:?}"));
            };
            ensure!(
                v.is_finite(),
                "{context}: Redis stores finite numbers only, yet incr gave {v}"
            );
            let stored: Option<Vec<u8>> = db
                .query(
                    redis::cmd("HGET")
                        .arg(db.key_layout().stored(key))
                        .arg(name),
                )
                .await
                .map_err(|e| format!("{context}: HGET: {e}"))?;
            let reread = stored.as_deref().map(|s| Kind::Float(width).expect(s));
            ensure!(
                matches!(&reread, Some(Expect::Must(r) | Expect::Either(r)) if *r == Val::Float(v)),
                "{context}: incr gave {v}, but the field now holds {:?}",
                stored.as_deref().map(show)
            );
            if let Some(sum) = must_work {
                let want = match width {
                    Width::F32 => f64::from(sum as f32),
                    Width::F64 => sum,
                };
                let tolerance = match width {
                    Width::F32 => 1e-6,
                    Width::F64 => 1e-12,
                } * want.abs().max(1.0);
                let close = (v - want).abs() <= tolerance;
                ensure!(close, "{context}: expected about {want}, got {v}");
            }
        }
        Err(Error::Decode {
            key: k, field: f, ..
        }) if k == key && f == name => {
            ensure!(
                must_work.is_none(),
                "{context}: a plain increment failed: {got:?}"
            )
        }
        Err(Error::Server(e)) if e.to_string().contains("NaN or Infinity") => {
            ensure!(
                must_work.is_none(),
                "{context}: a plain increment failed: {got:?}"
            )
        }
        Err(_) => {
            return Err(format!(
                "{context}: expected a value or a decode error, got {got:?}"
            ))
        }
    }
    Ok(())
}

/// Increments of corrupted fields, last (they write).
pub(crate) async fn check_increments(db: &Db, world: &World, case: &Case) -> Check {
    let by = |i: usize| case.int_by.get(i).copied().unwrap_or(1);
    let fby = |i: usize| case.float_by.get(i).copied().unwrap_or(1.5);
    let u8s = (0, i128::from(u8::MAX));
    let i64s = (i128::from(i64::MIN), i128::from(i64::MAX));
    check_incr_int(
        db,
        world,
        "gauge:1",
        Gauge::TINY,
        by(0),
        (i8::MIN.into(), i8::MAX.into()),
    )
    .await?;
    check_incr_int(db, world, "gauge:1", Gauge::BYTE, by(1), u8s).await?;
    check_incr_int(db, world, "gauge:1", Gauge::LARGE, by(2), i64s).await?;
    check_incr_int(
        db,
        world,
        "gauge:1",
        Gauge::BIG,
        by(3),
        (0, u64::MAX.into()),
    )
    .await?;
    check_incr_int(db, world, "gauge:-5", Gauge::DELTA, by(4), i64s).await?;
    check_incr_int(db, world, "profile:p", Profile::AGE, by(5), u8s).await?;
    check_incr_int(db, world, "student:a", Student::MATH, by(6), i64s).await?;
    check_incr_int(db, world, "student:a:exam:2024", Exam::MATH, by(7), i64s).await?;
    check_incr_float(db, world, "gauge:1", Gauge::RATIO, fby(0), Width::F32).await?;
    check_incr_float(db, world, "gauge:-5", Gauge::AMOUNT, fby(1), Width::F64).await?;
    check_incr_float(db, world, "profile:p", Profile::SCORE, fby(2), Width::F64).await
}

/// One world: write it, then every read.
pub(crate) async fn run_case(db: &Db, case: &Case) -> Check {
    let world = World::new(case);
    world
        .write(db)
        .await
        .map_err(|e| format!("writing the world: {e}"))?;

    check_model::<Teacher>(db, &world).await?;
    check_model::<Class>(db, &world).await?;
    check_model::<Student>(db, &world).await?;
    check_model::<Exam>(db, &world).await?;
    check_model::<Note>(db, &world).await?;
    check_model::<Profile>(db, &world).await?;
    check_model::<Gauge>(db, &world).await?;
    check_model::<Level>(db, &world).await?;
    check_model::<Reading>(db, &world).await?;

    check_admin::<Teacher>(db, &world).await?;
    check_admin::<Student>(db, &world).await?;
    check_admin::<Gauge>(db, &world).await?;
    check_admin::<Class>(db, &world).await?;
    check_admin::<Profile>(db, &world).await?;
    check_get_or(db, &world, "profile:p", Profile::AGE, 7).await?;
    check_get_or(db, &world, "profile:q", Profile::TAGS, vec!["t".into()]).await?;
    check_get_or(db, &world, "teacher:A", Teacher::NAME, "nobody".into()).await?;

    check_subs::<Student, Exam>(db, &world, "student:a").await?;
    check_subs::<Student, Exam>(db, &world, "student:").await?;
    check_subs::<Student, Note>(db, &world, "student:a").await?;
    check_subs::<Gauge, Level>(db, &world, "gauge:1").await?;
    check_subs::<Gauge, Reading>(db, &world, "gauge:-5").await?;

    for entry in UNIVERSE {
        let (Role::List(member), Ok(key)) = (entry.role, std::str::from_utf8(entry.key)) else {
            continue;
        };
        match member {
            Tag::Class => check_list::<Class>(db, &world, key, case).await?,
            Tag::Teacher => check_list::<Teacher>(db, &world, key, case).await?,
            Tag::Student => check_list::<Student>(db, &world, key, case).await?,
            other => return Err(format!("no list of {other:?} expected")),
        }
    }
    check_relation::<TeacherClasses>(db, &world, "teacher:A:class").await?;
    check_relation::<TeacherClasses>(db, &world, "teacher:%3A:class").await?;
    check_relation::<ClassTeachers>(db, &world, "class:1:teacher").await?;
    check_relation::<ClassStudents>(db, &world, "class:1:student").await?;
    check_relation::<ClassStudents>(db, &world, "class:2:student").await?;

    check_references(db, &world).await?;

    let size = redmodel::model::dbsize(db).await;
    let want = world.keys.values().filter(|s| **s != Shape::Absent).count() as u64;
    ensure!(
        matches!(size, Ok(n) if n == want),
        "dbsize gave {size:?}, expected {want}"
    );

    check_increments(db, &world, case).await
}
