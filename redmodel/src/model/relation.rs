//! Relations: lists of member keys.
//!
//! [`MemberList`] is a typed list of member keys at any key (a relation's
//! list, or a standalone one such as a hot list `performance:good`).
//! [`RelationRef`] is the list of one admin's relation
//! (`teacher:A:class`), with [`link`](RelationRef::link) /
//! [`unlink`](RelationRef::unlink) keeping a declared inverse
//! (`class:1:teacher`) in step in the same atomic unit (ordered steps in
//! the cluster layout, where the two lists are in different slots).

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::time::{Duration, SystemTime};

use super::expiry::{self, Ttl};
use super::key::glob_escape;
use super::live::{load_live, Entry};
use super::member::AsMember;
use super::object::ObjectRef;
use super::reply::at_key;
use super::{Admin, Model};
use crate::command::{cmd, Owned};
use crate::db::plan::Plan;
use crate::{Db, Error, Result};

/// A relation from an admin model to a member model, stored as a list of
/// member keys at `OWNER_KEY:TABLE`. Implemented by `#[derive(Relation)]`.
pub trait Relation: Sized + Send + Sync + 'static {
    /// The admin model that owns the lists.
    type Owner: Admin;
    /// The model of the members.
    type Member: Admin;
    /// The inverse relation kept in step by [`RelationRef::link`], or
    /// [`NoInverse`].
    type Inverse: InverseOf<Self>;
    /// The last segment of the list's key.
    const TABLE: &'static str;
}

/// "This relation has no inverse."
#[derive(Debug, Clone, Copy)]
pub struct NoInverse;

/// `Self` is the inverse of relation `R` (or [`NoInverse`]): a relation
/// from `R`'s member model to `R`'s owner model that names `R` as its
/// own inverse.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the inverse of the relation `{R}`",
    label = "not the inverse of `{R}`",
    note = "the inverse of a relation from A to B is a relation from B to A that declares this one as its inverse: `#[redmodel(owner = B, member = A, inverse = ...)]`"
)]
pub trait InverseOf<R: Relation> {
    /// The inverse list to update when linking `member_key`: its key, or
    /// `None` without an inverse.
    fn inverse_key(member_key: &str) -> Option<String>;
}

impl<R: Relation> InverseOf<R> for NoInverse {
    fn inverse_key(_: &str) -> Option<String> {
        None
    }
}

/// `Self` = `T`, with an error message for inverse relations that do not
/// mirror their relation (a plain associated-type equality would only say
/// "type mismatch").
#[diagnostic::on_unimplemented(
    message = "this inverse relation does not mirror its relation: its (owner, member, inverse) are `{Self}`, they must be `{T}`",
    label = "not the mirror of this relation",
    note = "the inverse of a relation from A to B is a relation from B to A that declares this one as its inverse: `#[redmodel(owner = B, member = A, inverse = ...)]`"
)]
pub trait Mirrors<T> {}

impl<T> Mirrors<T> for T {}

impl<R, I> InverseOf<R> for I
where
    R: Relation,
    I: Relation,
    (I::Owner, I::Member, I::Inverse): Mirrors<(R::Member, R::Owner, R)>,
{
    fn inverse_key(member_key: &str) -> Option<String> {
        Some(relation_key(member_key, I::TABLE))
    }
}

fn relation_key(owner_key: &str, table: &str) -> String {
    let mut key = String::with_capacity(owner_key.len() + table.len() + 1);
    key.push_str(owner_key);
    key.push(':');
    key.push_str(table);
    key
}

/// A Redis list of keys of model `M`: a relation's list, or a standalone
/// list (`MemberList::<Student>::at("performance:good")`).
pub struct MemberList<M: Model> {
    key: String,
    /// Whether `key` is a model key (a relation's list), stored in the
    /// db's [`crate::KeyLayout`], rather than a key the user
    /// picked, used as given.
    model_key: bool,
    _marker: PhantomData<fn() -> M>,
}

