//! Regressions: bad inputs that could load wrongly or name no key, kept as
//! fixed cases beside the random ones.

#[allow(unused_imports)]
use super::*;

/// Raw HSET of `pairs` at `key`.
pub(crate) async fn hset(db: &Db, key: &str, pairs: &[(&str, &str)]) -> Result<()> {
    let mut cmd = redis::cmd("HSET");
    cmd.arg(key);
    for (field, value) in pairs {
        cmd.arg(*field).arg(*value);
    }
    db.query(&cmd).await
}

pub(crate) fn assert_decode_error<T: fmt::Debug>(got: Result<T>, key: &str, field: &str) {
    match got {
        Err(Error::Decode {
            key: k, field: f, ..
        }) if k == key && f == field => {}
        other => panic!("expected a decode error for {key} `{field}`, got {other:?}"),
    }
}

/// A whole gauge whose fields all load, but for `ratio`.
pub(crate) fn gauge_fields(ratio: &str) -> Vec<(&str, &str)> {
    let mut fields: Vec<(&str, &str)> = [
        "tiny", "small", "medium", "large", "byte", "word", "dword", "big", "size",
    ]
    .iter()
    .map(|f| (*f, "1"))
    .collect();
    fields.extend([("ratio", ratio), ("history", "[]")]);
    fields
}

backend_tests! {
    /// `300` in a `u8` and `1.5` in an `i64` are decode errors naming the
    /// key and field, on every read path.
    exclusive async fn out_of_range_integers_never_load(ctx) {
        let db = &ctx.db;
        hset(db, "profile:p", &[
            ("age", "300"), ("score", "1"), ("active", "true"), ("mail", "m"),
            ("tags", "[]"), ("extra", "{}"),
        ]).await?;
        hset(db, "student:a", &[("class", "class:1"), ("chinese", "1.5"), ("english", "1"), ("math", "1")]).await?;
        assert_decode_error(Profile::at("p").load(db).await, "profile:p", "age");
        assert_decode_error(Profile::at("p").get(db, Profile::AGE).await, "profile:p", "age");
        assert_decode_error(Profile::load_many(db, ["p"]).await, "profile:p", "age");
        assert_decode_error(Student::at("a").load(db).await, "student:a", "chinese");
        assert_decode_error(Student::at("a").get(db, Student::CHINESE).await, "student:a", "chinese");
        Ok::<(), Error>(())
    }

    /// A finite number beyond a float type's range (`1e999` for an `f64`,
    /// `1e39` for an `f32`) is a decode error, not infinity; the words
    /// `inf` and `-inf` still load as infinities.
    exclusive async fn floats_beyond_range_never_load_as_infinity(ctx) {
        let db = &ctx.db;
        hset(db, "gauge:1", &gauge_fields("1e39")).await?;
        assert_decode_error(Gauge::at(1).load(db).await, "gauge:1", "ratio");
        hset(db, "gauge:1", &[("ratio", "-inf"), ("amount", "1e999")]).await?;
        assert_decode_error(Gauge::at(1).get(db, Gauge::AMOUNT).await, "gauge:1", "amount");
        hset(db, "gauge:1", &[("amount", "inf")]).await?;
        let gauge = Gauge::at(1).load(db).await?.expect("the gauge");
        assert_eq!(gauge.ratio, f32::NEG_INFINITY);
        assert_eq!(gauge.amount, Some(f64::INFINITY));
        Ok::<(), Error>(())
    }

    /// HINCRBYFLOAT computes in long doubles: a result beyond the field's
    /// type is a decode error, not infinity.
    exclusive async fn incr_beyond_a_float_range_is_a_decode_error(ctx) {
        let db = &ctx.db;
        hset(db, "gauge:1", &[("ratio", "3e38")]).await?;
        assert_decode_error(Gauge::at(1).incr(db, Gauge::RATIO, 1e38).await, "gauge:1", "ratio");
        hset(db, "gauge:1", &[("amount", "1e999")]).await?;
        assert_decode_error(Gauge::at(1).incr(db, Gauge::AMOUNT, 0.0).await, "gauge:1", "amount");
        Ok::<(), Error>(())
    }

    /// HINCRBY / HINCRBYFLOAT on a field holding text is a decode error
    /// naming the key and field.
    exclusive async fn incr_of_a_non_number_names_key_and_field(ctx) {
        let db = &ctx.db;
        hset(db, "student:a", &[("math", "fifty")]).await?;
        assert_decode_error(Student::at("a").incr(db, Student::MATH, 1).await, "student:a", "math");
        hset(db, "profile:p", &[("score", "high")]).await?;
        assert_decode_error(Profile::at("p").incr(db, Profile::SCORE, 1.0).await, "profile:p", "score");
        // Overflow stays Redis's own refusal.
        hset(db, "student:a", &[("math", "9223372036854775807")]).await?;
        let got = Student::at("a").incr(db, Student::MATH, 1).await;
        assert!(matches!(&got, Err(Error::Server(e)) if e.to_string().contains("overflow")), "{got:?}");
        Ok::<(), Error>(())
    }

    /// A list member that is not UTF-8 is an InvalidKey naming the list,
    /// not an unexpected reply.
    exclusive async fn non_utf8_list_members_name_the_list(ctx) {
        let db = &ctx.db;
        db.query::<()>(redis::cmd("RPUSH").arg(ctx.stored("teacher:A:class")).arg("class:1").arg(&b"class:\xff"[..])).await?;
        let rel = Teacher::at("A").relation::<TeacherClasses>();
        for got in [rel.members(db).await, rel.range(db, 1, 1).await] {
            match got {
                Err(Error::InvalidKey { model: "class", reason, .. }) if reason.contains("teacher:A:class") => {}
                other => panic!("expected InvalidKey naming the list, got {other:?}"),
            }
        }
        assert!(matches!(rel.index(db, 1).await, Err(Error::InvalidKey { .. })));
        assert_eq!(rel.index(db, 0).await?, Some(Class::at(1)));
        assert!(matches!(rel.load(db).await, Err(Error::InvalidKey { .. })));
        Ok::<(), Error>(())
    }
}
