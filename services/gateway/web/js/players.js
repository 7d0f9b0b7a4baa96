// The players' pages (/web/players.html): #/ the leaderboards (#/board/<rules>/<pool>),
// #/player/<id> a player's page with its rating chart, #/account logging in, registering,
// the account's sessions and games. The session is the HttpOnly cookie the gateway sets: no
// script here sees the token.

import { announce, h } from "./dom.js";
import { remember } from "./store.js";

const main = document.getElementById("players");
const accountLink = document.getElementById("account-link");
const RULES = ["robbers", "rummikub", "robbers-classic"];
let me = null;

async function call(method, path, body) {
  const options = { method, headers: { Accept: "application/json" }, cache: "no-store" };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const error = (data && data.error) || {};
    const failure = new Error(error.message || response.statusText);
    failure.status = response.status;
    failure.field = data && data.option;
    throw failure;
  }
  return data;
}

async function whoAmI() {
  try {
    me = await call("GET", "/api/me");
  } catch {
    me = null;
  }
  accountLink.textContent = me ? me.name : "Log in";
}

function rating(value) {
  return value.toFixed(1);
}

function tabs(current, items) {
  return h(
    "nav",
    { class: "tabs", "aria-label": "Boards" },
    items.map(([href, label]) => h("a", { href, "aria-current": href === current ? "page" : null }, label)),
  );
}

async function showBoard(rules, pool) {
  const board = await call("GET", `/api/leaderboard?rules=${encodeURIComponent(rules)}&pool=${pool}`);
  const here = `#/board/${rules}/${pool}`;
  const rows = board.entries.map((e) =>
    h(
      "tr",
      {},
      h("td", { class: "number" }, e.rank),
      h("td", {}, h("a", { href: `#/player/${encodeURIComponent(e.id)}` }, e.name)),
      h("td", { class: "number rating" }, rating(e.rating)),
      h("td", { class: "number" }, e.games),
      h("td", { class: "number" }, e.wins),
    ),
  );
  main.replaceChildren(
    h("h1", {}, pool === "bots" ? "How strong each bot is" : "Leaderboard"),
    tabs(here, [
      ...RULES.map((r) => [`#/board/${r}/${pool}`, r]),
      [`#/board/${rules}/${pool === "bots" ? "players" : "bots"}`, pool === "bots" ? "Players" : "Bots"],
    ]),
    rows.length
      ? h(
          "table",
          { class: "board" },
          h("caption", { class: "visually-hidden" }, `${rules}: ${pool} by rating`),
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { class: "number", scope: "col" }, "#"),
              h("th", { scope: "col" }, "Player"),
              h("th", { class: "number", scope: "col" }, "Rating"),
              h("th", { class: "number", scope: "col" }, "Games"),
              h("th", { class: "number", scope: "col" }, "Wins"),
            ),
          ),
          h("tbody", {}, rows),
        )
      : h("p", {}, "No rated games yet. Log in and play: finished games with an account count."),
  );
}

const SVG = "http://www.w3.org/2000/svg";

function chart(history) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("viewBox", "0 0 400 100");
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("role", "img");
  const values = [0, ...history.map((p) => p.rating)];
  svg.setAttribute("aria-label", `rating over ${history.length} games: ${values.map(rating).join(", ")}`);
  const low = Math.min(...values);
  const high = Math.max(...values, low + 1);
  const points = values.map((v, i) => {
    const x = values.length === 1 ? 0 : (400 * i) / (values.length - 1);
    const y = 95 - (90 * (v - low)) / (high - low);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  });
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", points.join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "#0b6e4f");
  line.setAttribute("stroke-width", "2");
  line.setAttribute("vector-effect", "non-scaling-stroke");
  svg.append(line);
  return svg;
}

async function showPlayer(id) {
  const page = await call("GET", `/api/players/${encodeURIComponent(id)}`);
  const sections = Object.entries(page.rules).map(([rules, r]) =>
    h(
      "section",
      { class: "panel", dataset: { rules } },
      h("h2", {}, rules),
      h(
        "div",
        { class: "figures" },
        h("span", {}, h("strong", { class: "rating" }, rating(r.rating)), "rating"),
        h("span", {}, h("strong", {}, r.games), "games"),
        h("span", {}, h("strong", {}, r.wins), "wins"),
      ),
      r.history.length ? chart(r.history) : null,
      h("h3", {}, "Recent games"),
      h(
        "ul",
        {},
        r.recent.map((g) =>
          h(
            "li",
            {},
            `${new Date(g.finished * 1000).toLocaleString()}: ${g.won ? "won" : "lost"} · `,
            h("a", { href: g.replay }, "replay"),
          ),
        ),
      ),
    ),
  );
  main.replaceChildren(
    h("h1", { class: "player-name" }, page.name, page.bot ? " (bot)" : ""),
    ...(sections.length ? sections : [h("p", {}, "No finished games yet.")]),
  );
}

