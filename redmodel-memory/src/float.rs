//! Floating point exactly as Redis 7.0.15 on x86-64 reads, computes and
//! prints it.
//!
//! Redis has three sets of rules, and each is reproduced here bit for bit:
//!
//! - **Double arguments** (ZADD scores, ZINCRBY, ...) go through `string2d`:
//!   C's `strtod` must consume the whole argument, with no leading space,
//!   and the result must not be NaN, nor overflow to infinity, nor underflow
//!   to zero. `strtod` also reads hexadecimal floats (`0x1p3`) and `inf` /
//!   `infinity` in any case. See [`parse_double`].
//! - **Double replies** (`addReplyDouble`) are `%.17g`, with `inf` / `-inf`
//!   spelled out. See [`format_double`].
//! - **INCRBYFLOAT and HINCRBYFLOAT** read with `strtold`, add in C's
//!   `long double` (the x87 80-bit format: a 64-bit mantissa), and print
//!   with `%.17Lf`, trailing zeros and dot removed (`ld2string`,
//!   `LD_STR_HUMAN`). Rust has no such type, so [`LongDouble`] is a software
//!   x87 value.
//!
//! Everything that must round exactly (decimal and hexadecimal text to
//! binary, long double addition, binary to `%.17Lf` decimal) goes through
//! one small arbitrary-precision integer, [`Big`], and one rounding rule,
//! [`round`] (round to nearest, ties to even, with gradual underflow, which
//! is what glibc and the x87 unit do). No crate offers `%.17Lf`: even with
//! an x87 type from a crate (`rustc_apfloat`) the exact decimal printing
//! would still need a bignum, and with the bignum the rest is a few lines.
//! Decimal doubles are the one exception: Rust's own `str::parse::<f64>` is
//! correctly rounded and much faster, so it is used once the C grammar has
//! been checked.

use std::cmp::Ordering;

/// An optional sign and what follows it: `(negative, rest)`. Shared by the
/// number readers that, like C's `strtod` and `strtoul`, accept `+`.
pub(crate) fn split_sign(bytes: &[u8]) -> (bool, &[u8]) {
    match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, bytes),
    }
}

// ---------------------------------------------------------------------------
// Doubles
// ---------------------------------------------------------------------------

/// Parses a double as Redis's `string2d` (`getDoubleFromObject`) does;
/// `None` for anything Redis answers "value is not a valid float" to.
pub(crate) fn parse_double(bytes: &[u8]) -> Option<f64> {
    let (negative, number) = scan(bytes)?;
    let Number::Finite(digits) = number else {
        return Some(if negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    };
    if digits.hex {
        return match digits.to_binary(Format::DOUBLE) {
            Conversion::Zero => Some(if negative { -0.0 } else { 0.0 }),
            Conversion::Finite { mantissa, exp } => Some(to_f64(negative, mantissa, exp)),
            Conversion::Overflow | Conversion::Underflow => None,
        };
    }
    // `scan` has checked the C grammar, which std's grammar contains, so
    // the text is ASCII and std parses exactly the same number.
    let value: f64 = std::str::from_utf8(bytes).ok()?.parse().ok()?;
    let erange = value.is_infinite() || (value == 0.0 && !digits.is_zero());
    (!erange).then_some(value)
}

/// Formats a double as Redis 7.0 replies with it (`addReplyDouble`): C's
/// `%.17g`, with `inf` and `-inf`.
///
/// Integral values print as integers up to 1e17 (`%.17g` switches to an
/// exponent after 17 digits: ZSCORE of 1e17 is "1e+17"), and -0 prints as
/// "-0".
pub(crate) fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    format_g17(d)
}

/// C's `%.17g` for a finite double.
pub(crate) fn format_g17(d: f64) -> String {
    const PRECISION: i32 = 17;
    // An integer below 10^17 prints as its digits: 17 significant digits
    // hold it whole, and the exponent is below the precision. The common
    // case (a number a script passes to `redis.call`, a score), without
    // the detour through scientific notation. (-0 keeps its sign below.)
    if d.fract() == 0.0 && d.abs() < 1e17 && (d != 0.0 || d.is_sign_positive()) {
        return itoa::Buffer::new().format(d as i64).to_owned();
    }
    // Rust's `{:e}` rounds exactly (ties to even, like glibc), so its 17
    // significant digits are the ones printf chooses.
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, d);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..PRECISION).contains(&exp) {
        // Fixed notation with the same significant digits.
        let fixed = if exp >= 0 {
            let (int, frac) = digits.split_at((exp + 1) as usize);
            format!("{int}.{frac}")
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        format!("{sign}{}", trim_fraction(&fixed))
    } else {
        let (first, rest) = digits.split_at(1);
        let m = format!("{first}.{rest}");
        let m = trim_fraction(&m);
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.unsigned_abs())
    }
}

