//! Derive macros of redmodel. The model derives land with the model layer;
//! this crate is part of the workspace from the start so the layout is fixed.
