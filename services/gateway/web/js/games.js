// The lobby's lists of games by status (waiting, in progress, finished) as tabs, each game with
// the links that fit it (join, play, watch, replay), refreshed every few seconds while shown.

import { api } from "./api.js";
import { h } from "./dom.js";
import { optionsText, plural, ruleSetName } from "./format.js";
import { gameKeys } from "./store.js";

const STATUS_TABS = [
  { status: "waiting", label: "Waiting" },
  { status: "playing", label: "In progress" },
  { status: "finished", label: "Finished" },
];

const EVERY_MS = 5000;

/** The lists' parts for the lobby to place ({tablist, panel, refreshButton}) and stop(). */
export function gameLists() {
  let stopped = false;
  let tab = "waiting";
  const lists = { waiting: null, playing: null, finished: null };

const tabButtons = {};
const panel = h("div", {
  class: "game-list",
  role: "tabpanel",
  id: "games-panel",
  tabindex: "0",
  "aria-live": "polite",
  "aria-busy": "true",
});
const tablist = h(
  "div",
  { class: "tabs", role: "tablist", "aria-label": "Games by status" },
  STATUS_TABS.map(({ status, label }) => {
    tabButtons[status] = h(
      "button",
      {
        type: "button",
        role: "tab",
        id: `tab-${status}`,
        "aria-controls": "games-panel",
        "aria-selected": String(status === tab),
        tabindex: status === tab ? "0" : "-1",
        onclick: () => {
          selectTab(status, false);
          refreshLists(status);
        },
      },
      label,
    );
    return tabButtons[status];
  }),
);
tablist.addEventListener("keydown", (event) => {
  const order = STATUS_TABS.map((t) => t.status);
  const at = order.indexOf(tab);
  if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
    event.preventDefault();
    const next = order[(at + (event.key === "ArrowRight" ? 1 : -1) + order.length) % order.length];
    selectTab(next, true);
    refreshLists(next);
  }
});

function selectTab(status, focus) {
  tab = status;
  for (const { status: other } of STATUS_TABS) {
    tabButtons[other].setAttribute("aria-selected", String(other === status));
    tabButtons[other].tabIndex = other === status ? 0 : -1;
  }
  panel.setAttribute("aria-labelledby", `tab-${status}`);
  if (focus) tabButtons[status].focus();
  drawList();
}

function gameRow(game) {
  const mine = gameKeys(game.game_id);
  const names = game.names.filter(Boolean);
  const actions = [];
  if (game.status === "waiting") {
    actions.push(
      h("a", { class: "button primary small", href: `#/game/${game.game_id}` }, mine.token ? "Open" : "Join"),
    );
  } else {
    actions.push(
      h("a", { class: "button small", href: `#/game/${game.game_id}${mine.token ? "" : "/watch"}` },
        game.status === "playing" ? (mine.token ? "Play" : "Watch") : "Result"),
    );
  }
  if (game.status === "finished") {
    actions.push(h("a", { class: "button small", href: `#/game/${game.game_id}/replay/1` }, "Replay"));
  }
  return h(
    "li",
    { class: "game-row", "data-game": game.game_id },
    h(
      "div",
      { class: "game-main" },
      h("strong", {}, ruleSetName(game.rules)),
      " ",
      h("span", { class: "game-id" }, game.game_id),
      mine.token || mine.host ? h("span", { class: "badge" }, mine.token ? "your seat" : "host") : null,
      h(
        "div",
        { class: "game-facts" },
        `${game.seated} of ${plural(game.seats, "seat")} taken`,
        names.length ? `: ${names.join(", ")}` : "",
        game.status === "playing" ? ` · round ${game.round}` : "",
        ` · ${optionsText(game.options)}`,
      ),
      game.status === "finished" && Array.isArray(game.won_by)
        ? h(
            "div",
            { class: "game-winner" },
            game.won_by.length ? `Won by ${game.won_by.join(" and ")}` : "No winner",
          )
        : null,
    ),
    h("div", { class: "game-actions" }, actions),
  );
}

function drawList() {
  const data = lists[tab];
  panel.setAttribute("aria-busy", data === null ? "true" : "false");
  for (const { status, label } of STATUS_TABS) {
    const n = lists[status] ? lists[status].length : null;
    tabButtons[status].textContent = n === null ? label : `${label} (${n})`;
  }
  if (data === null) {
    panel.replaceChildren(h("p", { class: "loading" }, "Loading…"));
    return;
  }
  if (data instanceof Error) {
    panel.replaceChildren(h("p", { class: "form-message" }, `The list could not be loaded: ${data.message}`));
    return;
  }
  if (!data.length) {
    const empty = {
      waiting: "No game is waiting for players. Create one above.",
      playing: "No game is being played.",
      finished: "No game has finished yet.",
    };
    panel.replaceChildren(h("p", { class: "empty" }, empty[tab]));
    return;
  }
  panel.replaceChildren(h("ul", { class: "games" }, data.map(gameRow)));
}

async function refreshLists(only = null) {
  await Promise.all(
    STATUS_TABS.filter(({ status }) => !only || status === only).map(async ({ status }) => {
      try {
        lists[status] = (await api.games(status)).games;
      } catch (err) {
        lists[status] = err;
      }
    }),
  );
  if (!stopped) drawList();
}

const refreshButton = h(
  "button",
  { type: "button", class: "button small", onclick: () => refreshLists() },
  "Refresh",
);

  selectTab(tab, false);
  refreshLists();
  // Every few seconds the list shown (the others when their tab is chosen, or on Refresh).
  const timer = setInterval(() => {
    if (!document.hidden) refreshLists(tab);
  }, EVERY_MS);

  return {
    tablist,
    panel,
    refreshButton,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
