//! HSCAN's pages of a hash that outgrew the compact encoding.
//!
//! Redis walks a big hash's table a few buckets per call and answers a
//! cursor to go on from; Redis 7.4 counts an expired field it skips
//! toward COUNT, so a hash whose fields are mostly expired answers pages
//! that are empty (its test suite checks for one). A compact hash is
//! answered whole with the cursor 0, as Redis answers a listpack.
//!
//! The engine's table (std's `HashMap`) has no buckets to walk, so a
//! page is a range of the table's own hash of the field: the cursor is
//! where the next range starts. A field's hash is fixed for the table's
//! life (its hasher keeps its seed through growth and clones), so every
//! field present for the whole walk lies on exactly one page: returned
//! once, as SCAN promises. A page spans the hash space over the number
//! of pages the hash's size and COUNT call for, at most
//! [`MAX_PAGES`], so that a whole walk reads the table at most that many
//! times whatever COUNT asks.

use std::hash::BuildHasher;

use super::{HashValue, Table};

/// The most pages a walk takes: each page reads the whole table.
const MAX_PAGES: u64 = 64;

impl HashValue {
    /// The table of a big hash (with field TTLs or not).
    fn table(&self) -> Option<&Table> {
        match self {
            HashValue::Table(t) => Some(t),
            HashValue::Expiring(e) => e.fields.table(),
            HashValue::Compact(_) => None,
        }
    }

    /// The page of an HSCAN from `cursor` asking for `count` fields: the
    /// next cursor (0 at the end) and the page's fields and values,
    /// expired ones included (the caller leaves them out).
    pub(crate) fn scan_page(
        &self,
        cursor: u64,
        count: usize,
    ) -> (u64, impl Iterator<Item = (&[u8], &[u8])>) {
        let Some(table) = self.table() else {
            return (0, Page::Whole(self.iter()));
        };
        let fields = table.len() as u64;
        let pages = fields.div_ceil(count.max(1) as u64).clamp(1, MAX_PAGES);
        let width = (1u128 << 64) / u128::from(pages);
        let end = u128::from(cursor) + width;
        // The last page runs to the end of the hash space.
        let (last, next) = match u64::try_from(end) {
            Ok(end) => (end - 1, end),
            Err(_) => (u64::MAX, 0),
        };
        let hasher = table.hasher();
        let on_page = move |field: &[u8]| (cursor..=last).contains(&hasher.hash_one(field));
        let page = table
            .iter()
            .filter(move |(field, _)| on_page(field))
            .map(|(f, v)| (&f[..], &v[..]));
        (next, Page::Range(page))
    }
}

/// A page's pairs: the whole compact hash, or a range of a table.
enum Page<W, R> {
    Whole(W),
    Range(R),
}

impl<'a, W, R> Iterator for Page<W, R>
where
    W: Iterator<Item = (&'a [u8], &'a [u8])>,
    R: Iterator<Item = (&'a [u8], &'a [u8])>,
{
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Page::Whole(it) => it.next(),
            Page::Range(it) => it.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::super::{Fit, HashValue};

    fn hash(n: usize) -> HashValue {
        let mut h = HashValue::default();
        for i in 0..n {
            let f = format!("f{i}");
            h.insert(f.as_bytes(), b"v", Fit::DEFAULT);
        }
        h
    }

    /// Every field once, over the pages a walk takes.
    fn walk(h: &HashValue, count: usize) -> (usize, Vec<Vec<u8>>) {
        let (mut cursor, mut pages, mut seen) = (0, 0, Vec::new());
        loop {
            let (next, page) = h.scan_page(cursor, count);
            seen.extend(page.map(|(f, _)| f.to_vec()));
            pages += 1;
            if next == 0 {
                return (pages, seen);
            }
            cursor = next;
        }
    }

    #[test]
    fn a_compact_hash_is_one_page() {
        let h = hash(10);
        let (pages, seen) = walk(&h, 1);
        assert_eq!((pages, seen.len()), (1, 10));
    }

    #[test]
    fn a_table_is_walked_in_pages_returning_each_field_once() {
        let h = hash(1000);
        let (pages, seen) = walk(&h, 10);
        assert_eq!(pages, 64);
        let unique: HashSet<_> = seen.iter().collect();
        assert_eq!((seen.len(), unique.len()), (1000, 1000));
        // COUNT above the size: one page.
        assert_eq!(walk(&h, 1000).0, 1);
        assert_eq!(walk(&h, 250).0, 4);
    }

    #[test]
    fn fields_present_all_along_are_returned_while_the_hash_changes() {
        let mut h = hash(1000);
        let (mut cursor, mut seen) = (0, HashSet::new());
        let mut i = 0;
        loop {
            let (next, page) = h.scan_page(cursor, 10);
            seen.extend(page.map(|(f, _)| f.to_vec()));
            // Growth (rehashes included) and removals between pages.
            for _ in 0..200 {
                h.insert(format!("new{i}").as_bytes(), b"v", Fit::DEFAULT);
                i += 1;
            }
            h.remove(format!("f{}", i / 200).as_bytes());
            if next == 0 {
                break;
            }
            cursor = next;
        }
        let removed = i / 200;
        for k in (0..1000).filter(|&k| k == 0 || k > removed) {
            assert!(seen.contains(format!("f{k}").as_bytes()), "f{k} missed");
        }
    }
}
