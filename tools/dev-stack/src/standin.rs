//! The offline LLM stand-in: answers OpenAI chat-completions requests without a model, so
//! the local stack works without any key. It reads the user's last message (English or
//! German, and answers in that language) and scripts what a model would do with the tools
//! the request offers:
//!
//! - two airports (IATA codes or known city names) call `search_flights` with the dates,
//!   cabin, travellers (adults, children, lap infants) and mileage programmes ("I have
//!   Miles & More", "mit Aeroplan") it finds, with `suggest_replies` beside it (follow-ups
//!   that work: another cabin, a day later, a fare alert); without a date it asks which
//!   day, and a message with only a date then searches that route. "And in first class?"
//!   or "a day later" after a search changes the last search; a pick from its list ("2",
//!   "option 2", "Nr. 2", "die zweite") calls `select_flight`;
//! - "Alert me when FRA to JFK in March drops below 60,000 miles" calls `create_fare_alert`
//!   (the runtime then asks the user to approve it); once approved or denied, it says how
//!   that ended;
//! - a refund, baggage, a booking problem or a wish for a human hands the turn to the
//!   `support` agent, which answers it (and hands flight requests back to `travel`);
//! - a question calls `search_knowledge_base`, whose passages it sums up in two or three
//!   sentences with their sources; greetings, thanks and "how are you" get one sentence.
//!
//! After any other tool round it relays the tool's result. It is a demo aid, not a language
//! model, and says so in its answers.
//!
//! Two markers in a message let a client try what a real model does on a bad day (the web
//! chat's end-to-end test uses them): [`FAIL_ONCE`] and [`SLOW`].

mod alert;
mod knowledge;
mod pick;
mod support;
mod window;

use std::time::Duration;

use serde_json::{Value, json};
use shared::domain::alert::date_range;
use shared::domain::flight::Locale;
use shared::domain::loyalty::PROGRAMMES;
use shared::domain::session::{FlightRequestSnapshot, PendingFlightRequest};
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

/// How the stand-in's question for a missing day begins (English, German, and German as it
/// was worded before the texts said "du"): a message with only a date answers it.
/// How the stand-in's question for a week of a range too wide to search begins.
const WHICH_WEEK: [&str; 2] = ["One search covers at most", "Eine Suche umfasst höchstens"];
const WHICH_DAY: [&str; 3] = [
    "Which day would you like to fly",
    "An welchem Tag möchtest du",
    "An welchem Tag möchten Sie",
];

/// The tool that hands the turn to the support agent, and the one that hands it back.
const TO_SUPPORT: &str = "transfer_to_support";
const TO_TRAVEL: &str = "transfer_to_travel";
const HANDOFF_PREFIX: &str = "transfer_to_";

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

/// Words a greeting, thanks or "how are you" are made of: a message of only these is small
/// talk, never a knowledge-base question ("How are you?").
const SMALL_TALK: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "hallo",
    "moin",
    "servus",
    "guten",
    "good",
    "morning",
    "morgen",
    "tag",
    "abend",
    "evening",
    "afternoon",
    "day",
    "there",
    "all",
    "everyone",
    "thanks",
    "thank",
    "you",
    "danke",
    "dankeschön",
    "vielen",
    "dank",
    "schön",
    "sehr",
    "merci",
    "cheers",
    "how",
    "are",
    "doing",
    "is",
    "it",
    "going",
    "what",
    "whats",
    "up",
    "s",
    "wie",
    "geht",
    "gehts",
    "es",
    "dir",
    "euch",
    "ihnen",
    "bye",
    "goodbye",
    "tschüss",
    "tschüs",
    "ciao",
    "bis",
    "bald",
    "ok",
    "okay",
    "cool",
    "great",
    "super",
    "prima",
    "perfect",
    "perfekt",
    "nice",
    "fine",
    "gut",
    "alles",
    "klar",
    "so",
    "much",
    "very",
    "a",
    "lot",
    "and",
    "und",
    "too",
    "auch",
    "mir",
];

/// What the stand-in understood of a flight request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlightIntent {
    pub origin: Option<String>,
    pub destination: Option<String>,
    pub depart_date: Option<Date>,
    pub return_date: Option<Date>,
    /// Days either side of `depart_date` (a flexible date, or the middle of a range).
    pub flexibility: Option<u8>,
    pub cabin: Option<&'static str>,
    pub pax: Option<u8>,
    pub children: Option<u8>,
    pub infants: Option<u8>,
    /// Mileage programmes named, by their display names, in the order named.
    pub loyalty_programs: Vec<&'static str>,
    /// A range wider than one search takes (its first and last day): asked about, not
    /// searched.
    pub too_wide: Option<(Date, Date)>,
}

/// What the session context (a data block in a system message) says about flights.
#[derive(Debug, Clone, Default)]
struct SessionContext {
    /// It names a last search: follow-ups ("and in first class?") change that search.
    has_last_search: bool,
    last: Option<FlightRequestSnapshot>,
    /// A search being gathered over the turns (a route still without a date, say).
    pending: Option<PendingFlightRequest>,
}

/// One request as the stand-in sees it.
struct Ask<'a> {
    messages: &'a [Value],
    /// The tools offered, by name.
    offered: Vec<&'a str>,
    context: SessionContext,
    /// The agent a handoff of this turn handed it to, if one did.
    agent: Option<String>,
    today: Date,
    german: bool,
}

impl Ask<'_> {
    fn offers(&self, tool: &str) -> bool {
        self.offered.contains(&tool)
    }

    /// The support agent answers: a handoff reached it, or it offers the way back.
    fn is_support(&self) -> bool {
        match &self.agent {
            Some(agent) => agent == "support",
            None => self.offers(TO_TRAVEL),
        }
    }
}

/// Computes the reply to one chat-completions request body. `today` is the date when the
/// request does not say the user's ("Today is 2027-03-01." in the runtime's system prompt).
pub fn reply(request: &Value, today: Date) -> Reply {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let today = users_today(&messages).unwrap_or(today);
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let last_user = user_messages(&messages)
        .last()
        .map(|(_, content)| (*content).to_owned())
        .unwrap_or_default();
    let german = is_german(&last_user);
    if last_user.contains(FAIL_ONCE) && times_sent(&messages, &last_user) == 1 {
        return Reply::error(
            500,
            format!("stand-in: failing once as asked ({FAIL_ONCE})"),
        );
    }
    let ask = Ask {
        messages: &messages,
        offered,
        context: session_context(&messages),
        agent: None,
        today,
        german,
    };
    let last = messages.last();
    // After the user approved or denied a call, the runtime says how it went (on Bedrock,
    // as text of the user's side).
    let verdict = last.and_then(|m| alert::Verdict::of(content_of(m)));
    let reply = match (verdict, last) {
        (Some(verdict), _) => text(verdict.relayed(german)),
        (None, Some(last)) if last["role"] == "tool" => after_tools(&last_user, &ask),
        _ => answer_user(&last_user, &ask),
    };
    if last_user.contains(SLOW) {
        reply.with_chunk_delay(SLOW_WORD_DELAY)
    } else {
        reply
    }
}

