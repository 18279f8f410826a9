//! Tags: books that are ruby and web, ruby but not web, ruby or web.
//!
//! `#[redmodel(tags)] tags: Vec<String>` stores the field as JSON in the
//! object's hash and keeps one set of object keys per tag value,
//! `book:_tag:tags:ruby` = {`book:1`, `book:2`}. A write that changes the field leaves the old tags'
//! sets and joins the new ones in its own MULTI/EXEC. Queries are
//! SINTER / SDIFF / SUNION, and return the objects.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::hash::BuildHasher;
use std::marker::PhantomData;

use super::IndexKind;
use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::model::codec::{IntoValue, Scalar};
use crate::model::key::{decode_segment, glob_escape, plain_tag_key, tag_key};
use crate::model::live::{
    key_text, load_judged, not_key_text, parse_member, prune, Entry, Stale, Test,
};
use crate::model::query::{Filter, Kind, TagOp};
use crate::model::scan::scan_keys;
use crate::model::{Model, ObjectRef};
use crate::{Db, Error, Result};

/// A field type a tag index accepts: a collection of [`Scalar`] tags
/// (`Vec`, `BTreeSet`, `HashSet`), or an `Option` of one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tags field",
    label = "not a collection of tags",
    note = "`#[redmodel(tags)]` needs a Vec, BTreeSet or HashSet of strings (or of another scalar type), or an Option of one"
)]
pub trait TagSet {
    /// The type of one tag.
    type Tag: Scalar;
    /// The tags, each as the text in its set's key, without duplicates.
    fn tag_texts(&self) -> std::result::Result<Vec<String>, String>;
    /// [`tag_texts`](Self::tag_texts) of tags the caller gives away (just
    /// decoded from the stored field): a `Vec` of strings hands its texts
    /// over instead of copying each.
    fn into_tag_texts(self) -> std::result::Result<Vec<String>, String>
    where
        Self: Sized,
    {
        self.tag_texts()
    }
}

/// The texts of `tags`, sorted, without duplicates. Each tag's text is
/// checked (an index key needs UTF-8) and kept as it was made: a write
/// of tags pays for one text per tag, not a copy of each and a tree.
fn texts<'a, E: Scalar + 'a>(
    tags: impl ExactSizeIterator<Item = &'a E>,
) -> std::result::Result<Vec<String>, String> {
    sorted_texts(tags.map(Scalar::to_text))
}

/// The texts `texts` (one per tag), checked, sorted, without duplicates.
fn sorted_texts(
    texts: impl ExactSizeIterator<Item = Vec<u8>>,
) -> std::result::Result<Vec<String>, String> {
    let mut out = Vec::with_capacity(texts.len());
    for text in texts {
        out.push(String::from_utf8(text).map_err(|e| not_key_text(e.as_bytes()))?);
    }
    Ok(sorted_unique(out))
}

/// `texts` in the order a tag index keeps them: sorted, without
/// duplicates.
fn sorted_unique(mut texts: Vec<String>) -> Vec<String> {
    // Those of a set come sorted already.
    if !texts.is_sorted() {
        texts.sort_unstable();
    }
    texts.dedup();
    texts
}

/// The texts of a stored JSON array of plain strings (no escape, no
/// control character: what the model writes for tags of text), sorted,
/// without duplicates, as decoding it and [`TagSet::into_tag_texts`]
/// give them; `None` for any other text, which goes through the decoder.
pub(crate) fn plain_strings(raw: &[u8]) -> Option<Vec<String>> {
    let mut rest = raw.strip_prefix(b"[")?.strip_suffix(b"]")?;
    if rest.is_empty() {
        return Some(Vec::new());
    }
    let mut out = Vec::with_capacity(rest.len() / 8 + 1);
    // Each text: a quote, bytes up to the next quote (none of them an
    // escape or a control character), then a comma or the end.
    loop {
        rest = rest.strip_prefix(b"\"")?;
        let end = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .filter(|&end| rest[end] == b'"')?;
        out.push(std::str::from_utf8(&rest[..end]).ok()?.to_owned());
        rest = match &rest[end + 1..] {
            [] => break,
            [b',', tail @ ..] => tail,
            _ => return None,
        };
    }
    Some(sorted_unique(out))
}

