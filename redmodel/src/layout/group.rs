//! Slot groups: which tables' keys the cluster layout pins to a named
//! hash tag (`#[redmodel(slot_group = "shop")]`), read from the models
//! the derives compiled into the program.

use std::collections::HashMap;
use std::sync::OnceLock;

/// One model's table and its slot group, registered by its derive (an
/// admin with a `slot_group`, and every sub-object, whose group is its
/// admin's).
#[doc(hidden)]
#[derive(Debug)]
pub struct TableGroup {
    /// The model's table.
    pub table: &'static str,
    /// Its group, if it has one.
    pub group: Option<&'static str>,
}

// Gathered across the program at start-up by the `inventory` crate, as the
// referrers are: a model needs no call of its own to be laid out.
inventory::collect!(TableGroup);

/// The group of each table that has one. Two declarations of one table
/// naming different groups cannot both be right about where its keys are:
/// the table then has none (two declarations of one table are reported by
/// [`conflicting_declarations`](crate::model::conflicting_declarations)).
fn groups() -> &'static HashMap<&'static str, Option<&'static str>> {
    static GROUPS: OnceLock<HashMap<&'static str, Option<&'static str>>> = OnceLock::new();
    GROUPS.get_or_init(|| {
        let mut groups: HashMap<&'static str, Option<&'static str>> = HashMap::new();
        for entry in inventory::iter::<TableGroup> {
            let Some(group) = entry.group else { continue };
            groups
                .entry(entry.table)
                .and_modify(|known| {
                    if *known != Some(group) {
                        *known = None;
                    }
                })
                .or_insert(Some(group));
        }
        groups
    })
}

/// The slot group of `table`, if its models declare one.
pub(crate) fn of_table(table: &str) -> Option<&'static str> {
    groups().get(table).copied().flatten()
}
