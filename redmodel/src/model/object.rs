//! [`ObjectRef`]: the typed key of one object, and the operations that
//! read it. The other per-object operations are methods of `ObjectRef` too,
//! each in the module of its concern: writes in `write`, expiry in
//! `expiry`, the cascading delete in `cascade`, relations in `relation`.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{Hash, Hasher};

use super::codec::{shown, Codec, IntoValue, Scalar};
use super::field::{Field, FieldSet};
use super::key::{decode_pk, encode_segment, glob_escape};
use super::reply::at_key;
use super::scan::scan_keys;
use super::{Admin, KeyPart, Model, OwnerKind, SingleValue};
use crate::command::cmd;
use crate::{Db, Error, KeyLayout, Result};

/// The hash field counting full writes.
pub const COUNT_FIELD: &str = "_count";

/// The owner handle of a model's objects: `()` or the admin's [`ObjectRef`].
pub(crate) type OwnerRef<M> = <<M as Model>::Owner as OwnerKind>::Ref;

/// A reference field's type: a field of type `Ref<Class>` is stored as the
/// referenced object's key (`class:1`) and read back as a handle on it,
/// which [`load`](ObjectRef::load)s the object.
pub type Ref<M> = ObjectRef<M>;

/// The typed key of one object of model `M`: `teacher:A`, or
/// `student:a:exam:2024` for a sub-object. Building one costs no round
/// trip; every operation on the object is a method of it.
///
/// Two handles are equal when their keys are: keys are canonical, so this
/// is the same as equal pks (and owners).
///
/// # Its operations, by concern
///
/// | concern | methods | defined in |
/// |---|---|---|
/// | key and handle | [`key`](Self::key), [`pk`](Self::pk), [`owner`](Self::owner), [`parse`](Self::parse), [`sub`](Self::sub) | `model/object.rs` |
/// | reads | [`exists`](Self::exists), [`get`](Self::get), [`get_fields`](Self::get_fields), [`load`](Self::load), [`load_many`](Self::load_many), [`load_all`](Self::load_all), [`scan`](Self::scan) | `model/object.rs`, by position in `model/read.rs` |
/// | writes | [`insert`](Self::insert), [`set`](Self::set), [`set_many`](Self::set_many), [`incr`](Self::incr), [`delete`](Self::delete) | `model/write.rs` |
/// | sub-objects | [`insert_sub`](Self::insert_sub), [`load_subs`](Self::load_subs), [`scan_subs`](Self::scan_subs) | `model/object.rs` |
/// | expiry | [`expire`](Self::expire), [`persist`](Self::persist), [`ttl`](Self::ttl), [`expire_tree`](Self::expire_tree) | `model/expiry.rs` |
/// | relations | [`relation`](Self::relation) | `model/relation.rs` |
/// | cascading delete | [`delete_cascade`](Self::delete_cascade) | `model/cascade.rs` |
pub struct ObjectRef<M: Model> {
    owner: OwnerRef<M>,
    pk: M::Pk,
    key: String,
}

/// What a pk argument accepts: the pk's type, or a `&str` for a `String` pk.
///
/// A trait of our own rather than `Into`, so that `Class::at(1)` infers the
/// pk's integer type.
pub trait IntoPk<P> {
    /// The pk.
    fn into_pk(self) -> P;
}

impl<P: super::KeyPart> IntoPk<P> for P {
    fn into_pk(self) -> P {
        self
    }
}

impl IntoPk<String> for &str {
    fn into_pk(self) -> String {
        self.to_string()
    }
}

impl IntoPk<String> for &String {
    fn into_pk(self) -> String {
        self.clone()
    }
}

/// The stored text of an object's declared fields (aligned with
/// [`Model::FIELDS`], `None` = absent), or `None` if the object does not
/// exist.
pub(crate) type RawFields = Option<Vec<Option<Vec<u8>>>>;

impl<M: Model> Clone for ObjectRef<M> {
    fn clone(&self) -> Self {
        ObjectRef {
            owner: self.owner.clone(),
            pk: self.pk.clone(),
            key: self.key.clone(),
        }
    }
}