impl<E: Scalar> TagSet for Vec<E> {
    type Tag = E;
    fn tag_texts(&self) -> std::result::Result<Vec<String>, String> {
        texts(self.iter())
    }

    fn into_tag_texts(self) -> std::result::Result<Vec<String>, String> {
        sorted_texts(self.into_iter().map(Scalar::into_text))
    }
}

impl<E: Scalar> TagSet for BTreeSet<E> {
    type Tag = E;
    fn tag_texts(&self) -> std::result::Result<Vec<String>, String> {
        texts(self.iter())
    }
}

impl<E: Scalar, S: BuildHasher> TagSet for HashSet<E, S> {
    type Tag = E;
    fn tag_texts(&self) -> std::result::Result<Vec<String>, String> {
        texts(self.iter())
    }
}

impl<T: TagSet> TagSet for Option<T> {
    type Tag = T::Tag;
    fn tag_texts(&self) -> std::result::Result<Vec<String>, String> {
        self.as_ref().map_or(Ok(Vec::new()), TagSet::tag_texts)
    }

    fn into_tag_texts(self) -> std::result::Result<Vec<String>, String> {
        self.map_or(Ok(Vec::new()), TagSet::into_tag_texts)
    }
}

/// The tag index of a field of `M` of type `T` (a [`TagSet`], whose tags
/// are `T::Tag`): generated by `#[redmodel(tags)]` as `Model::FIELD_UNIQUE`.
pub struct TagIndex<M, T> {
    field: &'static str,
    _marker: PhantomData<fn() -> (M, T)>,
}

impl<M, T> Clone for TagIndex<M, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M, T> Copy for TagIndex<M, T> {}

impl<M, T> fmt::Debug for TagIndex<M, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TagIndex({})", self.field)
    }
}

/// Which sets a query combines, and so which objects it returns.
enum Op {
    /// In every set (SINTER).
    All,
    /// In at least one set (SUNION).
    Any,
    /// In the first set and in none of the others (SDIFF).
    FirstButNotOthers,
}

impl Op {
    fn command(&self) -> &'static str {
        match self {
            Op::All => "SINTER",
            Op::Any => "SUNION",
            Op::FirstButNotOthers => "SDIFF",
        }
    }

    /// Whether an object with tags `has` answers the query on `tags`.
    fn accepts(&self, tags: &[String], has: &[String]) -> bool {
        match self {
            Op::All => tags.iter().all(|t| has.contains(t)),
            Op::Any => tags.iter().any(|t| has.contains(t)),
            Op::FirstButNotOthers => match tags.split_first() {
                Some((first, others)) => {
                    has.contains(first) && !others.iter().any(|t| has.contains(t))
                }
                None => false,
            },
        }
    }

    /// The queried tags whose sets the answer's members come from.
    fn sources<'t>(&self, tags: &'t [String]) -> &'t [String] {
        match self {
            Op::All | Op::Any => tags,
            Op::FirstButNotOthers => tags.get(..1).unwrap_or_default(),
        }
    }
}

impl<M, T> TagIndex<M, T> {
    /// The index of the stored field `field` (generated code calls this).
    pub const fn new(field: &'static str) -> Self {
        TagIndex {
            field,
            _marker: PhantomData,
        }
    }

    /// The field's stored name.
    pub const fn field(&self) -> &'static str {
        self.field
    }
}

impl<M: Model, T: TagSet> TagIndex<M, T> {
    /// The text of a tag, as in its set's key.
    fn text(&self, tag: T::Tag) -> Result<String> {
        key_text(&tag.to_text())
            .map(str::to_string)
            .map_err(|reason| Error::Encode {
                key: M::TABLE.to_string(),
                field: self.field.to_string(),
                reason,
            })
    }

    fn texts<I: IntoValue<T::Tag>>(
        &self,
        tags: impl IntoIterator<Item = I>,
    ) -> Result<Vec<String>> {
        tags.into_iter()
            .map(|t| self.text(t.into_value()))
            .collect()
    }

