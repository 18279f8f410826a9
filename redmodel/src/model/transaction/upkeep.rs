//! The model-specific part of a typed transaction's queued write: one
//! object-safe trait over the index upkeep of [`mod@write`], so that one
//! transaction holds writes of many models.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use redis::Pipeline;

use crate::db::optimistic::RawTransaction;
use crate::model::index::IndexSpec;
use crate::model::write::{self, Changes, IndexPlan, Prior, PriorRead, Texts};
use crate::model::Model;
use crate::{Db, Result};

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// The model-specific part of a queued write, behind one object-safe
/// trait so that one transaction holds writes of many models.
pub(super) trait Upkeep: Send + Sync {
    fn table(&self) -> &'static str;
    fn sync_every(&self) -> u64;
    /// The indexes a write of `changes` touches, and the unique values it
    /// claims.
    fn plan(&self, key: &str, changes: &Changes<'_>) -> Result<IndexPlan>;
    /// The plain layout: the index commands, in the same EXEC.
    fn add_entries<'a>(
        &'a self,
        tx: &'a RawTransaction,
        db: &'a Db,
        key: &'a str,
        changes: &'a Changes<'a>,
        txn: &'a mut Pipeline,
    ) -> BoxFuture<'a, ()>;
    /// The cluster layout: claims the unique values before the EXEC.
    fn claim<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        claims: &'a [(&'static str, String)],
    ) -> BoxFuture<'a, Vec<write::Claim>>;
    /// The cluster layout: what the EXEC reads first for a write of
    /// `fields` (`None`: removed) that [`recheck`](Self::recheck) may undo.
    fn prior_read(
        &self,
        db: &Db,
        key: &str,
        fields: &[(&'static str, Option<Vec<u8>>)],
    ) -> Option<PriorRead>;
    /// The cluster layout: the reference fields among `set` checked again
    /// after the EXEC, the write undone to `prior` if one is gone.
    fn recheck<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        set: &'a [(&'static str, Vec<u8>)],
        prior: Option<&'a Prior>,
    ) -> BoxFuture<'a, ()>;
    /// The cluster layout: the index steps after the EXEC.
    fn settle<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        specs: &'a [&'static IndexSpec],
        claimed: &'a [write::Claim],
        old: Texts,
        new: Texts,
    ) -> BoxFuture<'a, ()>;
}

pub(super) struct UpkeepOf<M>(pub(super) PhantomData<fn() -> M>);

impl<M: Model> Upkeep for UpkeepOf<M> {
    fn table(&self) -> &'static str {
        M::TABLE
    }

    fn sync_every(&self) -> u64 {
        M::SYNC_EVERY
    }

    fn plan(&self, key: &str, changes: &Changes<'_>) -> Result<IndexPlan> {
        write::plan::<M>(key, changes)
    }

    fn add_entries<'a>(
        &'a self,
        tx: &'a RawTransaction,
        db: &'a Db,
        key: &'a str,
        changes: &'a Changes<'a>,
        txn: &'a mut Pipeline,
    ) -> BoxFuture<'a, ()> {
        Box::pin(write::add_entries::<M>(tx, db, key, changes, txn))
    }

    fn claim<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        claims: &'a [(&'static str, String)],
    ) -> BoxFuture<'a, Vec<write::Claim>> {
        Box::pin(write::claim_all::<M, String>(db, key, claims))
    }

    fn prior_read(
        &self,
        db: &Db,
        key: &str,
        fields: &[(&'static str, Option<Vec<u8>>)],
    ) -> Option<PriorRead> {
        PriorRead::of::<M>(
            db,
            key,
            fields.iter().map(|(name, text)| (*name, text.as_deref())),
        )
    }

    fn recheck<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        set: &'a [(&'static str, Vec<u8>)],
        prior: Option<&'a Prior>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(write::recheck_references::<M>(db, key, set, prior))
    }

    fn settle<'a>(
        &'a self,
        db: &'a Db,
        key: &'a str,
        specs: &'a [&'static IndexSpec],
        claimed: &'a [write::Claim],
        old: Texts,
        new: Texts,
    ) -> BoxFuture<'a, ()> {
        Box::pin(write::settle::<M>(db, key, specs, claimed, old, new))
    }
}