/// Removes trailing zeros after a decimal point, and the point if nothing
/// is left after it (what `%g` does, and what `ld2string` does by hand).
fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Builds the double `mantissa * 2^exp` from a [`round`]ed result.
fn to_f64(negative: bool, mantissa: u64, exp: i64) -> f64 {
    const FRACTION_BITS: u32 = 52;
    let bits = if mantissa >> FRACTION_BITS == 0 {
        // Subnormal: `round` put it at the minimum exponent.
        mantissa
    } else {
        let biased = (exp + 1075) as u64; // exp + 52 + 1023
        (biased << FRACTION_BITS) | (mantissa & ((1 << FRACTION_BITS) - 1))
    };
    let magnitude = f64::from_bits(bits);
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

// ---------------------------------------------------------------------------
// long double
// ---------------------------------------------------------------------------

/// `string2ld` refuses strings of this length or more (`MAX_LONG_DOUBLE_CHARS`).
const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;

/// A C `long double` of x86-64 (x87 extended precision: 64-bit mantissa,
/// 15-bit exponent), as INCRBYFLOAT and HINCRBYFLOAT compute with it.
///
/// NaN is never needed: Redis refuses to parse it and reports a sum that
/// would be NaN as an error, so [`LongDouble::checked_add`] does too.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LongDouble {
    negative: bool,
    magnitude: Magnitude,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Magnitude {
    /// `mantissa * 2^exp`; zero when `mantissa` is 0.
    Finite {
        mantissa: u64,
        exp: i64,
    },
    Infinite,
}

impl LongDouble {
    /// What a missing key or field counts as.
    pub(crate) const ZERO: LongDouble = LongDouble {
        negative: false,
        magnitude: Magnitude::Finite {
            mantissa: 0,
            exp: 0,
        },
    };

    /// Parses like Redis's `string2ld` (C's `strtold` over the whole
    /// string); `None` for what Redis rejects: leading space, trailing
    /// garbage, NaN, overflow, underflow to zero, 5120 bytes or more.
    /// Infinity is accepted, as `strtold` reads it.
    pub(crate) fn parse(bytes: &[u8]) -> Option<LongDouble> {
        if bytes.len() >= MAX_LONG_DOUBLE_CHARS {
            return None;
        }
        let (negative, number) = scan(bytes)?;
        let magnitude = match number {
            Number::Infinite => Magnitude::Infinite,
            Number::Finite(digits) => match digits.to_binary(Format::X87) {
                Conversion::Zero => Magnitude::Finite {
                    mantissa: 0,
                    exp: 0,
                },
                Conversion::Finite { mantissa, exp } => Magnitude::Finite { mantissa, exp },
                Conversion::Overflow | Conversion::Underflow => return None,
            },
        };
        Some(LongDouble {
            negative,
            magnitude,
        })
    }

    /// The exact value of `d`, as C promotes a double to a long double
    /// (GEOPOS replies its coordinates so); NaN reads as infinite.
    pub(crate) fn from_f64(d: f64) -> LongDouble {
        let negative = d.is_sign_negative();
        if !d.is_finite() {
            return LongDouble {
                negative,
                magnitude: Magnitude::Infinite,
            };
        }
        let bits = d.to_bits();
        let exp_bits = ((bits >> 52) & 0x7ff) as i64;
        let fraction = bits & ((1 << 52) - 1);
        let (mantissa, exp) = if exp_bits == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1 << 52), exp_bits - 1075)
        };
        LongDouble {
            negative,
            magnitude: Magnitude::Finite { mantissa, exp },
        }
    }

    /// Whether the value is finite (HINCRBYFLOAT refuses an infinite increment).
    /// Whether its sign is negative (-0 included).
    pub(crate) fn is_negative(self) -> bool {
        self.negative
    }

    pub(crate) fn is_finite(self) -> bool {
        matches!(self.magnitude, Magnitude::Finite { .. })
    }

    /// The correctly rounded x87 sum, or `None` if it is NaN or infinite
    /// (Redis's "increment would produce NaN or Infinity").
    pub(crate) fn checked_add(self, other: LongDouble) -> Option<LongDouble> {
        let (
            Magnitude::Finite {
                mantissa: ma,
                exp: ea,
            },
            Magnitude::Finite {
                mantissa: mb,
                exp: eb,
            },
        ) = (self.magnitude, other.magnitude)
        else {
            return None;
        };
        if ma == 0 && mb == 0 {
            // IEEE: -0 + -0 is -0, any other sum of zeros is +0.
            return Some(LongDouble {
                negative: self.negative && other.negative,
                ..LongDouble::ZERO
            });
        }
        if ma == 0 {
            return Some(other);
        }
        if mb == 0 {
            return Some(self);
        }
        // The exact sum as an integer times 2^exp, then one rounding.
        let exp = ea.min(eb);
        let a = Big::from_u128(u128::from(ma)).shl((ea - exp) as u64);
        let b = Big::from_u128(u128::from(mb)).shl((eb - exp) as u64);
        let (negative, sum) = if self.negative == other.negative {
            (self.negative, a.add(&b))
        } else {
            match a.cmp(&b) {
                Ordering::Equal => return Some(LongDouble::ZERO),
                Ordering::Greater => (self.negative, a.sub(&b)),
                Ordering::Less => (other.negative, b.sub(&a)),
            }
        };
        let magnitude = match round(&sum, exp, false, Format::X87) {
            Conversion::Finite { mantissa, exp } => Magnitude::Finite { mantissa, exp },
            Conversion::Overflow => return None,
            // A sum of two values of the format is a multiple of its
            // smallest step, so it never underflows.
            Conversion::Zero | Conversion::Underflow => return Some(LongDouble::ZERO),
        };
        Some(LongDouble {
            negative,
            magnitude,
        })
    }

    /// C's `(long long) ceill(x * factor)` on x86-64: the product rounded
    /// to the x87's 64-bit mantissa (ties to even), its ceiling, and the
    /// conversion's "integer indefinite" `i64::MIN` for what does not fit
    /// (infinity included). The blocking commands read their timeouts so
    /// (`getTimeoutFromObjectOrReply`: seconds times 1000).
    pub(crate) fn mul_ceil_to_i64(self, factor: u64) -> i64 {
        let Magnitude::Finite { mantissa, exp } = self.magnitude else {
            return i64::MIN;
        };
        let mut product = u128::from(mantissa) * u128::from(factor);
        if product == 0 {
            return 0;
        }
        let mut exp = exp;
        let bits = 128 - product.leading_zeros();
        if bits > 64 {
            let shift = bits - 64;
            let rest = product & ((1u128 << shift) - 1);
            let half = 1u128 << (shift - 1);
            product >>= shift;
            exp += i64::from(shift);
            if rest > half || (rest == half && product & 1 == 1) {
                product += 1;
            }
        }
        // The magnitude's integer part, and whether a fraction is left.
        let (int, fraction) = if exp >= 0 {
            if exp > 64 || (product << exp) >> exp != product {
                return i64::MIN;
            }
            (product << exp, false)
        } else if exp <= -128 {
            (0, true)
        } else {
            let shift = exp.unsigned_abs() as u32;
            (product >> shift, product & ((1u128 << shift) - 1) != 0)
        };
        let Ok(int) = i128::try_from(int) else {
            return i64::MIN;
        };
        let ceiling = if self.negative {
            // ceil(-v) is -floor(v); -2^63 is i64::MIN either way.
            -int
        } else {
            int + i128::from(fraction)
        };
        i64::try_from(ceiling).unwrap_or(i64::MIN)
    }

    /// `ld2string(LD_STR_HUMAN)`: `%.17Lf` with trailing zeros (and a
    /// trailing dot) removed, and "-0" printed as "0".
    pub(crate) fn to_human_string(self) -> String {
        let Magnitude::Finite { mantissa, exp } = self.magnitude else {
            return if self.negative { "-inf" } else { "inf" }.into();
        };
        let fixed = format_fixed(self.negative, mantissa, exp, 17);
        match trim_fraction(&fixed) {
            "-0" => "0".into(),
            trimmed => trimmed.into(),
        }
    }
}