    /// The key of one tag's set, in plain form (`book:_tag:tags:ruby`).
    pub fn key(&self, tag: impl IntoValue<T::Tag>) -> Result<String> {
        Ok(plain_tag_key(
            M::TABLE,
            self.field,
            &self.text(tag.into_value())?,
        ))
    }

    /// The key of one tag's set as `db` stores it (`{book:_tag:tags}:ruby`
    /// in the [cluster layout](crate::KeyLayout::Cluster), where all the
    /// sets of one field share a slot; `{shop}book:_tag:tags:ruby` for a
    /// table of the slot group `shop`, whose keys all share the group's).
    pub fn key_in(&self, db: &Db, tag: impl IntoValue<T::Tag>) -> Result<String> {
        Ok(self.set_key(db, &self.text(tag.into_value())?))
    }

    /// The stored key of the set of the tag text `tag`.
    fn set_key(&self, db: &Db, tag: &str) -> String {
        tag_key(db, M::TABLE, self.field, tag)
    }

    /// The field's tag parser, from the model's declaration.
    fn parser(&self) -> fn(&[u8]) -> std::result::Result<Vec<String>, String> {
        M::INDEXES
            .iter()
            .find_map(|s| match s.kind {
                IndexKind::Tags { tags } if s.field == self.field => Some(tags),
                _ => None,
            })
            .unwrap_or(|_| Ok(Vec::new()))
    }

    /// The plain keys of the sets of `tags`, as a query's tag filter.
    fn filter<I: IntoValue<T::Tag>>(
        &self,
        op: TagOp,
        tags: impl IntoIterator<Item = I>,
    ) -> Filter<M> {
        Filter::new(self.texts(tags).map(|texts| {
            Kind::Tags {
                op,
                sets: texts
                    .iter()
                    .map(|t| plain_tag_key(M::TABLE, self.field, t))
                    .collect(),
            }
        }))
    }

    /// A [query](crate::model::query) filter: objects with `tag`.
    pub fn has(&self, tag: impl IntoValue<T::Tag>) -> Filter<M> {
        self.filter(TagOp::All, [tag])
    }

    /// A [query](crate::model::query) filter: objects with every one of
    /// `tags` (none given: every object).
    pub fn has_all<I: IntoValue<T::Tag>>(&self, tags: impl IntoIterator<Item = I>) -> Filter<M> {
        self.filter(TagOp::All, tags)
    }

    /// A [query](crate::model::query) filter: objects with at least one of
    /// `tags` (none given: no object).
    pub fn has_any<I: IntoValue<T::Tag>>(&self, tags: impl IntoIterator<Item = I>) -> Filter<M> {
        self.filter(TagOp::Any, tags)
    }

    /// A [query](crate::model::query) filter: objects with none of `tags`.
    pub fn has_none<I: IntoValue<T::Tag>>(&self, tags: impl IntoIterator<Item = I>) -> Filter<M> {
        self.filter(TagOp::None, tags)
    }

    /// The objects with this tag (SMEMBERS), in key order. One that does
    /// not decode (bad data) fails the read: see
    /// [`with_each`](Self::with_each) for the others.
    pub async fn with(&self, db: &Db, tag: impl IntoValue<T::Tag>) -> Result<Vec<M>> {
        self.with_each(db, tag).await?.into_iter().collect()
    }

    /// Like [`with`](Self::with), with one result per object: an object
    /// that does not decode is an error in its own place, and the others
    /// load. The outer error is the request's.
    pub async fn with_each(&self, db: &Db, tag: impl IntoValue<T::Tag>) -> Result<Vec<Result<M>>> {
        let tags = vec![self.text(tag.into_value())?];
        self.query(db, Op::Any, tags).await
    }

    /// The objects with every one of these tags (SINTER: books that are
    /// ruby and web), in key order.
    pub async fn intersection<I: IntoValue<T::Tag>>(
        &self,
        db: &Db,
        tags: impl IntoIterator<Item = I>,
    ) -> Result<Vec<M>> {
        let tags = self.texts(tags)?;
        self.query(db, Op::All, tags).await?.into_iter().collect()
    }

