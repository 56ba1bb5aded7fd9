//! Which links may reach the client: `https` only, and only to hosts on the allow-list
//! (`ANSWER_LINK_HOSTS`). A link elsewhere in a rendered answer or a flight card could send
//! the chat's data to a third party, or run script (`javascript:`).

/// `ANSWER_LINK_HOSTS`' default: Seats.aero, the booking sites of the mileage programmes
/// Seats.aero searches (`domain::award_booking`) and the airlines' own sites where cash
/// fares are booked (`domain::carrier_sites`).
pub const DEFAULT_LINK_HOSTS: &str = "seats.aero,.aa.com,.aerlingus.com,.aeromexico.com,.aircanada.com,.airfrance.com,\
.alaskaair.com,.ana.co.jp,.austrian.com,.britishairways.com,.brusselsairlines.com,\
.cathaypacific.com,.condor.com,.copaair.com,.delta.com,.emirates.com,\
.ethiopianairlines.com,.etihad.com,.eurowings.com,.finnair.com,.flyingblue.com,\
.flysas.com,.flytap.com,.iberia.com,.ita-airways.com,.jal.co.jp,.jetblue.com,.klm.com,\
.lifemiles.com,.lot.com,.lufthansa.com,.miles-and-more.com,.qantas.com,\
.qatarairways.com,.saudia.com,.singaporeair.com,.smiles.com.br,.swiss.com,\
.turkishairlines.com,.united.com,.velocityfrequentflyer.com,.virginatlantic.com,\
.voeazul.com.br";

/// The allow-list: exact hosts, or `.example.com` for a domain and its subdomains.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkPolicy {
    hosts: Vec<String>,
}

/// The host of an `http(s)` URL, lower-cased; `None` for anything else.
pub(crate) fn host(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?.split(':').next()?;
    Some(host.to_ascii_lowercase())
}

impl LinkPolicy {
    /// The policy allowing `hosts` (`.example.com` allows its subdomains).
    pub fn new(hosts: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        Self {
            hosts: hosts
                .into_iter()
                .map(|h| h.as_ref().trim().to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
        }
    }

    /// `https`, a host on the list, and nothing that could make a browser read the URL
    /// differently (whitespace, control characters, backslashes).
    pub fn allows(&self, url: &str) -> bool {
        if !url.starts_with("https://")
            || url
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '\\')
        {
            return false;
        }
        host(url).is_some_and(|host| {
            !host.is_empty()
                // A plain DNS name: no percent-escapes or other characters a browser may
                // read as something else.
                && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
                && self
                    .hosts
                    .iter()
                    .any(|allowed| match allowed.strip_prefix('.') {
                        Some(suffix) => host == suffix || host.ends_with(allowed.as_str()),
                        None => host == *allowed,
                    })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_links_to_listed_hosts_pass() {
        let policy = LinkPolicy::new(["seats.aero", ".united.com"]);
        for good in [
            "https://seats.aero/search?x=1",
            "https://SEATS.AERO/a",
            "https://www.united.com/book",
            "https://united.com/",
        ] {
            assert!(policy.allows(good), "{good}");
        }
        for bad in [
            "http://seats.aero/a",
            "javascript:alert(1)",
            "https://seats.aero.evil.example/a",
            "https://evil.example/?seats.aero",
            "https://seats.aero@evil.example/",
            "https://notunited.com/",
            "https://seats.aero\\@evil.example",
            "https://seats.aero/a b",
            "data:text/html,hi",
            "https://seats.aero%2f@evil.example/",
            "https://evil%2eexample.seats.aero/",
        ] {
            assert!(!policy.allows(bad), "{bad}");
        }
    }

    #[test]
    fn every_programmes_and_airlines_booking_page_is_on_the_default_list() {
        use domain::award_booking::{AwardTrip, Party, link};
        let policy = LinkPolicy::new(DEFAULT_LINK_HOSTS.split(','));
        let trip = AwardTrip {
            origin: "FRA",
            destination: "JFK",
            date: time::macros::date!(2027 - 02 - 26),
            party: Party {
                adults: 2,
                children: 1,
                infants: 0,
            },
        };
        for programme in domain::loyalty::PROGRAMMES {
            let (_, url) = link(programme.source, &trip).unwrap_or_default();
            assert!(policy.allows(&url), "{}: {url}", programme.source);
        }
        for url in domain::carrier_sites::all() {
            assert!(policy.allows(url), "{url}");
        }
    }
}