impl<M: Model> fmt::Debug for ObjectRef<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectRef({})", self.key)
    }
}

impl<M: Model> fmt::Display for ObjectRef<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key)
    }
}

impl<M: Model> PartialEq for ObjectRef<M> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<M: Model> Eq for ObjectRef<M> {}

impl<M: Model> Hash for ObjectRef<M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

impl<M: Model> PartialOrd for ObjectRef<M> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<M: Model> Ord for ObjectRef<M> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// A reference field is stored as the key it points to.
impl<M: Model> Scalar for ObjectRef<M> {
    fn to_text(&self) -> Vec<u8> {
        self.key.as_bytes().to_vec()
    }

    /// The handle's key is a copy of `raw` (see [`from_owned_text`]).
    ///
    /// [`from_owned_text`]: Scalar::from_owned_text
    fn from_text(raw: &[u8]) -> std::result::Result<Self, String> {
        Self::from_owned_text(raw.to_vec())
    }

    /// A reference field's own bytes become the handle's key, as they
    /// are in plain, canonical form (what the model writes).
    fn from_owned_text(raw: Vec<u8>) -> std::result::Result<Self, String> {
        let key = String::from_utf8(raw)
            .map_err(|e| format!("{} is not UTF-8 text", shown(e.as_bytes())))?;
        ObjectRef::parse_owned(key).map_err(|e| e.to_string())
    }
}

impl<M: Model> ObjectRef<M> {
    /// The handle of the object `pk` owned by `owner` (`()` for admins).
    pub fn new(owner: OwnerRef<M>, pk: M::Pk) -> Self {
        let mut key = String::with_capacity(M::TABLE.len() + 16);
        M::Owner::write_prefix(&owner, &mut key);
        key.push_str(M::TABLE);
        key.push(':');
        pk.write_key_segment(&mut key);
        ObjectRef { owner, pk, key }
    }

    /// The object's key in plain form (`student:a:exam:2024`): its
    /// identity, and its Redis key in a database of the
    /// [plain layout](KeyLayout::Plain). For the key as a given database
    /// stores it, see [`key_in`](Self::key_in).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The plain key, taken.
    pub fn into_key(self) -> String {
        self.key
    }

