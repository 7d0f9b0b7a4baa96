// The player's hand: its cards sorted by suit or by rank (the player's choice, kept across
// renders), and a drop place to take a card back from the table.

import { sortCards } from "./cards.js";
import { h } from "./dom.js";
import { plural } from "./format.js";
import { pieceElement } from "./piece.js";

export function hand(game, view, draftable) {
  const s = game.s;
  const tiles = game.tiles();
  const pieces = s.draft ? s.draft.hand : [];
  const sorted = sortCards(pieces, s.sort, (p) => p.card);
  const noun = tiles ? "tile" : "card";
  const byRank = tiles ? "Sort by number" : "Sort by rank";
  const bySuit = tiles ? "Sort by colour" : "Sort by suit";
  return h(
    "section",
    { class: "hand-area", "aria-labelledby": "hand-title" },
    h(
      "div",
      { class: "hand-head" },
      h("h2", { id: "hand-title" }, `Your hand (${plural(pieces.length, noun)})`),
      h(
        "button",
        {
          type: "button",
          class: "button small",
          "data-focus": "sort",
          onclick: () => {
            s.sort = s.sort === "suit" ? "rank" : "suit";
            s.focusKey = "sort";
            game.render();
          },
        },
        s.sort === "suit" ? byRank : bySuit,
      ),
    ),
    h(
      "div",
      {
        class: "hand",
        "data-drop": "hand",
        "data-roving": "true",
        role: "group",
        tabindex: "-1",
        "aria-label": `Your hand: ${plural(pieces.length, noun)}. Drop a ${noun} here to take it back.`,
      },
      sorted.length
        ? sorted.map((piece, i) => pieceElement(game, piece, false, draftable, i === 0))
        : h("span", { class: "empty-hand" }, view.status === "finished" ? "" : `No ${noun}s left.`),
    ),
  );
}
