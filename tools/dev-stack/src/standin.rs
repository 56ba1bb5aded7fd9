//! The offline LLM stand-in: answers OpenAI chat-completions requests without a model, so
//! the local stack works without any key. It reads the user's last message (English or
//! German) and calls `search_flights` when it finds two airports (IATA codes or known city
//! names), with the dates, cabin, travellers (adults, children, lap infants) and mileage
//! programmes ("I have Miles & More", "mit Aeroplan") it finds; `search_knowledge_base` for
//! questions, and otherwise makes small talk; after a tool round it relays the tool's
//! result. It is a demo aid, not a language model, and says so in its answers.
//!
//! Two markers in a message let a client try what a real model does on a bad day (the web
//! chat's end-to-end test uses them): [`FAIL_ONCE`] and [`SLOW`].

use std::time::Duration;

use serde_json::{Value, json};
use shared::domain::loyalty::PROGRAMMES;
use test_support::fake_llm::Reply;
use time::{Date, Month, OffsetDateTime};

/// Pause between streamed words, so the stream is visibly a stream.
const WORD_DELAY: Duration = Duration::from_millis(25);

/// A message containing this fails like an LLM that is down (HTTP 500 to every attempt, so
/// the turn ends with `error` `llm_error`) the first time its chat sends it; sent again in
/// the same chat (a retry), it is answered as usual.
pub const FAIL_ONCE: &str = "#fail-once";

/// A message containing this is answered slowly, a word every [`SLOW_WORD_DELAY`]: time to
/// stop the turn while it streams.
pub const SLOW: &str = "#slow";

const SLOW_WORD_DELAY: Duration = Duration::from_millis(400);

const CITIES: &[(&str, &str)] = &[
    ("frankfurt", "FRA"),
    ("munich", "MUC"),
    ("münchen", "MUC"),
    ("muenchen", "MUC"),
    ("berlin", "BER"),
    ("hamburg", "HAM"),
    ("düsseldorf", "DUS"),
    ("duesseldorf", "DUS"),
    ("vienna", "VIE"),
    ("wien", "VIE"),
    ("zurich", "ZRH"),
    ("zürich", "ZRH"),
    ("london", "LHR"),
    ("paris", "CDG"),
    ("amsterdam", "AMS"),
    ("madrid", "MAD"),
    ("rome", "FCO"),
    ("rom", "FCO"),
    ("new york", "JFK"),
    ("newyork", "JFK"),
    ("boston", "BOS"),
    ("chicago", "ORD"),
    ("san francisco", "SFO"),
    ("los angeles", "LAX"),
    ("miami", "MIA"),
    ("toronto", "YYZ"),
    ("tokyo", "HND"),
    ("tokio", "HND"),
    ("singapore", "SIN"),
    ("singapur", "SIN"),
    ("bangkok", "BKK"),
    ("dubai", "DXB"),
    ("doha", "DOH"),
    ("sydney", "SYD"),
    ("hong kong", "HKG"),
];

/// Three-letter words that are not airports.
const NOT_AIRPORTS: &[&str] = &[
    "THE", "AND", "FOR", "NOT", "YOU", "ARE", "BUT", "CAN", "HOW", "WHO", "WHY", "ONE", "TWO",
    "UND", "DER", "DIE", "DAS", "MIT", "VON", "WIE", "WAS", "EIN", "AUS", "BIS", "API", "USD",
    "EUR", "NEW", "SAS", "KLM",
];

/// Programme names that also name an airline or a place: they mean the programme only when
/// a word of [`LOYALTY_WORDS`] follows ("Lufthansa miles"), not in "to Singapore" or "with
/// United".
const AIRLINE_NAMES: &[&str] = &[
    "air canada",
    "aeromexico",
    "alaska airlines",
    "alaska",
    "american airlines",
    "american",
    "azul",
    "copa",
    "delta",
    "emirates",
    "ethiopian",
    "etihad",
    "sas",
    "finnair",
    "air france",
    "klm",
    "jetblue",
    "avianca",
    "lufthansa",
    "qantas",
    "qatar airways",
    "qatar",
    "saudia",
    "singapore airlines",
    "singapore",
    "smiles",
    "turkish airlines",
    "turkish",
    "united",
    "velocity",
    "virgin atlantic",
];

