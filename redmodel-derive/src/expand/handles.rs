//! The typed handles a model gets: one constant per stored field, one per
//! index (see `redmodel::model::index`).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::codec;
use crate::ast::{Index, IndexKind};
use crate::model::DataField;
use crate::name::unraw;

/// `pub const NAME: Field<Teacher, String, Plain> = Field::new("name");`
/// per stored field, with the field's visibility, and its indexes'.
pub fn field_handles(ident: &Ident, fields: &[DataField]) -> TokenStream {
    if fields.is_empty() {
        return quote!();
    }
    let consts = fields.iter().map(|f| {
        let (vis, ty, name, codec) = (f.vis(), f.ty(), &f.name, codec(f));
        let rust_name = unraw(f.ident);
        let constant = format_ident!("{}", f.handle, span = f.ident.span());
        let doc =
            format!("The field `{rust_name}` (hash field `{name}`), for typed reads and writes.");
        let indexes = f.indexes.iter().map(|index| index_handle(ident, f, index));
        quote! {
            #[doc = #doc]
            #vis const #constant: ::redmodel::__private::Field<#ident, #ty, #codec> =
                ::redmodel::__private::Field::new(#name);
            #(#indexes)*
        }
    });
    quote! {
        #[automatically_derived]
        #[allow(dead_code)]
        impl #ident {
            #(#consts)*
        }
    }
}

/// The handle constant of one index on field `f`.
fn index_handle(ident: &Ident, f: &DataField, index: &Index) -> TokenStream {
    let (vis, ty, name, codec) = (f.vis(), f.ty(), &f.name, codec(f));
    let rust_name = unraw(f.ident);
    let constant = format_ident!("{}", index.handle_name(&f.handle), span = index.span);
    let (doc, ty, init) = match index.kind {
        IndexKind::Unique => (
            format!("The unique index on `{rust_name}`: find an object by its `{rust_name}`."),
            quote!(::redmodel::__private::UniqueIndex<#ident, #ty, #codec>),
            quote!(::redmodel::__private::UniqueIndex::new(#name)),
        ),
        IndexKind::Sorted => (
            format!("The sorted index on `{rust_name}`: top, bottom, rank, score ranges."),
            quote!(::redmodel::__private::SortedIndex<#ident, #ty>),
            quote!(::redmodel::__private::SortedIndex::new(#name)),
        ),
        IndexKind::Tags => (
            format!("The tag index on `{rust_name}`: objects by tag, intersections, unions, differences."),
            quote!(::redmodel::__private::TagIndex<#ident, #ty>),
            quote!(::redmodel::__private::TagIndex::new(#name)),
        ),
        IndexKind::Recent(cap) => (
            format!("The {cap} objects whose `{rust_name}` was written last, newest first."),
            quote!(::redmodel::__private::RecentList<#ident>),
            quote!(::redmodel::__private::RecentList::new(#name, #cap)),
        ),
    };
    quote! {
        #[doc = #doc]
        #vis const #constant: #ty = #init;
    }
}
