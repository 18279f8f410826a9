//! Key layouts: where a model key's hash tag goes, so that on Redis
//! Cluster an admin object and everything that hangs under it share a
//! slot, and the objects of one slot group share one. See [`KeyLayout`].

mod group;

use std::borrow::Cow;

pub use group::TableGroup;

/// How a database lays out model keys.
///
/// The model builds every key in its *plain* form (`teacher:A`,
/// `teacher:A:class`, `student:a:exam:2024`): that text is an object's
/// identity ([`ObjectRef::key`](crate::model::ObjectRef::key)) whatever the
/// database. A [`Db`](crate::Db) stores it in its [`KeyLayout`]:
///
/// | plain | [`KeyLayout::Plain`] | [`KeyLayout::Cluster`] |
/// |---|---|---|
/// | `teacher:A` (admin) | `teacher:A` | `teacher:A` |
/// | `teacher:A:class` (relation list) | `teacher:A:class` | `{teacher:A}:class` |
/// | `student:a:exam:2024` (sub-object) | `student:a:exam:2024` | `{student:a}:exam:2024` |
/// | `user:_unique:email:VALUE` | same | same |
/// | `user:_sorted:logins`, `user:_recent:at` | same | same |
/// | `book:_tag:tags:TAG` | `book:_tag:tags:TAG` | `{book:_tag:tags}:TAG` |
/// | `order:o1` (slot group `shop`) | `order:o1` | `{shop}order:o1` |
/// | `order:o1:line:2`, `order:o1:item` (group `shop`) | same | `{shop}order:o1:line:2`, `{shop}order:o1:item` |
/// | `order:_unique:ref:R`, `order:_sorted:total`, `order:_tag:tags:T` (group `shop`) | same | `{shop}order:_unique:ref:R`, `{shop}order:_sorted:total`, `{shop}order:_tag:tags:T` |
///
/// Why the admin's own key keeps no braces: Redis hashes a key with a tag
/// by the tag's text, and one without by its whole text, so `teacher:A`
/// and `{teacher:A}:class` are already in the same slot. Admin keys, and
/// the member entries that name admins, are then the same in both
/// layouts; only the keys *under* an admin carry the tag. The tag sets of
/// one field share the tag `{TABLE:_tag:FIELD}`, so that SINTER / SUNION /
/// SDIFF across tags are single-slot; a unique entry, a sorted index and a
/// recent list are one key each and need none.
///
/// # Slot groups
///
/// An admin declared with `#[redmodel(slot_group = "shop")]`
/// ([`Model::SLOT_GROUP`](crate::Model::SLOT_GROUP)) has all its keys, in
/// the cluster layout, behind the group's tag instead of their own: the
/// object, its sub-objects, its relation lists (a sub-object is in its
/// admin's group) and its index keys (`TABLE:_...`: unique entries,
/// sorted indexes, recent lists, tag sets). Redis hashes them all by
/// `shop`, so the keys of one group share one slot: an indexed write of a
/// grouped object is one atomic unit, and a
/// [transaction](crate::Db::transaction) across a customer, its order and
/// the order's products reads under one WATCH and commits as one
/// MULTI/EXEC, index entries included, on a cluster as on one server
/// ([`KeyLayout::one_slot_with_indexes`]). The price: one group is
/// one slot, held by one master, so a group is for objects that are
/// written together, not a whole database. The layout reads the groups
/// from the models the derives compiled into the program; the plain
/// layout ignores them.
///
/// The rule reads the plain key's segments only; encoded pks never hold a
/// raw `:`, `{` or `}` (see [`model::key`](crate::model::key)), so a plain
/// model key never has an accidental tag and the cluster form parses back
/// unambiguously: an admin's tag holds a `:` (`{teacher:A}`), a group's
/// never does (`{shop}`).
///
/// A `Db` on Redis Cluster always uses [`KeyLayout::Cluster`]; one on the
/// memory engine or a single server uses [`KeyLayout::Plain`] unless told
/// otherwise with [`Db::with_key_layout`](crate::Db::with_key_layout) (for
/// data that is to move to a cluster, or to test cluster code paths on one
/// node).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KeyLayout {
    /// Keys exactly as the plain form: `teacher:A:class`.
    #[default]
    Plain,
    /// Keys under an admin carry its hash tag: `{teacher:A}:class`.
    Cluster,
}