    /// The objects with at least one of these tags (SUNION: ruby or web),
    /// in key order.
    pub async fn union<I: IntoValue<T::Tag>>(
        &self,
        db: &Db,
        tags: impl IntoIterator<Item = I>,
    ) -> Result<Vec<M>> {
        let tags = self.texts(tags)?;
        self.query(db, Op::Any, tags).await?.into_iter().collect()
    }

    /// The objects with the tag `tag` and none of `excluded` (SDIFF: ruby
    /// but not web), in key order.
    pub async fn difference<I: IntoValue<T::Tag>>(
        &self,
        db: &Db,
        tag: impl IntoValue<T::Tag>,
        excluded: impl IntoIterator<Item = I>,
    ) -> Result<Vec<M>> {
        let mut tags = vec![self.text(tag.into_value())?];
        tags.extend(self.texts(excluded)?);
        self.query(db, Op::FirstButNotOthers, tags)
            .await?
            .into_iter()
            .collect()
    }

    /// Runs one set operation and loads its answer, a batch per
    /// [`LOAD_BATCH`](crate::model::LOAD_BATCH) objects, checking
    /// each object against its own tags: an object that is gone, or whose
    /// field no longer has a tag whose set holds it, is left out and its
    /// entries pruned.
    #[tracing::instrument(level = "debug", name = "redmodel", skip_all, fields(model = M::TABLE, op = "tags", index = self.field))]
    async fn query(&self, db: &Db, op: Op, tags: Vec<String>) -> Result<Vec<Result<M>>> {
        if tags.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = tags.iter().map(|t| self.set_key(db, t)).collect();
        let mut members: Vec<String> = db.read_cached(cmd(op.command()).arg(&keys)).await?;
        members.sort_unstable();
        let refs = members
            .iter()
            .map(|m| parse_member::<M>(m, &keys[0]))
            .collect::<Result<Vec<_>>>()?;
        let parse = self.parser();
        let position = super::field_position::<M>(self.field);
        let field = self.field;
        let mut stale = Vec::new();
        let loaded = load_judged(db, refs, &mut stale, |r, values, stale| {
            let has: Vec<String> = match values {
                None => Vec::new(),
                Some(values) => {
                    match position
                        .and_then(|p| values.get(p))
                        .and_then(|v| v.as_deref())
                    {
                        None => Vec::new(),
                        // Bad data: keep the object, so that decoding it
                        // reports the error.
                        Some(text) => match parse(text) {
                            Ok(has) => has,
                            Err(_) => return true,
                        },
                    }
                }
            };
            for tag in op.sources(&tags) {
                if !has.contains(tag) {
                    stale.push(Stale {
                        object: r.key_in(db).into_owned(),
                        test: Test::LacksTag {
                            field,
                            parse,
                            tag: tag.clone(),
                        },
                        entry: Entry::Set(self.set_key(db, tag)),
                    });
                }
            }
            values.is_some() && op.accepts(&tags, &has)
        })
        .await?;
        prune(db, stale).await?;
        Ok(loaded)
    }

    /// How many live objects have `tag`.
    pub async fn count(&self, db: &Db, tag: impl IntoValue<T::Tag>) -> Result<u64> {
        Ok(self.with(db, tag).await?.len() as u64)
    }

