//! Adding indexes to a model that has data (rebuild, in batches, with
//! progress, resumable from its cursor), and rewriting every object after
//! a schema change (a field added with a default, renamed, removed).

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::time::Duration;

use redmodel::model::migrate::{
    drop_field_indexes, migrate, rebuild_indexes, Migration, PassOptions, Progress,
};
use redmodel::model::Ttl;
use redmodel::prelude::*;
use redmodel::Error;
use redmodel_suite::backend_tests;
use serde::{Deserialize, Serialize};

/// Version 1 of `member:ID`: no index.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "member")]
struct MemberV1 {
    #[redmodel(pk)]
    id: u32,
    nick: String,
    score: u32,
    #[redmodel(json)]
    tags: Vec<String>,
    legacy: String,
}

/// Version 2: indexes on the same data.
#[derive(Admin, Debug, Clone, PartialEq)]
#[redmodel(table = "member")]
struct MemberV2 {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    nick: String,
    #[redmodel(sorted)]
    score: u32,
    #[redmodel(tags)]
    tags: Vec<String>,
    legacy: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
enum Plan {
    #[default]
    Free,
    Paid,
}

/// Version 3: `nick` renamed `name` (and unique), `legacy` removed,
/// `country` and `plan` added with defaults (serde's, and redmodel's).
#[derive(Admin, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[redmodel(table = "member")]
struct MemberV3 {
    #[redmodel(pk)]
    id: u32,
    #[redmodel(unique)]
    name: String,
    #[redmodel(sorted)]
    score: u32,
    #[redmodel(tags)]
    tags: Vec<String>,
    #[serde(default = "default_country")]
    country: String,
    #[redmodel(json, default)]
    plan: Plan,
}

fn default_country() -> String {
    "unknown".to_string()
}

fn v1(id: u32) -> MemberV1 {
    MemberV1 {
        id,
        nick: format!("m{id}"),
        score: id * 10,
        tags: vec![if id.is_multiple_of(2) { "even" } else { "odd" }.to_string()],
        legacy: "x".into(),
    }
}

async fn seed(db: &Db, n: u32) -> Result<(), Error> {
    for id in 0..n {
        v1(id).insert(db).await?;
    }
    Ok(())
}

async fn hash(db: &Db, key: &str) -> BTreeMap<String, String> {
    db.query(redis::cmd("HGETALL").arg(key)).await.unwrap()
}

backend_tests! {
    /// Indexes declared on existing data are empty until rebuilt; the
    /// rebuild goes batch by batch, reports progress, and finds values two
    /// objects share.
    exclusive async fn rebuild_adds_the_entries(ctx) {
        let db = &ctx.db;
        seed(db, 30).await?;
        let mut dup = v1(30);
        dup.nick = "m3".into();
        dup.insert(db).await?;
        assert!(MemberV2::SCORE_SORTED.top(db, 1).await?.is_empty(), "no index yet");
        assert_eq!(MemberV2::NICK_UNIQUE.find(db, "m3").await?, None);

        let mut seen: Vec<Progress> = Vec::new();
        let report = rebuild_indexes::<MemberV2, _>(db, PassOptions::default().batch_size(5), |p| {
            seen.push(*p);
        })
        .await?;
        assert!(report.finished);
        assert_eq!(report.objects, 31);
        assert_eq!(report.cursor, 0);
        assert!(seen.len() >= 2, "batches: {seen:?}");
        assert!(seen.windows(2).all(|w| w[0].done <= w[1].done));
        let last = seen.last().expect("progress");
        assert_eq!((last.done, last.cursor), (31, 0));
        assert!(seen.iter().all(|p| p.total_estimate >= p.done));

        assert_eq!(report.conflicts.len(), 1, "{:?}", report.conflicts);
        let conflict = &report.conflicts[0];
        assert_eq!((conflict.field, conflict.value.as_str()), ("nick", "m3"));
        let keys = [conflict.key.as_str(), conflict.holder.as_str()];
        assert!(keys.contains(&"member:3") && keys.contains(&"member:30"), "{keys:?}");

        assert_eq!(MemberV2::SCORE_SORTED.top(db, 1).await?[0].id, 30);
        assert_eq!(MemberV2::SCORE_SORTED.len(db).await?, 31);
        assert_eq!(MemberV2::NICK_UNIQUE.find(db, "m7").await?.map(|m| m.id), Some(7));
        assert_eq!(MemberV2::TAGS_TAGS.count(db, "even").await?, 16);
        // Writes keep the rebuilt index in step from now on.
        MemberV2::at(7).set(db, MemberV2::NICK, "seven").await?;
        assert_eq!(MemberV2::NICK_UNIQUE.find(db, "m7").await?, None);
        Ok::<(), Error>(())
    }

    /// A pass stopped by its callback resumes from the cursor it reported.
    exclusive async fn rebuild_resumes_from_its_cursor(ctx) {
        let db = &ctx.db;
        seed(db, 40).await?;
        let options = PassOptions::default().batch_size(4);
        let first = rebuild_indexes::<MemberV2, _>(db, options, |_| ControlFlow::Break(())).await?;
        assert!(!first.finished);
        assert_ne!(first.cursor, 0);
        assert!(first.objects < 40, "stopped after one batch: {}", first.objects);
        let indexed = MemberV2::SCORE_SORTED.len(db).await?;
        assert_eq!(indexed, first.objects);

        let rest = rebuild_indexes::<MemberV2, _>(db, PassOptions::resume(first.cursor).batch_size(4), |_| ()).await?;
        assert!(rest.finished);
        assert_eq!(MemberV2::SCORE_SORTED.len(db).await?, 40);
        assert!(first.objects + rest.objects >= 40);
        Ok::<(), Error>(())
    }

    /// A schema change: reading old data works at once for added fields
    /// with a default; migrate rewrites every object (renamed, removed,
    /// defaults written), builds the new index, keeps TTLs, and leaves
    /// undeclared fields alone.
    exclusive async fn migrate_rewrites_every_object(ctx) {
        let db = &ctx.db;
        seed(db, 12).await?;
        rebuild_indexes::<MemberV2, _>(db, PassOptions::default(), |_| ()).await?;
        MemberV1::at(1).expire(db, Duration::from_secs(3600)).await?;
        db.query::<()>(redis::cmd("HSET").arg("member:2").arg("extra").arg("kept")).await?;

        // Before the migration `name` is missing: a required field.
        let err = MemberV3::load(db, 1).await.unwrap_err();
        assert!(matches!(err, Error::MissingField { ref field, .. } if field == "name"), "{err:?}");

        let migration = Migration::new().rename("nick", "name").remove("legacy");
        let report = migrate::<MemberV3, _>(db, &migration, PassOptions::default().batch_size(5), |_| ()).await?;
        assert!(report.finished);
        assert_eq!((report.objects, report.rewritten), (12, 12));
        assert!(report.failed.is_empty(), "{:?}", report.failed);

        let stored = hash(db, "member:2").await;
        let expected: BTreeMap<String, String> = [
            ("_count", "1"),
            ("country", "unknown"),
            ("extra", "kept"),
            ("name", "m2"),
            ("plan", "\"Free\""),
            ("score", "20"),
            ("tags", "[\"even\"]"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(stored, expected);
        assert!(matches!(MemberV1::at(1).ttl(db).await?, Ttl::Expires(_)), "TTL kept");
        assert_eq!(MemberV3::NAME_UNIQUE.find(db, "m5").await?.map(|m| m.country), Some("unknown".to_string()));

        // A second pass has nothing to change.
        let again = migrate::<MemberV3, _>(db, &migration, PassOptions::default(), |_| ()).await?;
        assert_eq!(again.rewritten, 0);

        // The old field's index is dropped by name.
        let dropped = drop_field_indexes(db, "member", "nick").await?;
        assert_eq!(dropped, 12);
        let left: Vec<String> = db.query(redis::cmd("KEYS").arg("member:_unique:nick:*")).await?;
        assert!(left.is_empty());
        Ok::<(), Error>(())
    }

    /// Added fields with a default decode old objects without a migration.
    exclusive async fn added_fields_with_defaults_read_old_data(ctx) {
        let db = &ctx.db;
        db.query::<()>(
            redis::cmd("HSET").arg("member:1").arg("name").arg("ken").arg("score").arg(5).arg("tags").arg("[]"),
        )
        .await?;
        let m = MemberV3::load(db, 1).await?.expect("stored");
        assert_eq!(m.country, "unknown");
        assert_eq!(m.plan, Plan::Free);
        Ok::<(), Error>(())
    }
}
