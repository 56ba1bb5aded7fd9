//! Where a cash fare is booked: the selling airline's own site, by its IATA code. The cash
//! searches find fares but sell nothing, so a cash row links to the airline that sells it
//! (its hosts are on the answer link allow-list, `guardrails::links`).

/// Airlines by IATA code: their name and their site.
const SITES: &[(&str, &str, &str)] = &[
    ("AA", "American Airlines", "https://www.aa.com/"),
    ("AC", "Air Canada", "https://www.aircanada.com/"),
    ("AF", "Air France", "https://www.airfrance.com/"),
    ("AS", "Alaska Airlines", "https://www.alaskaair.com/"),
    ("AY", "Finnair", "https://www.finnair.com/"),
    ("AZ", "ITA Airways", "https://www.ita-airways.com/"),
    ("B6", "JetBlue", "https://www.jetblue.com/"),
    ("BA", "British Airways", "https://www.britishairways.com/"),
    ("CX", "Cathay Pacific", "https://www.cathaypacific.com/"),
    ("DE", "Condor", "https://www.condor.com/"),
    ("DL", "Delta", "https://www.delta.com/"),
    ("EI", "Aer Lingus", "https://www.aerlingus.com/"),
    ("EK", "Emirates", "https://www.emirates.com/"),
    ("EW", "Eurowings", "https://www.eurowings.com/"),
    ("EY", "Etihad", "https://www.etihad.com/"),
    ("IB", "Iberia", "https://www.iberia.com/"),
    ("JL", "Japan Airlines", "https://www.jal.co.jp/"),
    ("KL", "KLM", "https://www.klm.com/"),
    ("LH", "Lufthansa", "https://www.lufthansa.com/"),
    ("LO", "LOT", "https://www.lot.com/"),
    ("LX", "SWISS", "https://www.swiss.com/"),
    ("NH", "ANA", "https://www.ana.co.jp/"),
    ("OS", "Austrian", "https://www.austrian.com/"),
    ("QF", "Qantas", "https://www.qantas.com/"),
    ("QR", "Qatar Airways", "https://www.qatarairways.com/"),
    ("SK", "SAS", "https://www.flysas.com/"),
    (
        "SN",
        "Brussels Airlines",
        "https://www.brusselsairlines.com/",
    ),
    ("SQ", "Singapore Airlines", "https://www.singaporeair.com/"),
    ("TK", "Turkish Airlines", "https://www.turkishairlines.com/"),
    ("TP", "TAP Air Portugal", "https://www.flytap.com/"),
    ("UA", "United", "https://www.united.com/"),
    ("VS", "Virgin Atlantic", "https://www.virginatlantic.com/"),
];

/// "Book with <airline>" and the site of the airline with IATA code `code`; `None` for an
/// airline this table does not know.
pub fn link(code: &str) -> Option<(String, String)> {
    let code = code.trim().to_ascii_uppercase();
    SITES
        .iter()
        .find(|(c, _, _)| *c == code)
        .map(|(_, name, url)| (format!("Book with {name}"), (*url).to_owned()))
}

/// Every site's URL, for the allow-list's test.
pub fn all() -> impl Iterator<Item = &'static str> {
    SITES.iter().map(|(_, _, url)| *url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_airline_is_found_by_its_code_in_any_case() {
        assert_eq!(
            link(" ba "),
            Some((
                "Book with British Airways".to_owned(),
                "https://www.britishairways.com/".to_owned()
            ))
        );
        assert_eq!(link("ZZ"), None);
        assert!(all().all(|url| url.starts_with("https://www.")));
    }
}
