//! Models beyond the school's: every integer width, floats, optional scalars,
//! an optional reference, and single-value sub-objects of plain and JSON
//! values.

#[allow(unused_imports)]
use super::*;

/// The numeric traps' targets.
#[derive(Admin, Debug, Clone, PartialEq)]
pub struct Gauge {
    #[redmodel(pk)]
    pub id: i64,
    pub tiny: i8,
    pub small: i16,
    pub medium: i32,
    pub large: i64,
    pub byte: u8,
    pub word: u16,
    pub dword: u32,
    pub big: u64,
    pub size: usize,
    pub ratio: f32,
    pub amount: Option<f64>,
    pub delta: Option<i64>,
    pub flag: Option<bool>,
    pub owner: Option<Ref<Teacher>>,
    #[redmodel(json)]
    pub history: Vec<f64>,
    #[redmodel(default)]
    pub hits: u32,
}

/// A single-value sub-object holding a `u8` (a string at `gauge:1:level:x`).
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Gauge, single)]
pub struct Level {
    #[redmodel(pk)]
    pub name: String,
    pub value: u8,
}

/// A single-value sub-object holding JSON (`gauge:1:reading:5`).
#[derive(SubObject, Debug, Clone, PartialEq)]
#[redmodel(owner = Gauge, single)]
pub struct Reading {
    #[redmodel(pk)]
    pub at: u64,
    #[redmodel(json)]
    pub values: Vec<i64>,
}
