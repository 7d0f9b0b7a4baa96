// One tournament's page (tournaments.html#/t/<id>): registration, live standings (read again
// every few seconds while it runs), each round's tables with links to play (a seated account
// fetches its seat token), watch and replay, the standings' history with every ruling and its
// reason, and, for its director, the director's controls (director.js).

import { announce, h } from "./dom.js";
import { directorPanel } from "./director.js";
import { remember } from "./store.js";
import { links, tournaments } from "./tournament-api.js";

const REFRESH_MS = 4000;
const COUNTS = ["tables", "byes", "forfeits"];

function number(value) {
  if (value === undefined || value === null) return "";
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

function standingsTable(rows, caption, criteria) {
  if (!rows.length) return h("p", { class: "empty" }, "No standings yet: they come with the first round's results.");
  const named = Math.max(0, ...rows.map((r) => r.keys.length));
  return h(
    "table",
    { class: "board standings" },
    h("caption", { class: "visually-hidden" }, caption),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { class: "number", scope: "col" }, "#"),
        h("th", { scope: "col" }, "Player"),
        Array.from({ length: named }, (_, i) =>
          h("th", { class: "number", scope: "col" }, (criteria[i] || `tie-break ${i}`).replaceAll("_", " ")),
        ),
        COUNTS.map((k) => h("th", { class: "number", scope: "col" }, k)),
        h("th", { scope: "col" }, "Notes"),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          { dataset: { player: r.player } },
          h("td", { class: "number" }, r.rank),
          h("td", {}, r.name || r.player, r.withdrawn ? " (withdrawn)" : ""),
          Array.from({ length: named }, (_, i) => h("td", { class: "number" }, number(r.keys[i]))),
          COUNTS.map((k) => h("td", { class: "number" }, number(r[k]))),
          h("td", { class: "notes" }, r.notes.length ? h("ul", {}, r.notes.map((n) => h("li", {}, n))) : ""),
        ),
      ),
    ),
  );
}

function rulingText(r) {
  const where = [r.round ? `round ${r.round}` : null, r.table ? `table ${r.table}` : null]
    .filter(Boolean)
    .join(", ");
  const who = r.player_name || r.player;
  const turn = r.turn ? ` (turn ${r.turn}${r.verdict ? `: ${r.verdict}` : ""})` : r.verdict ? ` (${r.verdict})` : "";
  return `${r.kind}${where ? ` · ${where}` : ""}${who ? ` · ${who}` : ""}${turn}: ${r.reason}`;
}

function seatNames(table) {
  return table.seats.map((s) => s.name || s.player).join(", ");
}

function tableRow(table, session) {
  const mine = session.me && table.seats.some((s) => s.player === session.me.id);
  const playing = table.status === "started";
  const actions = [];
  if (mine && playing) {
    actions.push(
      h(
        "button",
        {
          class: "button small primary",
          dataset: { play: table.game_id },
          onclick: async (event) => {
            try {
              const seat = await tournaments.seatToken(table.game_id);
              remember(table.game_id, { token: seat.token, seat: seat.seat, name: session.me.name });
              location.href = links.play(table.game_id);
            } catch (err) {
              event.target.replaceWith(h("span", { class: "message error", role: "alert" }, err.message));
            }
          },
        },
        "Play",
      ),
    );
  }
  if (table.status === "paired") actions.push(h("span", { class: "seating" }, "being seated…"));
  if (table.status === "started") {
    actions.push(h("a", { href: links.watch(table.game_id), class: "watch" }, "Watch"));
  }
  if (table.status === "finished" || table.status === "annulled") {
    actions.push(h("a", { href: links.replay(table.game_id), class: "replay" }, "Replay"));
  }
  const result = (table.results || [])
    .map((r) => `${r.name || r.player}: ${r.total}${r.winner ? " (won)" : ""}`)
    .join(" · ");
  return h(
    "li",
    { class: `table ${table.status}`, dataset: { game: table.game_id } },
    h("strong", {}, `Table ${table.table}`),
    ` · ${table.status} · ${seatNames(table)}`,
    result ? h("div", { class: "result" }, result) : null,
    h("div", { class: "actions" }, actions.map((a) => [a, " "])),
  );
}