    /// The Redis key of this object in `db`, in its
    /// [key layout](Db::key_layout): what raw commands must use.
    ///
    /// ```
    /// # use redmodel::prelude::*;
    /// # #[derive(redmodel::Admin)]
    /// # struct Student { #[redmodel(pk)] id: String }
    /// # #[derive(redmodel::SubObject)]
    /// # #[redmodel(owner = Student)]
    /// # struct Exam { #[redmodel(pk)] year: u32 }
    /// use redmodel::KeyLayout;
    /// let exam = Student::at("a").sub::<Exam>(2024);
    /// let cluster = Db::memory().with_key_layout(KeyLayout::Cluster);
    /// assert_eq!(exam.key_in(&Db::memory()), "student:a:exam:2024");
    /// assert_eq!(exam.key_in(&cluster), "{student:a}:exam:2024");
    /// ```
    pub fn key_in<'a>(&'a self, db: &Db) -> Cow<'a, str> {
        db.stored(&self.key)
    }

    /// The hash slot of this object's key as `db` stores it (in its
    /// [key layout](Db::key_layout)): what `CLUSTER KEYSLOT` answers for
    /// the key, 0 to 16383. Objects with one slot (an admin and its
    /// sub-objects; the objects of one
    /// [slot group](crate::KeyLayout#slot-groups)) can be read and written
    /// by one [transaction](Db::transaction) on Redis Cluster.
    ///
    /// ```
    /// use redmodel::prelude::*;
    /// #[derive(Admin)]
    /// #[redmodel(slot_group = "shop")]
    /// struct Customer { #[redmodel(pk)] id: String }
    /// #[derive(Admin)]
    /// #[redmodel(table = "order", slot_group = "shop")]
    /// struct Order { #[redmodel(pk)] id: u64 }
    ///
    /// let db = Db::memory_cluster();
    /// assert_eq!(Order::at(1).key_in(&db), "{shop}order:1");
    /// assert_eq!(Customer::at("c1").slot_in(&db), Order::at(1).slot_in(&db));
    /// assert_eq!(Order::at(1).slot_in(&db), redmodel::memory::hash_slot(b"shop"));
    /// ```
    pub fn slot_in(&self, db: &Db) -> u16 {
        db.slot_of_plain(&self.key)
    }

    /// The pk.
    pub fn pk(&self) -> &M::Pk {
        &self.pk
    }

    /// The owner's handle (`()` for an admin).
    pub fn owner(&self) -> &OwnerRef<M> {
        &self.owner
    }

    /// Parses a key of this model back into a handle, in either
    /// [`KeyLayout`] (`student:a:exam:2024` or `{student:a}:exam:2024`).
    /// Strict: only keys this model produces parse, so a sub-object's, a
    /// relation's or another model's key is an [`Error::InvalidKey`].
    pub fn parse(key: &str) -> Result<Self> {
        let parsed = match KeyLayout::parse(key) {
            Some((_, plain)) => Self::parts(&plain).map(|(owner, pk)| ObjectRef {
                owner,
                pk,
                key: plain.into_owned(),
            }),
            None => Err("its hash-tag braces are not where a key layout puts them".to_string()),
        };
        parsed.map_err(|reason| Self::invalid(key.to_string(), reason))
    }

    /// [`parse`](Self::parse) of a key the caller owns: in plain form (no
    /// braces: what a reference field holds), it becomes the handle's key,
    /// neither copied nor built again.
    pub(crate) fn parse_owned(key: String) -> Result<Self> {
        if key.contains(['{', '}']) {
            return Self::parse(&key);
        }
        match Self::parts(&key) {
            Ok((owner, pk)) => Ok(ObjectRef { owner, pk, key }),
            Err(reason) => Err(Self::invalid(key, reason)),
        }
    }

    fn invalid(key: String, reason: String) -> Error {
        Error::InvalidKey {
            key,
            model: M::TABLE,
            reason,
        }
    }

    /// The owner and pk of the plain `key`, which must be the one they
    /// make (one key per object: defence in depth for hand-written
    /// `KeyPart` impls).
    fn parts(key: &str) -> std::result::Result<(OwnerRef<M>, M::Pk), String> {
        // The owner's part is checked as the owner is parsed.
        let (owner, rest) = M::Owner::split_prefix(key)?;
        let segment = rest
            .strip_prefix(M::TABLE)
            .and_then(|r| r.strip_prefix(':'))
            .ok_or_else(|| format!("it does not have the table `{}` where expected", M::TABLE))?;
        if segment.contains(':') {
            return Err("it has more segments than a key of this model".to_string());
        }
        let pk = decode_pk::<M::Pk>(segment)?;
        if encode_segment(&pk.to_key_text()) != segment {
            let canonical = Self::new(owner, pk).key;
            return Err(format!("it is not in canonical form (`{canonical}`)"));
        }
        Ok((owner, pk))
    }

    /// Whether the object exists (EXISTS).
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "exists", key = %self.key))]
    pub async fn exists(&self, db: &Db) -> Result<bool> {
        db.read(cmd("EXISTS").arg(self.key_in(db))).await
    }

    /// One field (HGET); `Ok(None)` if the field or the object is absent.
    /// For an `Option` field, an absent field is `None`, never `Some(None)`.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "get", key = %self.key))]
    pub async fn get<T, C: Codec<T>>(&self, db: &Db, field: Field<M, T, C>) -> Result<Option<T>> {
        if let Some(raw) = self.field_cached(db, field.name()).await {
            return field.decode_present(&self.key, raw?);
        }
        let raw: Option<Vec<u8>> = db
            .read(cmd("HGET").arg(self.key_in(db)).arg(field.name()))
            .await
            .map_err(at_key(&self.key, "hash"))?;
        field.decode_present(&self.key, raw)
    }

    /// One field, or `default` if it or the object is absent.
    pub async fn get_or<T, C: Codec<T>>(
        &self,
        db: &Db,
        field: Field<M, T, C>,
        default: impl IntoValue<T>,
    ) -> Result<T> {
        Ok(self
            .get(db, field)
            .await?
            .unwrap_or_else(|| default.into_value()))
    }

    /// Several fields in one HMGET, typed: `fields` is a tuple of handles
    /// and the result a tuple of `Option`s.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "get_fields", key = %self.key))]
    pub async fn get_fields<S: FieldSet<M>>(&self, db: &Db, fields: S) -> Result<S::Output> {
        let values = self.hmget(db, &fields.names()).await?;
        fields.decode(&self.key, values)
    }

    /// Several fields by name in one HMGET, as text: the present ones only.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "get_fields_map", key = %self.key))]
    pub async fn get_fields_map(
        &self,
        db: &Db,
        names: &[&str],
    ) -> Result<BTreeMap<String, String>> {
        let values = self.hmget(db, names).await?;
        self.text_map(names.iter().copied(), values)
    }

    async fn hmget(&self, db: &Db, names: &[&str]) -> Result<Vec<Option<Vec<u8>>>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        db.read(cmd("HMGET").arg(self.key_in(db)).arg(names))
            .await
            .map_err(at_key(&self.key, "hash"))
    }

    fn text_map<'n>(
        &self,
        names: impl Iterator<Item = &'n str>,
        values: Vec<Option<Vec<u8>>>,
    ) -> Result<BTreeMap<String, String>> {
        let mut map = BTreeMap::new();
        for (name, value) in names.zip(values) {
            if let Some(raw) = value {
                let text = String::from_utf8(raw).map_err(|e| Error::Decode {
                    key: self.key.clone(),
                    field: name.to_string(),
                    reason: format!("{} is not UTF-8 text", shown(e.as_bytes())),
                })?;
                map.insert(name.to_string(), text);
            }
        }
        Ok(map)
    }

    /// The whole object: HGETALL (an empty reply is a missing object),
    /// its declared fields decoded into the struct; GET for a single-value
    /// model. `Ok(None)` if it does not exist.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "load", key = %self.key))]
    pub async fn load(&self, db: &Db) -> Result<Option<M>> {
        match self.read_raw_cached(db).await? {
            Some(values) => M::decode_fields(&self.key, self.pk.clone(), values).map(Some),
            None => Ok(None),
        }
    }

    /// The declared fields that are present, as text. `Ok(None)` if the
    /// object does not exist.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "load_map", key = %self.key))]
    pub async fn load_map(&self, db: &Db) -> Result<Option<BTreeMap<String, String>>> {
        match self.read_raw_cached(db).await? {
            Some(values) => self.text_map(M::FIELDS.iter().copied(), values).map(Some),
            None => Ok(None),
        }
    }

    /// Loads many objects in one round trip (one MULTI of reads, the
    /// objects as of one instant; in the cluster layout a pipeline),
    /// in the order given; `None` where an object does not exist.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "load_many", count = refs.len()))]
    pub async fn load_many(db: &Db, refs: &[ObjectRef<M>]) -> Result<Vec<Option<M>>> {
        Self::decode_all(refs, Self::read_many_cached(db, refs).await?)
    }

    /// The objects of `refs` from their stored fields `raw`, read for
    /// them: `None` where an object does not exist; the first error (a
    /// read's, a decoding's) fails them all.
    fn decode_all(refs: &[ObjectRef<M>], raw: Vec<Result<RawFields>>) -> Result<Vec<Option<M>>> {
        raw.into_iter()
            .collect::<Result<Vec<RawFields>>>()?
            .into_iter()
            .zip(refs)
            .map(|(values, r)| values.map(|v| r.decode(v)).transpose())
            .collect()
    }

    /// Like [`load_many`](Self::load_many), with one result per object: an
    /// object that does not decode (bad data, another Redis type at its
    /// key) is an error in its own place, and the others load. The outer
    /// error is the request's (the connection, the server).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), redmodel::Error> {
    /// # use redmodel::prelude::*;
    /// # #[derive(redmodel::Admin, Debug, PartialEq)]
    /// # struct Counter { #[redmodel(pk)] id: u32, n: i64 }
    /// let db = Db::memory();
    /// Counter { id: 1, n: 5 }.insert(&db).await?;
    /// db.query::<()>(redis::cmd("HSET").arg("counter:2").arg("n").arg("five")).await?;
    /// let got = ObjectRef::load_many_each(&db, &[Counter::at(1), Counter::at(2), Counter::at(3)]).await?;
    /// assert!(matches!(got[0], Ok(Some(Counter { n: 5, .. }))));
    /// assert!(matches!(got[1], Err(redmodel::Error::Decode { .. })));
    /// assert!(matches!(got[2], Ok(None)));
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "load_many_each", count = refs.len()))]
    pub async fn load_many_each(db: &Db, refs: &[ObjectRef<M>]) -> Result<Vec<Result<Option<M>>>> {
        Ok(Self::read_many_cached(db, refs)
            .await?
            .into_iter()
            .zip(refs)
            .map(|(values, r)| values?.map(|v| r.decode(v)).transpose())
            .collect())
    }

    /// The stored text of the declared fields of each of `refs` (`None`
    /// where an object does not exist), in one round trip.
    pub(crate) async fn read_many_raw(db: &Db, refs: &[ObjectRef<M>]) -> Result<Vec<RawFields>> {
        Self::read_many(db, refs).await?.into_iter().collect()
    }

    /// Decodes stored field texts (aligned with [`Model::FIELDS`]) into an
    /// object with this handle's pk.
    pub(crate) fn decode(&self, values: Vec<Option<Vec<u8>>>) -> Result<M> {
        M::decode_fields(&self.key, self.pk.clone(), values)
    }

    /// How many full writes ([`insert`](Self::insert)) the object has had:
    /// its `_count` field, 0 if absent.
    pub async fn write_count(&self, db: &Db) -> Result<u64> {
        let raw: Option<Vec<u8>> = db
            .read(cmd("HGET").arg(self.key_in(db)).arg(COUNT_FIELD))
            .await
            .map_err(at_key(&self.key, "hash"))?;
        match raw {
            None => Ok(0),
            Some(raw) => u64::from_text(&raw).map_err(|reason| Error::Decode {
                key: self.key.clone(),
                field: COUNT_FIELD.to_string(),
                reason,
            }),
        }
    }

    /// Builds an object with this handle's pk from a field -> text map, as
    /// stored. Absent fields decode as absent (`None`, the default, or an
    /// [`Error::MissingField`]); undeclared entries are ignored.
    pub fn build_from_map<K, V>(&self, map: impl IntoIterator<Item = (K, V)>) -> Result<M>
    where
        K: AsRef<str>,
        V: AsRef<[u8]>,
    {
        let mut map: HashMap<String, Vec<u8>> = map
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_string(), v.as_ref().to_vec()))
            .collect();
        let values = M::FIELDS.iter().map(|name| map.remove(*name)).collect();
        M::decode_fields(&self.key, self.pk.clone(), values)
    }

    /// Builds an object with this handle's pk from the fields' texts in
    /// declaration order ([`Model::FIELDS`]), `None` for absent. Missing
    /// trailing values count as absent.
    pub fn build_from_values<V: AsRef<[u8]>>(
        &self,
        values: impl IntoIterator<Item = Option<V>>,
    ) -> Result<M> {
        let mut values: Vec<Option<Vec<u8>>> = values
            .into_iter()
            .map(|v| v.map(|v| v.as_ref().to_vec()))
            .collect();
        values.resize(M::FIELDS.len(), None);
        M::decode_fields(&self.key, self.pk.clone(), values)
    }

    /// The handles of every object of this model, in key order: for a
    /// sub-object model, under every admin (SCAN with a MATCH pattern,
    /// never KEYS; keys that are not this model's are skipped).
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "scan"))]
    pub async fn scan(db: &Db) -> Result<Vec<ObjectRef<M>>> {
        let pattern = format!(
            "{}{}:*",
            M::Owner::any_owner_pattern(),
            glob_escape(M::TABLE)
        );
        scan_refs(db, &pattern).await
    }

    /// Every object of this model, in key order: [`scan`](Self::scan),
    /// then the objects read [`LOAD_BATCH`] to a batch (each batch as of
    /// one instant; one deleted meanwhile is left out). For small data: it
    /// holds every object at once; [`stream`](Self::stream) holds a page.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "load_all"))]
    pub async fn load_all(db: &Db) -> Result<Vec<M>> {
        load_scanned(db, &Self::scan(db).await?).await
    }
}

