//! The registrations a model submits for program start: its keys (see
//! `redmodel::model::declared`), its references (see
//! `redmodel::model::cascade`) and its slot group (see `redmodel::layout`).

use proc_macro2::{Ident, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::attr::Action;
use crate::model::{DataField, Object};

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

/// Registers the slot group of an admin that declares one, and of every
/// sub-object (whose group is its admin's, known only to the compiler).
pub fn table_group(ident: &Ident, object: &Object) -> Option<TokenStream> {
    if object.owner.is_none() && object.slot_group.is_none() {
        return None;
    }
    Some(quote! {
        ::redmodel::__private::inventory::submit! {
            ::redmodel::__private::TableGroup {
                table: <#ident as ::redmodel::__private::Model>::TABLE,
                group: <#ident as ::redmodel::__private::Model>::SLOT_GROUP,
            }
        }
    })
}

/// The runtime's `OnDelete` for an action.
pub fn on_delete(action: Action) -> TokenStream {
    match action {
        Action::Restrict => quote!(::redmodel::__private::OnDelete::Restrict),
        Action::Clear => quote!(::redmodel::__private::OnDelete::Clear),
        Action::Delete => quote!(::redmodel::__private::OnDelete::Delete),
        Action::Cascade => quote!(::redmodel::__private::OnDelete::Cascade),
    }
}

/// Registers a referrer of `target`.
pub fn register(target: TokenStream, on_delete: TokenStream, kind: TokenStream) -> TokenStream {
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

/// The referrer registrations of a model's reference fields (and, for
/// `on_delete = "cascade"`, the deprecation warning at the attribute).
pub fn field_referrers(ident: &Ident, admin: bool, fields: &[DataField]) -> Vec<TokenStream> {
    let delete = if admin {
        quote!(::redmodel::__private::delete_admin::<#ident>)
    } else {
        quote!(::redmodel::__private::delete_object::<#ident>)
    };
    fields
        .iter()
        .filter_map(|f| {
            let target = f.ref_target.as_ref()?;
            let name = &f.name;
            let target = quote_spanned!(target.span()=> #target);
            let registered = register(
                target,
                on_delete(f.on_delete?),
                quote! {
                    ::redmodel::__private::ReferrerKind::Field {
                        field: #name,
                        pattern: ::redmodel::__private::object_pattern::<#ident>,
                        is_object: ::redmodel::__private::is_object_of::<#ident>,
                        delete: #delete,
                    }
                },
            );
            let deprecated = f.deprecated_cascade.map(|span| {
                quote_spanned! {span=>
                    const _: () = ::redmodel::__private::on_delete_cascade_on_a_reference_field();
                }
            });
            Some(quote!(#registered #deprecated))
        })
        .collect()
}
