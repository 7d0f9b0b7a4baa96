// The tournament pages (/web/tournaments.html): #/ the tournament lobby by status (#/status/<s>;
// registering first, "all" for every one) with a logged-in account's form to create one;
// #/t/<id> one tournament (tournament.js).
// Logging in happens on the players' pages (players.html#/account): the session cookie is shared.

import { announce, h } from "./dom.js";
import { showTournament } from "./tournament.js";
import { tournaments } from "./tournament-api.js";

const main = document.getElementById("tournaments");
const accountLink = document.getElementById("account-link");
const STATUSES = [
  ["registering", "Registering"],
  ["running", "Playing"],
  ["finished", "Finished"],
  ["created", "Announced"],
  ["all", "All"],
];
const session = { me: null };
let leave = null; // what the shown page stops when another is shown (its refresh timer)

async function whoAmI() {
  try {
    session.me = await tournaments.me();
  } catch {
    session.me = null;
  }
  accountLink.textContent = session.me ? session.me.name : "Log in";
}

function row(t) {
  return h(
    "tr",
    { dataset: { tournament: t.tournament_id } },
    h("td", {}, h("a", { href: `#/t/${encodeURIComponent(t.tournament_id)}` }, t.name)),
    h("td", {}, t.rules),
    h("td", {}, t.format === "swiss" ? "Swiss" : "round robin"),
    h("td", { class: "number" }, t.round ? `${t.round} of ${t.rounds}` : `${t.rounds}`),
    h("td", { class: "number" }, t.entrants),
    h("td", {}, t.director.name),
  );
}

async function showLobby(status) {
  const page = await tournaments.lobby(status);
  const here = `#/status/${status}`;
  main.replaceChildren(
    h("h1", {}, "Tournaments"),
    h(
      "nav",
      { class: "tabs", "aria-label": "By status" },
      STATUSES.map(([s, label]) =>
        h("a", { href: `#/status/${s}`, "aria-current": here === `#/status/${s}` ? "page" : null }, label),
      ),
    ),
    page.tournaments.length
      ? h(
          "table",
          { class: "board lobby" },
          h("caption", { class: "visually-hidden" }, `tournaments: ${status}`),
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ["Name", "Rules", "Format", "Rounds", "Entrants", "Director"].map((c) => h("th", { scope: "col" }, c)),
            ),
          ),
          h("tbody", {}, page.tournaments.map(row)),
        )
      : h("p", { class: "empty" }, "None here yet."),
    await createForm(),
  );
}

function labelled(label, input, help) {
  return h("label", {}, label, input, help ? h("small", {}, help) : null);
}

async function createForm() {
  if (!session.me) {
    return h(
      "p",
      { class: "panel" },
      h("a", { href: "/web/players.html#/account" }, "Log in"),
      " to direct a tournament of your own.",
    );
  }
  const rules = await tournaments.rules();
  const message = h("p", { class: "message", role: "alert" });
  const select = (name, options) =>
    h("select", { name }, options.map(([value, label]) => h("option", { value }, label)));
  const form = h(
    "form",
    {
      class: "panel create",
      "aria-label": "Create a tournament",
      onsubmit: async (event) => {
        event.preventDefault();
        const data = new FormData(form);
        const fill = data.get("fill");
        let options = {};
        try {
          options = JSON.parse(data.get("options") || "{}");
        } catch {
          message.textContent = "options must be a JSON object, e.g. {\"match\": \"single\"}";
          return;
        }
        try {
          const made = await tournaments.create({
            name: data.get("name"),
            rules: data.get("rules"),
            options,
            format: data.get("format"),
            rounds: Number(data.get("rounds")),
            table_seats: Number(data.get("table_seats")),
            fill,
          });
          announce(`Created ${made.name}`);
          location.hash = `#/t/${encodeURIComponent(made.tournament_id)}`;
        } catch (err) {
          message.textContent = err.field ? `${err.field}: ${err.message}` : err.message;
        }
      },
    },
    h("h2", {}, "Create a tournament"),
    h("p", {}, "You direct it: you open registration, start each round and record rulings."),
    labelled("Name", h("input", { name: "name", required: true, maxlength: 80 })),
    labelled("Rules", select("rules", Object.keys(rules.presets).map((r) => [r, r]))),
    labelled("Format", select("format", [["swiss", "Swiss"], ["round_robin", "Round robin of tables"]])),
    labelled(
      "Rounds",
      h("input", { name: "rounds", type: "number", min: 0, max: 64, value: 3 }),
      "0 in a round robin: the whole cycle",
    ),
    labelled(
      "Seats at a table",
      h("input", { name: "table_seats", type: "number", min: rules.seats.min, max: rules.seats.max, value: 4 }),
    ),
    labelled(
      "Short tables",
      select("fill", [
        ["bots:greedy", "filled with the greedy bot"],
        ["bots:random", "filled with the random bot"],
        ["byes", "byes for those left over"],
      ]),
    ),
    labelled("Options", h("input", { name: "options", value: "{}" }), "the rule set's options that differ (JSON)"),
    h("button", { type: "submit", class: "button primary" }, "Create"),
    message,
  );
  return form;
}

async function route() {
  if (leave) leave();
  leave = null;
  const parts = location.hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter(Boolean)
    .map((p) => decodeURIComponent(p));
  try {
    if (parts[0] === "t" && parts[1]) leave = await showTournament(main, parts[1], session);
    else await showLobby(STATUSES.some(([s]) => s === parts[1]) ? parts[1] : "registering");
  } catch (err) {
    main.replaceChildren(h("p", { class: "message error", role: "alert" }, err.message));
  }
}

window.addEventListener("hashchange", route);
whoAmI().then(route);
