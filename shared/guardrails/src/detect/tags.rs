//! The record tags of the detector's NFA tables: `build.rs` writes them, `nfa.rs` reads them.

pub const TAG_RANGE: u32 = 0;
pub const TAG_SPARSE: u32 = 1;
pub const TAG_LOOK: u32 = 2;
pub const TAG_UNION: u32 = 3;
pub const TAG_FAIL: u32 = 4;
pub const TAG_MATCH: u32 = 5;