/// C's `%.<decimals>f` of `±mantissa * 2^exp`: exact binary to decimal,
/// rounded to nearest with ties to even, as glibc does. A negative value
/// keeps its sign even when it prints as zero ("-0.000").
fn format_fixed(negative: bool, mantissa: u64, exp: i64, decimals: u32) -> String {
    let scale = 10u64.pow(decimals);
    let mut n = Big::from_u128(u128::from(mantissa));
    n.mul_small(scale);
    // n * 2^exp is the value times 10^decimals; make it an integer.
    let n = if exp >= 0 {
        n.shl(exp as u64)
    } else {
        let shift = exp.unsigned_abs();
        let mut q = n.shr(shift);
        let half = n.bit(shift - 1);
        let below_half = n.any_below(shift - 1);
        if half && (below_half || q.bit(0)) {
            q.add_small(1);
        }
        q
    };
    let digits = n.to_decimal();
    let decimals = decimals as usize;
    let padded = format!("{digits:0>width$}", width = decimals + 1);
    let (int, frac) = padded.split_at(padded.len() - decimals);
    let sign = if negative { "-" } else { "" };
    if decimals == 0 {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

// ---------------------------------------------------------------------------
// The strtod grammar
// ---------------------------------------------------------------------------

/// A number as C's `strtod` / `strtold` reads it, sign apart.
enum Number<'a> {
    Infinite,
    Finite(Digits<'a>),
}

/// The digits of a finite number, and its exponent as written.
struct Digits<'a> {
    /// Hexadecimal digits, with a binary exponent (`0x1.8p3`), or decimal.
    hex: bool,
    int: &'a [u8],
    frac: &'a [u8],
    /// The exponent after `e` / `p`, saturated far beyond any range.
    exp: i64,
}

/// Exponents are saturated at this magnitude while read: far beyond any
/// format's range, and far from i64 overflow in later arithmetic.
const EXP_LIMIT: i64 = 1 << 50;

/// Reads the whole of `s` as `strtod` would, or `None` when `strtod` would
/// stop early (garbage, a leading space, an empty string) or read a NaN:
/// Redis refuses all of these alike.
fn scan(s: &[u8]) -> Option<(bool, Number<'_>)> {
    let (negative, rest) = split_sign(s);
    if rest.eq_ignore_ascii_case(b"inf") || rest.eq_ignore_ascii_case(b"infinity") {
        return Some((negative, Number::Infinite));
    }
    let hex = rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x';
    let body = if hex { &rest[2..] } else { rest };
    let is_digit = |c: &u8| {
        if hex {
            c.is_ascii_hexdigit()
        } else {
            c.is_ascii_digit()
        }
    };
    let int_len = body.iter().take_while(|c| is_digit(c)).count();
    let (int, after_int) = body.split_at(int_len);
    let (frac, after_frac) = match after_int.split_first() {
        Some((b'.', tail)) => {
            let n = tail.iter().take_while(|c| is_digit(c)).count();
            tail.split_at(n)
        }
        _ => (&after_int[..0], after_int),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let exp = match after_frac.split_first() {
        None => 0,
        Some((marker, tail)) => {
            let expected = if hex { b'p' } else { b'e' };
            if marker | 0x20 != expected {
                return None;
            }
            parse_exponent(tail)?
        }
    };
    let digits = Digits {
        hex,
        int,
        frac,
        exp,
    };
    Some((negative, Number::Finite(digits)))
}

/// The exponent after `e` or `p`: an optional sign and at least one digit,
/// to the end of the string.
fn parse_exponent(s: &[u8]) -> Option<i64> {
    let (negative, digits) = split_sign(s);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = digits.iter().fold(0i64, |acc, &c| {
        (acc * 10 + i64::from(c - b'0')).min(EXP_LIMIT)
    });
    Some(if negative { -magnitude } else { magnitude })
}

/// Twenty hex digits hold at least 77 significant bits: more than the
/// `precision + 2` that [`round`] needs to round exactly with a sticky bit.
const HEX_DIGITS_KEPT: usize = 20;

impl Digits<'_> {
    fn all_digits(&self) -> impl Iterator<Item = u8> + '_ {
        self.int.iter().chain(self.frac).copied()
    }

    fn is_zero(&self) -> bool {
        self.all_digits().all(|c| c == b'0')
    }

    /// The value converted to `format`, correctly rounded.
    fn to_binary(&self, format: Format) -> Conversion {
        if self.is_zero() {
            return Conversion::Zero;
        }
        let frac_len = self.frac.len() as i64;
        if self.hex {
            // Only the leading bits can matter, the rest only as a sticky
            // bit: strtod has no length limit, and neither should the cost.
            let mut significant = self.all_digits().skip_while(|&c| c == b'0');
            let kept: Vec<u8> = significant.by_ref().take(HEX_DIGITS_KEPT).collect();
            let (mut dropped, mut inexact) = (0i64, false);
            for c in significant {
                dropped += 1;
                inexact |= c != b'0';
            }
            let n = Big::from_digits(kept.into_iter(), 16);
            let exp2 = self.exp - 4 * frac_len + 4 * dropped;
            return round(&n, exp2, inexact, format);
        }
        let n = Big::from_digits(self.all_digits(), 10);
        let exp10 = self.exp - frac_len;
        let significant = self.all_digits().skip_while(|&c| c == b'0').count() as i64;
        decimal_to_binary(&n, significant, exp10, format)
    }
}

