//! `Db::connect` against real, private redis-servers: TLS (`rediss://`, a
//! private CA, client certificates), ACL users and passwords given in the
//! URL, and the database number in the URL.
//!
//! Each test starts its own redis-server on a free loopback port and kills
//! it at the end; nothing else is touched. Certificates are made at test
//! time by `tests/certs/make-test-certs.sh` (openssl CLI) in a temporary
//! directory. Without redis-server (or openssl) a test prints a note and
//! passes, except under `CI=true`, where that is a failure.
//!
//! These tests need redmodel's `tls` feature, which the suite's
//! dev-dependency on redmodel turns on. The `#insecure` test checks the
//! refusal by default, and the insecure connection itself with
//! `cargo test -p redmodel-suite --test db --features tls-insecure tls_acl`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::{ClientTlsConfig, TlsCertificates};
use redmodel::{Db, Error};
use redmodel_suite::{RedisServer, TlsFiles};

/// Short timeouts: every failure these tests provoke is local and fast.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// A temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!(
            "redmodel-{what}-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("create {path:?}: {e}"));
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether `program version_arg` runs. If not: a failure under `CI=true`,
/// otherwise `false` after a printed note, so the caller skips its test.
fn available(program: &str, version_arg: &str, needed_for: &str) -> bool {
    let runs = Command::new(program)
        .arg(version_arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if runs {
        return true;
    }
    let under_ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        !under_ci,
        "{program} is not installed, and CI=true: {needed_for} must run in CI"
    );
    eprintln!("note: {program} is not installed; skipping {needed_for}");
    false
}

/// Whether the tests can run: redis-server (and, for TLS, openssl) present.
pub(crate) fn can_run(test: &str, tls: bool) -> bool {
    available("redis-server", "--version", test) && (!tls || available("openssl", "version", test))
}

