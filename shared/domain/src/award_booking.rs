//! Where an award seat is booked: each mileage programme's own booking page, filled with the
//! route, date and travellers where the programme's URL takes them. An award seat is
//! booked with the miles of the programme that priced it, so that programme's page is the
//! row's link; the upstream's generic list (the same partners for every row, one adult)
//! is not passed on.

use time::Date;

use crate::loyalty;

/// Who travels: adults, children with a seat, infants on a lap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Party {
    /// Adults.
    pub adults: u8,
    /// Children with their own seat.
    pub children: u8,
    /// Infants on an adult's lap.
    pub infants: u8,
}

/// One way of one award search: what a booking page can be filled with.
#[derive(Debug, Clone, Copy)]
pub struct AwardTrip<'a> {
    /// Departure airport (IATA).
    pub origin: &'a str,
    /// Arrival airport (IATA).
    pub destination: &'a str,
    /// Departure day.
    pub date: Date,
    /// Who travels.
    pub party: Party,
}

/// The booking page of programme `source` (a Seats.aero source, e.g. `aeroplan`) for `trip`,
/// labelled "Book with <programme>": a search filled with the trip where the programme's
/// URL takes one, else the programme's award booking page. `None` for a programme this
/// table does not know.
pub fn link(source: &str, trip: &AwardTrip<'_>) -> Option<(String, String)> {
    let AwardTrip {
        origin: from,
        destination: to,
        date,
        party:
            Party {
                adults: a,
                children: c,
                infants: i,
            },
    } = *trip;
    let url = match source {
        "aeroplan" => format!(
            "https://www.aircanada.com/aeroplan/redeem/availability/outbound?org0={from}&dest0={to}\
             &departureDate0={date}&lang=en-CA&tripType=O&ADT={a}&YTH=0&CHD={c}&INF={i}&INS=0\
             &marketCode=INT"
        ),
        "united" => format!(
            "https://www.united.com/en/us/fsr/choose-flights?f={from}&t={to}&d={date}&tt=1&at=1\
             &sc=7&px={a},0,0,0,{c},0,{i}&taxng=1&clm=7&st=bestmatches"
        ),
        "alaska" => format!(
            "https://www.alaskaair.com/search/results?A={a}&C={c}&L={i}&O={from}&D={to}\
             &OD={date}&RT=false&ShoppingMethod=onlineaward"
        ),
        "american" => format!(
            "https://www.aa.com/booking/search?locale=en_US&pax={seated}&adult={a}&child={c}\
             &type=OneWay&searchType=Award&cabin=&carriers=ALL&slices=%5B%7B%22orig%22%3A%22{from}\
             %22%2C%22dest%22%3A%22{to}%22%2C%22date%22%3A%22{date}%22%7D%5D",
            seated = u16::from(a) + u16::from(c)
        ),
        "virginatlantic" => format!(
            "https://www.virginatlantic.com/flight-search/select-flights?origin={from}\
             &destination={to}&departureDate={date}&adult={a}&child={c}&infant={i}\
             &awardSearch=true"
        ),
        "delta" => format!(
            "https://www.delta.com/flight-search/book-a-flight?tripType=ONE_WAY&fromCity={from}\
             &toCity={to}&departureDate={date}&paxCount={a}&shopWithMiles=true"
        ),
        other => landing_page(other)?.to_owned(),
    };
    let name = loyalty::display_name(source);
    Some((format!("Book with {name}"), url))
}

/// A programme's page for booking with miles, for programmes whose search URL does not
/// take a route and date.
fn landing_page(source: &str) -> Option<&'static str> {
    Some(match source {
        "aeromexico" => "https://www.aeromexico.com/en-us/club-premier",
        "azul" => "https://www.voeazul.com.br/us/en/tudoazul",
        "connectmiles" => "https://www.copaair.com/en-us/connectmiles/",
        "emirates" => "https://www.emirates.com/english/skywards/",
        "ethiopian" => "https://www.ethiopianairlines.com/aa/shebamiles",
        "etihad" => "https://www.etihad.com/en/etihadguest",
        "eurobonus" => "https://www.flysas.com/en/eurobonus/",
        "finnair" => "https://www.finnair.com/en/finnair-plus",
        "flyingblue" => "https://www.flyingblue.com/en/spend/flights",
        "jetblue" => "https://www.jetblue.com/trueblue",
        "lifemiles" => "https://www.lifemiles.com/fly/find",
        "lufthansa" => "https://www.miles-and-more.com/row/en/spend/flights.html",
        "qantas" => "https://www.qantas.com/au/en/frequent-flyer/use-points/flights.html",
        "qatar" => "https://www.qatarairways.com/en/Privilege-Club.html",
        "saudia" => "https://www.saudia.com/alfursan",
        "singapore" => "https://www.singaporeair.com/en_UK/us/ppsclub-krisflyer/",
        "smiles" => "https://www.smiles.com.br/",
        "turkish" => "https://www.turkishairlines.com/en-int/miles-and-smiles/",
        "velocity" => "https://www.velocityfrequentflyer.com/",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn trip(adults: u8, children: u8, infants: u8) -> AwardTrip<'static> {
        AwardTrip {
            origin: "FRA",
            destination: "JFK",
            date: date!(2027 - 02 - 26),
            party: Party {
                adults,
                children,
                infants,
            },
        }
    }

    #[test]
    fn a_programme_with_a_search_url_gets_the_route_date_and_whole_party() {
        let (label, url) = link("aeroplan", &trip(2, 1, 1)).unwrap();
        assert_eq!(label, "Book with Air Canada Aeroplan");
        for part in [
            "org0=FRA",
            "dest0=JFK",
            "departureDate0=2027-02-26",
            "ADT=2",
            "CHD=1",
            "INF=1",
        ] {
            assert!(url.contains(part), "{part} in {url}");
        }
        let (_, url) = link("alaska", &trip(2, 0, 0)).unwrap();
        assert!(
            url.contains("A=2&C=0&L=0&O=FRA&D=JFK&OD=2027-02-26"),
            "{url}"
        );
        let (_, url) = link("united", &trip(2, 0, 0)).unwrap();
        assert!(url.contains("px=2,0,0,0,0,0,0"), "{url}");
    }

    #[test]
    fn every_programme_seats_aero_searches_has_a_page_on_the_link_allow_list_hosts() {
        for programme in loyalty::PROGRAMMES {
            let (label, url) = link(programme.source, &trip(1, 0, 0))
                .unwrap_or_else(|| panic!("no booking page for {}", programme.source));
            assert!(label.starts_with("Book with "), "{label}");
            assert!(url.starts_with("https://"), "{url}");
            assert!(!url.contains(char::is_whitespace), "{url}");
        }
        assert_eq!(link("no-such-programme", &trip(1, 0, 0)), None);
    }
}