// ---------------------------------------------------------------------------
// Exact conversion and rounding
// ---------------------------------------------------------------------------

/// A binary floating point format.
#[derive(Clone, Copy)]
struct Format {
    /// Mantissa bits, the leading one included.
    precision: u32,
    /// Exponent of the smallest step: the least subnormal is `2^min_exp`.
    min_exp: i64,
    /// Every finite value is below `2^max_exp`.
    max_exp: i64,
}

impl Format {
    const DOUBLE: Format = Format {
        precision: 53,
        min_exp: -1074,
        max_exp: 1024,
    };
    const X87: Format = Format {
        precision: 64,
        min_exp: -16445,
        max_exp: 16384,
    };
}

/// The result of converting an exact value to a format.
#[derive(Debug, PartialEq)]
enum Conversion {
    /// The value was exactly zero.
    Zero,
    /// `mantissa * 2^exp`, with `mantissa` of at most `precision` bits.
    Finite { mantissa: u64, exp: i64 },
    /// Too large: C returns HUGE_VAL with ERANGE.
    Overflow,
    /// Not zero, but rounds to zero: C returns 0 with ERANGE.
    Underflow,
}

/// Powers of ten beyond these cannot hold a finite nonzero value of any
/// format here: the x87 maximum is about 1.19e4932 and half its least
/// subnormal about 1.8e-4951 (doubles are well inside).
const DECIMAL_OVERFLOW: i64 = 4933;
const DECIMAL_UNDERFLOW: i64 = -4952;

/// Rounds `n * 10^exp10` (`n` nonzero, with `significant` decimal digits).
fn decimal_to_binary(n: &Big, significant: i64, exp10: i64, format: Format) -> Conversion {
    // 10^(significant - 1 + exp10) <= value < 10^(significant + exp10).
    if significant - 1 + exp10 >= DECIMAL_OVERFLOW {
        return Conversion::Overflow;
    }
    if significant + exp10 <= DECIMAL_UNDERFLOW {
        return Conversion::Underflow;
    }
    // 10^k = 5^k * 2^k: the power of two goes to the exponent.
    if exp10 >= 0 {
        let mut scaled = n.clone();
        scaled.mul_pow5(exp10.unsigned_abs());
        return round(&scaled, exp10, false, format);
    }
    // n / 5^k: scale n by 2^s so that the quotient has two bits more than
    // the precision; the remainder (and any bits shifted out) then only
    // act as a sticky bit, and rounding is exact.
    let divisor = Big::pow5(exp10.unsigned_abs());
    let s = (divisor.bit_len() + u64::from(format.precision) + 2) as i64 - n.bit_len() as i64;
    let (scaled, lost) = if s >= 0 {
        (n.shl(s as u64), false)
    } else {
        let drop = s.unsigned_abs();
        (n.shr(drop), n.any_below(drop))
    };
    let (quotient, remainder) = scaled.div_rem_is_inexact(&divisor);
    round(&quotient, exp10 - s, lost || remainder, format)
}

