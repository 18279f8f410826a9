//! The check of one relation: its lists (an owner that exists), their
//! members (objects that exist) and, with an inverse, both sides of each
//! link.

use std::marker::PhantomData;

use redis::Value;

use super::{delete_orphan, BoxFuture, Checker, Kind, Pass};
use crate::command::cmd;
use crate::db::plan::checked::write_if;
use crate::layout::plain_key;
use crate::model::live::{existing, prune_gone, Entry};
use crate::model::relation::{InverseOf, Relation, RelationRef};
use crate::{Db, Result};

/// The checker of relation `R`, for the registry.
#[doc(hidden)]
pub fn checker<R: Relation>() -> Box<dyn Checker> {
    Box::new(RelationCheck::<R>(PhantomData))
}

struct RelationCheck<R>(PhantomData<fn() -> R>);

impl<R: Relation> Checker for RelationCheck<R> {
    fn batch<'a>(&'a self, pass: &'a mut Pass<'_>, cursor: u64) -> BoxFuture<'a, u64> {
        Box::pin(check_batch::<R>(pass, cursor))
    }

    fn finish<'a>(&'a self, _: &'a mut Pass<'_>) -> BoxFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }
}

/// One SCAN batch of the relation's lists: owners, members, inverses.
async fn check_batch<R: Relation>(pass: &mut Pass<'_>, cursor: u64) -> Result<u64> {
    let db = pass.db;
    let (next, keys) = pass.scan(&RelationRef::<R>::scan_pattern(), cursor).await?;
    let mut lists: Vec<(String, RelationRef<R>)> = keys
        .into_iter()
        .filter_map(|key| Some((RelationRef::<R>::parse(&key).ok()?, key)))
        .map(|(rel, key)| (key, rel))
        .collect();
    lists.sort_by(|a, b| a.0.cmp(&b.0));
    lists.dedup_by(|a, b| a.0 == b.0);
    let owners: Vec<String> = lists
        .iter()
        .map(|(_, rel)| rel.owner().key_in(db).into_owned())
        .collect();
    let alive = existing(db, &owners).await?;
    for ((list, rel), (owner, alive)) in lists.iter().zip(owners.iter().zip(alive)) {
        if !alive {
            pass.report.found(
                Kind::OrphanedList,
                list,
                format!("its owner `{}` does not exist", rel.owner().key()),
            );
            if pass.repairing() && delete_orphan(db, list, owner).await? {
                pass.fixed(Kind::OrphanedList, 1);
            }
            continue;
        }
        check_members::<R>(pass, list, owner).await?;
    }
    Ok(next)
}

/// The members of the list at `list` (of the existing `owner`): dead ones,
/// and links missing their inverse side.
async fn check_members<R: Relation>(pass: &mut Pass<'_>, list: &str, owner: &str) -> Result<()> {
    let db = pass.db;
    let mut members: Vec<String> = db.query(cmd("LRANGE").arg(list).arg(0).arg(-1)).await?;
    members.sort();
    members.dedup();
    let alive = existing(db, &members).await?;
    let (live, dead): (Vec<_>, Vec<_>) = members.into_iter().zip(alive).partition(|(_, a)| *a);
    let dead: Vec<String> = dead.into_iter().map(|(m, _)| m).collect();
    for member in &dead {
        pass.report.found(
            Kind::DeadMember,
            list,
            format!("its member `{}` does not exist", plain_key(member)),
        );
    }
    if pass.repairing() && !dead.is_empty() {
        let removed = prune_gone(db, &dead, |_| Entry::List(list.to_string())).await?;
        pass.fixed(Kind::DeadMember, removed.min(dead.len() as u64));
    }
    for (member, _) in live {
        let Some(inverse) = R::Inverse::inverse_key(&plain_key(&member)) else {
            continue;
        };
        let inverse = db.stored(&inverse).into_owned();
        let position: Option<i64> = db.query(cmd("LPOS").arg(&inverse).arg(owner)).await?;
        if position.is_some() {
            continue;
        }
        pass.report.found(
            Kind::OneSidedLink,
            list,
            format!(
                "holds `{}`, whose list `{}` lacks the owner",
                plain_key(&member),
                plain_key(&inverse)
            ),
        );
        if pass.repairing() && add_side(db, &inverse, &member, owner).await? {
            pass.fixed(Kind::OneSidedLink, 1);
        }
    }
    Ok(())
}

/// Adds `owner` to the tail of `member`'s inverse list `inverse` if the
/// member still exists and the list still lacks it (one checked write,
/// in one slot: the member's). The owner's existence was checked just
/// before, as a cluster-layout link checks the far side. Whether it did.
async fn add_side(db: &Db, inverse: &str, member: &str, owner: &str) -> Result<bool> {
    let mut exists = cmd("EXISTS");
    exists.arg(member);
    let mut lpos = cmd("LPOS");
    lpos.arg(inverse).arg(owner);
    let mut rpush = cmd("RPUSH");
    rpush.arg(inverse).arg(owner);
    let lacking = |replies: &[Value]| Ok(matches!(replies, [Value::Int(1), Value::Nil]));
    write_if(
        db,
        inverse,
        &[inverse, member],
        &[exists, lpos],
        &lacking,
        &[rpush],
    )
    .await
}
