//! The model layer: plain structs as Redis objects, sub-objects and
//! relations.
//!
//! An *admin object* is a top-level object, with its own hash at
//! `TABLE:PK` (`teacher:A`). It owns sub-objects (hashes under its key,
//! `student:a:exam:2024`) and relation lists (`teacher:A:class`). The
//! pattern comes from one of the design documents this library
//! generalises, "the seeds" ([below](#the-seeds)).
//!
//! Three derives (re-exported at the crate root) turn structs into models:
//!
//! | derive | kind | Redis type | key |
//! |---|---|---|---|
//! | [`Admin`](derive@crate::Admin) | admin object | hash | `TABLE:PK` (`teacher:A`) |
//! | [`SubObject`](derive@crate::SubObject) | sub-object of an admin | hash, or a string with `single` | `ADMIN_TABLE:ADMIN_PK:TABLE:PK` (`student:a:exam:2024`) |
//! | [`Relation`](derive@crate::Relation) | relation of an admin | list of member keys | `ADMIN_TABLE:ADMIN_PK:TABLE` (`teacher:A:class`) |
//!
//! A reference field (`student:a` field `class` = `class:1`) is a field of
//! type [`Ref<M>`](Ref).
//!
//! Objects are addressed by an [`ObjectRef`] (a typed key: `Teacher::at("A")`),
//! which carries every per-object operation; relations by a [`RelationRef`].
//! Field operations take the typed field handles the derive generates as
//! associated constants (`Teacher::NAME`), so a field's value type is checked
//! at compile time and only numeric fields can be incremented.
//!
//! ```
//! use redmodel::prelude::*;
//! use redmodel::model::Ref;
//!
//! #[derive(Admin, Debug, PartialEq)]
//! struct Teacher {
//!     #[redmodel(pk)]
//!     id: String,
//!     name: String,
//!     subject: String,
//! }
//!
//! #[derive(Admin, Debug, PartialEq)]
//! struct Class {
//!     #[redmodel(pk)]
//!     id: u32,
//!     name: String,
//! }
//!
//! #[derive(Relation)]
//! #[redmodel(table = "class", owner = Teacher, member = Class, inverse = ClassTeachers)]
//! struct TeacherClasses;
//!
//! #[derive(Relation)]
//! #[redmodel(table = "teacher", owner = Class, member = Teacher, inverse = TeacherClasses)]
//! struct ClassTeachers;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), redmodel::Error> {
//! let db = redmodel::Db::memory();
//! let a = Teacher { id: "A".into(), name: "Teacher A".into(), subject: "math".into() };
//! a.insert(&db).await?;
//! Class { id: 1, name: "Class 1".into() }.insert(&db).await?;
//!
//! assert_eq!(Teacher::at("A").key(), "teacher:A");
//! assert_eq!(Teacher::at("A").get(&db, Teacher::SUBJECT).await?.as_deref(), Some("math"));
//!
//! Teacher::at("A").relation::<TeacherClasses>().link(&db, Class::at(1)).await?;
//! let classes: Vec<Class> = Teacher::at("A").relation::<TeacherClasses>().load(&db).await?;
//! assert_eq!(classes[0].name, "Class 1");
//! let teachers = Class::at(1).relation::<ClassTeachers>().members(&db).await?;
//! assert_eq!(teachers, vec![Teacher::at("A")]);
//! # Ok(()) }
//! ```
//!
//! # The seeds
//!
//! redmodel generalises four design documents, each solving one problem
//! with hand-written Redis commands; the code calls them "the seeds":
//!
//! - **002**, the MemObject / MemAdmin / MemRelation pattern: objects as
//!   hashes, admin objects that own sub-objects and relation lists (this
//!   module);
//! - **001**, key design: a login found by name, who logs in most, the
//!   last N logins, books by tag ([`index`]);
//! - **003**, sorted-set scores: ranges of scores, several dimensions
//!   packed into one score ([`index`], [`composite`]);
//! - **004**, key expiry ([`expiry`]).
//!
//! Here these patterns are declared on the model and kept by the library
//! with the object's own writes: unique lookups, sorted indexes, tags
//! and recent-N lists ([`index`]), composite scores ([`composite`]),
//! expiry of objects, lists and whole admin subtrees ([`expiry`]), and
//! passes that build indexes on existing data or rewrite objects after a
//! schema change ([`migrate`]). The guide's seed table
//! (`docs/seeds.md`) maps each seed's method name (002), or the command it
//! writes by hand (001, 003, 004), to the operation that does it here.
//!
//! # Module map
//!
//! One module per concept. Each uses only modules of the layers below
//! it, and the traits of this module (`Model`, `Admin`, `OwnerKind`),
//! which every one of them needs; no two modules import each other,
//! directly or not (`tests/model/layers.rs` checks it):
//!
//! 0. `codec` (field values as stored text), [`key`] (the key layout, pk
//!    segments), `reply` (server errors and replies, named by key),
//!    `scan` (SCAN): none
//! 1. `field` (typed field handles): codec
//! 2. `object` ([`ObjectRef`] and its reads): codec, field, key, reply,
//!    scan
//! 3. [`expiry`] (times to live): key, object, scan; `live` (reads that
//!    leave out and prune the entries of gone objects, unique entries'
//!    holders): codec, object; `member` ([`AsMember`]): object;
//!    `referrer` (the registry of where references to a model are stored,
//!    and the clearing of one): key, object; `read` (reading objects by
//!    position): object, reply
//! 4. [`index`] (declared indexes and their queries): codec, key, live,
//!    member, object, scan; `relation` ([`MemberList`], [`RelationRef`]):
//!    expiry, key, live, member, object, reply
//! 5. `write` (an object's writes: `set`, `set_many`, `incr`, `insert`,
//!    `set_value`, `delete`, and the index entries each write changes;
//!    `write::stepped`, the same in the cluster layout): codec, field,
//!    index, key, live, object, referrer, reply; [`composite`]: index
//! 6. [`migrate`]: index, key, live, object, scan, write; [`cascade`]
//!    (deleting an admin and every reference to it): key, object,
//!    referrer, scan, write; `transaction` (typed optimistic
//!    transactions): codec, field, index, object, read, reply, write
//! 7. [`check`] (checking and repairing stored data, and the registry of
//!    declarations it walks): index, key, live, migrate, object, referrer,
//!    relation, scan
//!
//! # Key layouts
//!
//! Every key is built in its plain form (`teacher:A:class`); a [`Db`]
//! stores it in its [`KeyLayout`](crate::KeyLayout), which on Redis
//! Cluster puts the admin's hash tag on the keys under it
//! (`{teacher:A}:class`), so an admin and its subtree share a slot. In
//! that layout an object and its index entries, or the two sides of a
//! link, are in different slots: the operations that span them run as
//! ordered single-slot steps (`write::stepped`, `db`'s plans,
//! the cascade's cluster path), each idempotent, in an order where a crash between two
//! steps leaves only entries the reads skip and prune, or that
//! [`migrate::rebuild_indexes`] repairs. The guide's performance page
//! (`docs/performance.md`) lists, per
//! operation, its steps and round trips in each layout.
//!
//! Outside `model`: `db` (the handle, the backends, and how every read
//! and write runs: plans, checked scripts, WATCH transactions and their
//! retry policy) sits below it, above `command`, `error`, `layout` and
//! the sync hooks (`crate::sync_hook`): `model` imports `db`, never the
//! reverse. The model layer says what a write is; `db` decides how it
//! runs on each backend and key layout.
//!
//! The methods of [`ObjectRef`] are defined in the module of their
//! concern (reads in `object`, writes in `write`, `expire` in `expiry`,
//! `relation` in `relation`, `delete_cascade` in `cascade`).

