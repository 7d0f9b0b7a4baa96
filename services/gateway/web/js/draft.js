// The table being rearranged before it is submitted: a pure model (no DOM).
//
// A draft holds melds (each with an id: "t<i>" for the table's melds as they were, "n<k>" for
// melds started in this draft) and the hand. Every card is a piece with a uid and the place it
// came from ("hand" or a table meld's id), so the pieces that moved are the ones whose meld is
// not the one they came from. Melds left empty disappear; the layout sent to the referee is the
// melds in the order shown, so "meld 2" in a refusal is the second meld on screen.

export class Refused extends Error {}

/** A fresh draft of `table` (list of melds of card texts) and `hand`. */
export function fromView(table, hand) {
  return {
    melds: table.map((cards, i) => ({
      id: `t${i}`,
      cards: cards.map((card, j) => ({ uid: `t${i}.${j}`, card, from: `t${i}` })),
    })),
    hand: hand.map((card, j) => ({ uid: `h${j}`, card, from: "hand", order: j })),
    next: 1,
  };
}

function copy(draft) {
  return {
    melds: draft.melds.map((m) => ({ ...m, cards: [...m.cards] })),
    hand: [...draft.hand],
    next: draft.next,
  };
}

/** Where a piece is: {place: "hand" | meld id, index, piece}, or null. */
export function locate(draft, uid) {
  const inHand = draft.hand.findIndex((p) => p.uid === uid);
  if (inHand >= 0) return { place: "hand", index: inHand, piece: draft.hand[inHand] };
  for (const meld of draft.melds) {
    const index = meld.cards.findIndex((p) => p.uid === uid);
    if (index >= 0) return { place: meld.id, index, piece: meld.cards[index] };
  }
  return null;
}

function takeOut(draft, where) {
  if (where.place === "hand") draft.hand.splice(where.index, 1);
  else draft.melds.find((m) => m.id === where.place).cards.splice(where.index, 1);
}

function prune(draft) {
  draft.melds = draft.melds.filter((m) => m.cards.length > 0);
  return draft;
}

function newMeld(draft, pieces) {
  const meld = { id: `n${draft.next}`, cards: pieces };
  draft.next += 1;
  return meld;
}

/**
 * Move one piece. `target`: {to: "hand"} | {to: "meld", id, before?: uid} |
 * {to: "new", at?: index among the melds}. Throws Refused where the move cannot be right
 * whatever else is done (a table card back to the hand).
 */
export function move(draft, uid, target, names = (t) => t) {
  const where = locate(draft, uid);
  if (!where) throw new Refused("That card is not there any more.");
  const { piece } = where;
  if (target.to === "hand" && piece.from !== "hand" && piece.card !== "JK") {
    throw new Refused(
      `${names(piece.card)} was on the table: cards on the table stay on the table.`,
    );
  }
  const next = copy(draft);
  if (target.to === "meld") {
    const meld = next.melds.find((m) => m.id === target.id);
    if (!meld) throw new Refused("That meld is not there any more.");
    takeOut(next, where);
    let index = meld.cards.length;
    if (target.before) {
      const found = meld.cards.findIndex((p) => p.uid === target.before);
      if (found >= 0) index = found;
    }
    meld.cards.splice(index, 0, piece);
  } else if (target.to === "new") {
    takeOut(next, where);
    const at = Math.max(0, Math.min(target.at ?? next.melds.length, next.melds.length));
    // `at` counts melds as they were shown, the piece's old meld included.
    next.melds.splice(at, 0, newMeld(next, [piece]));
  } else if (target.to === "hand") {
    takeOut(next, where);
    next.hand.push(piece);
    next.hand.sort((a, b) => (a.order ?? 1e9) - (b.order ?? 1e9));
  } else {
    throw new Refused("Drop it on a meld, on a gap between melds, or on your hand.");
  }
  return prune(next);
}

/** Put every card of meld `fromId` at the end of meld `toId`. */
export function merge(draft, fromId, toId) {
  if (fromId === toId) return draft;
  const next = copy(draft);
  const from = next.melds.find((m) => m.id === fromId);
  const to = next.melds.find((m) => m.id === toId);
  if (!from || !to) throw new Refused("That meld is not there any more.");
  to.cards.push(...from.cards);
  from.cards = [];
  return prune(next);
}

/** Split meld `id` before its card at `index`: the cards from there on become a new meld
 * right after it. */
export function split(draft, id, index) {
  const next = copy(draft);
  const at = next.melds.findIndex((m) => m.id === id);
  if (at < 0) throw new Refused("That meld is not there any more.");
  const meld = next.melds[at];
  if (index <= 0 || index >= meld.cards.length) return draft;
  const tail = meld.cards.splice(index);
  next.melds.splice(at + 1, 0, newMeld(next, tail));
  return next;
}

/** The layout to submit: every meld's cards, in order. */
export function layout(draft) {
  return draft.melds.map((m) => m.cards.map((p) => p.card));
}

/** Whether the draft differs from the table it was made from. */
export function changed(draft, table) {
  return JSON.stringify(layout(draft)) !== JSON.stringify(table);
}

/** The uids of the pieces that moved (from the hand, or to another meld). */
export function moved(draft) {
  const uids = new Set();
  for (const meld of draft.melds) {
    for (const piece of meld.cards) if (piece.from !== meld.id) uids.add(piece.uid);
  }
  return uids;
}

/** Melds started in this draft (to outline them). */
export function isNewMeld(meld) {
  return meld.id.startsWith("n");
}

/** The cards of the hand that are on the table in the draft. */
export function played(draft) {
  return draft.melds.flatMap((m) => m.cards.filter((p) => p.from === "hand").map((p) => p.card));
}

/** A draft of `table` and `hand` rearranged into `layout` (a whole table, e.g. the solver's):
 * each meld keeps the id of the table meld it shares most cards with, so what the layout moved
 * shows as moved; the cards it does not use stay in the hand. */
export function toward(table, hand, layout) {
  const start = fromView(table, hand);
  const pool = [...start.melds.flatMap((m) => m.cards), ...start.hand];
  const taken = new Set();
  const draft = { melds: [], hand: [], next: 1 };
  for (const cards of layout) {
    const pieces = cards.map((card) => {
      // a table card where it can be (it must stay on the table), else one from the hand
      const found =
        pool.find((p) => !taken.has(p.uid) && p.card === card && p.from !== "hand") ||
        pool.find((p) => !taken.has(p.uid) && p.card === card);
      if (!found) throw new Refused(`the layout holds ${card}, which is neither on the table nor in the hand`);
      taken.add(found.uid);
      return found;
    });
    const counts = new Map();
    for (const p of pieces) if (p.from !== "hand") counts.set(p.from, (counts.get(p.from) || 0) + 1);
    const used = new Set(draft.melds.map((m) => m.id));
    const best = [...counts.entries()].filter(([id]) => !used.has(id)).sort((a, b) => b[1] - a[1])[0];
    draft.melds.push(best ? { id: best[0], cards: pieces } : newMeld(draft, pieces));
  }
  draft.hand = start.hand.filter((p) => !taken.has(p.uid));
  return draft;
}