/// Words after an airline's name that make it the airline's programme.
const LOYALTY_WORDS: &[&str] = &[
    "miles",
    "meilen",
    "points",
    "punkte",
    "status",
    "account",
    "konto",
    "programme",
    "program",
    "programm",
    "card",
    "karte",
    "member",
    "mitglied",
    "mileage",
    "rewards",
];

/// Nouns counted as travellers: adults, children with a seat, infants on a lap.
const ADULT_WORDS: &[&str] = &[
    "people",
    "persons",
    "passengers",
    "adults",
    "adult",
    "travellers",
    "travelers",
    "personen",
    "erwachsene",
    "erwachsenen",
    "erwachsener",
    "reisende",
    "pax",
];
const CHILD_WORDS: &[&str] = &[
    "child", "children", "kid", "kids", "kind", "kinder", "kindern",
];
const INFANT_WORDS: &[&str] = &[
    "infant",
    "infants",
    "baby",
    "babies",
    "babys",
    "säugling",
    "säuglinge",
    "kleinkind",
    "kleinkinder",
];

const MONTHS: &[(&str, Month)] = &[
    ("january", Month::January),
    ("januar", Month::January),
    ("jan", Month::January),
    ("february", Month::February),
    ("februar", Month::February),
    ("feb", Month::February),
    ("march", Month::March),
    ("märz", Month::March),
    ("maerz", Month::March),
    ("mar", Month::March),
    ("april", Month::April),
    ("apr", Month::April),
    ("may", Month::May),
    ("mai", Month::May),
    ("june", Month::June),
    ("juni", Month::June),
    ("jun", Month::June),
    ("july", Month::July),
    ("juli", Month::July),
    ("jul", Month::July),
    ("august", Month::August),
    ("aug", Month::August),
    ("september", Month::September),
    ("sep", Month::September),
    ("sept", Month::September),
    ("october", Month::October),
    ("oktober", Month::October),
    ("oct", Month::October),
    ("okt", Month::October),
    ("november", Month::November),
    ("nov", Month::November),
    ("december", Month::December),
    ("dezember", Month::December),
    ("dec", Month::December),
    ("dez", Month::December),
];

const QUESTION_WORDS: &[&str] = &[
    "how", "what", "why", "when", "which", "can", "do", "does", "is", "are", "should", "wie",
    "was", "warum", "wann", "welche", "welcher", "kann", "lohnt", "gibt", "sind", "ist",
];

const GREETINGS: &[&str] = &[
    "hi", "hello", "hey", "hallo", "moin", "servus", "guten", "good",
];

/// What the stand-in understood of a flight request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlightIntent {
    pub origin: Option<String>,
    pub destination: Option<String>,
    pub depart_date: Option<Date>,
    pub return_date: Option<Date>,
    pub cabin: Option<&'static str>,
    pub pax: Option<u8>,
    pub children: Option<u8>,
    pub infants: Option<u8>,
    /// Mileage programmes named, by their display names, in the order named.
    pub loyalty_programs: Vec<&'static str>,
}

/// Computes the reply to one chat-completions request body.
pub fn reply(request: &Value, today: Date) -> Reply {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    let german = is_german(&last_user);
    if last_user.contains(FAIL_ONCE) && times_sent(&messages, &last_user) == 1 {
        return Reply::error(
            500,
            format!("stand-in: failing once as asked ({FAIL_ONCE})"),
        );
    }
    let reply = match messages.last() {
        Some(last) if last["role"] == "tool" => text(relay_tool_result(
            last["content"].as_str().unwrap_or(""),
            german,
        )),
        _ => answer_user(&last_user, &offered, &messages, today, german),
    };
    if last_user.contains(SLOW) {
        reply.with_chunk_delay(SLOW_WORD_DELAY)
    } else {
        reply
    }
}

