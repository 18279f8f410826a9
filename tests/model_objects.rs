//! Admin objects and sub-objects: every per-object operation, on every
//! backend.

mod model_support;

use model_support::models::*;
use redmodel::prelude::*;

#[tokio::test]
async fn insert_and_load_an_admin() {
    on_every_backend!(|db| {
        let a = Teacher {
            id: "A".into(),
            name: "Teacher A".into(),
            subject: "math".into(),
        };
        let handle = a.insert(db).await?;
        assert_eq!(handle.key(), "teacher:A");
        assert_eq!(Teacher::get(db, "A").await?, Some(a.clone()));
        assert_eq!(Teacher::get(db, "B").await?, None);
        assert!(Teacher::exists(db, "A").await?);
        Ok(())
    });
}
