// The router: #/ is the lobby, #/game/<id> a game (waiting room, then the table),
// #/game/<id>/watch the same as a spectator, #/game/<id>/replay/<turn> the replay.

import { api } from "./api.js";
import { h } from "./dom.js";
import { showGame } from "./game.js";
import { showLobby } from "./lobby.js";
import { showReplay } from "./replay.js";

const app = document.getElementById("app");
const connection = document.getElementById("connection");
let rules = null;
let current = null; // {key, cleanup, update?}

function parse() {
  const parts = location.hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter(Boolean)
    .map((p) => decodeURIComponent(p));
  if (parts[0] === "game" && parts[1]) {
    if (parts[2] === "replay") {
      return { screen: "replay", game: parts[1], turn: Number(parts[3]) || 1 };
    }
    return { screen: "game", game: parts[1], watch: parts[2] === "watch" };
  }
  return { screen: "lobby" };
}

function setConnection(status) {
  const text = {
    live: "Live",
    connecting: "Connecting…",
    reconnecting: "Reconnecting…",
  }[status];
  connection.textContent = text || "";
  connection.className = `connection ${status || ""}`;
}

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function route() {
  const where = parse();
  const key = `${where.screen}:${where.game || ""}:${where.watch ? "watch" : ""}`;
  if (current && current.key === key && current.update) {
    current.update(where);
    return;
  }
  if (current) current.cleanup();
  setConnection("");
  const holder = h("div", { class: "screen" });
  app.replaceChildren(holder);
  let screen;
  if (where.screen === "game") {
    screen = showGame(holder, where.game, { rules, watch: where.watch, setConnection });
  } else if (where.screen === "replay") {
    screen = showReplay(holder, where.game, where.turn, { rules, navigate });
  } else {
    screen = showLobby(holder, { rules, navigate });
  }
  current = { key, ...screen };
  if (document.activeElement === document.body) app.focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

async function boot() {
  for (let attempt = 0; ; attempt += 1) {
    try {
      rules = await api.rules();
      break;
    } catch (err) {
      app.replaceChildren(
        h("p", { class: "message error", role: "alert" }, `The server does not answer (${err.message}); retrying…`),
      );
      await new Promise((resolve) => setTimeout(resolve, Math.min(10000, 500 * 2 ** attempt)));
    }
  }
  window.addEventListener("hashchange", route);
  route();
}

boot();
