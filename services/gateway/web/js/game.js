// One game's screen: the waiting room, then the table (melds and hand, rearranged by dragging or
// with the keyboard and submitted as one layout), kept live over the WebSocket.
//
// This module holds the game's state and composes the parts. Every part gets the same `game`
// object: its id, rules and keys, the state `s`, the facts about the view below (myTurn(),
// seatName(), name() ...) and render(); no part keeps state of its own.

import { ApiError, exportUrl } from "./api.js";
import { cardName } from "./cards.js";
import { h } from "./dom.js";
import * as Draft from "./draft.js";
import { ruleSetName } from "./format.js";
import { hand } from "./hand.js";
import { hintPreview } from "./hint.js";
import { cancelledPanel, rematchPanel, seatControls } from "./lifecycle.js";
import { activity } from "./log.js";
import { messageBox } from "./message.js";
import { attachMoves } from "./moves.js";
import { players, result } from "./scores.js";
import { gameKeys } from "./store.js";
import { load } from "./sync.js";
import { felt } from "./table.js";
import { actions, hint, statusBar, tick } from "./turn.js";
import { waitingRoom } from "./waiting.js";

function newState() {
  return {
    view: null,
    draft: null,
    baseKey: "",
    baseTable: [],
    message: null, // {kind: "error"|"warn"|"ok"|"info", title?, text, meld?}
    busy: false,
    log: [],
    heard: "", // the other seats' moves just announced (said again with the turn that follows)
    lastPlay: null, // {version, seat, layout, marks}: the last play, marked for the other seats
    sort: "suit",
    selected: null, // uid of the hand card chosen for a discard
    focusUid: null,
    focusKey: null,
    expectChange: false,
    failure: null,
    pending: false,
    preview: null, // the solver's hint shown above the table: {version, layout, played, points}
    hintBusy: false,
    confirmResign: null, // the view version at which Resign was clicked once (asks to confirm)
  };
}

/** The facts about the view that every part asks (functions: the view changes under them). */
function facts(game, rules) {
  const s = game.s;
  const tiles = () => Boolean(s.view) && s.view.rules.name === "rummikub";
  const mySeat = () => (s.view && typeof s.view.you === "number" ? s.view.you : null);
  return {
    full: () => ({
      ...(rules.presets[s.view.rules.name] || rules.presets.robbers),
      ...s.view.rules.options,
    }),
    tiles,
    seatName: (seat) => {
      const entry = s.view && s.view.seats[seat];
      return (entry && entry.name) || `Seat ${seat + 1}`;
    },
    /** A seat's name as the log tells its moves: a bot's move is named as the bot's. */
    actor: (seat) => {
      const entry = s.view && s.view.seats[seat];
      const name = (entry && entry.name) || `Seat ${seat + 1}`;
      if (entry && entry.bot && entry.away) return `${name} (the ${entry.bot} bot)`;
      if (entry && entry.bot && name !== entry.bot) return `${name} (bot ${entry.bot})`;
      if (entry && entry.bot) return `the ${name} bot`;
      return name;
    },
    mySeat,
    myTurn: () =>
      Boolean(s.view) &&
      s.view.status === "playing" &&
      Boolean(s.view.turn) &&
      mySeat() !== null &&
      s.view.turn.seat === mySeat(),
    stockEmpty: () => s.view.stock === 0 && s.view.discard_count <= 1,
    draftChanged: () => Boolean(s.draft) && Draft.changed(s.draft, s.baseTable),
    name: (card) => cardName(card, tiles()),
  };
}

