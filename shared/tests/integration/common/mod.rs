//! `shared`'s tests use the workspace harness (`tests/`), plus the table names from the
//! environment the emulator scripts write.
#![allow(dead_code, unused_imports)]

pub use test_support::{counted_dynamodb, dynamodb, secrets_manager, unique};

use shared::config::{Env, StorageConfig};

pub fn storage() -> StorageConfig {
    match StorageConfig::from_env(&Env::from_process()) {
        Ok(config) => config,
        Err(e) => panic!("{e}; {}", test_support::HOW_TO_START),
    }
}
