//! Case conversions of names.

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
}