/// Rounds `n * 2^exp` (`n` nonzero) to `format`: to nearest, ties to even,
/// subnormals below the least normal exponent.
///
/// `inexact` says the true value is a little above `n * 2^exp` (strictly
/// less than one unit of `n` above); callers passing it give `n` at least
/// `precision + 2` bits, so that it can only act as a sticky bit.
fn round(n: &Big, exp: i64, inexact: bool, format: Format) -> Conversion {
    let precision = i64::from(format.precision);
    let len = n.bit_len() as i64;
    // 2^(top - 1) <= value < 2^top.
    let top = exp + len;
    if top > format.max_exp {
        return Conversion::Overflow;
    }
    let out_exp = (top - precision).max(format.min_exp);
    let shift = out_exp - exp;
    if shift > len {
        // Below half the least step.
        return Conversion::Underflow;
    }
    let mut mantissa: u128 = if shift <= 0 {
        n.bits(0, len as u32) << (-shift)
    } else {
        let shift = shift as u64;
        let kept = n.bits(shift, format.precision + 1);
        let half = n.bit(shift - 1);
        let sticky = inexact || n.any_below(shift - 1);
        if half && (sticky || kept & 1 == 1) {
            kept + 1
        } else {
            kept
        }
    };
    let mut out_exp = out_exp;
    if mantissa >> precision != 0 {
        mantissa >>= 1;
        out_exp += 1;
    }
    if mantissa == 0 {
        return Conversion::Underflow;
    }
    let bits = 128 - i64::from(mantissa.leading_zeros());
    if out_exp + bits > format.max_exp {
        return Conversion::Overflow;
    }
    Conversion::Finite {
        mantissa: mantissa as u64,
        exp: out_exp,
    }
}

// ---------------------------------------------------------------------------
// A small unsigned bignum
// ---------------------------------------------------------------------------

/// An unsigned integer of any size: 64-bit limbs, least significant first,
/// no zero limb at the top. Just what exact float conversion needs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Big {
    limbs: Vec<u64>,
}

impl Big {
    /// The number with these limbs, zero limbs at the top dropped.
    fn from_limbs(limbs: Vec<u64>) -> Big {
        let mut big = Big { limbs };
        big.normalize();
        big
    }

    fn from_u128(v: u128) -> Big {
        Big::from_limbs(vec![v as u64, (v >> 64) as u64])
    }

    fn normalize(&mut self) {
        while self.limbs.last() == Some(&0) {
            self.limbs.pop();
        }
    }

    /// Digits in base 10 or 16, most significant first.
    fn from_digits(digits: impl Iterator<Item = u8>, radix: u32) -> Big {
        // Whole chunks per multiplication: 19 decimal digits or 15 hex
        // digits fit a u64 together with the multiplier.
        let chunk = if radix == 16 { 15 } else { 19 };
        let mut big = Big { limbs: Vec::new() };
        let (mut acc, mut count) = (0u64, 0u32);
        for c in digits {
            let d = char::from(c).to_digit(radix).unwrap_or(0);
            acc = acc * u64::from(radix) + u64::from(d);
            count += 1;
            if count == chunk {
                big.mul_small(u64::from(radix).pow(count));
                big.add_small(acc);
                (acc, count) = (0, 0);
            }
        }
        if count > 0 {
            big.mul_small(u64::from(radix).pow(count));
            big.add_small(acc);
        }
        big
    }

    fn pow5(k: u64) -> Big {
        let mut big = Big { limbs: vec![1] };
        big.mul_pow5(k);
        big
    }

    fn mul_pow5(&mut self, mut k: u64) {
        const FIVE_27: u64 = 7_450_580_596_923_828_125; // 5^27 < 2^63
        while k >= 27 {
            self.mul_small(FIVE_27);
            k -= 27;
        }
        self.mul_small(5u64.pow(k as u32));
    }

    fn bit_len(&self) -> u64 {
        match self.limbs.last() {
            None => 0,
            Some(top) => self.limbs.len() as u64 * 64 - u64::from(top.leading_zeros()),
        }
    }

    fn bit(&self, i: u64) -> bool {
        let limb = self.limbs.get((i / 64) as usize).copied().unwrap_or(0);
        (limb >> (i % 64)) & 1 == 1
    }

    /// Whether any bit below position `i` is set.
    fn any_below(&self, i: u64) -> bool {
        let whole = ((i / 64) as usize).min(self.limbs.len());
        if self.limbs[..whole].iter().any(|&l| l != 0) {
            return true;
        }
        let rest = i % 64;
        rest > 0
            && self
                .limbs
                .get(whole)
                .is_some_and(|&l| l & ((1u64 << rest) - 1) != 0)
    }

    /// Bits `from .. from + count` (`count` <= 128) as an integer.
    fn bits(&self, from: u64, count: u32) -> u128 {
        (0..u64::from(count))
            .filter(|&j| self.bit(from + j))
            .fold(0u128, |acc, j| acc | (1u128 << j))
    }

    fn mul_small(&mut self, m: u64) {
        let mut carry: u128 = 0;
        for limb in &mut self.limbs {
            let v = u128::from(*limb) * u128::from(m) + carry;
            *limb = v as u64;
            carry = v >> 64;
        }
        if carry > 0 {
            self.limbs.push(carry as u64);
        }
        self.normalize();
    }

    fn add_small(&mut self, a: u64) {
        let mut carry = a;
        for limb in &mut self.limbs {
            let (v, overflow) = limb.overflowing_add(carry);
            *limb = v;
            carry = u64::from(overflow);
            if carry == 0 {
                return;
            }
        }
        if carry > 0 {
            self.limbs.push(carry);
        }
    }

    /// `self / d`, returning the remainder.
    fn div_small(&mut self, d: u64) -> u64 {
        let mut rem: u128 = 0;
        for limb in self.limbs.iter_mut().rev() {
            let cur = (rem << 64) | u128::from(*limb);
            *limb = (cur / u128::from(d)) as u64;
            rem = cur % u128::from(d);
        }
        self.normalize();
        rem as u64
    }

    fn shl(&self, n: u64) -> Big {
        let (whole, rest) = ((n / 64) as usize, (n % 64) as u32);
        let mut limbs = vec![0u64; whole];
        let mut carry = 0u64;
        for &l in &self.limbs {
            if rest == 0 {
                limbs.push(l);
            } else {
                limbs.push((l << rest) | carry);
                carry = l >> (64 - rest);
            }
        }
        limbs.push(carry);
        Big::from_limbs(limbs)
    }

