//! The arguments Redis hides as "(redacted)" where it shows a command
//! (SLOWLOG, MONITOR): passwords and ACL rules.

use crate::args::is;

/// The configuration parameters whose values CONFIG SET redacts (Redis's
/// `SENSITIVE_CONFIG`).
const SENSITIVE: &[&str] = &[
    "requirepass",
    "masterauth",
    "masteruser",
    "tls-key-file-pass",
    "tls-client-key-file-pass",
];

/// Which arguments Redis redacts: AUTH's, HELLO AUTH's user and password,
/// ACL SETUSER's rules and name, CONFIG SET's values of sensitive
/// parameters.
pub(crate) fn redacted_positions<'a>(args: &'a [&'a [u8]]) -> impl Fn(usize) -> bool + 'a {
    let name = args.first().copied().unwrap_or_default();
    let sub = |s: &str| args.get(1).is_some_and(|a| is(a, s));
    let auth = is(name, "auth");
    let setuser = is(name, "acl") && sub("setuser");
    let config_set = is(name, "config") && sub("set");
    let hello_auth = if is(name, "hello") {
        args.iter()
            .position(|a| is(a, "auth"))
            .filter(|&at| at >= 2)
    } else {
        None
    };
    move |i: usize| {
        (auth && i >= 1)
            || (setuser && i >= 2)
            || hello_auth.is_some_and(|at| i == at + 1 || i == at + 2)
            || (config_set
                && i >= 3
                && (i - 3).is_multiple_of(2)
                && SENSITIVE.iter().any(|s| is(args[i - 1], s)))
    }
}