export function showGame(root, gameId, { rules, watch = false, setConnection = () => {} }) {
  const screen = h("div", { class: "game-screen" });
  root.replaceChildren(screen);
  const game = {
    id: gameId,
    watch,
    screen,
    keys: watch ? {} : gameKeys(gameId),
    s: newState(),
    live: null,
    stopped: false,
    joinForm: null,
    render: () => render(),
  };
  Object.assign(game, facts(game, rules));
  const s = game.s;
  const drag = attachMoves(game);

  function render() {
    if (game.stopped) return;
    if (drag.busy()) {
      s.pending = true;
      return;
    }
    s.pending = false;
    const active = document.activeElement;
    const keepKey =
      active && screen.contains(active)
        ? active.dataset.uid || active.dataset.focus || active.id || null
        : null;
    let content;
    if (s.failure && !s.view) content = failed();
    else if (!s.view) content = h("p", { class: "loading" }, "Loading the game…");
    else if (s.view.status === "waiting") content = waitingRoom(game);
    else if (s.view.status === "cancelled") content = cancelledPanel(s.view);
    else content = table();
    screen.replaceChildren(content);
    document.title = s.view
      ? `${game.myTurn() ? "Your turn · " : ""}${ruleSetName(s.view.rules.name)} · ${gameId}`
      : "Robbers' Rummy";
    restoreFocus(keepKey);
    tick(game);
  }

  // After a render, focus what the last action asked for, else what had the focus before.
  function restoreFocus(keepKey) {
    const wanted = s.focusUid
      ? screen.querySelector(`[data-uid="${CSS.escape(s.focusUid)}"]`)
      : s.focusKey
        ? screen.querySelector(`[data-focus="${CSS.escape(s.focusKey)}"]`)
        : keepKey
          ? screen.querySelector(
              `[data-uid="${CSS.escape(keepKey)}"], [data-focus="${CSS.escape(keepKey)}"], #${CSS.escape(keepKey)}`,
            )
          : null;
    s.focusUid = null;
    s.focusKey = null;
    if (wanted) {
      if (wanted.tabIndex < 0 && wanted.dataset.uid) {
        const row = wanted.closest("[data-roving]");
        if (row) row.querySelectorAll("[data-uid], [data-grip]").forEach((el) => (el.tabIndex = -1));
        wanted.tabIndex = 0;
      }
      if (!wanted.disabled) wanted.focus({ preventScroll: true });
    }
  }

  function failed() {
    const err = s.failure;
    const missing = err instanceof ApiError && err.status === 404;
    return h(
      "section",
      { class: "panel" },
      h("h1", {}, missing ? "No such game" : "The game could not be loaded"),
      h(
        "p",
        {},
        missing
          ? `There is no game ${gameId} on this server. It may have been on a server that has since restarted.`
          : err.message,
      ),
      h("p", {}, h("a", { href: "#/" }, "Back to the lobby")),
    );
  }

  function table() {
    const view = s.view;
    const rulesNow = game.full();
    const player = game.mySeat() !== null;
    const playing = view.status === "playing";
    const draftable = game.myTurn() && !s.busy;
    return h(
      "div",
      { class: `table-screen${draftable ? " my-turn" : ""}${game.tiles() ? " tiles" : ""}` },
      h(
        "div",
        { class: "main-col" },
        statusBar(game, view, rulesNow),
        s.message ? messageBox(game) : null,
        player && playing ? hintPreview(game, view) : null,
        felt(game, view, draftable, rulesNow),
        player && view.status !== "finished" ? hand(game, view, draftable) : null,
        player && playing ? actions(game, view, rulesNow) : null,
        player && playing ? h("p", { class: "hint", id: "hint" }, hint(game, view, rulesNow)) : null,
        !player && playing
          ? h("p", { class: "note spectator" }, "You are watching this game as a spectator.")
          : null,
        view.status === "finished" || (playing && !view.turn) ? result(game, view) : null,
        player && playing ? seatControls(game, view) : null,
        view.status === "finished" ? rematchPanel(game, view) : null,
        gameLinks(view),
      ),
      h("div", { class: "side-col" }, players(game, view, rulesNow), activity(s.log)),
    );
  }

  function gameLinks(view) {
    const finished = view.status === "finished";
    return h(
      "nav",
      { class: "game-links", "aria-label": "This game" },
      h(
        "a",
        { href: `#/game/${gameId}/replay/1` },
        finished ? "Step through the replay" : "Replay the game so far",
      ),
      finished
        ? h("a", { href: exportUrl(gameId), download: `${gameId}.rrec` }, "Download the game record")
        : null,
      h("a", { href: "#/" }, "Lobby"),
    );
  }

  const ticker = setInterval(() => tick(game), 500);

  render();
  load(game, setConnection);

  return {
    cleanup() {
      game.stopped = true;
      clearInterval(ticker);
      drag.destroy();
      if (game.live) game.live.stop();
    },
  };
}
