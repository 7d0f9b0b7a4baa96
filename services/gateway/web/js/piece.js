// A card the player can move, on the table or in the hand: the face from cards.js with what
// drag.js and the keyboard need (its uid, its label, its place in the roving tab order), and,
// in the discard-pile variant, a click that selects a hand card to discard.

import { cardElement } from "./cards.js";
import * as Draft from "./draft.js";

/** `theirs`: the name of the other seat whose last play put it there (marked), or null. */
export function pieceElement(game, piece, isMoved, draftable, first, theirs = null) {
  const s = game.s;
  const classes = [];
  if (isMoved) classes.push("moved");
  else if (theirs) classes.push("their-move");
  if (draftable) classes.push("draggable");
  if (s.selected === piece.uid) classes.push("selected");
  const label = `${game.name(piece.card)}${isMoved ? ", moved" : ""}${
    !isMoved && theirs ? `, just played by ${theirs}` : ""
  }${
    s.selected === piece.uid ? ", selected" : ""
  }`;
  const el = cardElement(piece.card, {
    tiles: game.tiles(),
    tag: "button",
    classes,
    attrs: {
      "data-uid": piece.uid,
      "aria-label": label,
      tabindex: first ? "0" : "-1",
      "aria-roledescription": draftable ? "movable card" : undefined,
    },
  });
  if (piece.from === "hand" && game.full().discard_pile) {
    el.addEventListener("click", () => {
      if (!game.myTurn()) return;
      const where = Draft.locate(s.draft, piece.uid);
      if (!where || where.place !== "hand") return;
      s.selected = s.selected === piece.uid ? null : piece.uid;
      s.focusUid = piece.uid;
      game.render();
    });
  }
  return el;
}