/// A message naming an offered external MCP tool (`<server>__<tool>`) calls it, with the
/// JSON object in the message as its arguments (`{}` without one): how the local stack's
/// example MCP server is tried without a model.
fn external_tool_call(message: &str, offered: &[&str]) -> Option<Reply> {
    let tool = offered
        .iter()
        .find(|name| name.contains("__") && message.contains(**name))?;
    let arguments = message
        .find('{')
        .zip(message.rfind('}'))
        .and_then(|(start, end)| serde_json::from_str::<Value>(message.get(start..=end)?).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    Some(Reply::tool_calls(vec![(*tool, arguments)]))
}

/// How often the chat's history (the request's messages) holds this user message.
fn times_sent(messages: &[Value], message: &str) -> usize {
    messages
        .iter()
        .filter(|m| m["role"] == "user" && m["content"].as_str() == Some(message))
        .count()
}

fn text(content: String) -> Reply {
    Reply::text(content).with_chunk_delay(WORD_DELAY)
}

fn answer_user(
    message: &str,
    offered: &[&str],
    messages: &[Value],
    today: Date,
    german: bool,
) -> Reply {
    if let Some(call) = external_tool_call(message, offered) {
        return call;
    }
    let intent = flight_intent(message, today);
    // The session context arrives as a data block in a system message of its own.
    let has_last_search = messages
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .any(|system| system.contains("last_flight_request"));
    if offered.contains(&"search_flights") {
        match (&intent.origin, &intent.destination) {
            (Some(origin), Some(destination)) => {
                let Some(date) = intent.depart_date else {
                    return text(if german {
                        format!(
                            "An welchem Tag möchten Sie von {origin} nach {destination} fliegen?"
                        )
                    } else {
                        format!("Which day would you like to fly from {origin} to {destination}?")
                    });
                };
                let mut args = json!({
                    "origin": origin,
                    "destination": destination,
                    "depart_date": date.to_string(),
                    "cabin": intent.cabin.unwrap_or("ECONOMY"),
                    "pax": intent.pax.unwrap_or(1),
                });
                if let Some(back) = intent.return_date {
                    args["return_date"] = json!(back.to_string());
                }
                add_travellers_and_programmes(&mut args, &intent);
                return Reply::tool_calls(vec![("search_flights", args)]);
            }
            // "And in first class?" or "with Aeroplan?" after a search: the same search with
            // what changed.
            _ if has_last_search && intent.changes_a_search(message) => {
                let mut args = json!({"reuse_last_request": true});
                if let Some(cabin) = intent.cabin {
                    args["cabin"] = json!(cabin);
                }
                if let Some(date) = intent.depart_date {
                    args["depart_date"] = json!(date.to_string());
                }
                if let Some(pax) = intent.pax {
                    args["pax"] = json!(pax);
                }
                add_travellers_and_programmes(&mut args, &intent);
                return Reply::tool_calls(vec![("search_flights", args)]);
            }
            _ => {}
        }
    }
    if offered.contains(&"search_knowledge_base") && is_question(message) {
        return Reply::tool_calls(vec![("search_knowledge_base", json!({"query": message}))]);
    }
    text(small_talk(message, german))
}

impl FlightIntent {
    /// Whether `message` (this intent's) changes something a follow-up search can take over.
    /// A programme alone does not in a question ("How do Miles & More upgrades work?" is one
    /// for the knowledge base).
    fn changes_a_search(&self, message: &str) -> bool {
        self.cabin.is_some()
            || self.depart_date.is_some()
            || self.pax.is_some()
            || self.children.is_some()
            || self.infants.is_some()
            || (!self.loyalty_programs.is_empty() && !starts_with_question_word(message))
    }
}

/// Children, infants and programmes the message names, as `search_flights` arguments.
fn add_travellers_and_programmes(args: &mut Value, intent: &FlightIntent) {
    if let Some(children) = intent.children {
        args["children"] = json!(children);
    }
    if let Some(infants) = intent.infants {
        args["infants"] = json!(infants);
    }
    if !intent.loyalty_programs.is_empty() {
        args["loyalty_programs"] = json!(intent.loyalty_programs);
    }
}

/// The text inside a data block (`<<<DATA … >>>` … `<<<END …>>>`), or all of it.
fn unfenced(content: &str) -> &str {
    let content = content.trim();
    match (content.find(">>>\n"), content.rfind("\n<<<END ")) {
        (Some(start), Some(end)) if content.starts_with("<<<DATA ") && start + 4 <= end => {
            &content[start + 4..end]
        }
        _ => content,
    }
}

fn relay_tool_result(content: &str, german: bool) -> String {
    let content = unfenced(content).trim();
    // `[rejected] Invalid arguments …`: written for a model to act on, not for a traveller.
    if content.starts_with('[') {
        return if german {
            "Das hat gerade leider nicht geklappt. Versuche es bitte gleich noch einmal oder formuliere es anders.".to_owned()
        } else {
            "Sorry, that did not work just now. Please try again in a moment or put it differently."
                .to_owned()
        };
    }
    // The tools phrase their results for the chat already; relay them, cut at a line end.
    let cut: String = content.chars().take(1200).collect();
    if cut.len() < content.len()
        && let Some(end) = cut.rfind('\n')
    {
        return format!("{}\n…", cut[..end].trim_end());
    }
    cut
}

fn small_talk(message: &str, german: bool) -> String {
    let lower = message.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let greeting = words.first().is_some_and(|w| GREETINGS.contains(w));
    let thanks = words
        .iter()
        .any(|w| matches!(*w, "thanks" | "thank" | "danke" | "merci"));
    match (german, greeting, thanks) {
        (true, _, true) => "Gern geschehen!".to_owned(),
        (false, _, true) => "You're welcome!".to_owned(),
        (true, true, _) => "Hallo! Ich bin der Offline-Platzhalter für das Sprachmodell. \
            Fragen Sie zum Beispiel: „Business Class von Frankfurt nach New York am 15.03.“ \
            oder „Wie funktionieren Treibstoffzuschläge?“"
            .to_owned(),
        (false, true, _) => "Hello! I am the offline stand-in for the language model. Try \
            \"Business class from Frankfurt to New York on 15 March\" or \"How do fuel \
            surcharges work?\""
            .to_owned(),
        (true, false, _) => "In dieser Demo kann ich Flüge suchen und Fragen aus der \
            Wissensdatenbank beantworten; für freie Antworten braucht es ein echtes Sprachmodell."
            .to_owned(),
        (false, false, _) => "In this demo I can search flights and answer questions from \
            the knowledge base; free-form answers need a real language model."
            .to_owned(),
    }
}

fn is_german(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains(['ä', 'ö', 'ü', 'ß'])
        || lower.split_whitespace().any(|w| {
            matches!(
                w.trim_matches(|c: char| !c.is_alphanumeric()),
                "ich"
                    | "nach"
                    | "von"
                    | "wie"
                    | "was"
                    | "und"
                    | "der"
                    | "die"
                    | "das"
                    | "flug"
                    | "flüge"
                    | "mit"
                    | "am"
                    | "hallo"
                    | "bitte"
                    | "meilen"
                    | "klasse"
            )
        })
}

fn is_question(text: &str) -> bool {
    text.contains('?') || starts_with_question_word(text)
}

fn starts_with_question_word(text: &str) -> bool {
    text.to_lowercase()
        .split_whitespace()
        .next()
        .is_some_and(|w| QUESTION_WORDS.contains(&w))
}

/// Reads airports, dates, cabin and passengers from a message.
pub fn flight_intent(message: &str, today: Date) -> FlightIntent {
    let lower = message.to_lowercase();
    let mut airports: Vec<(usize, String)> = Vec::new();
    for (city, code) in CITIES {
        if let Some(at) = find_word(&lower, city) {
            airports.push((at, (*code).to_owned()));
        }
    }
    let mut offset = 0;
    for word in message.split_inclusive(|c: char| !c.is_alphanumeric()) {
        let token = word.trim_end_matches(|c: char| !c.is_alphanumeric());
        if token.len() == 3
            && token.chars().all(|c| c.is_ascii_uppercase())
            && !NOT_AIRPORTS.contains(&token)
        {
            airports.push((offset, token.to_owned()));
        }
        offset += word.len();
    }
    airports.sort();
    airports.dedup_by(|a, b| a.1 == b.1);
    let dates = dates_in(&lower, today);
    FlightIntent {
        origin: airports.first().map(|a| a.1.clone()),
        destination: airports.get(1).map(|a| a.1.clone()),
        depart_date: dates.first().copied(),
        return_date: dates
            .get(1)
            .copied()
            .filter(|d| Some(*d) > dates.first().copied()),
        cabin: cabin_in(&lower),
        pax: count_of(&lower, ADULT_WORDS).map(|n| n.clamp(1, 9)),
        children: count_of(&lower, CHILD_WORDS).map(|n| n.min(8)),
        infants: count_of(&lower, INFANT_WORDS).map(|n| n.min(9)),
        loyalty_programs: programmes_in(message),
    }
}

/// The programmes a message names, by display name, each once, in the order named. At each
/// word the longest programme name there counts ("Turkish Miles&Smiles" is Turkish's, not
/// GOL's Smiles); an airline's or a place's name only with a loyalty word after it.
fn programmes_in(message: &str) -> Vec<&'static str> {
    let words = words_of(message);
    let mut found: Vec<&'static str> = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let Some((len, display, name)) = longest_programme_at(&words, at) else {
            at += 1;
            continue;
        };
        let bare = AIRLINE_NAMES.contains(&name.join(" ").as_str());
        let cued = words
            .get(at + len)
            .is_some_and(|w| LOYALTY_WORDS.contains(&w.as_str()));
        if (!bare || cued) && !found.contains(&display) {
            found.push(display);
        }
        at += len;
    }
    found
}