/// A private redis-server (the suite's) listening with TLS only.
fn tls_server(certs: &Certs, auth_clients: bool) -> RedisServer {
    let files = TlsFiles {
        cert: certs.file("server.crt"),
        key: certs.file("server.key"),
        ca: certs.file("ca.crt"),
        auth_clients,
    };
    RedisServer::builder()
        .tls(files)
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A private redis-server (the suite's) on a plain port, with extra config lines.
fn plain_server(config: &[&str]) -> RedisServer {
    config
        .iter()
        .fold(RedisServer::builder(), |b, line| b.config(*line))
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A throwaway CA, server and client certificate (see the script); the
/// Sentinel tests use it too.
pub(crate) struct Certs(TempDir);

impl Certs {
    pub(crate) fn make() -> Certs {
        let dir = TempDir::new("certs");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/certs/make-test-certs.sh");
        let out = Command::new("sh")
            .arg(&script)
            .arg(dir.path())
            .output()
            .unwrap_or_else(|e| panic!("run {script:?}: {e}"));
        assert!(
            out.status.success(),
            "{script:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Certs(dir)
    }

    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn read(&self, name: &str) -> Vec<u8> {
        let path = self.file(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("read {path:?}: {e}"))
    }

    /// Trust our CA; present a client certificate if asked.
    pub(crate) fn tls(&self, client_certificate: bool) -> TlsCertificates {
        TlsCertificates {
            client_tls: client_certificate.then(|| ClientTlsConfig {
                client_cert: self.read("client.crt"),
                client_key: self.read("client.key"),
            }),
            root_cert: Some(self.read("ca.crt")),
        }
    }
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

async fn connect(url: &str) -> Result<Db, Error> {
    Db::connect_with_timeouts(url, CONNECT_TIMEOUT, RESPONSE_TIMEOUT).await
}

async fn set(db: &Db, key: &str, value: &str) -> Result<(), Error> {
    db.query(redis::cmd("SET").arg(key).arg(value)).await
}

async fn get(db: &Db, key: &str) -> Result<Option<String>, Error> {
    db.query(redis::cmd("GET").arg(key)).await
}

/// Creates the ACL user `app` (password `secret`, keys `app:*` only, no
/// dangerous commands), through the `default` user.
async fn create_app_user(admin: &Db) {
    let reply: Result<(), Error> = admin
        .query(
            redis::cmd("ACL")
                .arg("SETUSER")
                .arg("app")
                .arg("on")
                .arg(">secret")
                .arg("~app:*")
                .arg("+@all")
                .arg("-@dangerous"),
        )
        .await;
    reply.unwrap_or_else(|e| panic!("ACL SETUSER: {e}"));
}

/// The error a failed connection attempt gave, or (when connecting
/// succeeded lazily) the error of the first command.
async fn first_error(url: &str) -> Error {
    match connect(url).await {
        Err(e) => e,
        Ok(db) => match get(&db, "k").await {
            Err(e) => e,
            Ok(v) => panic!("{url}: connected and GET replied {v:?}, expected an error"),
        },
    }
}

// ---------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------

#[tokio::test]
async fn rediss_with_a_private_ca_writes_and_reads_back() {
    if !can_run("rediss_with_a_private_ca_writes_and_reads_back", true) {
        return;
    }
    let certs = Certs::make();
    let server = tls_server(&certs, false);
    let url = server.url_with("rediss", "", 0);
    let db = Db::connect_with_tls(&url, certs.tls(false))
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    assert_eq!(db.backend_name(), "redis");
    set(&db, "greeting", "hello over TLS").await.unwrap();
    assert_eq!(
        get(&db, "greeting").await.unwrap().as_deref(),
        Some("hello over TLS")
    );
    let n: i64 = db
        .query(redis::cmd("HSET").arg("teacher:A").arg("name").arg("A"))
        .await
        .unwrap();
    assert_eq!(n, 1);
    // A second handle (a new TLS connection) sees the same data.
    let again = Db::connect_with_tls(&url, certs.tls(false)).await.unwrap();
    let name: Option<String> = again
        .query(redis::cmd("HGET").arg("teacher:A").arg("name"))
        .await
        .unwrap();
    assert_eq!(name.as_deref(), Some("A"));
    // So does a dedicated connection (WATCH/MULTI), built from the same client.
    let mut dedicated = db.dedicated().await.unwrap();
    let v: Option<String> = dedicated
        .query(redis::cmd("GET").arg("greeting"))
        .await
        .unwrap();
    assert_eq!(v.as_deref(), Some("hello over TLS"));
}

/// `#insecure` skips the certificate check: it needs redmodel's
/// `tls-insecure` feature (this package's `tls-insecure` turns it on).
#[tokio::test]
async fn rediss_insecure_accepts_any_certificate_only_with_its_feature() {
    if !can_run(
        "rediss_insecure_accepts_any_certificate_only_with_its_feature",
        true,
    ) {
        return;
    }
    let certs = Certs::make();
    let server = tls_server(&certs, false);
    let url = format!("{}#insecure", server.url_with("rediss", "", 0));
    let connected = connect(&url).await;
    if cfg!(feature = "tls-insecure") {
        let db = connected.unwrap_or_else(|e| panic!("{url}: {e}"));
        set(&db, "k", "v").await.unwrap();
        assert_eq!(get(&db, "k").await.unwrap().as_deref(), Some("v"));
    } else {
        match connected {
            Err(Error::Config(text)) => assert!(text.contains("`tls-insecure`"), "{text}"),
            other => panic!("expected Error::Config, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn plain_redis_url_to_a_tls_port_is_a_connection_error() {
    if !can_run("plain_redis_url_to_a_tls_port_is_a_connection_error", true) {
        return;
    }
    let certs = Certs::make();
    let server = tls_server(&certs, false);
    let url = server.url_with("redis", "", 0);
    let err = first_error(&url).await;
    assert!(
        err.is_connection(),
        "expected a connection error, got {err:?}"
    );
    assert!(
        err.to_string().starts_with("connection to Redis failed"),
        "{err}"
    );
}

#[tokio::test]
async fn rediss_to_a_server_signed_by_an_unknown_ca_is_refused() {
    if !can_run(
        "rediss_to_a_server_signed_by_an_unknown_ca_is_refused",
        true,
    ) {
        return;
    }
    let certs = Certs::make();
    let other_ca = Certs::make();
    let server = tls_server(&certs, false);
    let url = server.url_with("rediss", "", 0);
    // Trusting the system roots only (Db::connect), and trusting a CA that
    // did not sign the server's certificate: both refuse the server.
    let (with_system_roots, with_other_ca) = tokio::join!(first_error(&url), async {
        match Db::connect_with_tls(&url, other_ca.tls(false)).await {
            Err(e) => e,
            Ok(_) => panic!("connected to a server whose CA is not trusted"),
        }
    });
    for (err, why) in [
        (with_system_roots, "UnknownIssuer"),
        (with_other_ca, "BadSignature"),
    ] {
        assert!(
            matches!(err, Error::Tls { .. }),
            "expected Error::Tls, got {err:?}"
        );
        assert!(!err.is_connection(), "retrying will not fix a certificate");
        let text = err.to_string();
        assert!(text.contains("invalid peer certificate"), "{text}");
        assert!(text.contains(why), "{text}");
    }
}

#[tokio::test]
async fn rediss_with_a_client_certificate() {
    if !can_run("rediss_with_a_client_certificate", true) {
        return;
    }
    let certs = Certs::make();
    let server = tls_server(&certs, true);
    let url = server.url_with("rediss", "", 0);
    let db = Db::connect_with_tls(&url, certs.tls(true))
        .await
        .unwrap_or_else(|e| panic!("{url} with a client certificate: {e}"));
    set(&db, "k", "v").await.unwrap();
    assert_eq!(get(&db, "k").await.unwrap().as_deref(), Some("v"));

    // Without one, the server ends the handshake: a TLS error, at connect
    // time or at the first command (TLS 1.3 checks the client
    // certificate after the client thinks the handshake is done).
    let err = match Db::connect_with_tls(&url, certs.tls(false)).await {
        Err(e) => e,
        Ok(db) => match get(&db, "k").await {
            Err(e) => e,
            Ok(v) => panic!("no client certificate, yet GET replied {v:?}"),
        },
    };
    assert!(
        matches!(err, Error::Tls { .. }),
        "expected Error::Tls, got {err:?}"
    );
    assert!(err.to_string().contains("CertificateRequired"), "{err}");
}

#[tokio::test]
async fn rediss_with_an_acl_user_and_a_db_number() {
    if !can_run("rediss_with_an_acl_user_and_a_db_number", true) {
        return;
    }
    let certs = Certs::make();
    let server = tls_server(&certs, false);
    let admin = Db::connect_with_tls(&server.url_with("rediss", "", 0), certs.tls(false))
        .await
        .unwrap();
    create_app_user(&admin).await;
    let url = server.url_with("rediss", "app:secret@", 2);
    let app = Db::connect_with_tls(&url, certs.tls(false)).await.unwrap();
    set(&app, "app:1", "x").await.unwrap();
    let whoami: String = app.query(redis::cmd("ACL").arg("WHOAMI")).await.unwrap();
    assert_eq!(whoami, "app");
    assert!(matches!(
        set(&app, "other:1", "x").await,
        Err(Error::NoPermission { .. })
    ));
    // The write went to db 2, not db 0.
    assert_eq!(get(&admin, "app:1").await.unwrap(), None);
    let admin2 = Db::connect_with_tls(&server.url_with("rediss", "", 2), certs.tls(false))
        .await
        .unwrap();
    assert_eq!(get(&admin2, "app:1").await.unwrap().as_deref(), Some("x"));
}

// ---------------------------------------------------------------------------
// ACL users and passwords
// ---------------------------------------------------------------------------

#[tokio::test]
async fn acl_user_in_the_url_is_limited_to_its_key_patterns() {
    if !can_run("acl_user_in_the_url_is_limited_to_its_key_patterns", false) {
        return;
    }
    let server = plain_server(&[]);
    let admin = connect(&server.url_with("redis", "", 0)).await.unwrap();
    create_app_user(&admin).await;
    let app = connect(&server.url_with("redis", "app:secret@", 0))
        .await
        .unwrap();

    let whoami: String = app.query(redis::cmd("ACL").arg("WHOAMI")).await.unwrap();
    assert_eq!(whoami, "app");
    set(&app, "app:user:1", "ann").await.unwrap();
    assert_eq!(
        get(&app, "app:user:1").await.unwrap().as_deref(),
        Some("ann")
    );
    let n: i64 = app
        .query(redis::cmd("HSET").arg("app:h").arg("f").arg("1"))
        .await
        .unwrap();
    assert_eq!(n, 1);

    // A key outside ~app:*: NOPERM, typed, not a connection error.
    let err = set(&app, "teacher:A", "x").await.unwrap_err();
    assert!(
        matches!(err, Error::NoPermission { .. }),
        "expected Error::NoPermission, got {err:?}"
    );
    assert!(!err.is_connection());
    let text = err.to_string();
    assert!(text.starts_with("NOPERM "), "{text}");
    // Redis 7.0 says "no permissions to access one of the keys", Redis 7.4
    // and Valkey 8 "No permissions to access a key".
    assert!(
        text.to_lowercase().contains("no permissions to access"),
        "{text}"
    );
    // Reading one is refused too, and nothing was written.
    let err = get(&app, "teacher:A").await.unwrap_err();
    assert!(matches!(err, Error::NoPermission { .. }), "{err:?}");
    assert_eq!(get(&admin, "teacher:A").await.unwrap(), None);

    // A command of @dangerous: NOPERM naming the command.
    let err = app
        .query::<Vec<String>>(redis::cmd("KEYS").arg("app:*"))
        .await
        .unwrap_err();
    match &err {
        Error::NoPermission { detail } => assert!(detail.contains("'keys'"), "{detail}"),
        other => panic!("expected Error::NoPermission, got {other:?}"),
    }

    // The connection is unharmed by the refusals.
    assert_eq!(
        get(&app, "app:user:1").await.unwrap().as_deref(),
        Some("ann")
    );
    // Inside a transaction (Redis refuses the command as it is queued, and
    // EXEC aborts the whole transaction) the refusal is the same typed error.
    let mut pipe = redis::pipe();
    pipe.atomic().set("app:t", "1").set("other:t", "1");
    let err = app.query_pipeline::<()>(&pipe).await.unwrap_err();
    assert!(matches!(err, Error::NoPermission { .. }), "{err:?}");
    assert!(err.to_string().starts_with("NOPERM "), "{err}");
    assert_eq!(get(&admin, "app:t").await.unwrap(), None, "EXEC must abort");
    // And in a plain pipeline, whichever command it is.
    let mut pipe = redis::pipe();
    pipe.get("app:user:1").get("other:p");
    let err = app.query_pipeline::<()>(&pipe).await.unwrap_err();
    assert!(matches!(err, Error::NoPermission { .. }), "{err:?}");
}

#[tokio::test]
async fn wrong_credentials_fail_at_connect_time() {
    if !can_run("wrong_credentials_fail_at_connect_time", false) {
        return;
    }
    let server = plain_server(&[]);
    let admin = connect(&server.url_with("redis", "", 0)).await.unwrap();
    create_app_user(&admin).await;

    for credentials in ["app:wrong@", "nobody:secret@"] {
        let url = server.url_with("redis", credentials, 0);
        let started = Instant::now();
        let err = connect(&url).await.unwrap_err();
        assert!(
            matches!(err, Error::Auth { .. }),
            "{credentials}: expected Error::Auth, got {err:?}"
        );
        assert!(!err.is_connection(), "a wrong password is not an outage");
        let text = err.to_string();
        assert!(
            text.contains("check the user and password in the URL"),
            "{text}"
        );
        assert!(!text.contains("wrong"), "the password leaked: {text}");
        // Refused while connecting, not after the response timeout. (The
        // connection manager tries the login a few times with backoff,
        // about a second in all, before it gives up.)
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        eprintln!("{credentials}: refused after {elapsed:?}");
    }
}

#[tokio::test]
async fn requirepass_server_with_password_only_urls() {
    if !can_run("requirepass_server_with_password_only_urls", false) {
        return;
    }
    let server = plain_server(&["requirepass s3cret"]);

    // `:password@` logs in as the default user.
    let db = connect(&server.url_with("redis", ":s3cret@", 0))
        .await
        .unwrap();
    set(&db, "k", "v").await.unwrap();
    let whoami: String = db.query(redis::cmd("ACL").arg("WHOAMI")).await.unwrap();
    assert_eq!(whoami, "default");

    // A wrong one is refused at connect time.
    let err = connect(&server.url_with("redis", ":nope@", 0))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Auth { .. }), "{err:?}");

    // No password at all: the server says NOAUTH, which is an Error::Auth too.
    let err = first_error(&server.url_with("redis", "", 0)).await;
    assert!(matches!(err, Error::Auth { .. }), "{err:?}");
    assert!(err.to_string().contains("NOAUTH"), "{err}");
}

// ---------------------------------------------------------------------------
// Database number
// ---------------------------------------------------------------------------

#[tokio::test]
async fn db_number_in_the_url_selects_that_database() {
    if !can_run("db_number_in_the_url_selects_that_database", false) {
        return;
    }
    let server = plain_server(&[]);
    let db3 = connect(&server.url_with("redis", "", 3)).await.unwrap();
    let db0 = connect(&server.url_with("redis", "", 0)).await.unwrap();
    set(&db3, "k", "in three").await.unwrap();
    set(&db0, "k", "in zero").await.unwrap();

    assert_eq!(get(&db3, "k").await.unwrap().as_deref(), Some("in three"));
    assert_eq!(get(&db0, "k").await.unwrap().as_deref(), Some("in zero"));
    let client_db = |info: String| {
        info.split_whitespace()
            .find_map(|field| field.strip_prefix("db="))
            .map(str::to_string)
    };
    let info: String = db3.query(redis::cmd("CLIENT").arg("INFO")).await.unwrap();
    assert_eq!(client_db(info).as_deref(), Some("3"));
    // A dedicated connection selects it too.
    let mut dedicated = db3.dedicated().await.unwrap();
    let v: Option<String> = dedicated.query(redis::cmd("GET").arg("k")).await.unwrap();
    assert_eq!(v.as_deref(), Some("in three"));

    // After the server drops the connection, the reconnected one is on db 3.
    let id: i64 = db3.query(redis::cmd("CLIENT").arg("ID")).await.unwrap();
    let killed: i64 = db0
        .query(redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id))
        .await
        .unwrap();
    assert_eq!(killed, 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    let after = loop {
        match get(&db3, "k").await {
            Ok(v) => break v,
            Err(e) if e.is_connection() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("no reconnection: {e}"),
        }
    };
    let new_id: i64 = db3.query(redis::cmd("CLIENT").arg("ID")).await.unwrap();
    assert_ne!(new_id, id, "the connection was not replaced");
    assert_eq!(after.as_deref(), Some("in three"));

    // A db number the server does not have is refused at connect time.
    let err = connect(&server.url_with("redis", "", 99))
        .await
        .unwrap_err();
    assert!(!err.is_connection(), "{err:?}");
    assert!(
        err.to_string().contains("DB index is out of range"),
        "{err}"
    );
}