function roundsSection(view, session) {
  if (!view.played.length) return h("p", { class: "empty" }, "No round paired yet.");
  return [...view.played].reverse().map((round) =>
    h(
      "section",
      { class: "panel round", dataset: { round: round.round } },
      h("h3", {}, `Round ${round.round}`),
      h("ul", { class: "tables" }, round.tables.map((t) => tableRow(t, session))),
      round.byes.length ? h("p", { class: "byes" }, `Byes: ${round.byes.map((b) => b.name || b.player).join(", ")}`) : null,
    ),
  );
}

function historySection(view) {
  const criteria = view.criteria;
  const items = view.history.map((entry) =>
    h(
      "details",
      { class: "history-entry" },
      h("summary", {}, `After round ${entry.round}`),
      standingsTable(entry.standings, `standings after round ${entry.round}`, criteria),
    ),
  );
  return [
    view.rulings.length
      ? h("ul", { class: "rulings" }, view.rulings.map((r) => h("li", {}, rulingText(r))))
      : h("p", { class: "empty" }, "No rulings."),
    ...items,
  ];
}

function registration(view, session, reload) {
  const entered = session.me && view.entrants.some((e) => e.player === session.me.id && e.withdrawn === null);
  if (view.status !== "registering") {
    return h("p", { class: "registration" }, view.status === "created" ? "Registration is not open yet." : "Registration is closed.");
  }
  if (!session.me) {
    return h(
      "p",
      { class: "registration" },
      h("a", { class: "button primary", href: "/web/players.html#/account" }, "Log in to register"),
    );
  }
  const message = h("span", { class: "message", role: "alert" });
  const act = async () => {
    try {
      if (entered) await tournaments.withdraw(view.tournament_id);
      else await tournaments.register(view.tournament_id);
      announce(entered ? "Withdrawn" : "Registered");
      await reload();
    } catch (err) {
      message.textContent = err.message;
    }
  };
  return h(
    "p",
    { class: "registration" },
    h("button", { class: entered ? "button" : "button primary", dataset: { register: entered ? "withdraw" : "register" }, onclick: act }, entered ? "Withdraw" : "Register"),
    " ",
    message,
  );
}

function entrantsList(view) {
  const shown = view.entrants.filter((e) => e.withdrawn === null);
  if (!shown.length) return h("p", { class: "empty" }, "Nobody has registered yet.");
  return h("ol", { class: "entrants" }, shown.map((e) => h("li", { dataset: { player: e.player } }, e.name, h("small", {}, ` ${e.rating.toFixed(1)}`))));
}

/** Show tournament ``id`` in ``main``; returns what stops its refreshing. */
export async function showTournament(main, id, session) {
  let view = await tournaments.view(id);
  const status = h("p", { class: "status" });
  const regHolder = h("div");
  const standings = h("div", { class: "standings-holder", "aria-live": "polite" });
  const rounds = h("div", { class: "rounds" });
  const history = h("div", { class: "history" });
  const entrants = h("div");
  const director = h("div");
  let timer = null;

  const render = () => {
    status.textContent = `${view.rules} · ${view.format === "swiss" ? "Swiss" : "round robin"} · ${view.rounds} rounds of tables of ${view.table_seats} · ${view.status}${view.round ? ` · round ${view.round}` : ""} · directed by ${view.director.name}`;
    regHolder.replaceChildren(registration(view, session, reload));
    standings.replaceChildren(standingsTable(view.standings, "live standings", view.criteria));
    rounds.replaceChildren(...[roundsSection(view, session)].flat());
    history.replaceChildren(...historySection(view));
    entrants.replaceChildren(entrantsList(view));
  };
  const reload = async () => {
    view = await tournaments.view(id);
    render();
  };
  if (session.me && session.me.id === view.director.player) {
    director.replaceChildren(directorPanel(() => view, reload));
  }
  render();
  main.replaceChildren(
    h("h1", { class: "tournament-name" }, view.name),
    status,
    regHolder,
    director,
    h("h2", {}, "Standings"),
    standings,
    h("h2", {}, "Rounds"),
    rounds,
    h("h2", {}, "Rulings and the standings' history"),
    history,
    h("h2", {}, "Entrants"),
    entrants,
    h("p", {}, h("a", { href: `/api/tournaments/${encodeURIComponent(id)}/events` }, "The tournament's log (for audit)")),
  );
  timer = setInterval(async () => {
    if (view.status === "finished") return;
    try {
      await reload();
    } catch {
      // the next tick tries again
    }
  }, REFRESH_MS);
  return () => clearInterval(timer);
}