    fn shr(&self, n: u64) -> Big {
        let (whole, rest) = ((n / 64) as usize, (n % 64) as u32);
        let src = self.limbs.get(whole..).unwrap_or(&[]);
        let limbs = (0..src.len())
            .map(|i| {
                let low = src[i] >> rest;
                let high = match src.get(i + 1) {
                    Some(&h) if rest > 0 => h << (64 - rest),
                    _ => 0,
                };
                low | high
            })
            .collect();
        Big::from_limbs(limbs)
    }

    fn add(&self, other: &Big) -> Big {
        let len = self.limbs.len().max(other.limbs.len());
        let mut limbs = Vec::with_capacity(len + 1);
        let mut carry = 0u64;
        for i in 0..len {
            let a = self.limbs.get(i).copied().unwrap_or(0);
            let b = other.limbs.get(i).copied().unwrap_or(0);
            let (s1, o1) = a.overflowing_add(b);
            let (s2, o2) = s1.overflowing_add(carry);
            limbs.push(s2);
            carry = u64::from(o1) + u64::from(o2);
        }
        limbs.push(carry);
        Big::from_limbs(limbs)
    }

    /// `self - other`, for `self >= other`.
    fn sub(&self, other: &Big) -> Big {
        let mut limbs = Vec::with_capacity(self.limbs.len());
        let mut borrow = 0u64;
        for (i, &a) in self.limbs.iter().enumerate() {
            let b = other.limbs.get(i).copied().unwrap_or(0);
            let (d1, o1) = a.overflowing_sub(b);
            let (d2, o2) = d1.overflowing_sub(borrow);
            limbs.push(d2);
            borrow = u64::from(o1) + u64::from(o2);
        }
        Big::from_limbs(limbs)
    }

    /// The quotient `self / divisor` (which must fit 127 bits: callers
    /// scale `self` first), and whether the division left a remainder.
    fn div_rem_is_inexact(&self, divisor: &Big) -> (Big, bool) {
        let quotient_bits = (self.bit_len() + 1).saturating_sub(divisor.bit_len());
        let mut rem = self.clone();
        let mut q: u128 = 0;
        for i in (0..quotient_bits.min(127)).rev() {
            let shifted = divisor.shl(i);
            if rem >= shifted {
                rem = rem.sub(&shifted);
                q |= 1 << i;
            }
        }
        (Big::from_u128(q), !rem.limbs.is_empty())
    }

    /// Decimal digits, without leading zeros ("0" for zero).
    fn to_decimal(&self) -> String {
        const CHUNK: u64 = 10_000_000_000_000_000_000; // 10^19
        let mut n = self.clone();
        let mut chunks = Vec::new();
        while !n.limbs.is_empty() {
            chunks.push(n.div_small(CHUNK));
        }
        let mut out = chunks
            .pop()
            .map_or_else(|| "0".to_string(), |c| c.to_string());
        for c in chunks.iter().rev() {
            out.push_str(&format!("{c:019}"));
        }
        out
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Big) -> Ordering {
        self.limbs
            .len()
            .cmp(&other.limbs.len())
            .then_with(|| self.limbs.iter().rev().cmp(other.limbs.iter().rev()))
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Big) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::test_util::{bulk, conn, run};
    use redis::Value;