    /// Every tag in use, with how many live objects have it, in tag text
    /// order: a SCAN of the tag sets, one batch of SMEMBERS, one batch
    /// reading the members (entries of gone objects are pruned).
    pub async fn counts(&self, db: &Db) -> Result<Vec<(T::Tag, u64)>> {
        let prefix = self.set_key(db, "");
        let set_keys = scan_keys(db, &format!("{}*", glob_escape(&prefix))).await?;
        if set_keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for key in &set_keys {
            pipe.command("SMEMBERS").arg(key);
        }
        let sets: Vec<Vec<String>> = db.read_pipeline(&pipe).await?;
        let mut tags_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (key, members) in set_keys.iter().zip(sets) {
            let tag = key
                .strip_prefix(&prefix)
                .and_then(|t| decode_segment(t).ok())
                .map(|t| t.into_owned());
            if let Some(tag) = tag {
                for member in members {
                    tags_of.entry(member).or_default().push(tag.clone());
                }
            }
        }
        let refs = tags_of
            .keys()
            .map(|m| parse_member::<M>(m, &prefix))
            .collect::<Result<Vec<ObjectRef<M>>>>()?;
        let raw = ObjectRef::read_many_raw(db, &refs).await?;
        let parse = self.parser();
        let position = super::field_position::<M>(self.field);
        let mut live: BTreeMap<String, u64> = BTreeMap::new();
        let mut stale = Vec::new();
        for ((member, in_sets), values) in tags_of.into_iter().zip(raw) {
            let has = values
                .as_ref()
                .and_then(|v| v.get(position?).cloned().flatten())
                .map(|text| parse(&text).unwrap_or_default())
                .unwrap_or_default();
            for tag in in_sets {
                if values.is_some() && has.contains(&tag) {
                    *live.entry(tag).or_default() += 1;
                } else {
                    stale.push(Stale {
                        object: member.clone(),
                        test: Test::LacksTag {
                            field: self.field,
                            parse,
                            tag: tag.clone(),
                        },
                        entry: Entry::Set(self.set_key(db, &tag)),
                    });
                }
            }
        }
        prune(db, stale).await?;
        live.into_iter()
            .map(|(tag, n)| {
                T::Tag::from_text(tag.as_bytes())
                    .map(|t| (t, n))
                    .map_err(|reason| Error::InvalidKey {
                        key: plain_tag_key(M::TABLE, self.field, &tag),
                        model: M::TABLE,
                        reason: format!("its tag is not a value of the field: {reason}"),
                    })
            })
            .collect()
    }

    /// Removes every entry of an object that is gone or no longer has the
    /// tag (a full pass). Returns how many were removed.
    pub async fn prune(&self, db: &Db) -> Result<u64> {
        let before: u64 = self.raw_entries(db).await?;
        self.counts(db).await?;
        let after = self.raw_entries(db).await?;
        Ok(before.saturating_sub(after))
    }

    /// How many entries the tag sets hold, dead ones included (SCARD).
    async fn raw_entries(&self, db: &Db) -> Result<u64> {
        let prefix = self.set_key(db, "");
        let set_keys = scan_keys(db, &format!("{}*", glob_escape(&prefix))).await?;
        if set_keys.is_empty() {
            return Ok(0);
        }
        let mut pipe = redis::pipe();
        for key in &set_keys {
            pipe.command("SCARD").arg(key);
        }
        let sizes: Vec<u64> = db.read_pipeline(&pipe).await?;
        Ok(sizes.iter().sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::codec::{Codec, Json};

    /// What the decoder gives for `raw`, as a tag index reads it.
    fn decoded(raw: &str) -> Option<Vec<String>> {
        let tags: Vec<String> = Json::decode(Some(raw.as_bytes())).ok()?;
        tags.into_tag_texts().ok()
    }

    #[test]
    fn plain_strings_read_what_the_decoder_reads_or_leave_it_to_the_decoder() {
        let cases = [
            r#"[]"#,
            r#"["rust"]"#,
            r#"["web","rust","web"]"#,
            r#"["é","a b",""]"#,
            r#"["a,b"]"#,
            r#"["a\"b"]"#,
            r#"["a\\b"]"#,
            r#"["\u0041"]"#,
            r#"[ "a" ]"#,
            r#"["a", "b"]"#,
            r#"[1,2]"#,
            r#"["a",]"#,
            r#"[""#,
            r#"null"#,
            "[\"a\tb\"]",
            r#"["a""b"]"#,
            r#"["a"x]"#,
            r#"["a",,"b"]"#,
            r#"["b","a","b"]"#,
            r#"["a"#,
            r#"]"#,
        ];
        for raw in cases {
            if let Some(fast) = plain_strings(raw.as_bytes()) {
                assert_eq!(Some(fast), decoded(raw), "{raw}");
            }
        }
        // The model's own writes take the fast path.
        for tags in [vec![], vec!["rust".to_string(), "async".to_string()]] {
            let stored = Json::encode(&tags).expect("encode").expect("a value");
            let fast = plain_strings(&stored).expect("a plain array");
            assert_eq!(
                Some(fast),
                decoded(std::str::from_utf8(&stored).expect("UTF-8"))
            );
        }
    }
}
