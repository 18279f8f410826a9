//! Unit tests of the bitmap commands.
