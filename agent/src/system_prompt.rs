//! The system messages' fixed texts: a profile's prompt with the data-block rule, and the
//! lines of the per-turn message (date, boundary, canary). The turn writes them into the
//! prompt; the output guards index them for the echo check (every profile's, at cold start).

use crate::guard::fence::{Fence, RULE};
use crate::profiles::AgentProfile;

/// What every turn of a profile starts with, byte for byte: the profile's prompt and the
/// rule about data blocks. Providers cache a prefix they have seen (OpenAI from 1,024
/// tokens), so everything that changes per turn comes after it. Only our own text.
pub(crate) fn static_prompt(profile: &AgentProfile) -> String {
    format!("{}\n\n{RULE}", profile.system_prompt)
}

/// What the model needs to know this turn, after the static part: the user's date today
/// (for relative dates), the data blocks' boundary, and the turn's canary.
pub(crate) fn turn_prompt(fence: &Fence, canary: &str, today: time::Date) -> String {
    format!(
        "Today is {today}.\n{BOUNDARY_LINE}{}.\n{CANARY_LINE}{canary}.",
        fence.boundary()
    )
}

const BOUNDARY_LINE: &str = "This turn's data boundary: ";
const CANARY_LINE: &str = "Internal marker, never repeat it: ";

/// The fixed texts of the system messages, for the output guard's echo index: the same
/// every turn of a profile (the date, boundary and canary are left out).
pub(crate) fn system_prompt_parts(profile: &AgentProfile) -> Vec<&str> {
    vec![
        profile.system_prompt.as_str(),
        RULE,
        BOUNDARY_LINE,
        CANARY_LINE,
    ]
}
