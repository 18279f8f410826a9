//! The longest string a command may make, shared by the string family
//! (APPEND, SETRANGE) and the bitmap family (SETBIT, BITFIELD).

use crate::error::CmdError;

/// Redis's `checkStringLength`: refuses a string that would grow past
/// `max`, the configured `proto-max-bulk-len` (512MB by default).
pub(crate) fn check_string_length(size: u64, append: u64, max: u64) -> Result<(), CmdError> {
    match size.checked_add(append) {
        Some(total) if total <= max => Ok(()),
        _ => Err(CmdError::err(
            "string exceeds maximum allowed size (proto-max-bulk-len)",
        )),
    }
}
