//! The code of a model's stored fields: their encoding and decoding,
//! their type checks, their indexes' specs.

use proc_macro2::{Ident, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::codec;
use crate::ast::IndexKind;
use crate::attr::DefaultAttr;
use crate::model::{DataField, Object};

/// `Model::encode_fields`.
pub fn encode_fields(object: &Object) -> TokenStream {
    let field_count = object.fields.len();
    let encodes = object.fields.iter().map(|f| {
        let (field, name, ty, codec) = (f.ident, &f.name, f.ty(), codec(f));
        // Spanned at the field's type, so that a type that does not fit
        // its codec is reported there, with the check of `type_check`.
        quote_spanned! {ty.span()=>
            __values.push(::redmodel::__private::encode_field::<#ty, #codec>(__key, #name, &self.#field)?);
        }
    });
    quote! {
        fn encode_fields(
            &self,
            __key: &str,
        ) -> ::redmodel::__private::Result<::redmodel::__private::Vec<::redmodel::__private::Option<::redmodel::__private::Vec<u8>>>> {
            let mut __values = ::redmodel::__private::Vec::with_capacity(#field_count);
            #(#encodes)*
            ::redmodel::__private::Ok(__values)
        }
    }
}

/// `Model::decode_fields`: the stored fields decoded, the skipped ones
/// filled with their default.
pub fn decode_fields(ident: &Ident, object: &Object) -> TokenStream {
    let pk_ident = &object.pk.ident;
    let decodes = object.fields.iter().map(|f| {
        let (field, name, ty, codec, default) = (f.ident, &f.name, f.ty(), codec(f), default_fn(f));
        quote_spanned! {ty.span()=>
            #field: ::redmodel::__private::decode_field::<#ty, #codec>(__key, #name, __values.next(), #default)?,
        }
    });
    let skipped = object.skipped.iter().map(|f| {
        let field = &f.ident;
        let ty = &f.ty;
        quote_spanned!(f.ty.span()=> #field: <#ty as ::redmodel::__private::Default>::default(),)
    });
    quote! {
        fn decode_fields(
            __key: &str,
            __pk: Self::Pk,
            __values: ::redmodel::__private::Vec<::redmodel::__private::Option<::redmodel::__private::Vec<u8>>>,
        ) -> ::redmodel::__private::Result<Self> {
            let mut __values = __values.into_iter();
            ::redmodel::__private::Ok(#ident {
                #pk_ident: __pk,
                #(#decodes)*
                #(#skipped)*
            })
        }
    }
}

/// A check, at the field's type, that the type fits its codec (its error
/// message says what to do otherwise), whose value says whether the field
/// is always stored. (A sorted or tags field's type is checked by its
/// index's functions in `INDEXES`, at the same span.)
pub fn type_check(field: &DataField) -> TokenStream {
    let ty = field.ty();
    if field.json {
        quote_spanned!(ty.span()=> ::redmodel::__private::json_field::<#ty>())
    } else {
        quote_spanned!(ty.span()=> ::redmodel::__private::plain_field::<#ty>())
    }
}

/// The `IndexSpec`s of the model's indexes, in field order.
pub fn index_specs(fields: &[DataField]) -> TokenStream {
    let specs = fields.iter().flat_map(|f| {
        let (name, ty, codec) = (&f.name, f.ty(), codec(f));
        f.indexes.iter().map(move |index| {
            let kind = match index.kind {
                IndexKind::Unique => quote!(::redmodel::__private::IndexKind::Unique),
                IndexKind::Sorted => quote_spanned!(ty.span()=>
                    ::redmodel::__private::IndexKind::Sorted {
                        score: ::redmodel::__private::score_of::<#ty, #codec>,
                    }
                ),
                IndexKind::Tags => quote_spanned!(ty.span()=>
                    ::redmodel::__private::IndexKind::Tags {
                        tags: ::redmodel::__private::tags_of::<#ty>,
                    }
                ),
                IndexKind::Recent(cap) => {
                    quote!(::redmodel::__private::IndexKind::Recent { cap: #cap })
                }
            };
            quote! {
                ::redmodel::__private::IndexSpec { field: #name, kind: #kind },
            }
        })
    });
    quote!(&[#(#specs)*])
}

/// The field's default on load, if it has one.
fn default_fn(field: &DataField) -> TokenStream {
    let ty = field.ty();
    match field.default {
        None => quote!(::redmodel::__private::None),
        Some(DefaultAttr::Trait(span)) => quote_spanned!(*span=>
            ::redmodel::__private::Some(<#ty as ::redmodel::__private::Default>::default as fn() -> #ty)
        ),
        Some(DefaultAttr::Function(path)) => quote_spanned!(path.span()=>
            ::redmodel::__private::Some(#path as fn() -> #ty)
        ),
    }
}
