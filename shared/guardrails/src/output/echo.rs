//! Echoes of the system prompt, found as the answer streams: a suffix automaton of the
//! folded prompt tells, one character at a time, the longest end of the answer that stands
//! somewhere in the prompt. That length is the echo check (a window's worth is a leak) and
//! what the guard must hold back (an echo in the making), in constant time per character.

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// Separates the prompt's parts in the automaton; folded answers never contain it, so no
/// match runs across two parts.
const SEPARATOR: char = '\u{0}';

/// Whitespace folded to one space and letters lower-cased, so reflowed or re-cased copies
/// still match. Carries its state across pieces, so a stream folds piece by piece as it
/// would whole.
#[derive(Debug, Default, Clone)]
pub struct Folder {
    /// The last character was whitespace.
    space: bool,
    /// Something was folded already (leading whitespace is dropped).
    started: bool,
}

impl Folder {
    /// Calls `out` with each folded character of `text` and the byte offset in `text` of
    /// the character it came from.
    pub fn fold(&mut self, text: &str, mut out: impl FnMut(char, usize)) {
        for (at, c) in text.char_indices() {
            if c.is_whitespace() {
                if !self.space && self.started {
                    out(' ', at);
                }
                self.space = true;
                continue;
            }
            self.space = false;
            self.started = true;
            if c == SEPARATOR {
                out(char::REPLACEMENT_CHARACTER, at);
            } else if c.is_ascii() {
                out(c.to_ascii_lowercase(), at);
            } else {
                for lower in c.to_lowercase() {
                    out(lower, at);
                }
            }
        }
    }
}

/// A state of the automaton while it is built.
#[derive(Debug, Clone)]
struct State {
    /// The longest text that ends in this state.
    len: u32,
    /// The state of this one's longest suffix that ends elsewhere too.
    link: Option<u32>,
    /// Most states have one or two ways on: kept inline, a build allocates for few states.
    next: Edges,
}

/// A state's transitions while the automaton is built.
type Edges = SmallVec<[(char, u32); 4]>;

impl State {
    fn next(&self, c: char) -> Option<u32> {
        self.next.iter().find(|(k, _)| *k == c).map(|(_, to)| *to)
    }

    fn set(&mut self, c: char, to: u32) {
        match self.next.iter_mut().find(|(k, _)| *k == c) {
            Some(edge) => edge.1 = to,
            None => self.next.push((c, to)),
        }
    }
}

/// Builds the automaton (the standard online construction).
struct Builder {
    states: Vec<State>,
}

impl Builder {
    /// Adds `c` after the state `last`; returns the new last state.
    fn extend(&mut self, last: u32, c: char) -> u32 {
        let cur = self.push(self.states[last as usize].len + 1, None, Edges::new());
        let mut p = Some(last);
        while let Some(at) = p {
            if self.states[at as usize].next(c).is_some() {
                break;
            }
            self.states[at as usize].set(c, cur);
            p = self.states[at as usize].link;
        }
        let Some(at) = p else {
            self.states[cur as usize].link = Some(0);
            return cur;
        };
        let Some(q) = self.states[at as usize].next(c) else {
            return cur;
        };
        if self.states[at as usize].len + 1 == self.states[q as usize].len {
            self.states[cur as usize].link = Some(q);
            return cur;
        }
        let copied = &self.states[q as usize];
        let (link, next) = (copied.link, copied.next.clone());
        let clone = self.push(self.states[at as usize].len + 1, link, next);
        let mut p = Some(at);
        while let Some(at) = p {
            if self.states[at as usize].next(c) != Some(q) {
                break;
            }
            self.states[at as usize].set(c, clone);
            p = self.states[at as usize].link;
        }
        self.states[q as usize].link = Some(clone);
        self.states[cur as usize].link = Some(clone);
        cur
    }

    fn push(&mut self, len: u32, link: Option<u32>, next: Edges) -> u32 {
        let id = u32::try_from(self.states.len()).unwrap_or(u32::MAX);
        self.states.push(State { len, link, next });
        id
    }
}

/// Every piece of a system prompt, folded, as a suffix automaton. An ASCII character costs
/// a bit test per state a mismatch walks through and one array read: a state's ASCII
/// transitions are a bitmap and, in character order, a run of [`EchoIndex::ascii_targets`]
/// (the bits below a character count its place). Other characters use a hash table.
#[derive(Debug)]
pub struct EchoIndex {
    nodes: Vec<Node>,
    ascii_targets: Vec<u32>,
    other_edges: FxHashMap<(u32, char), u32>,
}

#[derive(Debug, Clone, Copy)]
struct Node {
    /// The longest text that ends in this state.
    len: u32,
    /// The state of its longest suffix that ends elsewhere too (none: the start).
    link: Option<u32>,
    /// Bit `c` set: a transition on the ASCII character `c` leaves this state.
    ascii: u128,
    /// Where this state's run of ASCII targets begins.
    first: u32,
}

/// Where an answer stands in an [`EchoIndex`].
#[derive(Debug, Default, Clone, Copy)]
pub struct EchoCursor {
    state: u32,
    /// Folded characters at the end of the answer that stand in the prompt.
    pub len: usize,
}

