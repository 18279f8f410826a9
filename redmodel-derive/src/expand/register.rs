//! The registrations a model submits for program start: its keys (see
//! `redmodel::model::declared`) and its references (see
//! `redmodel::model::cascade`).

use proc_macro2::{Ident, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::model::DataField;

/// Registers a model or relation, with its keys.
pub fn declare(
    ident: &Ident,
    kind: &str,
    namespace: TokenStream,
    checker: TokenStream,
) -> TokenStream {
    quote! {
        ::redmodel::__private::inventory::submit! {
            ::redmodel::__private::Declared {
                rust_name: ::core::concat!(::core::module_path!(), "::", ::core::stringify!(#ident)),
                kind: #kind,
                namespace: #namespace,
                checker: #checker,
            }
        }
    }
}

/// Registers a referrer of `target`.
pub fn register(target: TokenStream, restrict: bool, kind: TokenStream) -> TokenStream {
    let on_delete = if restrict {
        quote!(::redmodel::__private::OnDelete::Restrict)
    } else {
        quote!(::redmodel::__private::OnDelete::Cascade)
    };
    quote! {
        ::redmodel::__private::inventory::submit! {
            ::redmodel::__private::Referrer {
                target: <#target as ::redmodel::__private::Model>::TABLE,
                on_delete: #on_delete,
                kind: #kind,
            }
        }
    }
}

/// The referrer registrations of a model's reference fields.
pub fn field_referrers(ident: &Ident, fields: &[DataField]) -> Vec<TokenStream> {
    fields
        .iter()
        .filter_map(|f| {
            let target = f.ref_target.as_ref()?;
            let name = &f.name;
            let target = quote_spanned!(target.span()=> #target);
            Some(register(
                target,
                f.restrict,
                quote! {
                    ::redmodel::__private::ReferrerKind::Field {
                        field: #name,
                        pattern: ::redmodel::__private::object_pattern::<#ident>,
                        is_object: ::redmodel::__private::is_object_of::<#ident>,
                    }
                },
            ))
        })
        .collect()
}
