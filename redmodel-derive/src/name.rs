//! The names the derive makes from the user's: table names, stored field
//! names, handle constants.

use syn::Ident;

/// `StudentExam` -> `student_exam` (serde's `snake_case` rule: an
/// underscore before every upper-case letter but the first).
pub fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 && !out.ends_with('_') {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `math_mark` -> `MATH_MARK`, the name of a field's handle constant.
pub fn upper_case(name: &str) -> String {
    name.to_uppercase()
}

/// The name of an identifier as Rust writes it, without `r#`.
pub fn unraw(ident: &Ident) -> String {
    let name = ident.to_string();
    name.strip_prefix("r#").map(str::to_string).unwrap_or(name)
}

/// Whether `name` can be a table name: ASCII letters, digits, `_`, `-`
/// and `.`, not starting with `_` (`:` separates key parts).
pub fn is_valid_table(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('_')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A valid table name close to `name`, for error messages; the model's
/// own name in snake_case if nothing of `name` is left.
pub fn suggest_table(name: &str, model: &Ident) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches('_').to_string();
    if cleaned.is_empty() {
        snake_case(&unraw(model))
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake() {
        assert_eq!(snake_case("Teacher"), "teacher");
        assert_eq!(snake_case("StudentExam"), "student_exam");
        assert_eq!(snake_case("Already_snake"), "already_snake");
    }

    #[test]
    fn upper() {
        assert_eq!(upper_case("math_mark"), "MATH_MARK");
    }

    #[test]
    fn table_names_keep_to_key_characters() {
        assert!(is_valid_table("school.teacher-2"));
        assert!(!is_valid_table("school:teacher"));
        assert!(!is_valid_table("_hidden"));
        assert!(!is_valid_table(""));
    }

    #[test]
    fn a_suggested_table_name_is_valid() {
        let model: Ident = syn::parse_quote!(Teacher);
        assert_eq!(suggest_table("school:teacher", &model), "school_teacher");
        assert_eq!(suggest_table("::", &model), "teacher");
    }
}
