// What moving cards does to the draft: a drop (a card onto a meld, a gap, "+ New meld", the
// hand or the pile; a meld's handle onto another meld), a split with the scissors or the S key.
// drag.js finds the source and the target; this module decides what they mean.

import { announce } from "./dom.js";
import * as Draft from "./draft.js";
import { discard } from "./commands.js";
import { attachDragDrop } from "./drag.js";

/** The uid of the card in `meldEl` the dropped card goes before (null: at the end). */
function beforeAt(meldEl, point, uid) {
  for (const el of meldEl.querySelectorAll("[data-uid]")) {
    if (el.dataset.uid === uid) continue;
    const r = el.getBoundingClientRect();
    if (point.y < r.top) return el.dataset.uid;
    if (point.y <= r.bottom && point.x < r.left + r.width / 2) return el.dataset.uid;
  }
  return null;
}

function onDrop(game, source, target, point) {
  const s = game.s;
  if (!game.myTurn() || s.busy) return;
  const kind = target.dataset.drop;
  try {
    if (source.dataset.grip) {
      if (kind !== "meld") {
        throw new Draft.Refused("Drop a meld onto another meld to merge the two.");
      }
      const from = source.dataset.grip;
      const into = target.dataset.meld;
      if (from === into) return;
      s.draft = Draft.merge(s.draft, from, into);
      s.focusKey = `grip:${into}`;
      announce("The two melds are merged.");
    } else {
      const uid = source.dataset.uid;
      if (kind === "pile") {
        discard(game, uid);
        return;
      }
      let move;
      if (kind === "meld") {
        const before = point ? beforeAt(target, point, uid) : null;
        move = { to: "meld", id: target.dataset.meld, before };
      } else if (kind === "new") {
        move = { to: "new", at: Number(target.dataset.at) };
      } else {
        move = { to: "hand" };
      }
      s.draft = Draft.move(s.draft, uid, move, game.name);
      s.focusUid = uid;
      const where = Draft.locate(s.draft, uid);
      const meldIndex = s.draft.melds.findIndex((m) => m.id === where.place);
      announce(
        where.place === "hand"
          ? `${game.name(where.piece.card)} is back in your hand.`
          : `${game.name(where.piece.card)} is in meld ${meldIndex + 1}.`,
      );
    }
    if (s.message && s.message.kind !== "error") s.message = null;
    if (s.message && s.message.kind === "error") s.message = { ...s.message, meld: null };
  } catch (err) {
    if (!(err instanceof Draft.Refused)) throw err;
    s.message = { kind: "warn", text: err.message };
    announce(err.message);
  }
  game.render();
}

/** Split meld `meldId` before its card at `index`. */
export function cut(game, meldId, index) {
  const s = game.s;
  if (!game.myTurn() || s.busy) return;
  s.draft = Draft.split(s.draft, meldId, index);
  const at = s.draft.melds.findIndex((m) => m.id === meldId);
  announce(`Meld ${at + 1} is split in two.`);
  const next = s.draft.melds[at + 1];
  if (next) s.focusUid = next.cards[0].uid;
  game.render();
}

/** Make the game's screen draggable and give it the S key; returns drag.js's handle. */
export function attachMoves(game) {
  const s = game.s;
  const drag = attachDragDrop(game.screen, {
    canDrag: (el) => game.myTurn() && !s.busy && Boolean(el.dataset.uid || el.dataset.grip),
    onDrop: (source, target, point) => onDrop(game, source, target, point),
    describe: (el) => {
      if (el.dataset.grip) return el.getAttribute("aria-label") || "the meld";
      const where = s.draft && Draft.locate(s.draft, el.dataset.uid);
      return where ? game.name(where.piece.card) : "the card";
    },
    onIdle: () => {
      if (s.pending) game.render();
    },
    onDenied: () => {
      if (s.view && s.view.status === "playing" && game.mySeat() !== null) {
        announce(s.busy ? "Wait for the referee's answer." : "You can move cards on your turn.");
      }
    },
  });

  game.screen.addEventListener("keydown", (event) => {
    // S splits the meld before the focused card (the keyboard's way to split).
    if ((event.key === "s" || event.key === "S") && !event.ctrlKey && !event.metaKey) {
      const card = event.target.closest && event.target.closest("[data-uid]");
      const meld = card && card.closest("[data-meld]");
      if (card && meld && game.myTurn()) {
        const cards = [...meld.querySelectorAll("[data-uid]")];
        const index = cards.indexOf(card);
        if (index > 0) {
          event.preventDefault();
          cut(game, meld.dataset.meld, index);
        }
      }
    }
  });
  return drag;
}
