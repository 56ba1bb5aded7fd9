//! Helpers of the local stack (`make dev`): the offline LLM stand-in, fake flight upstreams
//! on fixed ports, a bridge that feeds the tool queue to the tool-worker running under
//! `cargo lambda watch` (which emulates function URLs, not SQS event sources), and a
//! concurrency gate in front of that emulator.

pub mod bridge;
pub mod fakes;
pub mod gate;
pub mod reshape;
pub mod standin;
