//! The rule parser and the permission checks, against what redis-server
//! 7.0.15 answers for the same rules.

use super::describe::{command_rules, user_line};
use super::rules::{apply, set_user, RuleError};
use super::*;
use crate::RedisVersion;

fn user(rules: &[&str]) -> User {
    let rules: Vec<&[u8]> = rules.iter().map(|r| r.as_bytes()).collect();
    set_user(None, b"u", &rules, false).expect("rules parse")
}

fn allowed(u: &User, line: &str) -> Result<(), Denied> {
    let argv: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    let meta = command_table::of_line(&argv).expect("a Redis command");
    u.check(meta, &argv)
}

#[test]
fn the_command_table_fits_the_bitmap() {
    assert!(command_table::table().len() <= WORDS * 64);
}

#[test]
fn new_users_are_off_and_may_run_nothing() {
    let u = user(&[]);
    assert_eq!(user_line(&u, RedisVersion::V7_0), "off resetchannels -@all");
    assert_eq!(allowed(&u, "GET k"), Err(Denied::Command));
    // AUTH and the like need no permission.
    assert_eq!(allowed(&u, "AUTH a b"), Ok(()));
}

#[test]
fn default_user_line() {
    let acl = Acl::default();
    let d = acl.user(b"default").expect("default user");
    assert_eq!(user_line(d, RedisVersion::V7_0), "on nopass ~* &* +@all");
    assert!(acl.is_open(None));
}

#[test]
fn commands_categories_and_subcommands() {
    let u = user(&["on", "+@read", "-get", "+config|get", "~*"]);
    assert_eq!(allowed(&u, "STRLEN k"), Ok(()));
    assert_eq!(allowed(&u, "GET k"), Err(Denied::Command));
    assert_eq!(allowed(&u, "CONFIG GET x"), Ok(()));
    assert_eq!(allowed(&u, "CONFIG SET x y"), Err(Denied::Command));
    // First arguments of a command without subcommands.
    let u = user(&["+select|0"]);
    assert_eq!(allowed(&u, "SELECT 0"), Ok(()));
    assert_eq!(allowed(&u, "SELECT 1"), Err(Denied::Command));
    assert_eq!(
        command_rules(&u.selectors[0], RedisVersion::V7_0),
        "-@all +select|0"
    );
}

#[test]
fn key_permissions_follow_the_key_specs() {
    let u = user(&["+@all", "%R~r*", "%W~w*", "~rw*"]);
    assert_eq!(allowed(&u, "GET r1"), Ok(()));
    assert_eq!(allowed(&u, "SET r1 v"), Err(Denied::Key(1)));
    assert_eq!(allowed(&u, "SET w1 v"), Ok(()));
    assert_eq!(allowed(&u, "GET w1"), Err(Denied::Key(1)));
    assert_eq!(allowed(&u, "LMOVE r1 w1 LEFT LEFT"), Err(Denied::Key(1)));
    assert_eq!(allowed(&u, "COPY r1 w1"), Ok(()));
    assert_eq!(allowed(&u, "MSET rw1 1 x 2"), Err(Denied::Key(3)));
}

#[test]
fn channels() {
    let u = user(&["+@all", "&news.*"]);
    assert_eq!(allowed(&u, "PUBLISH news.a m"), Ok(()));
    assert_eq!(allowed(&u, "PUBLISH sport m"), Err(Denied::Channel(1)));
    assert_eq!(
        allowed(&u, "SUBSCRIBE news.a sport"),
        Err(Denied::Channel(2))
    );
    // A pattern subscription must name an allowed pattern literally.
    assert_eq!(allowed(&u, "PSUBSCRIBE news.*"), Ok(()));
    assert_eq!(allowed(&u, "PSUBSCRIBE news.a*"), Err(Denied::Channel(1)));
    assert_eq!(allowed(&u, "UNSUBSCRIBE sport"), Ok(()));
}

#[test]
fn selectors_each_may_allow() {
    let u = user(&["+get", "~a*", "(+set", "~b*)"]);
    assert_eq!(allowed(&u, "GET a1"), Ok(()));
    assert_eq!(allowed(&u, "SET b1 v"), Ok(()));
    // The worst refusal: a key over a command.
    assert_eq!(allowed(&u, "GET b1"), Err(Denied::Key(1)));
    assert_eq!(
        user_line(&u, RedisVersion::V7_0),
        "off ~a* resetchannels -@all +get (~b* resetchannels -@all +set)"
    );
}

#[test]
fn passwords() {
    let mut u = user(&["on", ">secret", ">other"]);
    assert!(u.accepts(b"secret") && u.accepts(b"other") && !u.accepts(b"nope"));
    assert_eq!(
        u.passwords[0],
        "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
    );
    apply(&mut u, b"<secret").expect("known password");
    assert!(!u.accepts(b"secret"));
    assert_eq!(apply(&mut u, b"<secret"), Err(RuleError::NoSuchPassword));
    assert_eq!(apply(&mut u, b"#abc"), Err(RuleError::BadHash));
    apply(&mut u, b"nopass").expect("nopass");
    assert!(u.accepts(b"anything") && u.passwords.is_empty());
    apply(&mut u, b"resetpass").expect("resetpass");
    assert!(!u.accepts(b"anything"));
}

