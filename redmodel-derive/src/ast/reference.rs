//! Reference fields, found by their type's spelling (a derive sees no
//! more).

use syn::Type;

/// The model a reference field points at: `T` in `Ref<T>`, `ObjectRef<T>`,
/// `Option<Ref<T>>`.
pub fn target(ty: &Type) -> Option<Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let Some(syn::GenericArgument::Type(inner)) = args.args.first() else {
        return None;
    };
    match last.ident.to_string().as_str() {
        "Ref" | "ObjectRef" if args.args.len() == 1 => Some(inner.clone()),
        "Option" => target(inner),
        _ => None,
    }
}

/// Whether a reference field's type is an `Option` (the reference may be
/// absent).
pub fn optional(ty: &Type) -> bool {
    let Type::Path(path) = ty else { return false };
    path.path
        .segments
        .last()
        .is_some_and(|last| last.ident == "Option")
}

#[cfg(test)]
mod tests {
    use quote::ToTokens;

    fn target(ty: &str) -> Option<String> {
        let ty: syn::Type = syn::parse_str(ty).unwrap();
        super::target(&ty).map(|t| t.to_token_stream().to_string())
    }

    #[test]
    fn reference_fields_are_found_by_their_spelling() {
        assert_eq!(target("Ref<Class>").as_deref(), Some("Class"));
        assert_eq!(
            target("redmodel::model::ObjectRef<a::Class>").as_deref(),
            Some("a :: Class")
        );
        assert_eq!(target("Option<Ref<Class>>").as_deref(), Some("Class"));
        assert_eq!(target("String"), None);
        assert_eq!(target("Option<String>"), None);
        assert_eq!(target("Vec<Ref<Class>>"), None);
    }

    #[test]
    fn an_option_of_a_reference_is_optional() {
        let optional = |ty: &str| super::optional(&syn::parse_str(ty).unwrap());
        assert!(optional("Option<Ref<Class>>"));
        assert!(optional("std::option::Option<Ref<Class>>"));
        assert!(!optional("Ref<Class>"));
    }
}