mod cached;
pub mod cascade;
pub mod check;
pub mod codec;
pub mod composite;
pub mod expiry;
mod field;
pub mod index;
pub mod key;
mod live;
mod member;
pub mod migrate;
mod object;
pub mod query;
mod read;
mod referrer;
mod relation;
mod reply;
mod scan;
mod transaction;
pub(crate) mod write;

pub use check::{conflicting_declarations, DeclarationConflict};

use std::fmt::Debug;
use std::future::Future;

pub use crate::sync_hook::SyncEvent;
pub use codec::{Codec, FieldError, FieldValue, Incr, IntoValue, Json, Plain, Scalar};
pub use composite::{Composite, Dim};
pub use expiry::Ttl;
pub use field::{Assign, Field, FieldSet};
pub use index::{
    IndexKind, IndexSpec, RecentList, Score, Sortable, SortedIndex, TagIndex, TagSet, UniqueIndex,
};
pub use key::KeyPart;
pub use member::AsMember;
pub use object::{IntoPk, ObjectRef, Ref, LOAD_BATCH};
pub use query::{Cursor, Filter, OrderBy, Page, Query};
pub use relation::{InverseOf, MemberList, NoInverse, Relation, RelationRef};
pub use transaction::Transaction;

use crate::command::cmd;
use crate::{Db, Result};

