//! RESTORE of damaged payloads: whatever the bytes, an error or a value,
//! never a panic and never an allocation the payload's size does not
//! justify.
