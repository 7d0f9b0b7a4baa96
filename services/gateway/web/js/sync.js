// Keeps one game's view current: the first load (falling back to watching when the server does
// not know the stored token), the WebSocket after it, and what a newer view changes (the draft
// reset, stale messages dropped, turn changes announced).

import { ApiError, api } from "./api.js";
import { announce } from "./dom.js";
import * as Draft from "./draft.js";
import { Live } from "./live.js";
import { addEvents } from "./log.js";
import { playMarks } from "./moved.js";
import { remember } from "./store.js";

/** Load the view and the recent events, then go live. */
export async function load(game, setConnection) {
  const s = game.s;
  try {
    const view = await api.view(game.id, game.keys.token);
    s.failure = null;
    onView(game, view);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && game.keys.token) {
      // A token this server does not know (a restarted demo server): watch instead.
      game.keys = { ...game.keys, token: undefined, seat: undefined };
      remember(game.id, { token: undefined, seat: undefined });
      return load(game, setConnection);
    }
    s.failure = err;
    game.render();
    return undefined;
  }
  try {
    const after = Math.max(0, s.view.version - 30);
    const { events } = await api.events(game.id, game.keys.token, after);
    onEvents(game, events, false);
  } catch {
    // the log is a nicety
  }
  if (!game.stopped && !game.live) {
    game.live = new Live(game.id, game.keys.token, {
      onView: (view) => onView(game, view),
      onEvents: (events) => onEvents(game, events, true),
      onStatus: setConnection,
    }).start(s.view.version);
  }
  return undefined;
}

/** Ask for the view again (after a command; the socket catches up if this fails). */
export async function refresh(game) {
  try {
    onView(game, await api.view(game.id, game.keys.token));
  } catch {
    // the socket will catch up
  }
}

/** Take a view (ignoring one older than the one shown) and render. */
export function onView(game, view) {
  const s = game.s;
  if (game.stopped) return;
  if (s.view && view.version < s.view.version) return;
  const before = s.view;
  const said = s.message; // what was said before this view
  s.view = view;
  if (game.live) game.live.saw(view.version);
  const key = JSON.stringify([view.table, view.hand || []]);
  if (key !== s.baseKey) {
    const lost = s.draft && game.draftChanged() && !s.expectChange;
    s.baseKey = key;
    s.baseTable = view.table;
    s.draft = Draft.fromView(view.table, view.hand || []);
    s.selected = null;
    if (lost) {
      s.message = {
        kind: "warn",
        text: "The table changed, so your moves that were not submitted were put back.",
      };
    } else if (s.message && s.message.kind === "error") {
      s.message = null;
    }
    s.expectChange = false;
  }
  if (before && before.status !== view.status) {
    // "You took seat 2." belongs to the waiting room; the start ends its moment.
    if (said && s.message === said && said.kind !== "error") s.message = null;
    if (view.status === "playing") announce("The game has started.");
    if (view.status === "finished") announce("The game is over.");
  }
  const turnNow = view.turn && view.turn.number;
  if (before && turnNow && (!before.turn || before.turn.number !== turnNow)) {
    // What was said before this view (the player's last move, a seat taken) is old news once
    // the player's next turn begins (the log keeps it).
    if (said && s.message === said && said.kind !== "error" && game.myTurn()) s.message = null;
    const heard = s.heard ? `${s.heard} ` : "";
    s.heard = "";
    if (game.myTurn()) announce(`${heard}Your turn.`);
    else announce(`${heard}${game.seatName(view.turn.seat)}'s turn.`);
  }
  game.render();
}

/** Add events to the log (`live`: they just happened) and note the last play, then render. */
export function onEvents(game, events, live = false) {
  const s = game.s;
  s.log = addEvents(s.log, events, game, live);
  for (const event of events) {
    if (s.lastPlay && event.version <= s.lastPlay.version) continue;
    if (event.type === "RoundDealt") {
      s.lastPlay = { version: event.version, seat: null, layout: [], marks: [] }; // a bare table
    }
    if (event.type !== "TurnPlayed" || !Array.isArray(event.layout)) continue;
    // The table before it: the last play's, or the view's while the view is older than the play.
    const before = s.lastPlay
      ? s.lastPlay.layout
      : s.view && s.view.version < event.version
        ? s.view.table
        : null;
    s.lastPlay = {
      version: event.version,
      seat: event.seat,
      layout: event.layout,
      marks: playMarks(before, event.layout, event.played),
    };
  }
  game.render();
}