    #[test]
    fn doubles_print_like_redis_7_0() {
        // (score given to ZADD, ZSCORE reply of redis-server 7.0.15)
        let observed = [
            (1.5, "1.5"),
            (3.0, "3"),
            (1.1, "1.1000000000000001"),
            (1e20, "1e+20"),
            (1e17, "1e+17"),
            (1e16, "10000000000000000"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (0.0, "0"),
            (5e-324, "4.9406564584124654e-324"),
            (8.0, "8"),
            (-5.0, "-5"),
            (4611686018427387904.0, "4.6116860184273879e+18"),
            (9007199254740992.0, "9007199254740992"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (0.1, "0.10000000000000001"),
            (-1.25e-7, "-1.2499999999999999e-07"),
            (123456.789, "123456.789"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (d, text) in observed {
            assert_eq!(format_double(d), text, "{d:e}");
        }
        // %.17g keeps the sign of zero (a skiplist ZINCRBY z -0 m says "-0").
        assert_eq!(format_double(-0.0), "-0");
        // Ties round to even, as glibc does (both observed): 1234567890123456.75
        // has 18 significant digits and its 17th (7) is odd.
        let base = 1234567890123456.0;
        assert_eq!(format_double(base + 0.75), "1234567890123456.8");
        assert_eq!(format_double(base + 0.25), "1234567890123456.2");
    }

    #[test]
    fn doubles_parse_like_redis() {
        // Accepted by ZADD on redis-server 7.0.15.
        let accepted = [
            ("1.5", 1.5),
            ("-inf", f64::NEG_INFINITY),
            ("+inf", f64::INFINITY),
            ("infinity", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("0e-400", 0.0),
            ("2.5e-324", 5e-324),
            ("4.9e-324", 5e-324),
            ("0x1p3", 8.0),
            ("0x1.8p1", 3.0),
            ("0x10", 16.0),
            ("0X.8", 0.5),
            ("0x1p-1074", 5e-324),
            ("0x1.fffffffffffffp1023", f64::MAX),
            ("+.5", 0.5),
            ("-5.", -5.0),
            ("1e+2", 100.0),
            ("9007199254740993", 9007199254740992.0),
            ("1.7976931348623157e308", f64::MAX),
            ("0e999999999999999999999", 0.0),
            // Hex ties round to even; a far nonzero digit breaks the tie.
            ("0x1.00000000000008", 1.0),
            ("0x1.000000000000080000000000000000001", 1.0000000000000002),
            ("0x1.00000000000018", 1.0000000000000004),
            ("0x0000000000000000000000000001.8p1", 3.0),
            ("0x1000000000000000000000000000000000000p-148", 0.0625),
        ];
        for (text, value) in accepted {
            assert_eq!(parse_double(text.as_bytes()), Some(value), "{text}");
        }
        // Refused with "value is not a valid float".
        let refused = [
            "nan",
            "NaN",
            "-nan",
            "1e400",
            "1e-400",
            "2e-324",
            "0x",
            "0x1p-1075",
            "0x1p1024",
            " 1",
            "1 ",
            "",
            "1e",
            ".",
            "+-1",
            "1.7976931348623159e308",
            "1e99999999999999999999",
            "1e-9999999999999999999999",
            "0x1p",
            "e5",
            "inf ",
            "infinit",
            "1_000",
            "1\0",
        ];
        for text in refused {
            assert_eq!(parse_double(text.as_bytes()), None, "{text:?}");
        }
        assert_eq!(parse_double(&[0xff, b'1']), None);
        assert!(parse_double(b"-0").is_some_and(|d| d == 0.0 && d.is_sign_negative()));
    }

    /// The bignum path, run at double precision, agrees with std's
    /// correctly rounded parser: a check of `round` and the division.
    #[test]
    fn bignum_conversion_agrees_with_std_at_double_precision() {
        let mut texts: Vec<String> = [
            "0.1",
            "0.3",
            "1e23",
            "8.98846567431158e307",
            "2.2250738585072011e-308",
            "2.2250738585072014e-308",
            "4.9406564584124654e-324",
            "2.4703282292062328e-324",
            "2.4703282292062327e-324",
            "1.7976931348623158e308",
            "123456789012345678901234567890",
            "9007199254740993",
            "9007199254740995",
            "0.000000000000000000000000000001",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Long mantissas: the quotient is taken from the leading bits.
        texts.push(format!("1{}e-420", "7".repeat(400)));
        texts.push(format!("9{}e-300", "9".repeat(700)));
        texts.push(format!("0.{}1", "0".repeat(330)));
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..300 {
            let mantissa = next() % 100_000_000_000_000_000;
            let exp = (next() % 640) as i64 - 340;
            texts.push(format!("{mantissa}e{exp}"));
        }
        for text in texts {
            let Some((_, Number::Finite(digits))) = scan(text.as_bytes()) else {
                panic!("{text} does not scan");
            };
            let std: f64 = text.parse().unwrap_or(f64::NAN);
            let ours = match digits.to_binary(Format::DOUBLE) {
                Conversion::Zero | Conversion::Underflow => 0.0,
                Conversion::Overflow => f64::INFINITY,
                Conversion::Finite { mantissa, exp } => to_f64(false, mantissa, exp),
            };
            assert_eq!(ours.to_bits(), std.to_bits(), "{text}");
        }
    }

    fn ld(text: &str) -> LongDouble {
        LongDouble::parse(text.as_bytes()).unwrap_or_else(|| panic!("{text} is refused"))
    }

    #[test]
    fn long_doubles_parse_like_string2ld() {
        for refused in [
            "nan",
            " 1",
            "1 ",
            "",
            "1e",
            ".",
            "+-1",
            "1.2e4932",
            "1e5000",
            "1e-4951",
            "1e-4952",
            "1.8e-4951",
            "0x1p16384",
            "0x1p-16446",
            "abc",
        ] {
            assert_eq!(LongDouble::parse(refused.as_bytes()), None, "{refused:?}");
        }
        // Subnormals that do not round to zero are kept (and print as 0).
        for kept in ["3.6e-4951", "1.9e-4951", "0x1p-16445", "0x3p-16446"] {
            assert_eq!(ld(kept).to_human_string(), "0", "{kept}");
        }
        assert!(!ld("inf").is_finite());
        assert!(!ld("-INFINITY").is_finite());
        // string2ld refuses 5120 bytes or more, whatever they hold.
        let long = format!("1.{}", "0".repeat(5117));
        assert_eq!(ld(&long).to_human_string(), "1");
        let longer = format!("1.{}", "0".repeat(5118));
        assert_eq!(LongDouble::parse(longer.as_bytes()), None);
    }

    #[test]
    fn long_double_sums_print_like_redis() {
        // (stored value, increment, INCRBYFLOAT reply of redis-server 7.0.15)
        let observed = [
            ("10.5", "0.1", "10.6"),
            ("0", "5.0e3", "5000"),
            ("0.1", "0.2", "0.3"),
            ("0", "3.0e-1", "0.3"),
            ("2.7", "0.3", "3"),
            ("-1.5", "-0.000001", "-1.500001"),
            ("0", "0.000003814697265625", "0.00000381469726562"),
            ("0.00000381469726562", "0.00000381469726563", "0.00000762939453125"),
            ("1e-20", "-1e-20", "0"),
            ("0", "-1e-20", "0"),
            ("0", "0x1p3", "8"),
            ("8", "0x1.8p1", "11"),
            ("11", "0X10", "27"),
            ("27", "0x.8", "27.5"),
            ("27.5", "0x1p-16445", "27.5"),
            ("0", "+.5", "0.5"),
            ("0.5", "-5.", "-4.5"),
            ("-4.5", "1e+2", "95.5"),
            ("95.5", "1E-2", "95.51"),
            ("1.5", "1", "2.5"),
            ("12345678901234567890", "1", "12345678901234567891"),
            (
                "0",
                "123456789012345678901234567890",
                "123456789012345678899921813504",
            ),
            ("1e17", "1", "100000000000000001"),
            ("18446744073709551616", "1", "18446744073709551616"),
            ("9223372036854775807", "1", "9223372036854775808"),
            ("100", "-100", "0"),
            // Ties at the 64-bit mantissa round to even, when parsing and
            // when adding.
            ("18446744073709551617", "0", "18446744073709551616"),
            ("18446744073709551619", "0", "18446744073709551620"),
            ("36893488147419103235", "0", "36893488147419103236"),
            ("9223372036854775808", "0.5", "9223372036854775808"),
            ("9223372036854775809", "0.5", "9223372036854775810"),
            ("0.1", "-0.1", "0"),
            ("1e-4940", "1e-4940", "0"),
            ("0x1p3", "0", "8"),
            (
                "1e308",
                "1e308",
                "199999999999999999993371759311691291321120199694831134415594095989843469737676123744200253843777078640893494450108026446304269499187921167194841628860392837535918200039206381557326219209014213335878306791577877829121087126122536729803237260434173178506889763247582601711514636284849020905456510092687857156096",
            ),
            (
                "1.7976931348623157e308",
                "1.7976931348623157e308",
                "359538626972463139991842093548208868096772893888658356970628841530353257046248792709403737216774171128857586838851041378617416726902272110715794556052955234146997955372576789671236326588091188869859074894581254961338834769297758245552436667197907705664206565009503223382416235440319971852753604933726679072768",
            ),
        ];
        for (stored, incr, reply) in observed {
            let sum = ld(stored)
                .checked_add(ld(incr))
                .map(LongDouble::to_human_string);
            assert_eq!(sum.as_deref(), Some(reply), "{stored} + {incr}");
        }
        // Ten steps of 0.3 from nothing, as observed.
        let mut acc = LongDouble::ZERO;
        let mut replies = Vec::new();
        for _ in 0..10 {
            acc = acc.checked_add(ld("0.3")).unwrap_or(LongDouble::ZERO);
            replies.push(acc.to_human_string());
        }
        assert_eq!(
            replies,
            ["0.3", "0.6", "0.9", "1.2", "1.5", "1.8", "2.1", "2.4", "2.7", "3"]
        );
    }

    #[test]
    fn huge_long_doubles_print_every_digit() {
        // 1e4932 + 0, observed: 4933 digits, starting and ending like this.
        let text = ld("1e4932")
            .checked_add(LongDouble::ZERO)
            .map(LongDouble::to_human_string)
            .unwrap_or_default();
        assert_eq!(text.len(), 4933);
        assert!(text.starts_with("1000000000000000000006018949387963891323837774254"));
        assert!(text.ends_with("163141086538418113791886622720"));
        // 2^16383, the largest power of two, observed: 4932 digits.
        let text = ld("0x1p16383").to_human_string();
        assert_eq!(text.len(), 4932);
        assert!(text.starts_with("59486574767861588254287966331400356538172"));
        assert!(text.ends_with(
            "5195236991244449614045909106967144147839858684971576230223513645334982033408"
        ));
    }

    #[test]
    fn long_double_sums_that_are_not_finite_are_refused() {
        assert_eq!(ld("1e4932").checked_add(ld("1e4932")), None);
        assert_eq!(ld("inf").checked_add(ld("1")), None);
        assert_eq!(ld("12").checked_add(ld("-inf")), None);
        assert_eq!(ld("inf").checked_add(ld("-inf")), None);
        // -0 + -0 stays -0, and prints "0" (ld2string's last rule).
        let neg_zero = ld("-0").checked_add(ld("-0"));
        assert_eq!(
            neg_zero.map(LongDouble::to_human_string).as_deref(),
            Some("0")
        );
        assert_eq!(ld("-0").to_human_string(), "0");
    }

    #[test]
    fn fixed_printing_rounds_ties_to_even() {
        assert_eq!(format_fixed(false, 1, -1, 0), "0");
        assert_eq!(format_fixed(false, 3, -1, 0), "2");
        assert_eq!(format_fixed(false, 5, -1, 0), "2");
        assert_eq!(format_fixed(true, 1, -2, 1), "-0.2");
        assert_eq!(format_fixed(true, 1, -70, 17), "-0.00000000000000000");
        assert_eq!(format_fixed(false, 0, 0, 17), "0.00000000000000000");
        assert_eq!(format_fixed(false, 3, 4, 2), "48.00");
    }

    #[test]
    fn incrbyfloat_through_the_engine() {
        let mut c = conn();
        assert_eq!(run(&mut c, "SET k 10.5"), Value::Okay);
        assert_eq!(run(&mut c, "INCRBYFLOAT k 0.1"), bulk("10.6"));
        assert_eq!(run(&mut c, "GET k"), bulk("10.6"));
        assert_eq!(run(&mut c, "INCRBYFLOAT f 5.0e3"), bulk("5000"));
        assert_eq!(run(&mut c, "SET big 1e308"), Value::Okay);
        let Value::BulkString(doubled) = run(&mut c, "INCRBYFLOAT big 1e308") else {
            panic!("not a bulk string");
        };
        assert!(doubled.starts_with(b"199999999999999999993371759311691291321"));
        assert_eq!(doubled.len(), 309);
    }
}