#[test]
fn rule_errors_as_redis_words_them() {
    let err = |rules: &[&str]| {
        let rules: Vec<&[u8]> = rules.iter().map(|r| r.as_bytes()).collect();
        set_user(None, b"u", &rules, false).expect_err("refused")
    };
    assert_eq!(
        err(&["+nosuch"]),
        "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
    );
    assert_eq!(
        err(&["~*", "~a"]),
        "Error in ACL SETUSER modifier '~a': Adding a pattern after the * pattern (or the \
         'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start \
         with an empty list of patterns"
    );
    assert_eq!(
        err(&["+config|get|x"]),
        "Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is \
         not supported"
    );
    assert_eq!(
        err(&["bogus"]),
        "Error in ACL SETUSER modifier 'bogus': Syntax error"
    );
    assert_eq!(
        err(&["(+get", "~x"]),
        "Unmatched parenthesis in acl selector starting at '(+get'."
    );
}

#[test]
fn command_rules_fit_categories() {
    let u = user(&["+@all", "-@dangerous"]);
    assert_eq!(
        command_rules(&u.selectors[0], RedisVersion::V7_0),
        "+@all -@dangerous"
    );
    // Redis lists the single commands in its hash table's order.
    let u = user(&["+@read", "+@hash"]);
    assert_eq!(
        command_rules(&u.selectors[0], RedisVersion::V7_0),
        "-@all +@read +hdel +hincrby +hincrbyfloat +hmset +hset +hsetnx"
    );
    let u = user(&["+@all", "-get"]);
    assert_eq!(
        command_rules(&u.selectors[0], RedisVersion::V7_0),
        "+@all -get"
    );
}

/// The in-process connection: logins, refusals, and a deleted user's
/// client falling back to an unauthenticated `default`.
#[test]
fn in_process_connection_follows_its_user() {
    use redis::Value;
    let engine = crate::Engine::new();
    let mut admin = engine.connection();
    let mut c = engine.connection();
    let run = |c: &mut crate::Connection, line: &str| {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        c.execute(&args)
    };
    let text = |v: Value| match v {
        Value::ServerError(e) => format!("{} {}", e.code(), e.details().unwrap_or("")),
        other => format!("{other:?}"),
    };
    assert_eq!(
        run(&mut admin, "ACL SETUSER u on >pw +get ~a*"),
        Value::Okay
    );
    assert_eq!(run(&mut c, "AUTH u pw"), Value::Okay);
    assert_eq!(run(&mut c, "GET a1"), Value::Nil);
    assert_eq!(
        text(run(&mut c, "GET b1")),
        "NOPERM this user has no permissions to access one of the keys used as arguments"
    );
    assert_eq!(
        text(run(&mut c, "MULTI")),
        "NOPERM this user has no permissions to run the 'multi' command"
    );
    assert_eq!(run(&mut admin, "ACL SETUSER u +multi +exec"), Value::Okay);
    assert_eq!(run(&mut c, "MULTI"), Value::Okay);
    run(&mut c, "SET a1 v");
    assert_eq!(
        text(run(&mut c, "EXEC")),
        "EXECABORT Transaction discarded because of previous errors."
    );
    // requirepass: a new connection must log in; the deleted user's
    // client is `default` again, not logged in.
    assert_eq!(run(&mut admin, "CONFIG SET requirepass pw2"), Value::Okay);
    assert_eq!(run(&mut admin, "ACL DELUSER u"), Value::Int(1));
    assert_eq!(
        text(run(&mut c, "GET a1")),
        "NOAUTH Authentication required."
    );
    assert_eq!(run(&mut c, "AUTH pw2"), Value::Okay);
    assert_eq!(run(&mut c, "GET a1"), Value::Nil);
    assert_eq!(
        admin.execute(&[b"CONFIG", b"SET", b"requirepass", b""]),
        Value::Okay
    );
    assert_eq!(
        run(&mut c, "ACL WHOAMI"),
        Value::BulkString(b"default".to_vec())
    );
}

/// `acl-pubsub-default allchannels`: new users and selectors, and `reset`,
/// allow every channel (Redis 6's default).
#[test]
fn pubsub_default_allchannels() {
    let u = set_user(None, b"u", &[b"(+get)".as_slice()], true).expect("rules parse");
    assert_eq!(
        user_line(&u, RedisVersion::V7_0),
        "off &* -@all (&* -@all +get)"
    );
    let u = set_user(Some(&u), b"u", &[b"reset".as_slice()], true).expect("rules parse");
    assert_eq!(
        user_line(&u, RedisVersion::V7_0),
        "off sanitize-payload &* -@all"
    );
}