/// The longest programme name starting at word `at`: its length in words, the programme's
/// display name and the name's words.
fn longest_programme_at(words: &[String], at: usize) -> Option<(usize, &'static str, Vec<String>)> {
    let mut best: Option<(usize, &'static str, Vec<String>)> = None;
    for programme in PROGRAMMES {
        let Some(display) = programme.names.first() else {
            continue;
        };
        for name in programme.names {
            let name = words_of(name);
            let len = name.len();
            if len > 0
                && words.get(at..at + len) == Some(&name[..])
                && best.as_ref().is_none_or(|b| len > b.0)
            {
                best = Some((len, display, name));
            }
        }
    }
    best
}

/// Lower-case words of letters and digits; "&" is the word "and", as programme names are
/// compared ("Miles&More" is "Miles and More").
fn words_of(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
            continue;
        }
        if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c == '&' {
            words.push("and".to_owned());
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Where `needle` occurs as whole words in `haystack` ("rom" is not in "from").
fn find_word(haystack: &str, needle: &str) -> Option<usize> {
    haystack
        .match_indices(needle)
        .map(|(at, _)| at)
        .find(|&at| {
            let before = haystack[..at].chars().next_back();
            let after = haystack[at + needle.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
}

fn cabin_in(lower: &str) -> Option<&'static str> {
    if lower.contains("premium") {
        Some("PREMIUM_ECONOMY")
    } else if lower.contains("business") || lower.contains("geschäftsklasse") {
        Some("BUSINESS")
    } else if lower.contains("first") || lower.contains("erste") || lower.contains("first-class") {
        Some("FIRST")
    } else if lower.contains("economy") || lower.contains("holzklasse") {
        Some("ECONOMY")
    } else {
        None
    }
}

/// The number before one of `nouns`: "2 adults", "zwei Erwachsene", "a child", "mit einem
/// Kind".
fn count_of(lower: &str, nouns: &[&str]) -> Option<u8> {
    let words: Vec<&str> = lower.split_whitespace().collect();
    words.windows(2).find_map(|pair| {
        let number = pair[0].trim_matches(|c: char| !c.is_alphanumeric());
        let n: u8 = match number {
            "a" | "an" | "one" | "ein" | "eine" | "einem" | "einen" | "einer" | "eins" => 1,
            "two" | "zwei" => 2,
            "three" | "drei" => 3,
            "four" | "vier" => 4,
            "five" | "fünf" => 5,
            other => other.parse().ok()?,
        };
        let noun = pair[1].trim_matches(|c: char| !c.is_alphanumeric());
        nouns.contains(&noun).then_some(n)
    })
}

/// Dates in the order they appear: `2027-03-15`, `15.03.2027`, `15.3.`, `15 March 2027`,
/// `March 15`, `15. März`, `tomorrow`/`morgen`. A date without a year is the next one to come.
fn dates_in(lower: &str, today: Date) -> Vec<Date> {
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let mut found = Vec::new();
    for (i, raw) in words.iter().enumerate() {
        let word = raw.trim_end_matches(['?', '!', ')']);
        if let Some(date) = iso_date(word).or_else(|| dotted_date(word, today)) {
            found.push(date);
            continue;
        }
        if matches!(word, "tomorrow" | "morgen") {
            found.push(today.next_day().unwrap_or(today));
            continue;
        }
        if let Some(month) = month_of(word) {
            // "15 march [2027]" or "15. märz" (day before) or "march 15[, 2027]" (day after).
            let before = i
                .checked_sub(1)
                .and_then(|j| day_of(words[j]))
                .map(|day| (day, words.get(i + 1).and_then(|w| year_of(w))));
            let after = words
                .get(i + 1)
                .and_then(|w| day_of(w))
                .map(|day| (day, words.get(i + 2).and_then(|w| year_of(w))));
            if let Some((day, year)) = before.or(after)
                && let Some(date) = resolve(year, month, day, today)
            {
                found.push(date);
            }
        }
    }
    found
}

fn iso_date(word: &str) -> Option<Date> {
    let parts: Vec<&str> = word.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return None;
    };
    let month = Month::try_from(m.parse::<u8>().ok()?).ok()?;
    Date::from_calendar_date(y.parse().ok()?, month, d.parse().ok()?).ok()
}

fn dotted_date(word: &str, today: Date) -> Option<Date> {
    let parts: Vec<&str> = word.trim_end_matches('.').split('.').collect();
    let (day, month, year) = match parts.as_slice() {
        [d, m] => (d, m, None),
        [d, m, y] => (d, m, Some(y.parse::<i32>().ok()?)),
        _ => return None,
    };
    let month = Month::try_from(month.parse::<u8>().ok()?).ok()?;
    resolve(year, month, day.parse().ok()?, today)
}

fn month_of(word: &str) -> Option<Month> {
    let word = word.trim_end_matches('.');
    MONTHS
        .iter()
        .find(|(name, _)| *name == word)
        .map(|(_, m)| *m)
}

fn day_of(word: &str) -> Option<u8> {
    let digits = word.trim_end_matches(|c: char| !c.is_ascii_digit());
    let digits = digits.trim_end_matches(['s', 't', 'n', 'd', 'r', 'h']);
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn year_of(word: &str) -> Option<i32> {
    word.parse().ok().filter(|y| (2000..=2100).contains(y))
}

fn resolve(year: Option<i32>, month: Month, day: u8, today: Date) -> Option<Date> {
    match year {
        Some(year) => Date::from_calendar_date(year, month, day).ok(),
        None => {
            let this_year = Date::from_calendar_date(today.year(), month, day).ok()?;
            if this_year >= today {
                Some(this_year)
            } else {
                Date::from_calendar_date(today.year() + 1, month, day).ok()
            }
        }
    }
}

/// Today's date, for requests that say "tomorrow" or leave out the year.
pub fn today() -> Date {
    OffsetDateTime::now_utc().date()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    const TODAY: Date = date!(2026 - 11 - 22);

    #[test]
    fn english_and_german_flight_requests() {
        let en = flight_intent(
            "Business class from Frankfurt to New York on 2027-03-15, back March 22 2027, for 2 people",
            TODAY,
        );
        assert_eq!(en.origin.as_deref(), Some("FRA"));
        assert_eq!(en.destination.as_deref(), Some("JFK"));
        assert_eq!(en.depart_date, Some(date!(2027 - 03 - 15)));
        assert_eq!(en.return_date, Some(date!(2027 - 03 - 22)));
        assert_eq!(en.cabin, Some("BUSINESS"));
        assert_eq!(en.pax, Some(2));

        let de = flight_intent("Erste Klasse von MUC nach SIN am 3. März", TODAY);
        assert_eq!(de.origin.as_deref(), Some("MUC"));
        assert_eq!(de.destination.as_deref(), Some("SIN"));
        assert_eq!(de.depart_date, Some(date!(2027 - 03 - 03)), "next March");
        assert_eq!(de.cabin, Some("FIRST"));

        let dotted = flight_intent("Flug ZRH nach JFK am 15.03.2027", TODAY);
        assert_eq!(dotted.depart_date, Some(date!(2027 - 03 - 15)));
        assert_eq!(dotted.cabin, None);
    }

    /// The programmes' sources, as the search maps the names the stand-in passes.
    fn sources(message: &str) -> Vec<&'static str> {
        let names: Vec<String> = flight_intent(message, TODAY)
            .loyalty_programs
            .iter()
            .map(|n| (*n).to_owned())
            .collect();
        let (sources, unknown) = shared::domain::loyalty::sources_for(&names);
        assert!(unknown.is_empty(), "{unknown:?}");
        sources
    }

    #[test]
    fn programmes_are_read_in_english_and_german() {
        let en = flight_intent(
            "I have Miles & More, business FRA to JFK on 2027-03-15",
            TODAY,
        );
        assert_eq!(en.loyalty_programs, ["Miles & More"]);
        assert_eq!(
            sources("Flug von MUC nach YUL am 3. März mit Aeroplan"),
            ["aeroplan"]
        );
        assert_eq!(
            sources("Use my United MileagePlus miles from SFO to LHR"),
            ["united"]
        );
        assert_eq!(
            sources("Ich sammle Lufthansa-Meilen, FRA nach JFK"),
            ["lufthansa"]
        );
        assert_eq!(
            sources("with miles and more or Flying Blue, FRA to CDG"),
            ["flyingblue", "lufthansa"]
        );
        // The longest name counts: Turkish's programme, not GOL's Smiles.
        assert_eq!(sources("mit Turkish Miles&Smiles nach IST"), ["turkish"]);
    }

    #[test]
    fn airlines_and_places_are_not_programmes_without_miles() {
        for message in [
            "Business class from Frankfurt to Singapore on 15 March",
            "Flights with United from EWR to FRA",
            "Dubai, United Arab Emirates, from MUC",
            "How do miles upgrades work?",
        ] {
            let intent = flight_intent(message, TODAY);
            assert!(intent.loyalty_programs.is_empty(), "{message}: {intent:?}");
        }
        let sas = flight_intent("SAS EuroBonus from CPH to ARN", TODAY);
        assert_eq!(sas.origin.as_deref(), Some("CPH"));
        assert_eq!(sas.loyalty_programs.len(), 1);
    }

    #[test]
    fn children_and_infants_are_counted_in_english_and_german() {
        let en = flight_intent("FRA to JFK for 2 adults and 1 child and a baby", TODAY);
        assert_eq!(
            (en.pax, en.children, en.infants),
            (Some(2), Some(1), Some(1))
        );
        let de = flight_intent("Von Hamburg nach Wien mit einem Kind", TODAY);
        assert_eq!((de.pax, de.children, de.infants), (None, Some(1), None));
        let de = flight_intent("zwei Erwachsene und zwei Kinder nach Rom", TODAY);
        assert_eq!((de.pax, de.children), (Some(2), Some(2)));
    }

    #[test]
    fn programmes_and_children_reach_the_search_call() {
        let tools = json!([{"type": "function", "function": {"name": "search_flights"}}]);
        let ask = |messages: Value| json!({"messages": messages, "tools": tools});
        let call = |r: Reply| format!("{r:?}");
        let first = call(reply(
            &ask(json!([{"role": "user",
                "content": "I have Miles & More: FRA to JFK on 2027-03-15 for 2 adults and 1 child"}])),
            TODAY,
        ));
        assert!(first.contains("search_flights"), "{first}");
        for expected in [
            "loyalty_programs",
            "Miles & More",
            "children",
            "\\\"pax\\\":2",
        ] {
            assert!(first.contains(expected), "{expected} in {first}");
        }
        let follow_up = |message: &str| {
            call(reply(
                &ask(json!([
                    {"role": "system", "content": "<<<DATA last_flight_request>>>"},
                    {"role": "user", "content": message}
                ])),
                TODAY,
            ))
        };
        let aeroplan = follow_up("Und mit Aeroplan?");
        assert!(
            aeroplan.contains("reuse_last_request") && aeroplan.contains("Aeroplan"),
            "{aeroplan}"
        );
        let question = follow_up("How do Miles & More upgrades work?");
        assert!(!question.contains("search_flights"), "{question}");
    }

    #[test]
    fn a_flight_request_becomes_a_search_call_and_a_question_a_kb_call() {
        let tools = json!([
            {"type": "function", "function": {"name": "search_flights"}},
            {"type": "function", "function": {"name": "search_knowledge_base"}}
        ]);
        let ask = |message: &str| json!({"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": message}], "tools": tools});
        let debug = |r: Reply| format!("{r:?}");
        let flight = debug(reply(&ask("Business FRA to JFK on 2027-03-15"), TODAY));
        assert!(
            flight.contains("search_flights") && flight.contains("2027-03-15"),
            "{flight}"
        );
        let kb = debug(reply(&ask("How do fuel surcharges work?"), TODAY));
        assert!(kb.contains("search_knowledge_base"), "{kb}");
        let hello = debug(reply(&ask("Hallo!"), TODAY));
        assert!(hello.contains("Offline-Platzhalter"), "{hello}");
        let no_date = debug(reply(&ask("Flights from Paris to Tokyo"), TODAY));
        assert!(no_date.contains("Which day"), "{no_date}");
    }

    /// The greeting's examples search a day to come whenever a user tries them.
    #[test]
    fn the_greetings_examples_search_a_day_to_come() {
        for today in [TODAY, date!(2029 - 03 - 16), date!(2030 - 12 - 31)] {
            for example in [
                "Business class from Frankfurt to New York on 15 March",
                "Business Class von Frankfurt nach New York am 15.03.",
            ] {
                let date = flight_intent(example, today).depart_date;
                assert!(
                    date.is_some_and(|d| d >= today),
                    "{example} on {today}: {date:?}"
                );
            }
        }
    }

    #[test]
    fn fail_once_fails_the_first_time_a_chat_sends_it_and_slow_streams_slowly() {
        let user = |m: &str| json!({"role": "user", "content": m});
        let ask = |history: Vec<Value>| json!({"messages": history, "tools": []});
        let message = "Hello #fail-once 17";
        let first = format!("{:?}", reply(&ask(vec![user(message)]), TODAY));
        assert!(first.contains("status: 500"), "{first}");
        // The failed turn stored the message; the retry's history has it twice.
        let retry = format!(
            "{:?}",
            reply(&ask(vec![user(message), user(message)]), TODAY)
        );
        assert!(
            !retry.contains("Status") && retry.contains("Hello!"),
            "{retry}"
        );
        let slow = format!("{:?}", reply(&ask(vec![user("Hello #slow")]), TODAY));
        assert!(slow.contains("chunk_delay: 400ms"), "{slow}");
        let quick = format!("{:?}", reply(&ask(vec![user("Hello")]), TODAY));
        assert!(quick.contains("chunk_delay: 25ms"), "{quick}");
    }

    #[test]
    fn a_message_naming_an_offered_external_tool_calls_it() {
        let tools = json!([
            {"type": "function", "function": {"name": "search_flights"}},
            {"type": "function", "function": {"name": "notes__lookup"}}
        ]);
        let ask = |message: &str| json!({"messages": [{"role": "user", "content": message}], "tools": tools});
        let call = |message: &str| format!("{:?}", reply(&ask(message), TODAY));
        let called = call("Ask notes__lookup about {\"route\": \"FRA-JFK\"}");
        assert!(
            called.contains("notes__lookup") && called.contains("FRA-JFK"),
            "{called}"
        );
        let bare = call("notes__lookup please");
        assert!(
            bare.contains("notes__lookup") && bare.contains("{}"),
            "{bare}"
        );
        let not_offered = call("notes__other {\"a\": 1}");
        assert!(!not_offered.contains("notes__other"), "{not_offered}");
    }

    #[test]
    fn fenced_tool_results_are_relayed_without_the_fence() {
        let fenced = "<<<DATA B1 source=\"tool x\">>>\nMeilen verfallen.\n<<<END B1>>>";
        assert_eq!(relay_tool_result(fenced, true), "Meilen verfallen.");
        assert_eq!(relay_tool_result("plain", false), "plain");
    }

    #[test]
    fn tool_results_are_relayed() {
        let request = json!({"messages": [
            {"role": "user", "content": "Wie lange gelten Meilen?"},
            {"role": "assistant", "content": "", "tool_calls": []},
            {"role": "tool", "tool_call_id": "c1", "content": "Meilen verfallen nach 36 Monaten."}
        ]});
        let answer = format!("{:?}", reply(&request, TODAY));
        assert!(answer.contains("36 Monaten"), "{answer}");
    }
}