/// The user's date as the runtime's system prompt states it: dates before it are refused.
fn users_today(messages: &[Value]) -> Option<Date> {
    messages
        .iter()
        .filter(|m| m["role"] == "system")
        .find_map(|m| {
            let (_, rest) = content_of(m).split_once("Today is ")?;
            iso_date(rest.get(..10)?)
        })
}

fn content_of(message: &Value) -> &str {
    message["content"].as_str().unwrap_or_default()
}

/// The user's messages with their places: what they wrote, not what the runtime adds on
/// their side (a decision's outcome reaches Bedrock as user text).
fn user_messages(messages: &[Value]) -> Vec<(usize, &str)> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m["role"] == "user")
        .map(|(i, m)| (i, content_of(m)))
        .filter(|(_, content)| alert::Verdict::of(content).is_none())
        .collect()
}

/// The user message before the last one, when an assistant message between them begins
/// with one of `openings`: the message the stand-in's question followed up.
fn asked_after<'a>(messages: &'a [Value], openings: &[&str]) -> Option<&'a str> {
    let users = user_messages(messages);
    let [.., (before, earlier), (current, _)] = users.as_slice() else {
        return None;
    };
    messages[before + 1..*current]
        .iter()
        .filter(|m| m["role"] == "assistant")
        .any(|m| {
            let said = content_of(m).trim_start();
            openings.iter().any(|opening| said.starts_with(opening))
        })
        .then_some(*earlier)
}

/// The data blocks in `text` (`<<<DATA … source="…">>>` … `<<<END …>>>`): each source and
/// body.
fn data_blocks(text: &str) -> Vec<(&str, &str)> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<<<DATA ") {
        let block = &rest[start..];
        let Some(header_end) = block.find(">>>\n") else {
            break;
        };
        let header = &block[..header_end];
        let source = header
            .split_once("source=\"")
            .and_then(|(_, s)| s.split_once('"'))
            .map_or("", |(s, _)| s);
        let body = &block[header_end + 4..];
        let Some(end) = body.find("\n<<<END ") else {
            break;
        };
        blocks.push((source, &body[..end]));
        rest = &body[end + 8..];
    }
    blocks
}

