// The message box above the table or in the waiting room: what the referee said about the last
// command (a refused layout with the tries left in the turn and an Undo), or a note the page
// itself has for the player.

import { isRefusedLayout, undo } from "./commands.js";
import { h } from "./dom.js";
import { plural } from "./format.js";

// Decision 14: a turn survives max_rejections refused layouts; say how many are left.
function triesLeft(game) {
  const turn = game.s.view && game.s.view.turn;
  if (!game.myTurn() || !turn || typeof turn.rejections_left !== "number") return null;
  const left = turn.rejections_left;
  return h(
    "p",
    { class: "help" },
    left === 0
      ? "One more refused layout ends your turn (with the draw for a failed turn)."
      : `Your turn goes on: it can take ${plural(left, "more refused layout")}; the one after that ends it.`,
  );
}

/** The box for the game's current message (`game.s.message`, which must be set). */
export function messageBox(game) {
  const m = game.s.message;
  const role = m.kind === "error" ? "alert" : "status";
  const refused = isRefusedLayout(m);
  return h(
    "div",
    { class: `message ${m.kind}`, role },
    m.title ? h("strong", {}, m.title) : null,
    h("p", {}, m.text.charAt(0).toUpperCase() + m.text.slice(1)),
    refused ? triesLeft(game) : null,
    refused
      ? h(
          "button",
          { type: "button", class: "button", "data-focus": "undo-message", onclick: () => undo(game) },
          "Undo: back to the table as it was",
        )
      : null,
  );
}