/// How a model's object is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// A hash, one field per struct field.
    Hash,
    /// A string holding the one data field (`#[redmodel(single)]`).
    Single,
}

/// A struct stored as one Redis object. Implemented by
/// `#[derive(Admin)]` and `#[derive(SubObject)]`; the methods marked hidden
/// are generated and not meant to be called.
pub trait Model: Sized + Send + Sync + 'static {
    /// The pk's type.
    type Pk: KeyPart + Clone + Debug + Send + Sync + 'static;
    /// [`NoOwner`] for an admin model; the admin model for a sub-object.
    type Owner: OwnerKind;
    /// The table name: the segment before the pk in the key.
    const TABLE: &'static str;
    /// The stored names of the data fields (pk and skipped fields excluded),
    /// in declaration order.
    const FIELDS: &'static [&'static str];
    /// Hash or string.
    const STORAGE: Storage;
    /// The sync hook runs on every `SYNC_EVERY`-th full write.
    const SYNC_EVERY: u64;
    /// The indexes declared on the fields (`#[redmodel(unique)]`,
    /// `sorted`, `tags`, `recent = N`): see [`index`]. Only admin models
    /// have any.
    const INDEXES: &'static [IndexSpec] = &[];
    /// The reference fields (`Ref<T>`, `Option<Ref<T>>`): the objects
    /// they name must exist when they are written; what deleting one does
    /// is their `on_delete` (see [`cascade`]).
    const REFERENCES: &'static [cascade::Reference] = &[];
    /// The time to live every full write gives an object of this model
    /// (`#[redmodel(ttl = "30m")]` on the struct), in the write's own
    /// atomic unit: see [`expiry`].
    const TTL: Option<std::time::Duration> = None;
    /// The stored names of the fields declared with a time to live
    /// (`#[redmodel(ttl = "10m")]` on a field), with it: every write of
    /// such a field gives it that TTL again (HPEXPIRE, Redis 7.4 or
    /// Valkey 9): see [`expiry`].
    const FIELD_TTLS: &'static [(&'static str, std::time::Duration)] = &[];
    /// Whether every object this model writes holds one of its declared
    /// fields (a plain field of a [`FieldValue`] that is
    /// [always stored](FieldValue::ALWAYS_STORED), as a [`Scalar`] is).
    /// A read of the declared fields then tells an object from a missing
    /// key by itself; otherwise it reads the `_count` field that every
    /// written object holds too. `false` is always safe: it only costs
    /// reads that one value.
    const ALWAYS_HOLDS_A_FIELD: bool = false;
    /// The slot group the model's objects are pinned to on Redis Cluster
    /// (`#[redmodel(slot_group = "shop")]` on an admin; a sub-object has
    /// its admin's): in the [cluster layout](crate::KeyLayout::Cluster)
    /// its objects and the keys under them (sub-objects, relation lists)
    /// carry the hash tag `{shop}`, so the objects of one group share one
    /// slot. No effect in the plain layout. See
    /// [`KeyLayout`](crate::KeyLayout#slot-groups).
    const SLOT_GROUP: Option<&'static str> = None;

    /// This object's pk.
    fn pk(&self) -> &Self::Pk;

    /// The data fields as stored text (`None` = absent), aligned with
    /// [`FIELDS`](Model::FIELDS). `key` names the object in errors.
    #[doc(hidden)]
    fn encode_fields(&self, key: &str) -> Result<Vec<Option<Vec<u8>>>>;

    /// Builds an object from stored text aligned with
    /// [`FIELDS`](Model::FIELDS) (`None` = absent). `key` names the object
    /// in errors.
    #[doc(hidden)]
    fn decode_fields(key: &str, pk: Self::Pk, values: Vec<Option<Vec<u8>>>) -> Result<Self>;

    /// Writes this object under `owner`: see [`ObjectRef::insert`]. For
    /// admins, [`Admin::insert`] is shorter.
    fn insert_at(
        &self,
        db: &Db,
        owner: &<Self::Owner as OwnerKind>::Ref,
    ) -> impl Future<Output = Result<ObjectRef<Self>>> + Send {
        async move {
            let handle = ObjectRef::<Self>::new(owner.clone(), self.pk().clone());
            handle.insert(db, self).await?;
            Ok(handle)
        }
    }
}

