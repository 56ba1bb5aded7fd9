//! Frequent-flyer programmes and airline alliances as data: which Seats.aero source a
//! programme's name means ("Miles & More" → `lufthansa`), and which carriers (IATA codes)
//! belong to an alliance. Names are matched without case, spaces or punctuation, so
//! "Miles&More", "miles and more" and "MILES & MORE" are the same programme.
//!
//! To add a programme, add a row to [`PROGRAMMES`]: the source id as Seats.aero's partner
//! API names it, then the names people use. Alliance membership changes rarely; the rows
//! of [`ALLIANCES`] say when they were last checked.

/// A mileage programme Seats.aero searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Programme {
    /// Seats.aero's `source` id, e.g. `lufthansa`.
    pub source: &'static str,
    /// Names and nicknames people use for it; the first is the one shown.
    pub names: &'static [&'static str],
}

/// The programmes Seats.aero's partner API searches (its `sources` parameter).
pub const PROGRAMMES: &[Programme] = &[
    Programme {
        source: "aeroplan",
        names: &["Air Canada Aeroplan", "Aeroplan", "Air Canada"],
    },
    Programme {
        source: "aeromexico",
        names: &[
            "Aeromexico Club Premier",
            "Club Premier",
            "Aeromexico Rewards",
            "Aeromexico",
        ],
    },
    Programme {
        source: "alaska",
        names: &[
            "Alaska Mileage Plan",
            "Mileage Plan",
            "Atmos Rewards",
            "Alaska Airlines",
            "Alaska",
        ],
    },
    Programme {
        source: "american",
        names: &[
            "American AAdvantage",
            "AAdvantage",
            "American Airlines",
            "American",
        ],
    },
    Programme {
        source: "azul",
        names: &["Azul Fidelidade", "TudoAzul", "Azul"],
    },
    Programme {
        source: "connectmiles",
        names: &["ConnectMiles", "Copa ConnectMiles", "Copa"],
    },
    Programme {
        source: "delta",
        names: &["Delta SkyMiles", "SkyMiles", "Delta"],
    },
    Programme {
        source: "emirates",
        names: &["Emirates Skywards", "Skywards", "Emirates"],
    },
    Programme {
        source: "ethiopian",
        names: &["Ethiopian ShebaMiles", "ShebaMiles", "Ethiopian"],
    },
    Programme {
        source: "etihad",
        names: &["Etihad Guest", "Etihad"],
    },
    Programme {
        source: "eurobonus",
        names: &["SAS EuroBonus", "EuroBonus", "SAS"],
    },
    Programme {
        source: "finnair",
        names: &["Finnair Plus", "Finnair"],
    },
    Programme {
        source: "flyingblue",
        names: &[
            "Flying Blue",
            "Air France KLM Flying Blue",
            "Air France",
            "KLM",
        ],
    },
    Programme {
        source: "jetblue",
        names: &["JetBlue TrueBlue", "TrueBlue", "JetBlue"],
    },
    Programme {
        source: "lifemiles",
        names: &["Avianca LifeMiles", "LifeMiles", "Avianca"],
    },
    Programme {
        source: "lufthansa",
        names: &[
            "Miles & More",
            "Lufthansa Miles & More",
            "Miles and More",
            "Lufthansa",
        ],
    },
    Programme {
        source: "qantas",
        names: &["Qantas Frequent Flyer", "Qantas Points", "Qantas"],
    },
    // Avios: of the programmes that spend Avios, Qatar's is the one Seats.aero searches.
    Programme {
        source: "qatar",
        names: &[
            "Qatar Privilege Club",
            "Privilege Club",
            "Qatar Avios",
            "Avios",
            "Qatar Airways",
            "Qatar",
        ],
    },
    Programme {
        source: "saudia",
        names: &["Saudia AlFursan", "AlFursan", "Saudia"],
    },
    Programme {
        source: "singapore",
        names: &[
            "Singapore KrisFlyer",
            "KrisFlyer",
            "Singapore Airlines",
            "Singapore",
        ],
    },
    Programme {
        source: "smiles",
        names: &["GOL Smiles", "Smiles"],
    },
    Programme {
        source: "turkish",
        names: &[
            "Turkish Miles&Smiles",
            "Miles&Smiles",
            "Miles and Smiles",
            "Turkish Airlines",
            "Turkish",
        ],
    },
    Programme {
        source: "united",
        names: &["United MileagePlus", "MileagePlus", "United"],
    },
    Programme {
        source: "velocity",
        names: &["Virgin Australia Velocity", "Velocity"],
    },
    Programme {
        source: "virginatlantic",
        names: &[
            "Virgin Atlantic Flying Club",
            "Flying Club",
            "Virgin Points",
            "Virgin Atlantic",
        ],
    },
];

/// The name a row shows for a Seats.aero `source` id: the programme's first name, else the
/// id itself (a programme Seats.aero added after this list).
pub fn display_name(source: &str) -> String {
    let source = source.trim();
    PROGRAMMES
        .iter()
        .find(|p| p.source.eq_ignore_ascii_case(source))
        .and_then(|p| p.names.first())
        .map_or_else(|| source.to_owned(), |name| (*name).to_owned())
}

