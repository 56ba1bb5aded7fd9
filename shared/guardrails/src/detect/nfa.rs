//! The detector's automata: one NFA per finding, compiled from `rules.toml` by `build.rs`
//! and rebuilt here from its table of states, searched with a lazy DFA. Parsing and
//! compiling the patterns is the work a build does once; rebuilding the NFA takes about a
//! millisecond for all ten.

use std::sync::Mutex;

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson::pikevm::PikeVM;
use regex_automata::nfa::thompson::{self, Builder, NFA, Transition};
use regex_automata::util::look::Look;
use regex_automata::util::primitives::StateID;
use regex_automata::{Input, MatchError};

mod tables {
    include!(concat!(env!("OUT_DIR"), "/detect_nfa.rs"));
}

use super::Finding;

use super::tags::{TAG_FAIL, TAG_LOOK, TAG_MATCH, TAG_RANGE, TAG_SPARSE, TAG_UNION};

/// Each finding's table, as `build.rs` names them.
pub(super) fn tables() -> [(Finding, &'static [u32]); 10] {
    [
        (
            Finding::OverrideInstructions,
            &tables::OVERRIDE_INSTRUCTIONS,
        ),
        (
            Finding::SystemPromptExtraction,
            &tables::SYSTEM_PROMPT_EXTRACTION,
        ),
        (Finding::RolePlay, &tables::ROLE_PLAY),
        (Finding::BoundarySpoofing, &tables::BOUNDARY_SPOOFING),
        (Finding::EncodedPayload, &tables::ENCODED_PAYLOAD),
        (Finding::ScriptInjection, &tables::SCRIPT_INJECTION),
        (Finding::SqlInjection, &tables::SQL_INJECTION),
        (Finding::SecretRequest, &tables::SECRET_REQUEST),
        (Finding::ToolManipulation, &tables::TOOL_MANIPULATION),
        (Finding::LinkInjection, &tables::LINK_INJECTION),
    ]
}

/// Why a table does not make an NFA: only a build whose `build.rs` and this reader
/// disagree gets one.
#[derive(Debug, thiserror::Error)]
pub(super) enum TableError {
    #[error("the table ends inside a record")]
    Truncated,
    #[error("unknown record tag {0}")]
    Tag(u32),
    #[error("unknown look-around {0}")]
    Look(u32),
    #[error("a byte range beyond 255")]
    Byte,
    #[error(transparent)]
    Build(Box<thompson::BuildError>),
    #[error(transparent)]
    Lazy(Box<regex_automata::hybrid::BuildError>),
}

impl From<thompson::BuildError> for TableError {
    fn from(e: thompson::BuildError) -> Self {
        Self::Build(Box::new(e))
    }
}

impl From<regex_automata::hybrid::BuildError> for TableError {
    fn from(e: regex_automata::hybrid::BuildError) -> Self {
        Self::Lazy(Box::new(e))
    }
}

/// Reads a table written by `build.rs`.
struct Reader<'a> {
    words: &'a [u32],
}

impl Reader<'_> {
    fn word(&mut self) -> Result<u32, TableError> {
        let (first, rest) = self.words.split_first().ok_or(TableError::Truncated)?;
        self.words = rest;
        Ok(*first)
    }

    fn state(&mut self) -> Result<StateID, TableError> {
        Ok(StateID::new_unchecked(self.word()? as usize))
    }

    fn byte(&mut self) -> Result<u8, TableError> {
        u8::try_from(self.word()?).map_err(|_| TableError::Byte)
    }

    fn transition(&mut self) -> Result<Transition, TableError> {
        Ok(Transition {
            start: self.byte()?,
            end: self.byte()?,
            next: self.state()?,
        })
    }
}

/// The NFA a table describes: its states added in order keep their ids.
fn nfa(words: &[u32]) -> Result<NFA, TableError> {
    let mut r = Reader { words };
    let (anchored, unanchored, pattern) = (r.state()?, r.state()?, r.state()?);
    let mut b = Builder::new();
    b.start_pattern()?;
    while !r.words.is_empty() {
        match r.word()? {
            TAG_RANGE => b.add_range(r.transition()?)?,
            TAG_SPARSE => {
                let n = r.word()?;
                let ranges = (0..n).map(|_| r.transition()).collect::<Result<_, _>>()?;
                b.add_sparse(ranges)?
            }
            TAG_LOOK => {
                let look = r.word()?;
                let look = Look::from_repr(look).ok_or(TableError::Look(look))?;
                let next = r.state()?;
                b.add_look(next, look)?
            }
            TAG_UNION => {
                let n = r.word()?;
                let alternates = (0..n).map(|_| r.state()).collect::<Result<_, _>>()?;
                b.add_union(alternates)?
            }
            TAG_FAIL => b.add_fail()?,
            TAG_MATCH => b.add_match()?,
            tag => return Err(TableError::Tag(tag)),
        };
    }
    b.finish_pattern(pattern)?;
    Ok(b.build(anchored, unanchored)?)
}

/// One finding's automaton with the lazy DFA's cache of states, kept across searches.
pub(super) struct Matcher {
    dfa: DFA,
    cache: Mutex<Cache>,
}

impl Matcher {
    pub(super) fn from_table(words: &[u32]) -> Result<Self, TableError> {
        let dfa = regex_automata::hybrid::dfa::Builder::new().build_from_nfa(nfa(words)?)?;
        let cache = Mutex::new(dfa.create_cache());
        Ok(Self { dfa, cache })
    }

    /// Whether `haystack` has a match anywhere; stops at the first.
    pub(super) fn is_match(&self, haystack: &[u8]) -> bool {
        let input = Input::new(haystack).earliest(true);
        let found = {
            // A search that panicked left the cache as valid as any: take it back.
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            self.dfa.try_search_fwd(&mut cache, &input)
        };
        match found {
            Ok(found) => found.is_some(),
            // The patterns are ASCII (no quit bytes) and the cache may be cleared without
            // limit, so the lazy DFA does not give up; if it ever does, the NFA decides.
            Err(e) => self.slow_is_match(&input, &e),
        }
    }

    fn slow_is_match(&self, input: &Input<'_>, e: &MatchError) -> bool {
        tracing::warn!(error = %e, "the guard's lazy DFA gave up; searching with the PikeVM");
        match PikeVM::new_from_nfa(self.dfa.get_nfa().clone()) {
            Ok(vm) => vm.is_match(&mut vm.create_cache(), input.clone()),
            Err(e) => {
                tracing::error!(error = %e, "the guard's PikeVM does not build");
                false
            }
        }
    }
}
