//! Key layouts: where a model key's hash tag goes, so that on Redis
//! Cluster an admin object and everything that hangs under it share a
//! slot. See [`KeyLayout`].

use std::borrow::Cow;

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
/// The rule reads the plain key's segments only; encoded pks never hold a
/// raw `:`, `{` or `}` (see [`model::key`](crate::model::key)), so a plain
/// model key never has an accidental tag and the cluster form parses back
/// unambiguously.
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
    /// the plain form (the two agree on keys without a tag). `None` if
    /// `stored` has braces the cluster layout never writes.
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
        let plain = format!("{}{}", &rest[..close], &rest[close + 1..]);
        // Canonical only: the braces must be exactly where the cluster
        // layout puts them, so one plain key has one stored form.
        (KeyLayout::Cluster.stored(&plain) == stored)
            .then_some((KeyLayout::Cluster, Cow::Owned(plain)))
    }
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
        for (plain, cluster) in cases {
            assert_eq!(KeyLayout::Cluster.stored(plain), cluster, "{plain}");
            assert_eq!(KeyLayout::Plain.stored(plain), plain);
            let (layout, back) = KeyLayout::parse(cluster).unwrap();
            assert_eq!(back, plain);
            assert_eq!(layout == KeyLayout::Cluster, plain != cluster);
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