impl KeyLayout {
    /// A model key (in plain form) as this layout stores it.
    ///
    /// ```
    /// use redmodel::KeyLayout;
    /// assert_eq!(KeyLayout::Cluster.stored("teacher:A:class"), "{teacher:A}:class");
    /// assert_eq!(KeyLayout::Cluster.stored("teacher:A"), "teacher:A");
    /// assert_eq!(KeyLayout::Plain.stored("teacher:A:class"), "teacher:A:class");
    /// ```
    pub fn stored(self, plain: &str) -> Cow<'_, str> {
        // The plain layout stores every key as it is, with no tag to find.
        if self == KeyLayout::Plain {
            return Cow::Borrowed(plain);
        }
        if let Some(group) = group_of(plain) {
            let mut out = String::with_capacity(plain.len() + group.len() + 2);
            out.push('{');
            out.push_str(group);
            out.push('}');
            out.push_str(plain);
            return Cow::Owned(out);
        }
        match (self, tag_end(plain)) {
            (KeyLayout::Cluster, Some(end)) if end < plain.len() => {
                let mut out = String::with_capacity(plain.len() + 2);
                out.push('{');
                out.push_str(&plain[..end]);
                out.push('}');
                out.push_str(&plain[end..]);
                Cow::Owned(out)
            }
            _ => Cow::Borrowed(plain),
        }
    }

    /// The layout whose form `stored` is in, with the key's plain form: a
    /// key with a leading hash tag is in the cluster form, any other key in
    /// the plain form (the two agree on keys without a tag). A slot group's
    /// tag (`{shop}order:o1`, no `:` inside the braces) parses back only on
    /// a table of that group. `None` if `stored` has braces the cluster
    /// layout never writes.
    ///
    /// ```
    /// use redmodel::KeyLayout;
    /// assert_eq!(KeyLayout::parse("{teacher:A}:class").unwrap().1, "teacher:A:class");
    /// assert_eq!(KeyLayout::parse("teacher:A:class").unwrap().1, "teacher:A:class");
    /// assert!(KeyLayout::parse("{teacher}:A:class").is_none());
    /// ```
    pub fn parse(stored: &str) -> Option<(KeyLayout, Cow<'_, str>)> {
        let Some(rest) = stored.strip_prefix('{') else {
            return (!stored.contains(['{', '}']))
                .then_some((KeyLayout::Plain, Cow::Borrowed(stored)));
        };
        let close = rest.find('}')?;
        if rest[close + 1..].contains(['{', '}']) {
            // The cluster layout writes one pair of braces, at the start.
            return None;
        }
        if !rest[..close].contains(':') {
            // A slot group's tag, before the whole plain key.
            let plain = &rest[close + 1..];
            return (KeyLayout::Cluster.stored(plain) == stored)
                .then_some((KeyLayout::Cluster, Cow::Borrowed(plain)));
        }
        let plain = format!("{}{}", &rest[..close], &rest[close + 1..]);
        // Canonical only: the braces must be exactly where the cluster
        // layout puts them, so one plain key has one stored form.
        (KeyLayout::Cluster.stored(&plain) == stored)
            .then_some((KeyLayout::Cluster, Cow::Owned(plain)))
    }

    /// The hash slot of a model key (in plain form) as this layout stores
    /// it: what Redis Cluster's `CLUSTER KEYSLOT` answers for the stored
    /// key, 0 to 16383. Keys with one slot can be written by one atomic
    /// unit (a MULTI/EXEC, a script) on a cluster.
    ///
    /// ```
    /// use redmodel::KeyLayout;
    /// // `{teacher:A}:class` hashes by its tag, as `teacher:A` does.
    /// assert_eq!(KeyLayout::Cluster.slot("teacher:A:class"), KeyLayout::Cluster.slot("teacher:A"));
    /// assert_eq!(KeyLayout::Cluster.slot("teacher:A"), redmodel::memory::hash_slot(b"teacher:A"));
    /// ```
    pub fn slot(self, plain: &str) -> u16 {
        redmodel_memory::hash_slot(self.stored(plain).as_bytes())
    }

    /// Whether the object stored at `stored` shares its slot with every
    /// key under it and every index key of its table, so that a write of
    /// the object with its index entries is one atomic unit: always in the
    /// plain layout; in the cluster layout, for the tables of a slot group
    /// (whose keys all carry the group's tag).
    ///
    /// ```
    /// use redmodel::KeyLayout;
    /// assert!(KeyLayout::Plain.one_slot_with_indexes("teacher:A"));
    /// assert!(!KeyLayout::Cluster.one_slot_with_indexes("teacher:A"));
    /// ```
    pub fn one_slot_with_indexes(self, stored: &str) -> bool {
        match self {
            KeyLayout::Plain => true,
            KeyLayout::Cluster => match KeyLayout::parse(stored) {
                Some((_, plain)) => group_of(&plain).is_some(),
                None => false,
            },
        }
    }
}