impl<M: SingleValue> ObjectRef<M> {
    /// The value of a single-value sub-object (GET).
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "get_value", key = %self.key))]
    pub async fn get_value(&self, db: &Db) -> Result<Option<M::Value>> {
        let raw: Option<Vec<u8>> = db
            .read(cmd("GET").arg(self.key_in(db)))
            .await
            .map_err(at_key(&self.key, "string"))?;
        let field = M::FIELDS.first().copied().unwrap_or("value");
        raw.map(|raw| M::Codec::decode(Some(&raw)).map_err(|e| e.at(&self.key, field)))
            .transpose()
    }
}

impl<A: Admin> ObjectRef<A> {
    /// The handle of this admin's sub-object `pk` (no round trip).
    pub fn sub<S: Model<Owner = A>>(&self, pk: impl IntoPk<S::Pk>) -> ObjectRef<S> {
        ObjectRef::new(self.clone(), pk.into_pk())
    }

    /// Writes `sub` under this admin: a full write, see
    /// [`insert`](Self::insert).
    pub async fn insert_sub<S: Model<Owner = A>>(&self, db: &Db, sub: &S) -> Result<ObjectRef<S>> {
        sub.insert_at(db, self).await
    }

    /// The keys of this admin's sub-objects of model `S`, in key order
    /// (SCAN, never KEYS).
    pub async fn scan_sub_keys<S: Model<Owner = A>>(&self, db: &Db) -> Result<Vec<String>> {
        Ok(self
            .scan_subs::<S>(db)
            .await?
            .into_iter()
            .map(ObjectRef::into_key)
            .collect())
    }

