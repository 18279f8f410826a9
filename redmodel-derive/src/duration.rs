//! The text of a `ttl` attribute: a duration such as `"30m"`, `"1h30m"`
//! or `"500ms"`, read at compile time into whole milliseconds.

/// The units a duration is written in, longest spelling first so that
/// `ms` is not read as `m` followed by junk, with their milliseconds.
const UNITS: &[(&str, u64)] = &[
    ("ms", 1),
    ("s", 1_000),
    ("m", 60_000),
    ("h", 3_600_000),
    ("d", 86_400_000),
];

/// What to write, for error messages.
pub const EXAMPLE: &str = "ttl = \"30m\"";

/// The milliseconds of `text`, made of one or more parts of a whole
/// number and a unit (`ms`, `s`, `m`, `h`, `d`): `"90s"`, `"1h30m"`. A
/// duration of zero, a sign, a missing unit or a total past `i64`'s
/// milliseconds (PEXPIRE's argument) is an error saying what to write.
pub fn parse_millis(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!(
            "a TTL is a positive duration, not `{text}`: write e.g. `{EXAMPLE}`"
        ));
    }
    if text.is_empty() {
        return Err(format!("the TTL is empty: write e.g. `{EXAMPLE}`"));
    }
    let mut rest = text;
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (number, after) = rest.split_at(digits);
        let number: u64 = number.parse().map_err(|_| {
            format!(
                "cannot read `{text}` as a duration: write whole numbers with a unit (`ms`, `s`, `m`, `h`, `d`), e.g. `{EXAMPLE}` or `ttl = \"1h30m\"`"
            )
        })?;
        let Some((unit, ms)) = UNITS.iter().find(|(unit, _)| after.starts_with(unit)) else {
            return Err(format!(
                "`{text}` needs a unit after {number} (`ms`, `s`, `m`, `h` or `d`): write e.g. `ttl = \"{number}s\"`"
            ));
        };
        total = number
            .checked_mul(*ms)
            .and_then(|part| total.checked_add(part))
            .filter(|total| i64::try_from(*total).is_ok())
            .ok_or_else(|| format!("`{text}` is too long a TTL for Redis"))?;
        rest = &after[unit.len()..];
    }
    if total == 0 {
        return Err(format!(
            "a TTL of zero would delete what it is given to as soon as it is written: write a positive duration, e.g. `{EXAMPLE}`, or remove `ttl`"
        ));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_every_unit() {
        assert_eq!(parse_millis("500ms"), Ok(500));
        assert_eq!(parse_millis("90s"), Ok(90_000));
        assert_eq!(parse_millis("30m"), Ok(1_800_000));
        assert_eq!(parse_millis("1h30m"), Ok(5_400_000));
        assert_eq!(parse_millis("2d"), Ok(172_800_000));
    }

    #[test]
    fn bad_durations_say_what_to_write() {
        for bad in [
            "0s",
            "0m0s",
            "-5m",
            "",
            "30",
            "5 minutes",
            "m",
            "1.5h",
            "99999999999999999d",
        ] {
            assert!(parse_millis(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(parse_millis("-5m").is_err_and(|e| e.contains("positive")));
        assert!(parse_millis("0s").is_err_and(|e| e.contains("zero")));
        assert!(parse_millis("30").is_err_and(|e| e.contains("unit")));
    }
}
