//! The four pattern examples run on every backend, twice (each starts by
//! deleting what it writes), and show what they say they show.

// Each example brings the shared key printer (`examples/common/mod.rs`)
// as its own module, as it does when built alone.
#![allow(clippy::duplicate_mod)]

#[allow(dead_code)]
#[path = "../../../examples/login.rs"]
mod login;
#[allow(dead_code)]
#[path = "../../../examples/scores_by_date.rs"]
mod scores_by_date;
#[allow(dead_code)]
#[path = "../../../examples/sessions.rs"]
mod sessions;
#[allow(dead_code)]
#[path = "../../../examples/tags.rs"]
mod tags;

use redmodel::prelude::*;
use redmodel::Error;
use redmodel_suite::backend_tests;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

backend_tests! {
    exclusive async fn login_example(ctx) {
        for _ in 0..2 {
            login::reset(&ctx.db).await?;
            let shown = login::run(&ctx.db).await?;
            assert_eq!(shown.recent, strings(&["Joe Armstrong", "dennis ritchie", "ken thompson"]));
            assert_eq!(
                shown.top,
                [("dennis ritchie".to_string(), 7), ("ken thompson".to_string(), 6), ("Joe Armstrong".to_string(), 3)]
            );
            assert!(shown.refused.contains("login:1"), "{}", shown.refused);
            assert!(!login::User::exists(&ctx.db, 4).await?);
        }
        Ok::<(), Error>(())
    }

    exclusive async fn tags_example(ctx) {
        for _ in 0..2 {
            tags::reset(&ctx.db).await?;
            let shown = tags::run(&ctx.db).await?;
            assert_eq!(shown.ruby_and_web, strings(&["Ruby on rail"]));
            assert_eq!(shown.ruby_not_web, strings(&["The Ruby Programming Language"]));
            assert_eq!(shown.ruby_or_web, strings(&["The Ruby Programming Language", "Ruby on rail"]));
            assert_eq!(
                shown.counts,
                [("erlang".to_string(), 1), ("ruby".to_string(), 2), ("web".to_string(), 1)]
            );
        }
        Ok::<(), Error>(())
    }

    exclusive async fn scores_by_date_example(ctx) {
        for _ in 0..2 {
            scores_by_date::reset(&ctx.db).await?;
            let shown = scores_by_date::run(&ctx.db).await?;
            assert_eq!(shown.last_ten_days, [2, 7, 3, 4, 5, 6]);
            assert_eq!(shown.today, [3, 4, 5, 6]);
            assert_eq!(shown.today_types_1000_to_4000, [4, 5]);
        }
        Ok::<(), Error>(())
    }

    exclusive async fn sessions_example(ctx) {
        sessions::reset(&ctx.db).await?;
        let shown = sessions::run(&ctx.db).await?;
        assert!(shown.guest_gone);
        assert_eq!(shown.expiring, strings(&["alice-laptop", "alice-phone"]));
        assert_eq!(shown.persisted, strings(&["bob-laptop"]));
        assert_eq!(shown.recent, strings(&["alice-laptop", "bob-laptop", "alice-phone"]));
        let recent: Vec<String> = ctx
            .db
            .query(redis::cmd("LRANGE").arg("session:_recent:last_seen").arg(0).arg(-1))
            .await?;
        assert!(!recent.iter().any(|k| k.contains("guest")), "pruned: {recent:?}");
        Ok::<(), Error>(())
    }
}