/// The session context's flight state, from the system messages.
fn session_context(messages: &[Value]) -> SessionContext {
    let mut context = SessionContext::default();
    for system in messages.iter().filter(|m| m["role"] == "system") {
        let text = content_of(system);
        context.has_last_search |= text.contains("last_flight_request");
        for (source, body) in data_blocks(text) {
            if !source.starts_with("session context") {
                continue;
            }
            let Ok(state) = serde_json::from_str::<Value>(body) else {
                continue;
            };
            context.last = serde_json::from_value(state["last_flight_request"].clone()).ok();
            context.pending = serde_json::from_value(state["pending_flight_request"].clone()).ok();
        }
    }
    context
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

/// The answer after a tool round: the results of the calls the last assistant message made,
/// in plain words. A handoff instead lets the agent it reached answer the user's message.
fn after_tools(message: &str, ask: &Ask<'_>) -> Reply {
    let start = ask
        .messages
        .iter()
        .rposition(|m| m["role"] != "tool")
        .map_or(0, |i| i + 1);
    let results = &ask.messages[start..];
    let handed_to = results
        .iter()
        .find_map(|r| handed_over_to(unfenced(content_of(r))));
    if let Some(agent) = handed_to {
        // It answers as the agent it is now, and does not hand the turn back.
        let now = Ask {
            messages: ask.messages,
            offered: ask
                .offered
                .iter()
                .copied()
                .filter(|t| !t.starts_with(HANDOFF_PREFIX))
                .collect(),
            context: ask.context.clone(),
            agent: Some(agent.to_owned()),
            today: ask.today,
            german: ask.german,
        };
        return answer_user(message, &now);
    }
    let names = call_names(ask.messages);
    let parts: Vec<String> = results
        .iter()
        .filter_map(|result| {
            let content = unfenced(content_of(result)).trim();
            let tool = result["tool_call_id"]
                .as_str()
                .and_then(|id| names.iter().find(|(i, _)| *i == id))
                .map(|(_, name)| *name);
            match tool {
                // UI skills: the client shows them; their message is for a model.
                Some("suggest_replies" | "show_flight_options") => None,
                Some("search_knowledge_base") if !content.starts_with('[') => Some(
                    knowledge::answer(content, message, ask.german)
                        .unwrap_or_else(|| relay_tool_result(content, ask.german)),
                ),
                _ => Some(relay_tool_result(content, ask.german)),
            }
        })
        .collect();
    if parts.is_empty() {
        let last = results.last().map(content_of).unwrap_or_default();
        return text(relay_tool_result(last, ask.german));
    }
    text(parts.join("\n\n"))
}

/// The tool calls the assistant made in the chat: each call's id and tool name.
fn call_names(messages: &[Value]) -> Vec<(&str, &str)> {
    messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .filter_map(|c| Some((c["id"].as_str()?, c["function"]["name"].as_str()?)))
        .collect()
}

/// The agent a handoff's result names: "Handed over from travel to support. …".
fn handed_over_to(result: &str) -> Option<&str> {
    let rest = result.trim().strip_prefix("Handed over from ")?;
    let (_, to) = rest.split_once(" to ")?;
    to.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .next()
        .filter(|agent| !agent.is_empty())
}

fn answer_user(message: &str, ask: &Ask<'_>) -> Reply {
    if let Some(call) = external_tool_call(message, &ask.offered) {
        return call;
    }
    // "2" or "die zweite" after a list: that flight.
    if ask.offers("select_flight")
        && ask.context.has_last_search
        && let Some(option) = pick::option_in(message)
    {
        return Reply::tool_call("select_flight", json!({ "option": option }));
    }
    if let Some(topic) = support::Topic::of(message) {
        if ask.offers(TO_SUPPORT) {
            return Reply::tool_call(TO_SUPPORT, json!({ "reason": topic.reason(ask.german) }));
        }
        // Support passes what it cannot do to a person (a request the operator sees), or
        // says who can; a question goes to the knowledge base.
        if ask.is_support() && !is_question(message) {
            if ask.offers("contact_support") {
                return Reply::tool_call("contact_support", json!({ "summary": message }));
            }
            return text(topic.answer(ask.german));
        }
    }
    let intent = flight_intent(message, ask.today);
    if ask.offers("create_fare_alert")
        && let Some(reply) = alert::request(message, &intent, ask)
    {
        return reply;
    }
    if ask.offers("search_flights")
        && let Some(reply) = flight_search(message, &intent, ask)
    {
        return reply;
    }
    // The support agent hands a flight request to the travel agent.
    if ask.offers(TO_TRAVEL) && intent.origin.is_some() && intent.destination.is_some() {
        let reason = if ask.german {
            "Flugsuche"
        } else {
            "Flight search"
        };
        return Reply::tool_call(TO_TRAVEL, json!({ "reason": reason }));
    }
    if is_small_talk(message) {
        return text(small_talk(message, ask.german));
    }
    if ask.offers("search_knowledge_base") && is_question(message) {
        return Reply::tool_calls(vec![("search_knowledge_base", json!({"query": message}))]);
    }
    text(small_talk(message, ask.german))
}

/// A flight request the message makes, if it makes one: a search (with quick replies) or
/// the question for the day.
fn flight_search(message: &str, intent: &FlightIntent, ask: &Ask<'_>) -> Option<Reply> {
    if let (Some(_), Some(_), Some((start, end))) =
        (&intent.origin, &intent.destination, intent.too_wide)
    {
        return Some(which_week(start, end, ask));
    }
    if let (Some(origin), Some(destination)) = (&intent.origin, &intent.destination) {
        return Some(match intent.depart_date {
            Some(date) => new_search(intent, date, ask),
            None => which_day(origin, destination, ask),
        });
    }
    if intent.depart_date.is_some()
        && let Some(reply) = dated_reply(message, intent, ask)
    {
        return Some(reply);
    }
    follow_up(message, intent, ask)
}

/// A message with a date but no route: the week or day the stand-in asked for, of the route
/// asked before or of the search being gathered.
fn dated_reply(message: &str, intent: &FlightIntent, ask: &Ask<'_>) -> Option<Reply> {
    if let Some(reply) = chosen_week(intent, ask) {
        return Some(reply);
    }
    // Only a date, after the stand-in asked for the day: that route on that day, as
    // the message that named the route asked for it.
    if let Some(earlier) = asked_after(ask.messages, &WHICH_DAY) {
        let both = flight_intent(&format!("{earlier}\n{message}"), ask.today);
        if let (Some(_), Some(_), Some(date)) = (&both.origin, &both.destination, both.depart_date)
        {
            return Some(new_search(&both, date, ask));
        }
    }
    // Or the route of a search being gathered.
    if let Some(pending) = &ask.context.pending
        && let (Some(origin), Some(destination), Some(date)) =
            (&pending.origin, &pending.destination, intent.depart_date)
    {
        let route = FlightIntent {
            origin: Some(origin.to_string()),
            destination: Some(destination.to_string()),
            cabin: intent.cabin.or_else(|| pending.cabin.map(|c| c.as_str())),
            pax: intent.pax.or(pending.pax),
            ..intent.clone()
        };
        return Some(new_search(&route, date, ask));
    }
    None
}

/// A message that changes the last search: a return, a day later, another cabin or
/// programme.
fn follow_up(message: &str, intent: &FlightIntent, ask: &Ask<'_>) -> Option<Reply> {
    // "What about a return on 5 March?" after a search: that search with the way back.
    if let (Some(last), Some(back)) = (&ask.context.last, intent.depart_date)
        && window::is_about_return(&message.to_lowercase())
        && back > last.depart_date
    {
        let args = json!({"reuse_last_request": true, "return_date": back.to_string()});
        return Some(search_call(args, last.cabin.as_str(), ask));
    }
    // "A day later" after a search: the same search on the day after.
    if let (Some(last), Some(days)) = (&ask.context.last, day_shift(message)) {
        let shift = time::Duration::days(days);
        let mut args = json!({
            "reuse_last_request": true,
            "depart_date": (last.depart_date + shift).to_string(),
        });
        if let Some(back) = last.return_date {
            args["return_date"] = json!((back + shift).to_string());
        }
        let cabin = intent.cabin.unwrap_or(last.cabin.as_str());
        if intent.cabin.is_some() {
            args["cabin"] = json!(cabin);
        }
        return Some(search_call(args, cabin, ask));
    }
    // "And in first class?" or "with Aeroplan?" after a search: the same search with what
    // changed.
    if ask.context.has_last_search && intent.changes_a_search(message) {
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
        add_travellers_and_programmes(&mut args, intent);
        let cabin = intent
            .cabin
            .or_else(|| ask.context.last.as_ref().map(|l| l.cabin.as_str()))
            .unwrap_or("ECONOMY");
        return Some(search_call(args, cabin, ask));
    }
    None
}

/// A search of the intent's route on `date`.
fn new_search(intent: &FlightIntent, date: Date, ask: &Ask<'_>) -> Reply {
    let cabin = intent.cabin.unwrap_or("ECONOMY");
    let mut args = json!({
        "origin": intent.origin,
        "destination": intent.destination,
        "depart_date": date.to_string(),
        "cabin": cabin,
        "pax": intent.pax.unwrap_or(1),
    });
    if let Some(back) = intent.return_date {
        args["return_date"] = json!(back.to_string());
    }
    if let Some(days) = intent.flexibility.filter(|d| *d > 0) {
        args["flexibility"] = json!(days);
    }
    add_travellers_and_programmes(&mut args, intent);
    search_call(args, cabin, ask)
}

/// `search_flights` with `args`, and beside it (when offered) quick replies that the
/// stand-in understands as the next message: another cabin, a day later, a fare alert. The
/// search's message stays the answer: the runtime shows the replies with it.
fn search_call(args: Value, cabin: &str, ask: &Ask<'_>) -> Reply {
    let reply = Reply::tool_call("search_flights", args);
    if !ask.offers("suggest_replies") {
        return reply;
    }
    let de = ask.german;
    let mut replies = vec![
        match (cabin == "FIRST", de) {
            (false, false) => "In first class?",
            (false, true) => "Und in der First Class?",
            (true, false) => "In business class?",
            (true, true) => "Und in der Business Class?",
        }
        .to_owned(),
        if de {
            "Einen Tag später"
        } else {
            "A day later"
        }
        .to_owned(),
    ];
    if ask.offers("create_fare_alert") {
        replies.push(alert::quick_reply(cabin, de));
    }
    reply.with_tool_call("suggest_replies", json!({ "replies": replies }))
}

/// The question for the day, with a few days to pick as quick replies (when offered).
fn which_day(origin: &str, destination: &str, ask: &Ask<'_>) -> Reply {
    let question = if ask.german {
        format!("{} von {origin} nach {destination} fliegen?", WHICH_DAY[1])
    } else {
        format!("{} from {origin} to {destination}?", WHICH_DAY[0])
    };
    let reply = text(question);
    if !ask.offers("suggest_replies") {
        return reply;
    }
    let day = |days: i64| ask.today + time::Duration::days(days);
    let replies = if ask.german {
        vec![
            "Morgen".to_owned(),
            format!("Am {}", spoken_date(day(7), true)),
            format!("Am {}", spoken_date(day(14), true)),
        ]
    } else {
        vec![
            "Tomorrow".to_owned(),
            format!("On {}", spoken_date(day(7), false)),
            format!("On {}", spoken_date(day(14), false)),
        ]
    };
    reply.with_tool_call("suggest_replies", json!({ "replies": replies }))
}

/// A week, after the stand-in asked which week of a range ([`which_week`]): the request it
/// asked about, for that week.
fn chosen_week(intent: &FlightIntent, ask: &Ask<'_>) -> Option<Reply> {
    let earlier = asked_after(ask.messages, &WHICH_WEEK)?;
    let asked = flight_intent(earlier, ask.today);
    let week = FlightIntent {
        origin: asked.origin,
        destination: asked.destination,
        cabin: intent.cabin.or(asked.cabin),
        pax: intent.pax.or(asked.pax),
        children: intent.children.or(asked.children),
        infants: intent.infants.or(asked.infants),
        loyalty_programs: asked.loyalty_programs,
        ..intent.clone()
    };
    let (Some(_), Some(_), Some(date)) = (&week.origin, &week.destination, week.depart_date) else {
        return None;
    };
    Some(new_search(&week, date, ask))
}

/// A range wider than one search takes ("between 1 and 21 March"): rather than search a
/// part of it and say nothing, the stand-in asks which week ([`WHICH_WEEK`]), with each
/// week of the range (the first three) as a quick reply; the answer is searched as the
/// request it followed up.
fn which_week(start: Date, end: Date, ask: &Ask<'_>) -> Reply {
    let de = ask.german;
    let locale = if de { Locale::De } else { Locale::En };
    let days = (end - start).whole_days() + 1;
    let most = 2 * window::MAX_FLEXIBILITY + 1;
    let asked = date_range(start, end, locale);
    let question = if de {
        format!(
            "Eine Suche umfasst höchstens {most} Tage, {asked} sind {days}. Welche Woche soll ich suchen?"
        )
    } else {
        format!(
            "One search covers at most {most} days, and {asked} is {days}. Which week shall I search?"
        )
    };
    let reply = text(question);
    if !ask.offers("suggest_replies") {
        return reply;
    }
    let week = time::Duration::days(i64::from(most));
    let replies: Vec<String> = (0..3)
        .map(|k: i32| start + week * k)
        .take_while(|first: &Date| *first <= end)
        .map(|first: Date| {
            let last: Date = first + week - time::Duration::DAY;
            let (first, last) = (spoken_date(first, de), spoken_date(last.min(end), de));
            if de {
                format!("Zwischen dem {first} und dem {last}")
            } else {
                format!("Between {first} and {last}")
            }
        })
        .collect();
    reply.with_tool_call("suggest_replies", json!({ "replies": replies }))
}

/// "29 November" / "29. November": a date as the stand-in reads it back.
fn spoken_date(date: Date, german: bool) -> String {
    const EN: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DE: [&str; 12] = [
        "Januar",
        "Februar",
        "März",
        "April",
        "Mai",
        "Juni",
        "Juli",
        "August",
        "September",
        "Oktober",
        "November",
        "Dezember",
    ];
    let index = usize::from(u8::from(date.month())) - 1;
    if german {
        format!("{}. {}", date.day(), DE[index])
    } else {
        format!("{} {}", date.day(), EN[index])
    }
}

/// Days a follow-up moves the last search: "a day later" +1, "einen Tag früher" -1.
fn day_shift(message: &str) -> Option<i64> {
    let lower = message.to_lowercase();
    let has = |phrases: &[&str]| phrases.iter().any(|p| find_word(&lower, p).is_some());
    if has(&["day later", "day after", "tag später", "tag danach"]) {
        Some(1)
    } else if has(&[
        "day earlier",
        "day before",
        "tag früher",
        "tag davor",
        "tag vorher",
    ]) {
        Some(-1)
    } else {
        None
    }
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

/// What the user reads when a call did not work (its message was written for a model).
fn did_not_work(german: bool) -> String {
    if german {
        "Das hat gerade leider nicht geklappt. Versuche es bitte gleich noch einmal oder formuliere es anders.".to_owned()
    } else {
        "Sorry, that did not work just now. Please try again in a moment or put it differently."
            .to_owned()
    }
}

fn relay_tool_result(content: &str, german: bool) -> String {
    let content = unfenced(content).trim();
    // `[rejected] Invalid arguments …`: written for a model to act on, not for a traveller.
    if content.starts_with('[') {
        return did_not_work(german);
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

/// The words of a message, lower case, without the test markers and numbers.
fn plain_words(message: &str) -> Vec<String> {
    message
        .replace(FAIL_ONCE, " ")
        .replace(SLOW, " ")
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_owned)
        .collect()
}

/// A greeting, thanks, "how are you" and the like, and nothing else.
fn is_small_talk(message: &str) -> bool {
    let words = plain_words(message);
    !words.is_empty() && words.len() <= 8 && words.iter().all(|w| SMALL_TALK.contains(&w.as_str()))
}

/// One short sentence for small talk; for anything else, what the demo can do.
fn small_talk(message: &str, german: bool) -> String {
    let words = plain_words(message);
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    let greeting = words
        .first()
        .is_some_and(|w| GREETINGS.contains(&w.as_str()));
    let thanks = has(&["thanks", "thank", "danke", "dankeschön", "merci", "cheers"]);
    let how_are_you =
        (has(&["how"]) && has(&["you", "going"])) || (has(&["wie"]) && has(&["geht", "gehts"]));
    let bye = has(&["bye", "goodbye", "tschüss", "tschüs", "ciao"]);
    let fine = is_small_talk(message)
        && has(&[
            "ok", "okay", "cool", "great", "super", "prima", "perfect", "perfekt", "nice", "gut",
            "klar",
        ]);
    let texts = if thanks {
        ["You're welcome!", "Gern geschehen!"]
    } else if how_are_you {
        [
            "Very well, thanks, and ready to search flights for you!",
            "Gut, danke, und bereit, Flüge für dich zu suchen!",
        ]
    } else if greeting {
        [
            "Hello! I'm the offline stand-in for the language model; try \"Business class from \
             Frankfurt to New York on 15 March\".",
            "Hallo! Ich bin der Offline-Platzhalter für das Sprachmodell; probier „Business \
             Class von Frankfurt nach New York am 15.03.“",
        ]
    } else if bye {
        ["Goodbye, and safe travels!", "Tschüss und gute Reise!"]
    } else if fine {
        ["Glad to help!", "Freut mich!"]
    } else {
        [
            "In this demo I can search flights, set fare alerts and answer questions from the \
             knowledge base; free-form answers need a real language model.",
            "In dieser Demo kann ich Flüge suchen, Preisalarme anlegen und Fragen aus der \
             Wissensdatenbank beantworten; für freie Antworten braucht es ein echtes Sprachmodell.",
        ]
    };
    texts[usize::from(german)].to_owned()
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
                    | "morgen"
                    | "mich"
                    | "wenn"
                    | "unter"
                    | "einen"
                    | "tag"
                    | "hilfe"
                    | "bei"
                    | "einer"
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
    // A range is searched from its middle, the days either side covering it.
    let range = window::range_in(&lower, &dates).map(|(start, end)| {
        let (middle, days, wide) = window::centred(start, end);
        (start, end, (middle, days), wide)
    });
    let flexibility = window::flexibility_in(&lower).map(|d| d.min(window::MAX_FLEXIBILITY));
    FlightIntent {
        origin: airports.first().map(|a| a.1.clone()),
        destination: airports.get(1).map(|a| a.1.clone()),
        depart_date: range
            .map(|(_, _, (middle, _), _)| middle)
            .or(dates.first().copied()),
        return_date: dates
            .get(1)
            .copied()
            .filter(|d| range.is_none() && Some(*d) > dates.first().copied()),
        flexibility: range.map(|(_, _, (_, days), _)| days).or(flexibility),
        cabin: cabin_in(&lower),
        pax: count_of(&lower, ADULT_WORDS).map(|n| n.clamp(1, 9)),
        children: count_of(&lower, CHILD_WORDS).map(|n| n.min(8)),
        infants: count_of(&lower, INFANT_WORDS).map(|n| n.min(9)),
        loyalty_programs: programmes_in(message),
        too_wide: range
            .filter(|(_, _, _, wide)| *wide)
            .map(|(start, end, _, _)| (start, end)),
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
    // "12-18 march": the range's last day is the date; `window` reads the first.
    let word = word.rsplit(['-', '–']).next().unwrap_or(word);
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

    // The scripted flows, checked against the tools' own schemas: every call is to a tool
    // the request offers, with arguments the tool's schema and argument type accept.

    use agent::tools::ToolSchema;
    use shared::domain::alert::CreateFareAlertArgs;
    use shared::domain::flight::FlightSearchInput;
    use shared::domain::tool_args::{HandoffArgs, KnowledgeBaseArgs, SuggestRepliesArgs};
    use shared::domain::tool_call::ToolName;

    /// The travel profile's tools and its handoff (config/agents.toml), and the support
    /// profile's.
    const TRAVEL: &[&str] = &[
        "search_flights",
        "search_knowledge_base",
        "ask_gpt",
        "award_value",
        "remember",
        "select_flight",
        "suggest_replies",
        "show_flight_options",
        "create_fare_alert",
        "transfer_to_support",
    ];
    const SUPPORT: &[&str] = &[
        "search_knowledge_base",
        "suggest_replies",
        "contact_support",
        "transfer_to_travel",
    ];

    /// The schema the model is offered for `tool`, as the runtime builds it.
    fn schema(tool: &str) -> ToolSchema {
        let built = match tool {
            "search_flights" => {
                ToolSchema::gathering::<FlightSearchInput>(ToolName::SEARCH_FLIGHTS)
            }
            "search_knowledge_base" => {
                ToolSchema::of::<KnowledgeBaseArgs>(ToolName::SEARCH_KNOWLEDGE_BASE)
            }
            "suggest_replies" => ToolSchema::of::<SuggestRepliesArgs>(ToolName::SUGGEST_REPLIES),
            "create_fare_alert" => {
                ToolSchema::of::<CreateFareAlertArgs>(ToolName::new("create_fare_alert"))
            }
            handoff if handoff.starts_with(HANDOFF_PREFIX) => {
                ToolSchema::named::<HandoffArgs>(handoff)
            }
            // Tools the stand-in never calls: any object.
            other => ToolSchema::from_json(other, String::new(), json!({"type": "object"})),
        };
        built.unwrap_or_else(|e| panic!("{tool}: {e}"))
    }

    fn request(messages: &[Value], tools: &[&str]) -> Value {
        let tools: Vec<Value> = tools
            .iter()
            .map(|name| {
                let spec = schema(name).spec;
                json!({"type": "function", "function": {"name": spec.name,
                    "description": spec.description, "parameters": spec.parameters}})
            })
            .collect();
        json!({"model": "offline-stand-in", "messages": messages, "tools": tools})
    }

    fn user(content: &str) -> Value {
        json!({"role": "user", "content": content})
    }

    fn assistant(content: &str) -> Value {
        json!({"role": "assistant", "content": content})
    }

    /// The system prompt, and the session context after a search of FRA → JFK, business,
    /// on 15 March 2027 for two.
    fn after_search() -> Vec<Value> {
        let context = json!({"last_flight_request": {"origin": "FRA", "destination": "JFK",
            "depart_date": "2027-03-15", "cabin": "BUSINESS", "pax": 2}});
        vec![
            json!({"role": "system", "content": "You are a travel assistant."}),
            json!({"role": "system", "content": format!(
                "<<<DATA b7 source=\"session context (JSON)\">>>\n{context}\n<<<END b7>>>")}),
        ]
    }

    /// The stand-in's reply to `messages` offered `tools`, its calls checked: each to an
    /// offered tool, with arguments its schema and type accept. The calls' names and
    /// arguments.
    fn answer(messages: &[Value], tools: &[&str]) -> (Reply, Vec<(String, Value)>) {
        let reply = reply(&request(messages, tools), TODAY);
        let mut calls = Vec::new();
        for (name, arguments) in reply.calls() {
            assert!(
                tools.contains(&name.as_str()),
                "{name} is not offered: {tools:?}"
            );
            let args: Value = serde_json::from_str(arguments).unwrap_or_else(|e| panic!("{e}"));
            let schema = schema(name);
            let checked = match name.as_str() {
                "search_flights" if args.get("reuse_last_request").is_some() => {
                    schema.parse::<Value>(&args).map(drop)
                }
                "search_flights" => schema
                    .parse::<FlightSearchInput>(&args)
                    .and_then(|input| input.validate()),
                "search_knowledge_base" => schema
                    .parse::<KnowledgeBaseArgs>(&args)
                    .and_then(|kb| kb.validate()),
                "suggest_replies" => schema
                    .parse::<SuggestRepliesArgs>(&args)
                    .and_then(|replies| replies.canonical().map(drop)),
                "create_fare_alert" => schema
                    .parse::<CreateFareAlertArgs>(&args)
                    .and_then(|alert| alert.validate(TODAY)),
                handoff if handoff.starts_with(HANDOFF_PREFIX) => {
                    schema.parse::<HandoffArgs>(&args).map(drop)
                }
                _ => schema.parse::<Value>(&args).map(drop),
            };
            if let Err(e) = checked {
                panic!("{name} {args}: {e}");
            }
            calls.push((name.clone(), args));
        }
        (reply, calls)
    }

    fn called(calls: &[(String, Value)]) -> Vec<&str> {
        calls.iter().map(|(name, _)| name.as_str()).collect()
    }

    fn args_of<'a>(calls: &'a [(String, Value)], tool: &str) -> &'a Value {
        calls
            .iter()
            .find(|(name, _)| name == tool)
            .map(|(_, args)| args)
            .unwrap_or_else(|| panic!("no {tool} call in {calls:?}"))
    }

    fn alert_of(calls: &[(String, Value)]) -> CreateFareAlertArgs {
        serde_json::from_value(args_of(calls, "create_fare_alert").clone())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_fare_alert_is_asked_for_in_english_and_german() {
        for message in [
            "Alert me when business class FRA to JFK in March drops below 60,000 miles",
            "Benachrichtige mich, wenn Business FRA nach JFK im März unter 60.000 Meilen fällt",
        ] {
            let (_, calls) = answer(&[user(message)], TRAVEL);
            assert_eq!(called(&calls), ["create_fare_alert"], "{message}");
            let alert = alert_of(&calls);
            assert_eq!(
                (alert.origin.as_ref(), alert.destination.as_ref()),
                ("FRA", "JFK")
            );
            assert_eq!(
                (alert.date_from, alert.date_to),
                (date!(2027 - 03 - 01), date!(2027 - 03 - 31)),
                "{message}"
            );
            assert_eq!(alert.cabin.as_str(), "BUSINESS");
            assert_eq!((alert.max_miles, &alert.max_price), (Some(60_000), &None));
        }
        // A cash limit, a day of its own.
        let (_, calls) = answer(
            &[user("Tell me when FRA to JFK on 15 March is under €800")],
            TRAVEL,
        );
        let alert = alert_of(&calls);
        assert_eq!(
            (alert.date_from, alert.date_to),
            (date!(2027 - 03 - 15), date!(2027 - 03 - 15))
        );
        let price = alert.max_price.unwrap_or_else(|| panic!("no price"));
        assert_eq!((price.amount, price.currency.as_str()), (800.0, "EUR"));
        assert_eq!(alert.max_miles, None);
        // "In March" in March: its days from the user's today, as the runtime's prompt says.
        let history = [
            json!({"role": "system", "content": "Today is 2027-03-20.\nThis turn's data boundary: b1."}),
            user("Alert me when FRA to JFK in March drops below 60,000 miles"),
        ];
        let alert = alert_of(&answer(&history, TRAVEL).1);
        assert_eq!(
            (alert.date_from, alert.date_to, alert.cabin.as_str()),
            (date!(2027 - 03 - 20), date!(2027 - 03 - 31), "ECONOMY")
        );
        // About alerts is a question, not an alert.
        let (_, calls) = answer(&[user("How do fare alerts work?")], TRAVEL);
        assert_eq!(called(&calls), ["search_knowledge_base"]);
    }

    #[test]
    fn a_fare_alert_asks_for_what_is_missing_and_takes_the_last_search() {
        for (message, question, answer_text) in [
            (
                "Alert me about FRA to JFK in March",
                "Below how many miles",
                "60,000 miles",
            ),
            (
                "Benachrichtige mich für FRA nach JFK im März",
                "Unter wie vielen Meilen",
                "unter 60.000 Meilen",
            ),
        ] {
            let (asked, calls) = answer(&[user(message)], TRAVEL);
            assert!(calls.is_empty(), "{calls:?}");
            assert!(asked.content().starts_with(question), "{}", asked.content());
            let history = [user(message), assistant(asked.content()), user(answer_text)];
            let (_, calls) = answer(&history, TRAVEL);
            let alert = alert_of(&calls);
            assert_eq!(
                (alert.origin.as_ref(), alert.max_miles),
                ("FRA", Some(60_000))
            );
        }
        // Without a route and without a last search: which route?
        let (asked, calls) = answer(&[user("Alert me below 50k miles")], TRAVEL);
        assert!(calls.is_empty() && asked.content().starts_with("Which route"));
        // Without days and without a last search: which days, never a month picked for them.
        for (message, question, days) in [
            (
                "Alert me when FRA to JFK drops below 60,000 miles",
                "Which days",
                "1 to 15 March",
            ),
            (
                "Benachrichtige mich, wenn FRA nach JFK unter 60.000 Meilen fällt",
                "Welche Tage",
                "im März",
            ),
        ] {
            let (asked, calls) = answer(&[user(message)], TRAVEL);
            assert!(calls.is_empty(), "{calls:?}");
            assert!(asked.content().starts_with(question), "{}", asked.content());
            let history = [user(message), assistant(asked.content()), user(days)];
            let alert = alert_of(&answer(&history, TRAVEL).1);
            assert_eq!(alert.date_from.month(), time::Month::March, "{message}");
            assert_eq!(alert.max_miles, Some(60_000), "{message}");
        }
        // After a search: its route, cabin and week.
        let mut history = after_search();
        history.push(user("Alert me below 60,000 miles"));
        let alert = alert_of(&answer(&history, TRAVEL).1);
        assert_eq!(
            (
                alert.origin.as_ref(),
                alert.destination.as_ref(),
                alert.cabin.as_str()
            ),
            ("FRA", "JFK", "BUSINESS")
        );
        assert_eq!(
            (alert.date_from, alert.date_to),
            (date!(2027 - 03 - 15), date!(2027 - 03 - 21))
        );
    }

    /// What the runtime tells the model once the user decided (`turn/decision.rs`), with
    /// the tool's message as `create_fare_alert` writes it.
    fn decided(verb: &str, outcome: &str) -> String {
        format!(
            "The user {verb} the call of create_fare_alert that waited for their approval (job tc_1). \
             Its outcome is in the data block below; tell the user briefly.\n\
             <<<DATA b9 source=\"tool create_fare_alert, job tc_1\">>>\n{outcome}\n<<<END b9>>>"
        )
    }

    #[test]
    fn an_approved_or_denied_alert_is_told_in_plain_words() {
        let args: CreateFareAlertArgs = serde_json::from_value(json!({"origin": "FRA",
            "destination": "JFK", "date_from": "2027-03-01", "date_to": "2027-03-31",
            "cabin": "BUSINESS", "max_miles": 60000}))
        .unwrap_or_else(|e| panic!("{e}"));
        use shared::domain::flight::Locale;
        let saved_en = format!(
            "Saved: {}. The alert is checked regularly; the user finds what it finds, and can delete it, under their fare alerts.",
            args.summary(Locale::En)
        );
        let saved_de = format!(
            "Gespeichert: {}. Der Alarm wird regelmäßig geprüft; Treffer und das Löschen findet der Nutzer unter seinen Preisalarmen.",
            args.summary(Locale::De)
        );
        let asked = "Alert me when business class FRA to JFK in March drops below 60,000 miles";
        let history = |last: Value| {
            vec![
                user(asked),
                json!({"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "create_fare_alert", "arguments": "{}"}}]}),
                json!({"role": "tool", "tool_call_id": "c1", "content": "[awaiting_approval] Waiting."}),
                assistant("Please confirm before I go ahead:\n- Fare alert FRA → JFK"),
                last,
            ]
        };
        let system = |text: String| json!({"role": "system", "content": text});
        let told = |last: Value| {
            let (reply, calls) = answer(&history(last), TRAVEL);
            assert!(calls.is_empty(), "asks nothing again: {calls:?}");
            reply.content().to_owned()
        };
        assert_eq!(
            told(system(decided("approved", &saved_en))),
            "Done: your fare alert FRA → JFK, 1–31 Mar 2027, business, at most 60,000 miles is saved. \
             It is checked regularly; you find what it finds, and can delete it, under your fare alerts."
        );
        let german = told(system(decided("approved", &saved_de)));
        assert!(
            german.starts_with("Erledigt: Dein Preisalarm FRA → JFK, 1.–31. März 2027")
                && german.contains("du"),
            "{german}"
        );
        // On Bedrock the runtime's words reach the model as the user's text.
        assert_eq!(
            told(user(&decided("approved", &saved_en))),
            told(system(decided("approved", &saved_en)))
        );
        assert_eq!(
            told(system(decided("denied", "[canceled] The user denied it."))),
            "All right, I did not set the fare alert."
        );
        assert!(told(system(decided("approved", "[failed] store down"))).starts_with("Sorry"));
    }

    fn handoff_result(from: &str, to: &str) -> Vec<Value> {
        vec![
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": "h1", "type": "function",
                "function": {"name": format!("transfer_to_{to}"), "arguments": "{\"reason\":\"x\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "h1", "content": format!(
                "<<<DATA b2 source=\"tool handoff, job tc_2\">>>\nHanded over from {from} to {to}. \
                 You are now the {to} agent: continue the conversation.\n<<<END b2>>>")}),
        ]
    }

    #[test]
    fn a_refund_goes_to_support_which_passes_it_to_a_person_in_english_and_german() {
        for (message, reason, answer_text) in [
            (
                "I need help with a refund",
                "Help with a refund",
                "I am the support assistant, not a person.",
            ),
            (
                "Ich brauche Hilfe bei einer Erstattung",
                "Hilfe bei einer Erstattung",
                "Ich bin der Support-Assistent, kein Mensch.",
            ),
        ] {
            let (_, calls) = answer(&[user(message)], TRAVEL);
            assert_eq!(called(&calls), ["transfer_to_support"]);
            assert_eq!(args_of(&calls, "transfer_to_support")["reason"], reason);
            // The turn goes on as support, which records a request for a person and does
            // not hand it back.
            let mut history = vec![user(message)];
            history.extend(handoff_result("travel", "support"));
            let (_, calls) = answer(&history, SUPPORT);
            assert_eq!(called(&calls), ["contact_support"], "{calls:?}");
            assert_eq!(
                args_of(&calls, "contact_support")["summary"],
                json!(message)
            );
            // Without contact_support, it says who can help, and that it is no person.
            let without: Vec<&str> = SUPPORT
                .iter()
                .copied()
                .filter(|t| *t != "contact_support")
                .collect();
            let (reply, calls) = answer(&history, &without);
            assert!(calls.is_empty(), "{calls:?}");
            assert!(
                reply.content().starts_with(answer_text),
                "{}",
                reply.content()
            );
            assert!(!reply.content().contains("agent:"), "{}", reply.content());
        }
        for message in ["Can I talk to a human?", "My luggage did not arrive"] {
            let (_, calls) = answer(&[user(message)], TRAVEL);
            assert_eq!(called(&calls), ["transfer_to_support"], "{message}");
        }
        // A profile without the handoff keeps the message.
        let (_, calls) = answer(&[user("I need help with a refund")], &["search_flights"]);
        assert!(calls.is_empty());
    }

    #[test]
    fn support_hands_a_flight_request_back_and_travel_searches_it() {
        let message = "Business class from Frankfurt to New York on 15 March";
        let (_, calls) = answer(&[user(message)], SUPPORT);
        assert_eq!(called(&calls), ["transfer_to_travel"]);
        let mut history = vec![user(message)];
        history.extend(handoff_result("support", "travel"));
        let (_, calls) = answer(&history, TRAVEL);
        assert_eq!(called(&calls), ["search_flights", "suggest_replies"]);
        // Support's own questions go to the knowledge base.
        let (_, calls) = answer(&[user("How do award holds work?")], SUPPORT);
        assert_eq!(called(&calls), ["search_knowledge_base"]);
    }

    /// The quick replies of a reply.
    fn replies(calls: &[(String, Value)]) -> Vec<String> {
        serde_json::from_value::<SuggestRepliesArgs>(args_of(calls, "suggest_replies").clone())
            .map(|r| r.replies)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_search_comes_with_quick_replies_that_each_lead_somewhere() {
        for message in [
            "Business class from Frankfurt to New York on 15 March for 2 people",
            "Business Class von Frankfurt nach New York am 15.03. für 2 Personen",
        ] {
            let (_, calls) = answer(&[user(message)], TRAVEL);
            assert_eq!(
                called(&calls),
                ["search_flights", "suggest_replies"],
                "{message}"
            );
            let offered = replies(&calls);
            assert_eq!(offered.len(), 3, "{offered:?}");
            // Each reply, sent after the search, is understood.
            let expected = [
                ("search_flights", "cabin", json!("FIRST")),
                ("search_flights", "depart_date", json!("2027-03-16")),
                ("create_fare_alert", "max_miles", json!(60000)),
            ];
            for (reply_text, (tool, key, value)) in offered.iter().zip(expected) {
                let mut history = after_search();
                history.push(user(reply_text));
                let (_, calls) = answer(&history, TRAVEL);
                assert_eq!(args_of(&calls, tool)[key], value, "{reply_text}: {calls:?}");
            }
        }
        // In first class already: the other reply offers business.
        let (_, calls) = answer(&[user("First class FRA to JFK on 2027-03-15")], TRAVEL);
        assert_eq!(replies(&calls)[0], "In business class?");
        // Without suggest_replies offered: the search alone.
        let (_, calls) = answer(&[user("FRA to JFK on 2027-03-15")], &["search_flights"]);
        assert_eq!(called(&calls), ["search_flights"]);
    }

    #[test]
    fn flexible_dates_and_ranges_search_the_window_and_a_return_the_way_back() {
        for (message, day, flexibility) in [
            ("FRA to JFK ±3 days around 15 March", "2027-03-15", 3),
            ("FRA to JFK between 12 and 18 March", "2027-03-15", 3),
            (
                "FRA nach JFK zwischen dem 12. und 18. März",
                "2027-03-15",
                3,
            ),
            (
                "FRA to JFK on 15 March, 2 days either side",
                "2027-03-15",
                2,
            ),
            ("FRA to JFK 14-15 March", "2027-03-14", 1),
        ] {
            let (_, calls) = answer(&[user(message)], TRAVEL);
            let args = args_of(&calls, "search_flights");
            assert_eq!(args["depart_date"], json!(day), "{message}: {args}");
            assert_eq!(args["flexibility"], json!(flexibility), "{message}: {args}");
            assert_eq!(args.get("return_date"), None, "{message}: {args}");
        }
        // A range wider than one search: the stand-in asks which week, and each quick
        // reply is the same request for one week, which it searches.
        for (message, question) in [
            (
                "Business FRA to JFK between 1 and 21 March, 2 adults, 1 child",
                "One search covers at most 7 days, and 1–21 Mar 2027 is 21. Which week shall I search?",
            ),
            (
                "Business von FRA nach JFK vom 1. bis 21. März, 2 Erwachsene, 1 Kind",
                "Eine Suche umfasst höchstens 7 Tage, 1.–21. März 2027 sind 21. Welche Woche soll ich suchen?",
            ),
        ] {
            let (reply, calls) = answer(&[user(message)], TRAVEL);
            assert_eq!(reply.content(), question, "{message}");
            assert!(!called(&calls).contains(&"search_flights"), "{message}");
            let weeks = replies(&calls);
            assert_eq!(weeks.len(), 3, "{weeks:?}");
            let expected_days = ["2027-03-04", "2027-03-11", "2027-03-18"];
            for (week, day) in weeks.iter().zip(expected_days) {
                let history = [
                    user(message),
                    json!({"role": "assistant", "content": question}),
                    user(week),
                ];
                let (_, calls) = answer(&history, TRAVEL);
                let args = args_of(&calls, "search_flights");
                assert_eq!(args["depart_date"], json!(day), "{week}: {args}");
                assert_eq!(args["flexibility"], json!(3), "{week}: {args}");
                assert_eq!(args["cabin"], json!("BUSINESS"), "{week}: {args}");
                assert_eq!(
                    (args["pax"].clone(), args["children"].clone()),
                    (json!(2), json!(1)),
                    "{week}: {args}"
                );
            }
        }
        for message in [
            "What about a return on 22 March?",
            "Und der Rückflug am 22. März?",
        ] {
            let mut history = after_search();
            history.push(user(message));
            let (_, calls) = answer(&history, TRAVEL);
            let args = args_of(&calls, "search_flights");
            assert_eq!(args["reuse_last_request"], json!(true), "{message}: {args}");
            assert_eq!(
                args["return_date"],
                json!("2027-03-22"),
                "{message}: {args}"
            );
            assert_eq!(args.get("depart_date"), None, "{message}: {args}");
        }
    }

    #[test]
    fn a_pick_after_a_list_selects_that_flight_in_english_and_german() {
        for (message, option) in [
            ("#2", 2),
            ("2", 2),
            ("option 2", 2),
            ("I'll take number 3", 3),
            ("Nr. 2", 2),
            ("Ich nehme Option 2", 2),
            ("die zweite", 2),
        ] {
            let mut history = after_search();
            history.push(user(message));
            let (_, calls) = answer(&history, TRAVEL);
            assert_eq!(called(&calls), ["select_flight"], "{message}");
            assert_eq!(args_of(&calls, "select_flight")["option"], json!(option));
        }
        // Without a list before it, "2" is no pick.
        let (_, calls) = answer(&[user("2")], TRAVEL);
        assert!(!called(&calls).contains(&"select_flight"), "{calls:?}");
    }

    #[test]
    fn a_date_alone_answers_the_question_for_the_day() {
        for (message, follow_ups) in [
            (
                "Business class from Paris to Tokyo",
                ["On 10 February please", "Tomorrow"],
            ),
            (
                "Business Class von Paris nach Tokio",
                ["Am 10. Februar bitte", "Morgen"],
            ),
        ] {
            let (question, calls) = answer(&[user(message)], TRAVEL);
            let asked = question.content();
            assert!(
                asked == "Which day would you like to fly from CDG to HND?"
                    || asked == "An welchem Tag möchtest du von CDG nach HND fliegen?",
                "{asked}"
            );
            // The question and its quick replies in one step: the text is the answer.
            assert_eq!(called(&calls), ["suggest_replies"]);
            let mut answers: Vec<String> = follow_ups.iter().map(|s| (*s).to_owned()).collect();
            answers.extend(replies(&calls));
            for follow_up in &answers {
                let history = [user(message), assistant(asked), user(follow_up)];
                let (_, calls) = answer(&history, TRAVEL);
                let search = args_of(&calls, "search_flights");
                assert_eq!(
                    (&search["origin"], &search["destination"], &search["cabin"]),
                    (&json!("CDG"), &json!("HND"), &json!("BUSINESS")),
                    "{follow_up}"
                );
                assert!(
                    search["depart_date"].as_str() > Some("2026-11-22"),
                    "{follow_up}"
                );
            }
        }
        let history = [
            user("Flug von Paris nach Tokio"),
            assistant("An welchem Tag möchten Sie von CDG nach HND fliegen?"),
            user("Am 10. Februar bitte"),
        ];
        let (_, calls) = answer(&history, TRAVEL);
        assert_eq!(
            args_of(&calls, "search_flights")["depart_date"],
            "2027-02-10"
        );
        // A route being gathered (the session context's pending request) takes a date too.
        let context = json!({"pending_flight_request": {"origin": "MUC", "destination": "SIN"}});
        let history = [
            json!({"role": "system", "content": format!(
                "<<<DATA b1 source=\"session context (JSON)\">>>\n{context}\n<<<END b1>>>")}),
            user("On 10 February please"),
        ];
        let (_, calls) = answer(&history, TRAVEL);
        let search = args_of(&calls, "search_flights");
        assert_eq!(
            (&search["origin"], &search["depart_date"]),
            (&json!("MUC"), &json!("2027-02-10"))
        );
        // A date without a question or a route is not a search.
        let (_, calls) = answer(&[user("On 10 February please")], TRAVEL);
        assert!(calls.is_empty(), "{calls:?}");
    }

    #[test]
    fn small_talk_is_one_sentence_and_never_a_knowledge_base_search() {
        for (message, expected) in [
            (
                "How are you?",
                "Very well, thanks, and ready to search flights for you!",
            ),
            (
                "Wie geht's?",
                "Gut, danke, und bereit, Flüge für dich zu suchen!",
            ),
            ("thanks!", "You're welcome!"),
            ("Danke schön!", "Gern geschehen!"),
            ("Bye!", "Goodbye, and safe travels!"),
        ] {
            let (reply, calls) = answer(&[user(message)], TRAVEL);
            assert!(calls.is_empty(), "{message}: {calls:?}");
            assert_eq!(reply.content(), expected, "{message}");
        }
        let (hello, calls) = answer(&[user("Hello!")], TRAVEL);
        assert!(calls.is_empty());
        assert!(
            hello
                .content()
                .starts_with("Hello! I'm the offline stand-in")
        );
        // A real question still goes to the knowledge base.
        let (_, calls) = answer(&[user("How are miles valued?")], TRAVEL);
        assert_eq!(called(&calls), ["search_knowledge_base"]);
    }

    #[test]
    fn a_knowledge_base_answer_is_a_short_synthesis_with_its_sources() {
        let found = "Here is what the knowledge base says:\n\n\
            **1.** [fuel-surcharges-explained, English] Fuel surcharges explained > What they are\n\n\
            Fuel surcharges are carrier-imposed fees added to award tickets. They vary by airline and route. \
            Some programmes pass on **all** of them, others no…\n\n\
            **2.** [steuern-und-gebuehren, German] Steuern und Gebühren\n\n\
            Steuern und Gebühren fallen auch bei Prämienflügen an. Die Höhe hängt vom Abflugort ab.";
        // The English question's words pick the sentence that answers it; the German one
        // shares none with the English passage the search ranked first, which is quoted
        // with a word on its language.
        for (german, expected) in [
            (
                false,
                "Fuel surcharges are carrier-imposed fees added to award tickets.\n\n\
                 Sources: Fuel surcharges explained",
            ),
            (
                true,
                "Die Wissensdatenbank hat dazu eine englische Quelle: \
                 Fuel surcharges are carrier-imposed fees added to award tickets. They vary by airline and route.\n\n\
                 Quellen: Fuel surcharges explained",
            ),
        ] {
            let question = if german {
                "Wie funktionieren Treibstoffzuschläge?"
            } else {
                "How do fuel surcharges work?"
            };
            let history = [
                user(question),
                json!({"role": "assistant", "content": "", "tool_calls": [{"id": "k1", "type": "function",
                    "function": {"name": "search_knowledge_base", "arguments": "{}"}}]}),
                json!({"role": "tool", "tool_call_id": "k1", "content": format!(
                    "<<<DATA b3 source=\"tool search_knowledge_base, job tc_3\">>>\n{found}\n<<<END b3>>>")}),
            ];
            let (reply, calls) = answer(&history, TRAVEL);
            assert!(calls.is_empty());
            assert_eq!(reply.content(), expected);
        }
    }

    #[test]
    fn every_flow_calls_only_offered_tools_with_valid_arguments() {
        let messages = [
            "Business class from Frankfurt to New York on 15 March",
            "Flights from Paris to Tokyo",
            "Alert me when business class FRA to JFK in March drops below 60,000 miles",
            "Benachrichtige mich, wenn Business FRA nach JFK im März unter 60.000 Meilen fällt",
            "I need help with a refund",
            "Ich brauche Hilfe bei einer Erstattung",
            "How do fuel surcharges work?",
            "How are you?",
            "Und in der First Class?",
            "A day later",
            "Alert me below 60,000 miles",
        ];
        let profiles: [&[&str]; 5] = [
            TRAVEL,
            SUPPORT,
            &["search_flights"],
            &[],
            &["search_knowledge_base"],
        ];
        for tools in profiles {
            for message in messages {
                let mut history = after_search();
                history.push(user(message));
                // `answer` checks every call.
                answer(&history, tools);
                answer(&[user(message)], tools);
            }
        }
    }
}