function field(label, name, type, autocomplete) {
  return h("label", {}, label, h("input", { name, type, required: true, autocomplete }));
}

function credentialsForm(title, path, passwordAutocomplete) {
  const message = h("p", { class: "message", role: "alert" });
  const form = h(
    "form",
    {
      "aria-label": title,
      onsubmit: async (event) => {
        event.preventDefault();
        const data = new FormData(form);
        try {
          await call("POST", path, { name: data.get("name"), password: data.get("password") });
          await whoAmI();
          announce(`Logged in as ${me.name}`);
          route();
        } catch (err) {
          message.textContent = err.message;
        }
      },
    },
    h("h2", {}, title),
    field("Name", "name", "text", "username"),
    field("Password", "password", "password", passwordAutocomplete),
    h("button", { type: "submit", class: "button primary" }, title),
    message,
  );
  return form;
}

async function showAccount() {
  if (!me) {
    main.replaceChildren(
      h("h1", {}, "Your account"),
      h("p", {}, "Play as a guest without one; with one, your games are rated and you can resume them anywhere."),
      h(
        "div",
        { class: "account-forms" },
        credentialsForm("Log in", "/api/sessions", "current-password"),
        credentialsForm("Register", "/api/accounts", "new-password"),
      ),
    );
    return;
  }
  const [sessions, games] = await Promise.all([call("GET", "/api/me/sessions"), call("GET", "/api/me/games")]);
  const resume = async (game) => {
    const seat = await call("POST", `/api/me/games/${encodeURIComponent(game.game_id)}/token`, {});
    remember(game.game_id, { token: seat.token, seat: seat.seat, name: me.name });
    location.href = `/#/game/${encodeURIComponent(game.game_id)}`;
  };
  main.replaceChildren(
    h("h1", {}, me.name),
    h(
      "p",
      {},
      h("a", { href: `#/player/${encodeURIComponent(me.id)}` }, "Your player page"),
      " · ",
      h(
        "button",
        {
          class: "button small",
          onclick: async () => {
            await call("POST", "/api/me/logout", {});
            await whoAmI();
            route();
          },
        },
        "Log out",
      ),
    ),
    h("h2", {}, "Your games"),
    games.games.length
      ? h(
          "ul",
          {},
          games.games.map((g) =>
            h(
              "li",
              {},
              `${g.game_id} (${g.rules || "archived"}, ${g.status}) `,
              g.status === "finished" || g.status === "archived"
                ? h("a", { href: `/#/game/${encodeURIComponent(g.game_id)}/replay/1` }, "replay")
                : h("button", { class: "button small", onclick: () => resume(g) }, "Resume"),
            ),
          ),
        )
      : h("p", {}, "No games yet: take a seat while logged in."),
    h("h2", {}, "Sessions"),
    h(
      "ul",
      {},
      sessions.sessions.map((s) =>
        h(
          "li",
          {},
          `${new Date(s.created * 1000).toLocaleString()} · ${s.label || "unknown browser"} `,
          s.current
            ? h("em", {}, "(this one)")
            : h(
                "button",
                {
                  class: "button small",
                  onclick: async () => {
                    await call("DELETE", `/api/me/sessions/${encodeURIComponent(s.id)}`);
                    route();
                  },
                },
                "Revoke",
              ),
        ),
      ),
    ),
    h(
      "details",
      {},
      h("summary", {}, "Delete the account"),
      h("p", {}, "Your games stay, under a pseudonym; your name and sessions go."),
      h(
        "form",
        {
          onsubmit: async (event) => {
            event.preventDefault();
            const password = new FormData(event.target).get("password");
            await call("DELETE", "/api/me", { password });
            await whoAmI();
            route();
          },
        },
        field("Password", "password", "password", "current-password"),
        h("button", { type: "submit", class: "button" }, "Delete for good"),
      ),
    ),
  );
}

async function route() {
  const parts = location.hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter(Boolean)
    .map((p) => decodeURIComponent(p));
  try {
    if (parts[0] === "player" && parts[1]) await showPlayer(parts[1]);
    else if (parts[0] === "account") await showAccount();
    else await showBoard(RULES.includes(parts[1]) ? parts[1] : "robbers", parts[2] === "bots" ? "bots" : "players");
  } catch (err) {
    main.replaceChildren(h("p", { class: "message error", role: "alert" }, err.message));
  }
}

window.addEventListener("hashchange", route);
whoAmI().then(route);
