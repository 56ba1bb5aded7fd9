//! Which links may reach the client: `https` only, and only to hosts on the allow-list
//! (`ANSWER_LINK_HOSTS`). A link elsewhere in a rendered answer or a flight card could send
//! the chat's data to a third party, or run script (`javascript:`).

/// `ANSWER_LINK_HOSTS`' default: Seats.aero and the booking sites of the mileage
/// programmes Seats.aero searches, where its booking links point.
pub const DEFAULT_LINK_HOSTS: &str = "seats.aero,.aa.com,.aeromexico.com,.aircanada.com,\
.alaskaair.com,.copaair.com,.delta.com,.emirates.com,.ethiopianairlines.com,.etihad.com,\
.finnair.com,.flyingblue.com,.flysas.com,.jetblue.com,.lifemiles.com,.qantas.com,\
.qatarairways.com,.saudia.com,.singaporeair.com,.smiles.com.br,.turkishairlines.com,\
.united.com,.velocityfrequentflyer.com,.virginatlantic.com,.voeazul.com.br";

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
}
