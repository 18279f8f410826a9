//! The indexes declared on a field.

use proc_macro2::Span;

use super::Field;
use crate::Kind;

/// An index declared on a field.
pub struct Index {
    pub kind: IndexKind,
    /// Where the attribute was written.
    pub span: Span,
}

/// The kinds of index (see `redmodel::model::index`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    Unique,
    Sorted,
    Tags,
    Recent(u32),
}

impl IndexKind {
    /// The attribute that declares the index.
    pub fn attr_name(self) -> &'static str {
        match self {
            IndexKind::Unique => "unique",
            IndexKind::Sorted => "sorted",
            IndexKind::Tags => "tags",
            IndexKind::Recent(_) => "recent",
        }
    }
}

impl Index {
    /// The name of the index's handle constant on the model: the field's
    /// handle, then the attribute in upper case (`NAME_UNIQUE`,
    /// `LOGINS_SORTED`, `TAGS_TAGS`, `LAST_LOGIN_RECENT`). One rule, so that
    /// the name follows from the declaration, and a field may carry two
    /// indexes (`sorted, recent = 10`).
    pub fn handle_name(&self, field_handle: &str) -> String {
        format!("{field_handle}_{}", self.kind.attr_name().to_uppercase())
    }
}

impl Field<'_> {
    /// `recent = N`'s N, if it is from 1 to `u32::MAX`.
    pub fn valid_recent(&self) -> Option<u32> {
        let lit = self.attrs.recent.as_ref()?;
        lit.base10_parse::<u32>().ok().filter(|cap| *cap >= 1)
    }

    /// The indexes declared on the field (`recent` if its value is valid).
    pub fn declared_indexes(&self) -> Vec<Index> {
        let attrs = &self.attrs;
        let flags = [
            (attrs.unique, IndexKind::Unique),
            (attrs.sorted, IndexKind::Sorted),
            (attrs.tags, IndexKind::Tags),
        ];
        let recent = self
            .valid_recent()
            .zip(attrs.recent.as_ref())
            .map(|(cap, lit)| Index {
                kind: IndexKind::Recent(cap),
                span: lit.span(),
            });
        flags
            .into_iter()
            .filter_map(|(flag, kind)| Some(Index { kind, span: flag? }))
            .chain(recent)
            .collect()
    }

    /// The indexes the model keeps for the field: none on a sub-object
    /// (an index lists the objects of one admin model), and with `tags`
    /// neither `unique` nor `sorted`, so that each conflict is reported
    /// once.
    pub fn indexes(&self, kind: Kind) -> Vec<Index> {
        if kind != Kind::Admin {
            return Vec::new();
        }
        let mut indexes = self.declared_indexes();
        if self.attrs.tags.is_some() {
            indexes.retain(|i| matches!(i.kind, IndexKind::Tags | IndexKind::Recent(_)));
        }
        indexes
    }
}