/// A model whose objects stand alone, at `TABLE:PK`
/// (`#[derive(Admin)]`). The owner of sub-objects and relations.
///
/// These provided methods are shortcuts through [`ObjectRef`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an admin model",
    label = "not an admin model",
    note = "derive it with `#[derive(Admin)]`: only admin models own sub-objects and relations, and only they can be relation members"
)]
pub trait Admin: Model<Owner = NoOwner> {
    /// The handle of the object with this pk (no round trip).
    fn at(pk: impl IntoPk<Self::Pk>) -> ObjectRef<Self> {
        ObjectRef::new((), pk.into_pk())
    }

    /// This object's handle.
    fn handle(&self) -> ObjectRef<Self> {
        ObjectRef::new((), self.pk().clone())
    }

    /// Loads the object with this pk (`Self::at(pk).load(db)`); `Ok(None)`
    /// if there is none.
    fn load(
        db: &Db,
        pk: impl IntoPk<Self::Pk>,
    ) -> impl Future<Output = Result<Option<Self>>> + Send {
        let handle = Self::at(pk);
        async move { handle.load(db).await }
    }

    /// Whether an object with this pk exists.
    fn exists(db: &Db, pk: impl IntoPk<Self::Pk>) -> impl Future<Output = Result<bool>> + Send {
        let handle = Self::at(pk);
        async move { handle.exists(db).await }
    }

    /// Loads the objects with these pks in one round trip, in order
    /// (`None` where there is none).
    fn load_many<P: IntoPk<Self::Pk>>(
        db: &Db,
        pks: impl IntoIterator<Item = P>,
    ) -> impl Future<Output = Result<Vec<Option<Self>>>> + Send {
        let handles: Vec<ObjectRef<Self>> = pks.into_iter().map(Self::at).collect();
        async move { ObjectRef::load_many(db, &handles).await }
    }

    /// Like [`load_many`](Admin::load_many), one result per object: one that
    /// does not decode is an error in its own place, the others load (see
    /// [`ObjectRef::load_many_each`]).
    #[allow(clippy::type_complexity)]
    fn load_many_each<P: IntoPk<Self::Pk>>(
        db: &Db,
        pks: impl IntoIterator<Item = P>,
    ) -> impl Future<Output = Result<Vec<Result<Option<Self>>>>> + Send {
        let handles: Vec<ObjectRef<Self>> = pks.into_iter().map(Self::at).collect();
        async move { ObjectRef::load_many_each(db, &handles).await }
    }

    /// Full write: the fields, `_count` + 1, and the sync hook every
    /// [`SYNC_EVERY`](Model::SYNC_EVERY) writes. See [`ObjectRef::insert`].
    fn insert(&self, db: &Db) -> impl Future<Output = Result<ObjectRef<Self>>> + Send {
        self.insert_at(db, &())
    }

    /// Writes the fields, without counting the write or running the hook.
    fn insert_without_sync(&self, db: &Db) -> impl Future<Output = Result<ObjectRef<Self>>> + Send {
        async move {
            let handle = self.handle();
            handle.insert_without_sync(db, self).await?;
            Ok(handle)
        }
    }

    /// Inserts these objects, each as [`insert`](Admin::insert) does, the
    /// writes run at once: one result per object, in order, a failed one
    /// failing alone (see [`ObjectRef::insert_many`]).
    fn insert_many(
        db: &Db,
        values: &[Self],
    ) -> impl Future<Output = Vec<std::result::Result<(), crate::ItemError>>> + Send {
        ObjectRef::insert_many(db, values.iter().map(|v| (v.handle(), v)))
    }

