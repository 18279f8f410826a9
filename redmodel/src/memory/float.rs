//! Floating point as Redis 7.0 reads and writes it.
//!
//! - Scores and other doubles are parsed like `strtod` and rejected when
//!   NaN, out of range or followed by garbage (`getDoubleFromObject`).
//! - Double replies use `%.17g`, except integral values, printed as integers
//!   (`d2string`).
//! - INCRBYFLOAT and HINCRBYFLOAT compute in `long double` and print with
//!   `%.17Lf`, trailing zeros trimmed (`ld2string`, LD_STR_HUMAN).

/// Parses a double as Redis does; `None` for anything Redis rejects.
pub(crate) fn parse_double(bytes: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(bytes).ok()?;
    if s.is_empty() || s.as_bytes()[0].is_ascii_whitespace() {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    let is_inf_literal = body == "inf" || body == "infinity";
    if body.starts_with("nan") {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    if v.is_infinite() && !is_inf_literal {
        return None; // ERANGE overflow
    }
    if v == 0.0 && body.bytes().any(|c| (b'1'..=b'9').contains(&c)) && has_nonzero_mantissa(body) {
        return None; // ERANGE underflow to zero
    }
    Some(v)
}

fn has_nonzero_mantissa(body: &str) -> bool {
    let mantissa = body.split(['e', 'E']).next().unwrap_or("");
    mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c))
}

/// Formats a double as Redis 7.0 replies with it (`d2string`).
pub(crate) fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Integral values that fit a long long print as integers.
    const MIN: f64 = -4503599627370495.0; // -(2^52 - 1), Redis's bounds
    const MAX: f64 = 4503599627370496.0;
    if d.fract() == 0.0 && d > MIN && d < MAX {
        return format!("{}", d as i64);
    }
    format_g17(d)
}

/// C's `%.17g`.
pub(crate) fn format_g17(d: f64) -> String {
    let sci = format!("{:.16e}", d);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..17).contains(&exp) {
        let decimals = (16 - exp).max(0) as usize;
        let fixed = format!("{:.*}", decimals, d);
        trim_fraction(&fixed)
    } else {
        let m = trim_fraction(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    }
}

fn trim_fraction(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// A `long double` value as Redis's INCRBYFLOAT holds it.
///
/// Represented as f64 for now.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub(crate) struct LongDouble(f64);

impl LongDouble {
    /// Parses like Redis's `string2ld`; `None` for what Redis rejects.
    pub(crate) fn parse(bytes: &[u8]) -> Option<LongDouble> {
        parse_double(bytes).map(LongDouble)
    }

    /// The sum, or `None` if it is NaN or infinite (Redis's "increment would
    /// produce NaN or Infinity").
    pub(crate) fn checked_add(self, other: LongDouble) -> Option<LongDouble> {
        let sum = self.0 + other.0;
        sum.is_finite().then_some(LongDouble(sum))
    }

    /// `%.17Lf` with trailing zeros (and a trailing dot) removed.
    pub(crate) fn to_human_string(self) -> String {
        let s = format!("{:.17}", self.0);
        let s = trim_fraction(&s);
        if s == "-0" {
            "0".into()
        } else {
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_like_redis_7_0() {
        assert_eq!(format_double(1.5), "1.5");
        assert_eq!(format_double(3.0), "3");
        assert_eq!(format_double(1.1), "1.1000000000000001");
        assert_eq!(format_double(f64::INFINITY), "inf");
        assert_eq!(format_double(1e20), "1e+20");
        assert_eq!(format_double(0.0001), "0.0001");
    }

    #[test]
    fn doubles_parse_like_redis() {
        assert_eq!(parse_double(b"1.5"), Some(1.5));
        assert_eq!(parse_double(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_double(b"nan"), None);
        assert_eq!(parse_double(b" 1"), None);
        assert_eq!(parse_double(b"1 "), None);
        assert_eq!(parse_double(b"1e400"), None);
        assert_eq!(parse_double(b""), None);
    }
}
