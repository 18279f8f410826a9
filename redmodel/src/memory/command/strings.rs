//! strings commands (being written).

use super::Spec;

pub(super) const COMMANDS: &[Spec] = &[];
