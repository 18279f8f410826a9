//! The school demo leaves exactly the seed's keys, with the same data, on
//! every backend, and a second run changes nothing.

use crate::school_example as school;

use redmodel_suite::backend_tests;

const EXPECTED: &[(&str, &str, &str)] = &[
    // `_refs`: the students' writes of their `class` reference mark it.
    ("class:1", "hash", "{_count: 1, _refs: 1, name: Class 1}"),
    ("class:1:student", "list", "[student:a]"),
    ("class:1:teacher", "list", "[teacher:A]"),
    ("class:2", "hash", "{_count: 1, _refs: 2, name: Class 2}"),
    ("class:2:student", "list", "[student:b, student:c]"),
    ("class:2:teacher", "list", "[teacher:A, teacher:B]"),
    ("performance:good", "list", "[student:b]"),
    (
        "student:a",
        "hash",
        "{_count: 1, chinese: 100, class: class:1, english: 100, math: 50}",
    ),
    (
        "student:a:exam:2024",
        "hash",
        "{_count: 1, chinese: 100, english: 100, math: 50}",
    ),
    (
        "student:b",
        "hash",
        "{_count: 1, chinese: 90, class: class:2, english: 80, math: 95}",
    ),
    (
        "student:b:exam:2024",
        "hash",
        "{_count: 1, chinese: 90, english: 80, math: 95}",
    ),
    (
        "student:c",
        "hash",
        "{_count: 1, chinese: 70, class: class:2, english: 85, math: 88}",
    ),
    (
        "student:c:exam:2024",
        "hash",
        "{_count: 1, chinese: 70, english: 85, math: 88}",
    ),
    (
        "teacher:A",
        "hash",
        "{_count: 1, name: Teacher A, subject: math}",
    ),
    ("teacher:A:class", "list", "[class:1, class:2]"),
    (
        "teacher:B",
        "hash",
        "{_count: 1, name: Teacher B, subject: chinese}",
    ),
    ("teacher:B:class", "list", "[class:2]"),
];

backend_tests! {
    exclusive async fn the_demo_leaves_the_seed_layout_and_is_repeatable(ctx) -> redmodel::Result<()> {
        let db = &ctx.db;
        for run in 1..=2 {
            school::reset(db).await?;
            school::build(db).await?;
            school::read_back(db).await?;
            let tree = school::key_tree(db).await?;
            let tree: Vec<(&str, &str, &str)> = tree
                .iter()
                .map(|(k, t, v)| (k.as_str(), t.as_str(), v.as_str()))
                .collect();
            let mut expected: Vec<(String, &str, &str)> = EXPECTED
                .iter()
                .map(|(k, t, v)| (ctx.stored(k), *t, *v))
                .collect();
            expected.sort();
            let expected: Vec<(&str, &str, &str)> =
                expected.iter().map(|(k, t, v)| (k.as_str(), *t, *v)).collect();
            assert_eq!(tree, expected, "run {run}");
            assert_eq!(redmodel::model::dbsize(db).await?, EXPECTED.len() as u64);
        }
        Ok(())
    }
}
