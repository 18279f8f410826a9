//! What redmodel tells a `tracing` subscriber: one debug-level span per
//! model operation (model, operation, key), a trace-level event per round
//! trip (how many commands, whether atomic) and a debug-level event per
//! retried optimistic transaction. With no subscriber listening, the spans
//! and events cost a check of a static flag each.
//!
//! ```text
//! cargo run --example traced
//! ```

use redmodel::model::Ref;
use redmodel::prelude::*;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// `class:1` = {name}
#[derive(Admin)]
struct Class {
    #[redmodel(pk)]
    id: u32,
    name: String,
}

/// `student:a` = {class, math}
#[derive(Admin)]
struct Student {
    #[redmodel(pk)]
    id: String,
    class: Ref<Class>,
    #[redmodel(sorted)]
    math: i64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .without_time()
                // A line as each operation ends, with how long it took.
                .with_span_events(FmtSpan::CLOSE),
        )
        .with(Targets::new().with_target("redmodel", Level::TRACE))
        .init();

    let db = Db::memory();
    Class {
        id: 1,
        name: "Class 1".into(),
    }
    .insert(&db)
    .await?;
    Student {
        id: "a".into(),
        class: Class::at(1),
        math: 50,
    }
    .insert(&db)
    .await?;
    Student::at("a").incr(&db, Student::MATH, 5).await?;
    let top = Student::MATH_SORTED.top(&db, 3).await?;
    println!("top: {:?}", top.iter().map(|s| s.math).collect::<Vec<_>>());
    Student::at("a").delete(&db).await?;
    Ok(())
}
