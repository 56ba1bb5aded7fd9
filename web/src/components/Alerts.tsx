// The user's fare alerts (`GET /alerts`): each with its route, dates, class and limit, when
// it was checked, and what it found; Delete asks once more (`DELETE /alerts/{alert_id}`).
// Alerts are made in the chat (`create_fare_alert`, once the user approved it).

import { useCallback, useContext, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, type FareAlert } from "../api";
import { errorText, formatDateTime, formatDay, formatDayRange, formatNumber, relativeTime } from "../format";
import { type Texts, Words } from "../i18n";

/** What the panel needs of the router. */
export interface AlertsApi {
  listAlerts(): Promise<{ alerts: FareAlert[] }>;
  deleteAlert(alertId: string): Promise<void>;
}

type List = { state: "loading" } | { state: "loaded"; alerts: FareAlert[] } | { state: "failed"; error: string };

function money(amount: number, currency: string, t: Texts): string {
  try {
    return new Intl.NumberFormat(t.locale, { style: "currency", currency: currency.toUpperCase() }).format(amount);
  } catch {
    return `${formatNumber(amount, t)} ${currency}`;
  }
}

/** "at most 80,000 miles", "at most €1,200.00", or both. */
function limitOf(alert: FareAlert, t: Texts): string {
  const parts: string[] = [];
  if (alert.max_miles != null) parts.push(t.atMostMiles(formatNumber(alert.max_miles, t)));
  if (alert.max_price) parts.push(t.atMostPrice(money(alert.max_price.amount, alert.max_price.currency, t)));
  return parts.join(" · ");
}

function AlertItem(props: { alert: FareAlert; onDelete: () => Promise<void> }) {
  const t = useContext(Words);
  const { alert } = props;
  const [mode, setMode] = useState<"idle" | "confirm" | "busy">("idle");
  const [failure, setFailure] = useState<string | null>(null);
  const route = `${alert.origin} → ${alert.destination}`;
  const limit = limitOf(alert, t);
  const remove = async () => {
    setMode("busy");
    setFailure(null);
    try {
      await props.onDelete();
    } catch (e) {
      setFailure(t.chatActionFailed(errorText(e, t)));
      setMode("idle");
    }
  };
  return (
    <li class="alert-item" data-alert-id={alert.id}>
      <article aria-label={t.alertOf(route)}>
        <h3 class="alert-route">{route}</h3>
        <p class="alert-terms">
          {formatDayRange(alert.date_from, alert.date_to, t)} · {t.cabins[alert.cabin] ?? alert.cabin}
          {limit ? ` · ${limit}` : ""}
        </p>
        <p class="alert-checks muted">
          {alert.last_checked_at ? t.lastChecked(relativeTime(alert.last_checked_at, t)) : t.notChecked}{" "}
          {alert.next_check_at ? t.nextCheck(formatDateTime(alert.next_check_at, t)) : t.checksOver}
        </p>
        <p class="alert-found">{t.found(alert.matches.length)}</p>
        {alert.matches.length ? (
          <ul class="alert-matches">
            {alert.matches.map((m) => (
              <li key={m.key}>
                <strong>{m.flight.airline}</strong> {m.flight.flight_numbers} · {formatDay(m.flight.date, t)} ·{" "}
                {m.flight.departure.airport} → {m.flight.arrival.airport} · <span class="match-price">{m.flight.price}</span>{" "}
                <span class="muted">{t.foundAt(relativeTime(m.found_at, t))}</span>
              </li>
            ))}
          </ul>
        ) : null}
        {mode === "confirm" ? (
          <div class="row-actions confirm" role="group" aria-label={t.deleteAlertQ}>
            <span>{t.deleteAlertQ}</span>
            <button type="button" class="small danger" onClick={() => void remove()}>
              {t.delete}
            </button>
            <button type="button" class="small" onClick={() => setMode("idle")}>
              {t.cancel}
            </button>
          </div>
        ) : (
          <div class="row-actions">
            <button type="button" class="small delete-alert" disabled={mode === "busy"} onClick={() => setMode("confirm")}>
              {t.delete}
            </button>
          </div>
        )}
        {failure ? (
          <p class="tool-error" role="alert">
            {failure}
          </p>
        ) : null}
      </article>
    </li>
  );
}

export function AlertsPanel(props: { api: AlertsApi; onClose: () => void }) {
  const t = useContext(Words);
  const [list, setList] = useState<List>({ state: "loading" });
  const { api } = props;
  const heading = useRef<HTMLHeadingElement>(null);

  // Opened, the panel takes the focus: a keyboard or screen reader user is where it is.
  useEffect(() => heading.current?.focus(), []);

  const load = useCallback(async () => {
    setList({ state: "loading" });
    try {
      const { alerts } = await api.listAlerts();
      setList({ state: "loaded", alerts });
    } catch (e) {
      setList({ state: "failed", error: errorText(e, t) });
    }
  }, [api, t]);

  useEffect(() => {
    void load();
  }, [load]);

  const drop = (id: string) =>
    setList((l) => (l.state === "loaded" ? { ...l, alerts: l.alerts.filter((a) => a.id !== id) } : l));

  const remove = async (id: string) => {
    try {
      await api.deleteAlert(id);
    } catch (e) {
      // Gone already (deleted in another tab): what the user wanted.
      if (!(e instanceof ApiError && e.code === "not_found")) throw e;
    }
    drop(id);
  };

  return (
    <section id="alerts-panel" class="alerts-panel" aria-labelledby="alerts-title">
      <header class="panel-head">
        <h2 id="alerts-title" tabIndex={-1} ref={heading}>
          {t.alerts}
        </h2>
        <button type="button" class="small close-alerts" onClick={props.onClose}>
          {t.backToChat}
        </button>
      </header>
      {list.state === "loading" ? (
        <p class="muted" role="status">
          {t.loadingAlerts}
        </p>
      ) : null}
      {list.state === "failed" ? (
        <div class="tool-error alerts-error" role="alert">
          <p>
            <strong>{t.alertsFailed}</strong> <span class="muted">{list.error}</span>
          </p>
          <button type="button" class="retry" onClick={() => void load()}>
            {t.retry}
          </button>
        </div>
      ) : null}
      {list.state === "loaded" && !list.alerts.length ? <p class="muted empty-alerts">{t.noAlerts}</p> : null}
      {list.state === "loaded" && list.alerts.length ? (
        <ul class="alert-list">
          {list.alerts.map((a) => (
            <AlertItem key={a.id} alert={a} onDelete={() => remove(a.id)} />
          ))}
        </ul>
      ) : null}
    </section>
  );
}