impl<M: Model> Clone for MemberList<M> {
    fn clone(&self) -> Self {
        MemberList {
            key: self.key.clone(),
            model_key: self.model_key,
            _marker: PhantomData,
        }
    }
}

impl<M: Model> fmt::Debug for MemberList<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MemberList({})", self.key)
    }
}

impl<M: Model> PartialEq for MemberList<M> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

/// The members' keys, in plain form.
fn member_keys<M: Model, A: AsMember<M>>(
    members: impl IntoIterator<Item = A>,
) -> Result<Vec<String>> {
    members.into_iter().map(|m| m.member_key()).collect()
}

impl<M: Model> MemberList<M> {
    /// The list at `key`, used as given in every [`crate::KeyLayout`]
    /// (no round trip).
    pub fn at(key: impl Into<String>) -> Self {
        MemberList {
            key: key.into(),
            model_key: false,
            _marker: PhantomData,
        }
    }

    /// A relation's list at the model key `key` (plain form).
    fn of_model(key: String) -> Self {
        MemberList {
            key,
            model_key: true,
            _marker: PhantomData,
        }
    }

    /// The list's key in `db`: a relation's list in the db's
    /// [key layout](Db::key_layout) (`{teacher:A}:class` on a cluster), a
    /// list made with [`at`](Self::at) as given.
    pub fn key_in<'a>(&'a self, db: &Db) -> std::borrow::Cow<'a, str> {
        if self.model_key {
            db.stored(&self.key)
        } else {
            std::borrow::Cow::Borrowed(&self.key)
        }
    }

    /// The list's key: as given to [`at`](Self::at), or for a relation's
    /// list its plain form (see [`key_in`](Self::key_in)).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The number of members (LLEN).
    pub async fn count(&self, db: &Db) -> Result<u64> {
        db.read_cached(cmd("LLEN").arg(self.key_in(db)))
            .await
            .map_err(at_key(&self.key, "list"))
    }

    /// Appends members at the tail, in order (RPUSH); returns the new
    /// length. Duplicates are kept, as in a Redis list: use
    /// [`RelationRef::link`] for set-like membership.
    pub async fn append<A: AsMember<M>>(
        &self,
        db: &Db,
        members: impl IntoIterator<Item = A>,
    ) -> Result<u64> {
        self.push_with("RPUSH", db, member_keys(members)?).await
    }

    /// Appends one member (RPUSH); returns the new length.
    pub async fn push(&self, db: &Db, member: impl AsMember<M>) -> Result<u64> {
        self.push_with("RPUSH", db, vec![member.member_key()?])
            .await
    }

    /// Pushes members at the head, one after the other (LPUSH: `[a, b]`
    /// ends up as `b, a, ...`); returns the new length.
    pub async fn prepend<A: AsMember<M>>(
        &self,
        db: &Db,
        members: impl IntoIterator<Item = A>,
    ) -> Result<u64> {
        self.push_with("LPUSH", db, member_keys(members)?).await
    }

    /// Pushes the members with the plain keys `keys`, as `db` stores them.
    async fn push_with(&self, command: &str, db: &Db, keys: Vec<String>) -> Result<u64> {
        if keys.is_empty() {
            return self.count(db).await;
        }
        let mut cmd = cmd(command);
        cmd.arg(self.key_in(db));
        for key in &keys {
            cmd.arg(db.stored(key));
        }
        db.query(&cmd).await.map_err(at_key(&self.key, "list"))
    }

    /// Removes occurrences of `member` with LREM's count semantics:
    /// `count > 0` removes that many from the head, `count < 0` from the
    /// tail, `0` all. Returns how many were removed.
    pub async fn remove(&self, db: &Db, member: impl AsMember<M>, count: i64) -> Result<u64> {
        db.query(
            cmd("LREM")
                .arg(self.key_in(db))
                .arg(count)
                .arg(db.stored(&member.member_key()?)),
        )
        .await
        .map_err(at_key(&self.key, "list"))
    }

    /// The member at `index` (LINDEX; negative counts from the tail);
    /// `None` out of range.
    pub async fn index(&self, db: &Db, index: i64) -> Result<Option<ObjectRef<M>>> {
        let key: Option<Vec<u8>> = db
            .read_cached(cmd("LINDEX").arg(self.key_in(db)).arg(index))
            .await
            .map_err(at_key(&self.key, "list"))?;
        key.map(|k| self.parse_member(k)).transpose()
    }

    /// The members from `start` to `stop`, both included, negative
    /// indexes counting from the tail (LRANGE).
    pub async fn range(&self, db: &Db, start: i64, stop: i64) -> Result<Vec<ObjectRef<M>>> {
        let keys: Vec<Vec<u8>> = db
            .read_cached(cmd("LRANGE").arg(self.key_in(db)).arg(start).arg(stop))
            .await
            .map_err(at_key(&self.key, "list"))?;
        keys.into_iter().map(|k| self.parse_member(k)).collect()
    }

    /// Every member (LRANGE 0 -1). For long lists, [`page`](Self::page).
    pub async fn members(&self, db: &Db) -> Result<Vec<ObjectRef<M>>> {
        self.range(db, 0, -1).await
    }

    /// Page `page` (from 0) of `per_page` members. An empty page past the
    /// end.
    pub async fn page(&self, db: &Db, page: u64, per_page: u64) -> Result<Vec<ObjectRef<M>>> {
        match page_bounds(page, per_page) {
            Some((start, stop)) => self.range(db, start, stop).await,
            None => Ok(Vec::new()),
        }
    }

    /// Every member object, in one LRANGE and a pipelined batch of reads
    /// per [`LOAD_BATCH`](crate::model::LOAD_BATCH) members, never one
    /// round trip per member. Members whose object no
    /// longer exists (it expired, or was deleted) are left out, and
    /// removed from the list in a checked transaction that never removes a
    /// member whose object exists (see [`index`](crate::model::index)).
    /// The handles alone: [`members`](Self::members).
    pub async fn load(&self, db: &Db) -> Result<Vec<M>> {
        self.load_range(db, 0, -1).await
    }

    /// Like [`load`](Self::load), with one result per member: an object
    /// that does not decode (bad data) is an error in its own place, and
    /// the others load. The outer error is the request's.
    pub async fn load_each(&self, db: &Db) -> Result<Vec<Result<M>>> {
        self.load_range_each(db, 0, -1).await
    }

    /// The member objects from `start` to `stop` (as [`range`](Self::range)),
    /// loaded as [`load`](Self::load) loads them.
    pub async fn load_range(&self, db: &Db, start: i64, stop: i64) -> Result<Vec<M>> {
        self.load_range_each(db, start, stop)
            .await?
            .into_iter()
            .collect()
    }

    /// Like [`load_range`](Self::load_range), with one result per member
    /// (see [`load_each`](Self::load_each)).
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "list_load", key = %self.key))]
    pub async fn load_range_each(&self, db: &Db, start: i64, stop: i64) -> Result<Vec<Result<M>>> {
        let refs = self.range(db, start, stop).await?;
        let list = self.key_in(db).into_owned();
        load_live(db, refs, |_| Entry::List(list.clone())).await
    }

    /// Every member object as a stream, fetched `per_page` at a time (an
    /// LRANGE and one batch of reads a page), so that memory stays bounded
    /// however long the list. Each item is its own result; a member whose
    /// object is gone is left out (not pruned: the walk's positions stay
    /// the list's). Pages are by position: members pushed or removed before the
    /// walk's place meanwhile shift what follows. A `per_page` of 0 is
    /// taken as 1.
    pub fn stream(
        &self,
        db: &Db,
        per_page: u64,
    ) -> impl futures_util::Stream<Item = Result<M>> + Send + Unpin + 'static + use<M>
    where
        M: Send + 'static,
    {
        let per_page = per_page.max(1);
        let start = (self.clone(), db.clone(), 0u64);
        crate::model::query::paged(start, move |(list, db, from): (Self, Db, u64)| async move {
            let stop = from.saturating_add(per_page - 1);
            let to = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            let refs = list.range(&db, to(from), to(stop)).await?;
            let read = refs.len() as u64;
            let items = ObjectRef::load_many_each(&db, &refs)
                .await?
                .into_iter()
                .filter_map(Result::transpose)
                .collect();
            let next = (read == per_page).then(|| (list, db, stop.saturating_add(1)));
            Ok((items, next))
        })
    }

    /// Page `page` of member objects (see [`page`](Self::page)).
    pub async fn load_page(&self, db: &Db, page: u64, per_page: u64) -> Result<Vec<M>> {
        match page_bounds(page, per_page) {
            Some((start, stop)) => self.load_range(db, start, stop).await,
            None => Ok(Vec::new()),
        }
    }

    /// Deletes the list. Whether it existed.
    pub async fn delete(&self, db: &Db) -> Result<bool> {
        db.query(cmd("DEL").arg(self.key_in(db))).await
    }

    /// Sets a time to live (PEXPIRE). Whether the list exists. The list
    /// keeps it through pushes and removals, and loses it if it is ever
    /// emptied (Redis deletes an empty list): see
    /// [`super::expiry`].
    pub async fn expire(&self, db: &Db, ttl: Duration) -> Result<bool> {
        expiry::expire_key(db, &self.key_in(db), ttl).await
    }

    /// Makes the list expire at `when` (PEXPIREAT). Whether it existed.
    pub async fn expire_at(&self, db: &Db, when: SystemTime) -> Result<bool> {
        expiry::expire_key_at(db, &self.key_in(db), when).await
    }

    /// Removes the time to live (PERSIST). Whether there was one.
    pub async fn persist(&self, db: &Db) -> Result<bool> {
        expiry::persist_key(db, &self.key_in(db)).await
    }

    /// The time to live (PTTL).
    pub async fn ttl(&self, db: &Db) -> Result<Ttl> {
        expiry::ttl_of(db, &self.key_in(db)).await
    }

    /// A stored member key as a handle (its bytes become the handle's
    /// key); the error names the list. Read as bytes, so that a member
    /// that is not UTF-8 (no key of any model) is an [`Error::InvalidKey`]
    /// like any other bad member.
    fn parse_member(&self, member: Vec<u8>) -> Result<ObjectRef<M>> {
        let parsed = match String::from_utf8(member) {
            Ok(text) => ObjectRef::parse_owned(text),
            Err(e) => Err(Error::InvalidKey {
                key: String::from_utf8_lossy(e.as_bytes()).into_owned(),
                model: M::TABLE,
                reason: "it is not UTF-8 text".to_string(),
            }),
        };
        parsed.map_err(|err| match err {
            Error::InvalidKey { key, model, reason } => Error::InvalidKey {
                key,
                model,
                reason: format!("{reason} (found in the list `{}`)", self.key),
            },
            other => other,
        })
    }
}

