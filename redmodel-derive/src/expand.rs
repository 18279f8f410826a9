//! Code generation from a validated [`Model`]. Generated code names the
//! runtime only as `::redmodel::__private::...`, so it works whatever the
//! user has imported.

mod fields;
mod handles;
mod object;
mod register;
mod relation;

use proc_macro2::TokenStream;
use quote::quote_spanned;
use syn::spanned::Spanned;

use crate::model::{Body, DataField, Model};

/// The code of a model.
pub fn expand(model: &Model) -> TokenStream {
    match &model.body {
        Body::Object(o) => object::expand(model, o),
        Body::Relation(r) => relation::expand(model, r),
    }
}

/// The field's codec type, spanned at the field's type so that errors
/// about the type and its codec point there.
fn codec(field: &DataField) -> TokenStream {
    let span = field.ty().span();
    if field.json {
        quote_spanned!(span=> ::redmodel::__private::Json)
    } else {
        quote_spanned!(span=> ::redmodel::__private::Plain)
    }
}
