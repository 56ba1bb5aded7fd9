//! `cash-search`: cash fares (`POST /flights/cash`) from the deployment's provider,
//! Duffel's offer requests ([`duffel`]) or Amadeus flight offers, normalised to the shared
//! `FlightResult`. Amadeus' OAuth token is cached in memory and in a Secrets Manager secret
//! shared by all instances (see [`token`]).

pub mod config;
pub mod deps;
pub mod duffel;
pub mod format;
pub mod handler;
mod lenient;
pub mod normalise;
pub mod offers;
pub mod search;
pub mod tags;
pub mod token;

pub use config::Config;
pub use deps::Deps;
pub use handler::{handle, service};
pub use token::SERVICE;