/// LRANGE bounds of a page, or `None` if it is empty or beyond `i64`.
fn page_bounds(page: u64, per_page: u64) -> Option<(i64, i64)> {
    if per_page == 0 {
        return None;
    }
    let start = page.checked_mul(per_page)?;
    let stop = start.checked_add(per_page - 1)?;
    Some((
        i64::try_from(start).ok()?,
        i64::try_from(stop).unwrap_or(i64::MAX),
    ))
}

/// One admin's list of relation `R` (`teacher:A:class`). Derefs to its
/// [`MemberList`], which has the list operations; adds linking that keeps
/// `R`'s inverse in step.
pub struct RelationRef<R: Relation> {
    owner: ObjectRef<R::Owner>,
    list: MemberList<R::Member>,
}

impl<R: Relation> Clone for RelationRef<R> {
    fn clone(&self) -> Self {
        RelationRef {
            owner: self.owner.clone(),
            list: self.list.clone(),
        }
    }
}

impl<R: Relation> fmt::Debug for RelationRef<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RelationRef({})", self.list.key)
    }
}

impl<R: Relation> PartialEq for RelationRef<R> {
    fn eq(&self, other: &Self) -> bool {
        self.list == other.list
    }
}

impl<R: Relation> Deref for RelationRef<R> {
    type Target = MemberList<R::Member>;

