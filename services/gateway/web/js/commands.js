// The player's commands to the referee (play a layout, draw, discard, pass, end the turn, undo
// the draft) and what its answer says: one place that turns a refusal into the message shown.

import { ApiError, api } from "./api.js";
import { announce } from "./dom.js";
import * as Draft from "./draft.js";
import { refresh } from "./sync.js";
import { speak } from "./words.js";

const REFUSED_LAYOUT = "The referee refused this layout";

/** Whether a message is the referee's refusal of a layout (it offers Undo). */
export function isRefusedLayout(message) {
  return message.kind === "error" && message.title === REFUSED_LAYOUT;
}

async function command(game, body, { ok, refusedTitle = "The referee refused that" } = {}) {
  const s = game.s;
  if (s.busy) return;
  s.busy = true;
  game.render();
  try {
    await api.command(game.id, game.keys.token, body);
    if (ok) ok();
  } catch (err) {
    s.expectChange = false;
    if (err instanceof ApiError && err.code === "illegal_layout") {
      const match = /meld (\d+)/.exec(err.message);
      const said = speak(err.message, game.tiles()); // the server's reason in the table's words
      s.message = {
        kind: "error",
        title: REFUSED_LAYOUT,
        text: said,
        meld: match ? Number(match[1]) : null,
      };
      announce(`${REFUSED_LAYOUT}: ${said}`);
    } else {
      const said = speak(err.message, game.tiles());
      s.message = { kind: "error", title: refusedTitle, text: said };
      announce(`${refusedTitle}: ${said}`);
    }
  } finally {
    s.busy = false;
    await refresh(game);
    game.render();
  }
}

/** Submit the draft's table as one layout. */
export function play(game) {
  const s = game.s;
  const layout = Draft.layout(s.draft);
  s.expectChange = true;
  s.focusKey = "play";
  return command(
    game,
    { type: "play", layout },
    {
      ok: () => {
        s.message = { kind: "ok", text: "The referee accepted your layout." };
        announce("The referee accepted your layout.");
      },
    },
  );
}

/** Put the table back as the server has it. */
export function undo(game) {
  const s = game.s;
  s.draft = Draft.fromView(s.baseTable, s.view.hand || []);
  s.message = { kind: "info", text: "Back to the table as it was." };
  s.selected = null;
  announce("Back to the table as it was.");
  game.render();
}

/** A command without a layout (draw, pass, end, discard); `done` is said when it is taken. */
export function simple(game, type, extra = {}, done = "") {
  const s = game.s;
  s.expectChange = true;
  s.focusKey = type;
  return command(
    game,
    { type, ...extra },
    {
      ok: () => {
        s.message = done ? { kind: "ok", text: done } : null;
        if (done) announce(done);
      },
    },
  );
}

/** Discard the hand card `uid` (a card already on the table cannot be). */
export function discard(game, uid) {
  const s = game.s;
  const where = Draft.locate(s.draft, uid);
  if (!where || where.place !== "hand") {
    s.message = { kind: "warn", text: "Only a card from your hand can be discarded." };
    game.render();
    return undefined;
  }
  const card = where.piece.card;
  return simple(game, "discard", { card }, `You discarded ${game.name(card)}.`);
}
