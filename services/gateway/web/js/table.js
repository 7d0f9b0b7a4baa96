// The melds on the table (the draft's, so the player's unsubmitted moves show), the drop places
// between them and "+ New meld", the scissors that split a meld, and the discard pile.

import { cardElement } from "./cards.js";
import { h } from "./dom.js";
import * as Draft from "./draft.js";
import { cut } from "./moves.js";
import { pieceElement } from "./piece.js";

/** The table's section; `draftable` when the player may move cards now. */
export function felt(game, view, draftable, rulesNow) {
  const s = game.s;
  const melds = s.draft ? s.draft.melds : [];
  const moved = s.draft ? Draft.moved(s.draft) : new Set();
  const invalid = s.message && s.message.kind === "error" ? s.message.meld : null;
  const theirs = theirMove(game, view);
  const children = [];
  melds.forEach((meld, i) => {
    if (draftable) children.push(gap(i));
    children.push(meldElement(game, meld, i, draftable, moved, invalid === i + 1, theirs));
  });
  if (draftable) {
    children.push(
      h(
        "div",
        {
          class: "new-meld",
          "data-drop": "new",
          "data-at": String(melds.length),
          tabindex: "-1",
          "aria-label": "New meld: drop a card here to start a new meld",
        },
        h("span", { "aria-hidden": "true" }, "+ New meld"),
      ),
    );
  }
  if (!melds.length && !draftable) {
    children.push(h("p", { class: "empty-table" }, "No melds on the table yet."));
  }
  const pile =
    rulesNow.discard_pile && view.status === "playing"
      ? h(
          "div",
          {
            class: "pile",
            "data-drop": "pile",
            tabindex: "-1",
            "aria-label": `Discard pile (${view.discard_count}): ${
              view.discard ? `top card ${game.name(view.discard)}` : "empty"
            }. Drop a card here to discard it.`,
          },
          view.discard
            ? cardElement(view.discard, { tiles: game.tiles() })
            : h("span", { class: "pile-empty" }, "empty"),
          h("span", { class: "pile-label" }, "Pile"),
        )
      : null;
  return h(
    "section",
    { class: "felt", "aria-label": "The table" },
    h("h2", { class: "visually-hidden" }, "The table"),
    theirs.uids.size
      ? h("p", { class: "their-move-note" }, h("span", { class: "swatch", "aria-hidden": "true" }),
          ` Marked: what ${theirs.name} just played.`)
      : null,
    h("div", { class: "melds" }, children),
    pile,
  );
}

/** The pieces the other seat's last play added or moved (uids of the table as the view has it),
 * kept while the table is that play's: the next play, or a new round, ends them. */
function theirMove(game, view) {
  const last = game.s.lastPlay;
  const none = { uids: new Set(), name: "" };
  if (!last || last.seat === null || last.seat === game.mySeat()) return none;
  if (JSON.stringify(view.table) !== JSON.stringify(last.layout)) return none;
  const uids = new Set();
  last.marks.forEach((positions, i) => positions.forEach((j) => uids.add(`t${i}.${j}`)));
  return { uids, name: game.actor(last.seat) };
}

function gap(at) {
  return h("div", {
    class: "gap",
    "data-drop": "new",
    "data-at": String(at),
    "data-kbd-skip": "true",
    "aria-hidden": "true",
    title: "Drop here to start a new meld",
  });
}

function meldElement(game, meld, index, draftable, moved, invalid, theirs) {
  const names = meld.cards.map((p) => game.name(p.card)).join(", ");
  const label = `Meld ${index + 1}: ${names}${invalid ? " (refused)" : ""}`;
  const cards = [];
  meld.cards.forEach((piece, j) => {
    if (draftable && j > 0) {
      cards.push(
        h(
          "button",
          {
            type: "button",
            class: "cut",
            tabindex: "-1",
            "aria-label": `Split meld ${index + 1} before ${game.name(piece.card)}`,
            title: "Split the meld here",
            onclick: () => cut(game, meld.id, j),
          },
          h("span", { "aria-hidden": "true" }, "\u2702"),
        ),
      );
    }
    const mark = theirs.uids.has(piece.uid) && piece.from === meld.id ? theirs.name : null;
    cards.push(pieceElement(game, piece, moved.has(piece.uid), draftable, j === 0, mark));
  });
  return h(
    "div",
    {
      class: `meld${Draft.isNewMeld(meld) ? " new" : ""}${invalid ? " invalid" : ""}`,
      "data-drop": "meld",
      "data-meld": meld.id,
      "data-roving": "true",
      role: "group",
      tabindex: "-1",
      "aria-label": label,
    },
    draftable
      ? h(
          "button",
          {
            type: "button",
            class: "meld-grip draggable",
            "data-grip": meld.id,
            "data-focus": `grip:${meld.id}`,
            tabindex: "-1",
            "aria-label": `Meld ${index + 1}: pick up to merge it into another meld`,
            title: "Drag onto another meld to merge",
          },
          h("span", { "aria-hidden": "true" }, "\u283f"),
        )
      : null,
    h("span", { class: "meld-number", "aria-hidden": "true" }, String(index + 1)),
    cards,
    invalid ? h("span", { class: "meld-flag" }, "refused") : null,
  );
}