    fn deref(&self) -> &MemberList<R::Member> {
        &self.list
    }
}

impl<R: Relation> RelationRef<R> {
    /// `owner`'s list of this relation (no round trip).
    pub fn new(owner: ObjectRef<R::Owner>) -> Self {
        let key = relation_key(owner.key(), R::TABLE);
        RelationRef {
            owner,
            list: MemberList::of_model(key),
        }
    }

    /// The owner's handle.
    pub fn owner(&self) -> &ObjectRef<R::Owner> {
        &self.owner
    }

    /// Parses a key of this relation (`teacher:A:class`) back into a
    /// handle.
    pub fn parse(key: &str) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidKey {
            key: key.to_string(),
            model: R::TABLE,
            reason,
        };
        let plain = crate::KeyLayout::parse(key)
            .ok_or_else(|| {
                invalid("its hash-tag braces are not where a key layout puts them".to_string())
            })?
            .1;
        let owner_key = plain
            .strip_suffix(R::TABLE)
            .and_then(|k| k.strip_suffix(':'))
            .ok_or_else(|| invalid(format!("it does not end with `:{}`", R::TABLE)))?;
        let owner = ObjectRef::<R::Owner>::parse(owner_key).map_err(|e| invalid(e.to_string()))?;
        Ok(RelationRef::new(owner))
    }

    /// The SCAN pattern matching this relation's lists of every owner.
    pub fn scan_pattern() -> String {
        format!(
            "{}:*:{}",
            glob_escape(<R::Owner as Model>::TABLE),
            glob_escape(R::TABLE)
        )
    }

    /// Links `member` to the owner: adds it to this list unless it is
    /// there, and, if `R` has an inverse, the owner to the member's
    /// inverse list, all in one atomic unit (one script; in the cluster
    /// layout, the owner's side then the member's). Linking twice does not
    /// duplicate a member (it moves it to the tail). Returns whether the
    /// member was not linked before.
    ///
    /// Both objects must exist: otherwise [`Error::NotFound`] names the
    /// missing one and nothing is linked. If one of the lists' keys holds
    /// another Redis type, the error names this list's key, and the link
    /// stops at that command.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = <R::Member as Model>::TABLE, op = "link", key = %self.list.key))]
    pub async fn link(&self, db: &Db, member: impl AsMember<R::Member>) -> Result<bool> {
        Ok(self.link_many(db, [member]).await? == 1)
    }

    /// Links several members (see [`link`](Self::link)) in one atomic
    /// unit; returns how many were not linked before.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = <R::Member as Model>::TABLE, op = "link_many", key = %self.list.key))]
    pub async fn link_many<A: AsMember<R::Member>>(
        &self,
        db: &Db,
        members: impl IntoIterator<Item = A>,
    ) -> Result<u64> {
        let keys = member_keys(members)?;
        if keys.is_empty() {
            return Ok(0);
        }
        let list = self.list.key_in(db);
        let owner = self.owner.key_in(db);
        // Both sides must exist when the link lands: the owner guards its
        // list, each member its inverse list (and itself, without one).
        // In the cluster layout these are steps in their own slots, the
        // owner's list first: a crash in between leaves only the owner's
        // side, which the next `link` (idempotent) completes.
        let mut steps = Plan::new();
        steps.guard(owner.as_ref());
        for member in &keys {
            let stored = db.stored(member);
            steps.add(cmd("LREM").arg(&list).arg(0).arg(&stored).owned());
            steps.add_ignored(cmd("RPUSH").arg(&list).arg(&stored).owned());
        }
        for member in &keys {
            steps.step().guard(db.stored(member));
            if let Some(inverse) = R::Inverse::inverse_key(member) {
                let inverse = db.stored(&inverse);
                steps.add_ignored(cmd("LREM").arg(&inverse).arg(0).arg(&owner).owned());
                steps.add_ignored(cmd("RPUSH").arg(&inverse).arg(&owner).owned());
            }
        }
        let removed: Vec<u64> = match steps.run(db).await {
            Ok(removed) => removed,
            Err(err) => {
                if !db.one_slot() {
                    // A later step found its object gone: take back what
                    // the earlier ones linked (idempotent), as best we can.
                    let _ = self.unlink_many(db, &keys).await;
                }
                return Err(at_key(&self.list.key, "list")(err));
            }
        };
        // A member is new when LREM found nothing; a member given twice in
        // one call counts once.
        let mut seen = std::collections::HashSet::new();
        Ok(keys
            .iter()
            .zip(removed)
            .filter(|(key, removed)| *removed == 0 && seen.insert(key.as_str()))
            .count() as u64)
    }

    /// Unlinks `member`: removes every occurrence of it from this list and
    /// of the owner from its inverse list, in one MULTI/EXEC (one per side
    /// in the cluster layout). Whether it
    /// was linked.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = <R::Member as Model>::TABLE, op = "unlink", key = %self.list.key))]
    pub async fn unlink(&self, db: &Db, member: impl AsMember<R::Member>) -> Result<bool> {
        let member = member.member_key()?;
        Ok(self.unlink_many(db, std::slice::from_ref(&member)).await? > 0)
    }

    /// Removes the members with the plain keys `members` from this list and
    /// the owner from their inverse lists; how many occurrences left this
    /// list.
    async fn unlink_many(&self, db: &Db, members: &[String]) -> Result<u64> {
        let mut steps = Plan::new();
        for member in members {
            steps.add(
                cmd("LREM")
                    .arg(self.list.key_in(db))
                    .arg(0)
                    .arg(db.stored(member))
                    .clone(),
            );
        }
        for member in members {
            if let Some(inverse) = R::Inverse::inverse_key(member) {
                steps.step().add_ignored(
                    cmd("LREM")
                        .arg(db.stored(&inverse))
                        .arg(0)
                        .arg(self.owner.key_in(db))
                        .clone(),
                );
            }
        }
        let removed: Vec<u64> = steps
            .run(db)
            .await
            .map_err(at_key(&self.list.key, "list"))?;
        Ok(removed.iter().sum())
    }
}

impl<A: Admin> ObjectRef<A> {
    /// This admin's relation `R` (no round trip).
    pub fn relation<R: Relation<Owner = A>>(&self) -> RelationRef<R> {
        RelationRef::new(self.clone())
    }
}

impl<R: Relation> RelationRef<R> {
    /// The relation of `owner` (same as `owner.relation::<R>()`).
    pub fn of(owner: &ObjectRef<R::Owner>) -> Self {
        RelationRef::new(owner.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::page_bounds;

    #[test]
    fn pages_map_to_lrange_bounds() {
        assert_eq!(page_bounds(0, 10), Some((0, 9)));
        assert_eq!(page_bounds(2, 10), Some((20, 29)));
        assert_eq!(page_bounds(0, 0), None);
        assert_eq!(page_bounds(u64::MAX, 2), None, "overflow");
        assert_eq!(page_bounds(1, u64::MAX), None, "start beyond i64");
        assert_eq!(page_bounds(0, u64::MAX), Some((0, i64::MAX)));
    }
}
