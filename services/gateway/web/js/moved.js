// Which cards of a replayed turn moved, so the replay can highlight them: a meld that only grew
// or was cut keeps its cards unmarked; cards that came from a hand or another meld are marked.

/** The moves "meld i -> meld j" where the cards stayed: a table meld that was changed lives on
 * in the new meld that took most of its cards (it grew, or was cut). */
export function stayedMoves(moves) {
  const isMeld = (text) => /^meld \d+$/.test(text || "");
  const between = (moves || []).filter(
    (m) => isMeld(m.from) && isMeld(m.to) && Array.isArray(m.cards),
  );
  const stayed = new Set();
  const taken = new Set();
  for (const move of [...between].sort((a, b) => b.cards.length - a.cards.length)) {
    const earlier = [...stayed].some((key) => key.startsWith(`${move.from}->`));
    if (!earlier && !taken.has(move.to)) {
      stayed.add(`${move.from}->${move.to}`);
      taken.add(move.to);
    }
  }
  return stayed;
}

/** For each meld of the table after, the positions of the cards that moved onto it (from a hand
 * or from another meld; not the cards of a meld that only grew or was cut). */
export function movedPositions(table, moves) {
  const stayed = stayedMoves(moves);
  const wanted = table.map(() => new Map());
  for (const move of moves || []) {
    const match = /^meld (\d+)$/.exec(move.to || "");
    if (!match || !Array.isArray(move.cards) || stayed.has(`${move.from}->${move.to}`)) continue;
    const counts = wanted[Number(match[1]) - 1];
    if (!counts) continue;
    for (const card of move.cards) counts.set(card, (counts.get(card) || 0) + 1);
  }
  return table.map((meld, i) => {
    const counts = wanted[i];
    const positions = new Set();
    meld.forEach((card, j) => {
      const left = counts.get(card) || 0;
      if (left > 0) {
        positions.add(j);
        counts.set(card, left - 1);
      }
    });
    return positions;
  });
}

/** For each meld of `after` (a play's table), the positions of the cards the play added or moved:
 * a meld that grew from a meld of `before` keeps that meld's cards unmarked. With `before` unknown
 * (a play older than the page), only the cards `played` from the hand are marked. */
export function playMarks(before, after, played) {
  if (!before) {
    const left = new Map();
    for (const card of played || []) left.set(card, (left.get(card) || 0) + 1);
    return after.map((meld) => {
      const positions = new Set();
      meld.forEach((card, j) => {
        if ((left.get(card) || 0) > 0) {
          positions.add(j);
          left.set(card, left.get(card) - 1);
        }
      });
      return positions;
    });
  }
  const taken = new Set();
  return after.map((meld) => {
    let best = -1;
    let bestOverlap = 0;
    before.forEach((old, i) => {
      if (taken.has(i)) return;
      const overlap = common(old, meld);
      if (overlap > bestOverlap) [best, bestOverlap] = [i, overlap];
    });
    const kept = new Map();
    if (best >= 0) {
      taken.add(best);
      for (const card of before[best]) kept.set(card, (kept.get(card) || 0) + 1);
    }
    const positions = new Set();
    meld.forEach((card, j) => {
      if ((kept.get(card) || 0) > 0) kept.set(card, kept.get(card) - 1);
      else positions.add(j);
    });
    return positions;
  });
}

function common(a, b) {
  const left = new Map();
  for (const card of a) left.set(card, (left.get(card) || 0) + 1);
  let n = 0;
  for (const card of b) {
    if ((left.get(card) || 0) > 0) {
      left.set(card, left.get(card) - 1);
      n += 1;
    }
  }
  return n;
}
