//! The fakes the local stack starts when no real keys are set: the LLM stand-in and the
//! Seats.aero and Amadeus APIs answering from the recorded fixtures.

use std::net::TcpListener;

use test_support::fake_llm::FakeLlm;
use wiremock::MockServer;

use crate::standin;

/// The running fakes; dropping them stops them.
pub struct Fakes {
    pub llm: Option<FakeLlm>,
    pub seatsaero: Option<MockServer>,
    pub amadeus: Option<MockServer>,
}

/// Ports of the fakes; `None` leaves a fake out (its real service is used).
#[derive(Debug, Clone, Copy)]
pub struct Ports {
    pub llm: Option<u16>,
    pub seatsaero: Option<u16>,
    pub amadeus: Option<u16>,
}

async fn wiremock_on(port: u16) -> Result<MockServer, String> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    Ok(MockServer::builder().listener(listener).start().await)
}

pub async fn start(ports: Ports) -> Result<Fakes, String> {
    let llm = match ports.llm {
        Some(port) => Some(
            FakeLlm::start_with(
                port,
                Box::new(|request| standin::reply(request, standin::today())),
            )
            .await,
        ),
        None => None,
    };
    let seatsaero = match ports.seatsaero {
        Some(port) => {
            let server = wiremock_on(port).await?;
            test_support::upstreams::mount_seatsaero(&server).await;
            Some(server)
        }
        None => None,
    };
    let amadeus = match ports.amadeus {
        Some(port) => {
            let server = wiremock_on(port).await?;
            test_support::upstreams::mount_amadeus(&server).await;
            Some(server)
        }
        None => None,
    };
    Ok(Fakes {
        llm,
        seatsaero,
        amadeus,
    })
}