/// The slot group of the plain model key `plain`: its table's, if it has
/// one, for every key of the table: an object key, a key under one
/// (`TABLE:PK...`) and an index key (`TABLE:_...`).
fn group_of(plain: &str) -> Option<&'static str> {
    let (table, _) = plain.split_once(':')?;
    group::of_table(table)
}

/// A key in plain form, for messages: `stored` without its hash-tag braces
/// (as given if it has braces no layout writes).
pub(crate) fn plain_key(stored: &str) -> String {
    KeyLayout::parse(stored).map_or_else(|| stored.to_string(), |(_, p)| p.into_owned())
}

/// Where the hash tag of a plain model key ends (the tag is `key[..end]`),
/// or `None` for a key that is hashed whole in every layout.
fn tag_end(plain: &str) -> Option<usize> {
    let mut segments = plain.split(':');
    let table = segments.next()?;
    let second = segments.next()?;
    if table.starts_with('_') {
        // `_lock:NAME` and other keys outside any table.
        return None;
    }
    let admin_end = table.len() + 1 + second.len();
    match second.strip_prefix('_') {
        // An object key or a key under one: the admin's `TABLE:PK`.
        None => Some(admin_end),
        // All tag sets of one field share `TABLE:_tag:FIELD`.
        Some("tag") => segments.next().map(|field| admin_end + 1 + field.len()),
        // Other reserved keys are one key per index entry.
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_tags_follow_the_admin() {
        let cases = [
            ("teacher:A", "teacher:A"),
            ("teacher:A:class", "{teacher:A}:class"),
            ("student:a:exam:2024", "{student:a}:exam:2024"),
            ("student:a:exam:2024:note", "{student:a}:exam:2024:note"),
            ("teacher:", "teacher:"),
            ("teacher::class", "{teacher:}:class"),
            ("user:_unique:email:a@b.c", "user:_unique:email:a@b.c"),
            ("user:_sorted:logins", "user:_sorted:logins"),
            ("book:_tag:tags:ruby", "{book:_tag:tags}:ruby"),
            ("book:_tag:tags", "book:_tag:tags"),
            ("_lock:jobs", "_lock:jobs"),
            ("visits", "visits"),
        ];
        assert_stored(&cases);
    }

    /// Each plain key is stored as its cluster form in the cluster layout,
    /// as itself in the plain one, and the cluster form parses back.
    fn assert_stored(cases: &[(&str, &str)]) {
        for &(plain, cluster) in cases {
            assert_eq!(KeyLayout::Cluster.stored(plain), cluster, "{plain}");
            assert_eq!(KeyLayout::Plain.stored(plain), plain);
            let (layout, back) = KeyLayout::parse(cluster).unwrap();
            assert_eq!(back, plain);
            assert_eq!(layout == KeyLayout::Cluster, plain != cluster);
        }
    }

    inventory::submit! {
        TableGroup { table: "layout_order", group: Some("shop") }
    }
    inventory::submit! {
        TableGroup { table: "layout_customer", group: Some("shop") }
    }
    inventory::submit! {
        TableGroup { table: "layout_split", group: Some("one") }
    }
    inventory::submit! {
        TableGroup { table: "layout_split", group: Some("two") }
    }
    inventory::submit! {
        TableGroup { table: "layout_loose", group: None }
    }

    #[test]
    fn grouped_tables_carry_the_group_tag_on_object_keys() {
        let cases = [
            ("layout_order:o1", "{shop}layout_order:o1"),
            ("layout_order:o1:line:2", "{shop}layout_order:o1:line:2"),
            ("layout_order:o1:item", "{shop}layout_order:o1:item"),
            ("layout_order:", "{shop}layout_order:"),
            // Index keys share the group's tag.
            (
                "layout_order:_unique:ref:a@b.c",
                "{shop}layout_order:_unique:ref:a@b.c",
            ),
            (
                "layout_order:_sorted:total",
                "{shop}layout_order:_sorted:total",
            ),
            ("layout_order:_recent:at", "{shop}layout_order:_recent:at"),
            (
                "layout_order:_tag:tags:ruby",
                "{shop}layout_order:_tag:tags:ruby",
            ),
            ("layout_customer:c%7B1", "{shop}layout_customer:c%7B1"),
            // A table with a conflicting declaration, or none, keeps the
            // admin's tag.
            ("layout_split:a:x", "{layout_split:a}:x"),
            ("layout_loose:a:x", "{layout_loose:a}:x"),
            // A key that is only a table's name is no model key.
            ("layout_order", "layout_order"),
        ];
        assert_stored(&cases);
    }

    #[test]
    fn a_group_shares_one_slot_across_tables() {
        let slot = KeyLayout::Cluster.slot("layout_order:o1");
        assert_eq!(slot, redmodel_memory::hash_slot(b"shop"));
        for plain in [
            "layout_order:o2:line:1",
            "layout_customer:c9",
            "layout_customer:c9:order",
            "layout_order:_unique:ref:x",
            "layout_order:_tag:tags:ruby",
            "layout_customer:_sorted:spent",
        ] {
            assert_eq!(KeyLayout::Cluster.slot(plain), slot, "{plain}");
        }
        assert!(KeyLayout::Cluster.one_slot_with_indexes("{shop}layout_order:o1"));
        assert!(!KeyLayout::Cluster.one_slot_with_indexes("{layout_loose:a}:x"));
        // The plain layout hashes each key whole.
        assert_eq!(
            KeyLayout::Plain.slot("layout_order:o1"),
            redmodel_memory::hash_slot(b"layout_order:o1")
        );
    }

    #[test]
    fn group_tags_parse_back_only_where_the_layout_writes_them() {
        for bad in [
            // Another group than the table's.
            "{other}layout_order:o1",
            // An admin's tag on a grouped table.
            "{layout_order:o1}:line:2",
            // A group on a table without one.
            "{shop}teacher:A",
            "{shop}layout_order:o1}",
            "{shop}{shop}layout_order:o1",
            "{}layout_order:o1",
            // A grouped index key behind a tag of its own.
            "{layout_order:_tag:tags}:ruby",
        ] {
            assert!(KeyLayout::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn parsing_refuses_braces_the_layout_never_writes() {
        for bad in [
            "{teacher}:A:class",
            "{teacher:A:class}",
            "{teacher:A}",
            "teacher:{A}",
            "{a:b",
            "x}",
        ] {
            assert!(KeyLayout::parse(bad).is_none(), "{bad}");
        }
    }
}
