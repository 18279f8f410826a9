//! Helpers that several command families share, each in a module named
//! for what it holds, so that no family imports another.

pub(crate) mod database;
pub(crate) mod destination;
pub(crate) mod expire;
pub(crate) mod random_picks;
pub(crate) mod scan;
pub(crate) mod string_length;
