// Cards in the API's notation ("QH", "10S", "JK") drawn as playing cards, or as Rummikub-style
// numbered tiles in four colours when the rule set is rummikub.

import { h } from "./dom.js";

export const SUITS = {
  S: { symbol: "\u2660", name: "spades", tile: "black" },
  H: { symbol: "\u2665", name: "hearts", tile: "red" },
  D: { symbol: "\u2666", name: "diamonds", tile: "orange" },
  C: { symbol: "\u2663", name: "clubs", tile: "blue" },
};
const SUIT_ORDER = "SHDC";
const RANK_VALUE = { A: 1, J: 11, Q: 12, K: 13 };
const RANK_WORD = { A: "ace", J: "jack", Q: "queen", K: "king" };

/** {text, joker, rank, suit, value} of a card's text. */
export function parseCard(text) {
  if (text === "JK") return { text, joker: true, rank: "", suit: "", value: 99 };
  const suit = text.slice(-1);
  const rank = text.slice(0, -1);
  return { text, joker: false, rank, suit, value: RANK_VALUE[rank] || Number(rank) };
}

/** What a screen reader says for a card: "queen of hearts", "red 12 tile", "joker". */
export function cardName(text, tiles = false) {
  const card = parseCard(text);
  if (card.joker) return tiles ? "joker tile" : "joker";
  if (tiles) return `${SUITS[card.suit].tile} ${card.value} tile`;
  return `${RANK_WORD[card.rank] || card.rank} of ${SUITS[card.suit].name}`;
}

/** A short visible name: "Q♥", "red 12", "joker". */
export function shortName(text, tiles = false) {
  const card = parseCard(text);
  if (card.joker) return "joker";
  if (tiles) return `${SUITS[card.suit].tile} ${card.value}`;
  return `${card.rank}${SUITS[card.suit].symbol}`;
}

/** The face of a card or tile (no behaviour). `tag` "button" makes it focusable. */
export function cardElement(text, { tiles = false, tag = "span", classes = [], attrs = {} } = {}) {
  const card = parseCard(text);
  const kind = card.joker ? "joker" : tiles ? `tile-${SUITS[card.suit].tile}` : `suit-${card.suit}`;
  const names = ["card", tiles ? "tile" : "playing", kind, ...classes].join(" ");
  let face;
  if (card.joker) {
    face = [h("span", { class: "rank", "aria-hidden": "true" }, "\u2605"),
      h("span", { class: "pip", "aria-hidden": "true" }, tiles ? "J" : "JK")];
  } else if (tiles) {
    face = [h("span", { class: "rank", "aria-hidden": "true" }, String(card.value)),
      h("span", { class: "pip dot", "aria-hidden": "true" })];
  } else {
    face = [h("span", { class: "rank", "aria-hidden": "true" }, card.rank),
      h("span", { class: "pip", "aria-hidden": "true" }, SUITS[card.suit].symbol)];
  }
  const el = h(tag, { class: names, "data-card": text, ...attrs }, face);
  if (!attrs["aria-label"]) {
    if (tag === "span") {
      el.setAttribute("role", "img");
    }
    el.setAttribute("aria-label", cardName(text, tiles));
  }
  if (tag === "button") el.type = "button";
  return el;
}

/** Cards sorted by suit then rank (the server's order) or by rank then suit. */
export function sortCards(cards, mode, key = (c) => c) {
  const rank = (c) => parseCard(key(c)).value;
  const suit = (c) => {
    const s = parseCard(key(c)).suit;
    return s ? SUIT_ORDER.indexOf(s) : 9;
  };
  const copy = [...cards];
  if (mode === "rank") copy.sort((a, b) => rank(a) - rank(b) || suit(a) - suit(b));
  else copy.sort((a, b) => suit(a) - suit(b) || rank(a) - rank(b));
  return copy;
}

/** A row of card faces (read-only), e.g. for the replay and the round's results. */
export function cardRow(cards, { tiles = false, highlight = new Set(), label = "" } = {}) {
  return h(
    "span",
    { class: "card-row", role: "group", "aria-label": label || undefined },
    cards.map((text, i) =>
      cardElement(text, { tiles, classes: highlight.has(i) ? ["moved"] : [] }),
    ),
  );
}