    /// Sets fields of the objects with these pks, each item's fields as
    /// [`ObjectRef::set_many`] sets them on one object, the writes run at
    /// once: one result per item, in order, a failed one failing alone
    /// (see [`ObjectRef::set_each`]).
    fn set_many<P: IntoPk<Self::Pk>, A: IntoIterator<Item = Assign<Self>>>(
        db: &Db,
        items: impl IntoIterator<Item = (P, A)>,
    ) -> impl Future<Output = Vec<std::result::Result<(), crate::ItemError>>> + Send {
        let items: Vec<(ObjectRef<Self>, Vec<Assign<Self>>)> = items
            .into_iter()
            .map(|(pk, assigns)| (Self::at(pk), assigns.into_iter().collect()))
            .collect();
        ObjectRef::set_each(db, items)
    }

    /// Deletes the objects with these pks and their index entries, each
    /// as [`delete`](Admin::delete) does, the deletes run at once: one
    /// result per object, in order (see [`ObjectRef::delete_many`]).
    fn delete_many<P: IntoPk<Self::Pk>>(
        db: &Db,
        pks: impl IntoIterator<Item = P>,
    ) -> impl Future<Output = Vec<std::result::Result<bool, crate::ItemError>>> + Send {
        let handles: Vec<ObjectRef<Self>> = pks.into_iter().map(Self::at).collect();
        async move { ObjectRef::delete_many(db, &handles).await }
    }

    /// Deletes the object with this pk and its index entries (not its
    /// sub-objects, relations or the references to it: see
    /// [`delete_cascade`](Admin::delete_cascade)); whether it existed.
    fn delete(db: &Db, pk: impl IntoPk<Self::Pk>) -> impl Future<Output = Result<bool>> + Send {
        let handle = Self::at(pk);
        async move { handle.delete(db).await }
    }

    /// Deletes the object with this pk and every reference to it, in one
    /// MULTI/EXEC: see [`ObjectRef::delete_cascade`]. Whether it existed.
    fn delete_cascade(
        db: &Db,
        pk: impl IntoPk<Self::Pk>,
    ) -> impl Future<Output = Result<bool>> + Send {
        let handle = Self::at(pk);
        async move { handle.delete_cascade(db).await }
    }

    /// The handles of every object of this model (SCAN, never KEYS).
    fn scan(db: &Db) -> impl Future<Output = Result<Vec<ObjectRef<Self>>>> + Send {
        ObjectRef::<Self>::scan(db)
    }

    /// Every object of this model: [`scan`](Admin::scan), then one batch
    /// of reads (see [`ObjectRef::load_all`]). For small data: it holds
    /// every object at once; [`stream`](Admin::stream) holds a page.
    fn load_all(db: &Db) -> impl Future<Output = Result<Vec<Self>>> + Send {
        ObjectRef::<Self>::load_all(db)
    }

    /// Every object of this model as a stream fetched a page at a time,
    /// with bounded memory (see [`ObjectRef::stream`]).
    fn stream(db: &Db) -> impl futures_util::Stream<Item = Result<Self>> + Send + Unpin + 'static
    where
        Self: Send + 'static,
    {
        ObjectRef::<Self>::stream(db)
    }

    /// A query ([`Query`]) over this model's declared indexes.
    fn query() -> Query<Self> {
        Query::new()
    }
}

/// A model kept as a single string value (`#[redmodel(single)]`), read and
/// written whole with GET and SET.
pub trait SingleValue: Model {
    /// The value's type.
    type Value: Send + Sync;
    /// The value's codec.
    type Codec: Codec<Self::Value>;
}

/// Who owns a model's objects: [`NoOwner`] for admin models, the admin
/// model for sub-objects. Decides the key prefix.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot own sub-objects",
    label = "not an admin model",
    note = "the owner of a sub-object must be a model with `#[derive(Admin)]`"
)]
pub trait OwnerKind: 'static {
    /// The owner's handle: `()` for none, the admin's [`ObjectRef`].
    type Ref: Clone + Debug + PartialEq + Send + Sync + 'static;
    /// Appends the owner's part of the key (`""`, or `student:a:`).
    fn write_prefix(owner: &Self::Ref, out: &mut String);
    /// Splits the owner's part off `key`: the owner and what follows.
    fn split_prefix(key: &str) -> std::result::Result<(Self::Ref, &str), String>;
    /// The SCAN pattern matching the owner part of any owner
    /// (`""` or `student:*:`).
    fn any_owner_pattern() -> String;
}