/// The programmes `names` mean, as Seats.aero source ids (sorted, without repeats), and the
/// names that matched none. A name matches a programme when it equals one of its names, or
/// its source id, ignoring case, spaces and punctuation ("&" reads as "and").
pub fn sources_for(names: &[String]) -> (Vec<&'static str>, Vec<String>) {
    let (found, unknown) = resolve(names, PROGRAMMES, |p| {
        std::iter::once(p.source)
            .chain(p.names.iter().copied())
            .collect()
    });
    let mut sources: Vec<&'static str> = found.iter().map(|p| p.source).collect();
    sources.sort_unstable();
    (sources, unknown)
}

/// An airline alliance and its member carriers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alliance {
    /// The name shown, e.g. "Star Alliance".
    pub name: &'static str,
    /// Other names people use.
    pub aliases: &'static [&'static str],
    /// Member airlines' IATA codes (full members, as published by the alliance; checked
    /// 2026-11).
    pub members: &'static [&'static str],
}

/// The three airline alliances and their members.
pub const ALLIANCES: &[Alliance] = &[
    Alliance {
        name: "Star Alliance",
        aliases: &["Star", "StarAlliance"],
        members: &[
            "A3", "AC", "AI", "AV", "BR", "CA", "CM", "ET", "LH", "LO", "LX", "MS", "NH", "NZ",
            "OS", "OU", "OZ", "SA", "SK", "SN", "SQ", "TG", "TK", "TP", "UA", "ZH",
        ],
    },
    Alliance {
        name: "oneworld",
        aliases: &["One World"],
        members: &[
            "AA", "AS", "AY", "BA", "CX", "FJ", "IB", "JL", "MH", "QF", "QR", "RJ", "UL", "WY",
            "AT",
        ],
    },
    Alliance {
        name: "SkyTeam",
        aliases: &["Sky Team"],
        members: &[
            "AF", "AM", "AR", "CI", "DL", "GA", "KE", "KL", "KQ", "ME", "MU", "OK", "RO", "SV",
            "UX", "VN", "VS", "XY", "MF",
        ],
    },
];

/// The alliances `names` mean, and the names that matched none.
pub fn alliances_for(names: &[String]) -> (Vec<&'static Alliance>, Vec<String>) {
    resolve(names, ALLIANCES, |a| {
        std::iter::once(a.name)
            .chain(a.aliases.iter().copied())
            .collect()
    })
}

/// The entries of `table` that `names` mean, each once in the order first asked for, and
/// the (non-blank) names that matched none. `names_of` lists what an entry is called;
/// names compare by [`fold`].
fn resolve<T: PartialEq>(
    names: &[String],
    table: &'static [T],
    names_of: impl Fn(&T) -> Vec<&'static str>,
) -> (Vec<&'static T>, Vec<String>) {
    let mut found: Vec<&'static T> = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        let wanted = fold(name);
        if wanted.is_empty() {
            continue;
        }
        match table
            .iter()
            .find(|entry| names_of(entry).iter().any(|n| fold(n) == wanted))
        {
            Some(entry) if !found.contains(&entry) => found.push(entry),
            Some(_) => {}
            None => unknown.push(name.trim().to_owned()),
        }
    }
    (found, unknown)
}

impl Alliance {
    /// True when `carrier` (an IATA airline code, any case) is a member.
    pub fn has(&self, carrier: &str) -> bool {
        let carrier = carrier.trim();
        self.members.iter().any(|m| m.eq_ignore_ascii_case(carrier))
    }
}

/// Lower-case letters and digits only, with "&" read as "and".
fn fold(name: &str) -> String {
    name.replace('&', "and")
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn programme_names_people_say_map_to_sources() {
        let (sources, unknown) = sources_for(&names(&[
            "Miles & More",
            "miles and more",
            "Flying Blue",
            "KrisFlyer",
            "aeroplan",
            "Imaginary Miles",
        ]));
        assert_eq!(
            sources,
            ["aeroplan", "flyingblue", "lufthansa", "singapore"]
        );
        assert_eq!(unknown, ["Imaginary Miles"]);
    }

    #[test]
    fn sources_show_as_programme_names() {
        assert_eq!(display_name("aeroplan"), "Air Canada Aeroplan");
        assert_eq!(display_name(" Lufthansa "), "Miles & More");
        assert_eq!(display_name("newprogramme"), "newprogramme");
    }

    #[test]
    fn every_programme_name_is_unambiguous() {
        let mut seen = std::collections::HashMap::new();
        for programme in PROGRAMMES {
            for name in programme.names.iter().chain([&programme.source]) {
                if let Some(other) = seen.insert(fold(name), programme.source) {
                    assert_eq!(other, programme.source, "{name} names two programmes");
                }
            }
        }
    }

    #[test]
    fn alliances_by_name_and_membership() {
        let (found, unknown) = alliances_for(&names(&["star alliance", "SkyTeam", "Nonesuch"]));
        assert_eq!(
            found.iter().map(|a| a.name).collect::<Vec<_>>(),
            ["Star Alliance", "SkyTeam"]
        );
        assert_eq!(unknown, ["Nonesuch"]);
        assert!(found[0].has("lh") && !found[0].has("BA"));
        let carriers: Vec<&str> = ALLIANCES
            .iter()
            .flat_map(|a| a.members.iter().copied())
            .collect();
        let mut unique = carriers.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), carriers.len(), "a carrier in two alliances");
    }
}
