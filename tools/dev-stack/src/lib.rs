//! Helpers of the local stack (`make dev`): the offline LLM stand-in, fake flight upstreams
//! on fixed ports (recorded Seats.aero and Amadeus answers fitted to the question, generated
//! Duffel offers), a bridge that feeds the tool queue to the tool-worker running under
//! `cargo lambda watch` (which emulates function URLs, not SQS event sources), a
//! concurrency gate in front of that emulator (which also starts a function whose process died
//! again), and a load check of the running stack.

pub mod award_trips;
pub mod bridge;
pub mod cli;
pub mod fakes;
pub mod gate;
pub mod load;
pub mod reshape;
pub mod standin;
pub mod supervise;