    /// The handles of this admin's sub-objects of model `S`.
    pub async fn scan_subs<S: Model<Owner = A>>(&self, db: &Db) -> Result<Vec<ObjectRef<S>>> {
        let pattern = format!("{}:{}:*", glob_escape(&self.key), glob_escape(S::TABLE));
        scan_refs(db, &pattern).await
    }

    /// This admin's sub-objects of model `S`, in key order, read as
    /// [`load_all`](ObjectRef::load_all) reads them.
    pub async fn load_subs<S: Model<Owner = A>>(&self, db: &Db) -> Result<Vec<S>> {
        load_scanned(db, &self.scan_subs::<S>(db).await?).await
    }
}

/// The most objects read in one batch where a read loads every object
/// it finds: [`ObjectRef::load_all`], [`ObjectRef::load_subs`], a
/// relation's `load`, an index's lookups (`top`, `range`, a tag's
/// objects, the recent ones). A batch is one request, whose reply must
/// arrive within the `Db`'s response timeout: a million objects read at
/// once would not. Each batch is read as of one instant; what found the
/// objects (a scan, an index, a list) was read before them anyway.
pub const LOAD_BATCH: usize = 1000;

/// The objects of `refs` that exist, read [`LOAD_BATCH`] to a batch.
async fn load_scanned<M: Model>(db: &Db, refs: &[ObjectRef<M>]) -> Result<Vec<M>> {
    let raw = ObjectRef::read_batched_cached(db, refs).await?;
    Ok(ObjectRef::decode_all(refs, raw)?
        .into_iter()
        .flatten()
        .collect())
}

/// The handles of the objects of `M` whose keys match the plain-form glob
/// `pattern` (stored in `db`'s layout), in the order of their plain keys
/// whatever the layout; keys that are not `M`'s are skipped.
async fn scan_refs<M: Model>(db: &Db, pattern: &str) -> Result<Vec<ObjectRef<M>>> {
    let mut refs: Vec<ObjectRef<M>> = scan_keys(db, &db.stored(pattern))
        .await?
        .iter()
        .filter_map(|key| ObjectRef::parse(key).ok())
        .collect();
    refs.sort();
    Ok(refs)
}