/// The owner of admin models: none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoOwner;

impl OwnerKind for NoOwner {
    type Ref = ();

    fn write_prefix(_: &(), _: &mut String) {}

    fn split_prefix(key: &str) -> std::result::Result<((), &str), String> {
        Ok(((), key))
    }

    fn any_owner_pattern() -> String {
        String::new()
    }
}

impl<A: Admin> OwnerKind for A {
    type Ref = ObjectRef<A>;

    fn write_prefix(owner: &ObjectRef<A>, out: &mut String) {
        out.push_str(owner.key());
        out.push(':');
    }

    fn split_prefix(key: &str) -> std::result::Result<(ObjectRef<A>, &str), String> {
        // The admin part is `TABLE:PK`: two segments, as neither holds a raw `:`.
        let split = key
            .match_indices(':')
            .nth(1)
            .map(|(i, _)| i)
            .ok_or_else(|| format!("it does not start with a key of `{}`", A::TABLE))?;
        let (admin, rest) = key.split_at(split);
        let rest = rest.strip_prefix(':').unwrap_or(rest);
        let owner = ObjectRef::<A>::parse(admin).map_err(|e| e.to_string())?;
        Ok((owner, rest))
    }

    fn any_owner_pattern() -> String {
        format!("{}:*:", key::glob_escape(A::TABLE))
    }
}

/// The number of keys in the selected database (DBSIZE).
pub async fn dbsize(db: &Db) -> Result<u64> {
    db.query(&cmd("DBSIZE")).await
}

/// What generated code names, by absolute path. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use super::check::declared::{model_namespace, relation_namespace, Declared};
    pub use super::check::{model_checker, relation_checker};
    pub use super::codec::{Codec, FieldError, FieldValue, Json, Plain};
    pub use super::field::Field;
    pub use super::index::{
        score_of, tags_of, IndexKind, IndexSpec, RecentList, SortedIndex, TagIndex, UniqueIndex,
    };
    #[allow(deprecated)]
    pub use super::referrer::{
        delete_admin, delete_object, is_object_of, object_pattern,
        on_delete_cascade_on_a_reference_field, OnDelete, Reference, Referrer, ReferrerKind,
    };
    pub use super::relation::{InverseOf, NoInverse, Relation};
    pub use super::{Admin, Model, NoOwner, OwnerKind, SingleValue, Storage};
    pub use crate::layout::TableGroup;
    pub use crate::{Error, Result};
    pub use std::default::Default;
    pub use std::option::Option::{self, None, Some};
    pub use std::result::Result::{Err, Ok};
    pub use std::vec::Vec;

    /// Encodes one field for `encode_fields`, naming the key and field in
    /// errors.
    pub fn encode_field<T, C: Codec<T>>(
        key: &str,
        field: &str,
        value: &T,
    ) -> crate::Result<Option<Vec<u8>>> {
        C::encode(value).map_err(|reason| crate::Error::Encode {
            key: key.to_string(),
            field: field.to_string(),
            reason,
        })
    }

    /// Decodes one field for `decode_fields`: `raw` is the next stored
    /// value (`None` past the end counts as absent); `default` replaces an
    /// absent value when the field declares one.
    pub fn decode_field<T, C: Codec<T>>(
        key: &str,
        field: &str,
        raw: Option<Option<Vec<u8>>>,
        default: Option<fn() -> T>,
    ) -> crate::Result<T> {
        match (C::decode_owned(raw.flatten()), default) {
            (Ok(value), _) => Ok(value),
            (Err(FieldError::Missing), Some(default)) => Ok(default()),
            (Err(err), _) => Err(err.at(key, field)),
        }
    }

    /// Compile-time check that a plain field's type can be stored (its
    /// error message says what to do otherwise); whether it always is.
    pub const fn plain_field<T: FieldValue>() -> bool {
        T::ALWAYS_STORED
    }
    /// Compile-time check that a `json` field's type is serde-able;
    /// `false`: a value may serialize to `null`, an absent field.
    pub const fn json_field<T: serde::Serialize + serde::de::DeserializeOwned>() -> bool {
        false
    }
    /// Compile-time check that an owner is an admin model.
    pub const fn assert_admin<T: Admin>() {}
}
