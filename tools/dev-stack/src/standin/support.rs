//! What goes to the support agent: a refund, baggage, a booking problem, or a wish to talk to
//! a person. The travel agent hands such a message over (`transfer_to_support`, with a
//! short reason); the support agent answers it.

use super::find_word;

/// Why a user needs support.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Topic {
    Refund,
    Baggage,
    Booking,
    Person,
}

/// What names each topic (lower case, whole words), the first topic found counts.
const TOPICS: &[(Topic, &[&str])] = &[
    (
        Topic::Refund,
        &[
            "refund",
            "refunds",
            "refunded",
            "reimbursement",
            "money back",
            "erstattung",
            "rückerstattung",
            "erstattet",
            "geld zurück",
        ],
    ),
    (
        Topic::Baggage,
        &[
            "baggage",
            "luggage",
            "suitcase",
            "lost bag",
            "my bag",
            "gepäck",
            "koffer",
            "gepäckstück",
        ],
    ),
    (
        Topic::Booking,
        &[
            "my booking",
            "booking problem",
            "booking issue",
            "cancel my flight",
            "cancel my booking",
            "meine buchung",
            "meiner buchung",
            "buchungsproblem",
        ],
    ),
    (
        Topic::Person,
        &[
            "human",
            "real person",
            "live agent",
            "an agent",
            "customer service",
            "support",
            "mensch",
            "menschen",
            "mitarbeiter",
            "mitarbeiterin",
            "kundenservice",
            "kundendienst",
        ],
    ),
];

impl Topic {
    /// The topic a message is about, if it needs support.
    pub(super) fn of(message: &str) -> Option<Self> {
        let lower = message.to_lowercase();
        TOPICS
            .iter()
            .find(|(_, words)| words.iter().any(|w| find_word(&lower, w).is_some()))
            .map(|(topic, _)| *topic)
    }

    /// The handoff's reason, in the user's language (it is shown to them).
    pub(super) fn reason(self, german: bool) -> &'static str {
        match (self, german) {
            (Self::Refund, false) => "Help with a refund",
            (Self::Refund, true) => "Hilfe bei einer Erstattung",
            (Self::Baggage, false) => "Help with baggage",
            (Self::Baggage, true) => "Hilfe beim Gepäck",
            (Self::Booking, false) => "A problem with a booking",
            (Self::Booking, true) => "Ein Problem mit einer Buchung",
            (Self::Person, false) => "Wants to talk to support",
            (Self::Person, true) => "Möchte mit dem Support sprechen",
        }
    }

    /// The support agent's answer: what the demo cannot do, and who can.
    pub(super) fn answer(self, german: bool) -> String {
        let what = match (self, german) {
            (Self::Refund, false) => "a refund",
            (Self::Refund, true) => "eine Erstattung",
            (Self::Baggage, false) => "baggage",
            (Self::Baggage, true) => "Gepäckfragen",
            (Self::Booking, false) => "a booking problem",
            (Self::Booking, true) => "ein Buchungsproblem",
            (Self::Person, false) => "your request",
            (Self::Person, true) => "dein Anliegen",
        };
        if german {
            format!(
                "Ich bin der Support-Assistent, kein Mensch. In dieser Offline-Demo kann ich keine Buchungen einsehen: Wende dich für {what} bitte mit deiner Buchungsnummer an die Airline oder das Reisebüro, bei dem du gebucht hast. Fragen zu Meilen und Programmen beantworte ich aus der Wissensdatenbank."
            )
        } else {
            format!(
                "I am the support assistant, not a person. In this offline demo I cannot look into bookings: for {what}, please contact the airline or travel agency you booked with, your booking reference at hand. Questions about miles and programmes I answer from the knowledge base."
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_in_english_and_german() {
        for (message, topic) in [
            ("I need help with a refund", Topic::Refund),
            ("Ich brauche Hilfe bei einer Erstattung", Topic::Refund),
            ("My luggage did not arrive", Topic::Baggage),
            ("Mein Koffer ist weg", Topic::Baggage),
            ("There is a problem with my booking", Topic::Booking),
            ("Can I talk to a human?", Topic::Person),
            ("Ich möchte mit einem Menschen sprechen", Topic::Person),
        ] {
            assert_eq!(Topic::of(message), Some(topic), "{message}");
        }
        for message in [
            "Business class from Frankfurt to New York on 15 March",
            "How do fuel surcharges work?",
            "Hallo!",
        ] {
            assert_eq!(Topic::of(message), None, "{message}");
        }
    }
}