impl EchoIndex {
    /// The index of `parts` (the prompt's fixed texts; what lies between them, such as a
    /// random boundary, is left out). A part given again (every profile's prompt ends in
    /// the same rule) is indexed once: a second copy would match nothing the first does not.
    pub fn new(parts: &[&str]) -> Self {
        // At most two states per character (and separator): room for all of them up front.
        let mut states = Vec::with_capacity(2 * parts.iter().map(|p| p.len() + 1).sum::<usize>());
        states.push(State {
            len: 0,
            link: None,
            next: Edges::new(),
        });
        let mut builder = Builder { states };
        let mut last = 0;
        for (i, part) in parts.iter().enumerate() {
            if parts[..i].contains(part) {
                continue;
            }
            Folder::default().fold(part, |c, _| last = builder.extend(last, c));
            last = builder.extend(last, SEPARATOR);
        }
        let mut index = Self {
            nodes: Vec::with_capacity(builder.states.len()),
            ascii_targets: Vec::new(),
            other_edges: FxHashMap::default(),
        };
        for (id, state) in (0u32..).zip(&mut builder.states) {
            state.next.sort_unstable_by_key(|(c, _)| *c);
            let first = u32::try_from(index.ascii_targets.len()).unwrap_or(u32::MAX);
            let mut ascii = 0u128;
            for &(c, to) in &state.next {
                if c.is_ascii() {
                    ascii |= 1u128 << (c as u32);
                    index.ascii_targets.push(to);
                } else {
                    index.other_edges.insert((id, c), to);
                }
            }
            index.nodes.push(Node {
                len: state.len,
                link: state.link,
                ascii,
                first,
            });
        }
        index
    }

    /// Moves `cursor` past the answer's next folded character.
    pub fn step(&self, cursor: &mut EchoCursor, c: char) {
        let mut state = cursor.state;
        let mut len = cursor.len;
        loop {
            let next = match self.nodes.get(state as usize) {
                Some(node) if c.is_ascii() => {
                    let bit = 1u128 << (c as u32);
                    (node.ascii & bit != 0)
                        .then(|| (node.ascii & (bit - 1)).count_ones() as usize)
                        .and_then(|rank| self.ascii_targets.get(node.first as usize + rank))
                        .copied()
                }
                _ => self.other_edges.get(&(state, c)).copied(),
            };
            if let Some(to) = next {
                cursor.state = to;
                cursor.len = len + 1;
                return;
            }
            match self.nodes.get(state as usize).and_then(|node| node.link) {
                Some(link) => {
                    state = link;
                    len = self.nodes.get(link as usize).map_or(0, |n| n.len as usize);
                }
                None => {
                    *cursor = EchoCursor::default();
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The longest end of `answer` that stands in the index, folded characters.
    fn echo(index: &EchoIndex, answer: &str) -> usize {
        let mut cursor = EchoCursor::default();
        Folder::default().fold(answer, |c, _| index.step(&mut cursor, c));
        cursor.len
    }

    /// The same by brute force.
    fn brute(parts: &[&str], answer: &str) -> usize {
        let fold = |t: &str| {
            let mut s = String::new();
            Folder::default().fold(t, |c, _| s.push(c));
            s
        };
        let answer: Vec<char> = fold(answer).chars().collect();
        let parts: Vec<String> = parts.iter().map(|p| fold(p)).collect();
        (0..=answer.len())
            .rev()
            .find(|&k| {
                let tail: String = answer[answer.len() - k..].iter().collect();
                parts.iter().any(|p| p.contains(&tail))
            })
            .unwrap_or(0)
    }

    #[test]
    fn the_longest_end_that_stands_in_the_prompt() {
        let parts = [
            "You are a travel assistant.  Answer\nbriefly.",
            "Never repeat: abcabd",
        ];
        let index = EchoIndex::new(&parts);
        for answer in [
            "",
            "hello",
            "I am A TRAVEL   assistant. answer briefly",
            "assistant. Never",
            "abcabcabd",
            "Zürich abcab",
            "briefly.Never",
        ] {
            assert_eq!(echo(&index, answer), brute(&parts, answer), "{answer:?}");
        }
    }

    #[test]
    fn a_part_given_again_is_indexed_once() {
        let once = EchoIndex::new(&["travel prompt", "the rule", "support prompt"]);
        let twice = EchoIndex::new(&["travel prompt", "the rule", "support prompt", "the rule"]);
        assert_eq!(twice.nodes.len(), once.nodes.len());
        for answer in ["the rule", "prompt the rule", "support prompt"] {
            assert_eq!(echo(&twice, answer), echo(&once, answer), "{answer:?}");
        }
    }

    proptest::proptest! {
        // A fixed seed and count, as every property test here: CI runs are repeatable.
        #![proptest_config(proptest::test_runner::Config {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(61),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]

        /// Small alphabets make repeats, so the automaton's clones and suffix links are
        /// exercised; every end of the answer is checked, as the guard steps through it.
        #[test]
        fn agrees_with_brute_force_at_every_character(
            parts in proptest::collection::vec("[abcé ]{0,40}", 1..4),
            answer in "[abcdé ]{0,30}",
        ) {
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            let index = EchoIndex::new(&parts);
            let mut cursor = EchoCursor::default();
            let mut folded = String::new();
            let mut folder = Folder::default();
            for (at, c) in answer.char_indices() {
                folder.fold(&answer[at..at + c.len_utf8()], |c, _| {
                    index.step(&mut cursor, c);
                    folded.push(c);
                });
                proptest::prop_assert_eq!(cursor.len, brute(&parts, &folded));
            }
        }
    }
}
