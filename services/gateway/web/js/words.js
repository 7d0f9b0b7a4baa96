// The words of the rule set's pieces: tiles and colours for rummikub, cards and suits for the card
// games. The server speaks in card codes ("meld 1 [3S] has 1 card(s)"), which are stored as they
// are in the game's log; the page says the same in the words of the table the player sees.

import { SUITS, shortName } from "./cards.js";
import { plural } from "./format.js";

/** "card" or "tile". */
export function piece(tiles) {
  return tiles ? "tile" : "card";
}

/** "1 card", "3 tiles". */
export function pieces(n, tiles) {
  return plural(n, piece(tiles));
}

const CODE = /\b(JK|(?:10|[2-9AJQK])[SHDC])\b/g;

/** A message of the server's (a refusal's reason) in the pieces' words. */
export function speak(text, tiles) {
  if (!text) return "";
  let out = String(text)
    // a meld as "[5H JK 7H]": its pieces named, comma-separated
    .replace(/\[([^\]]*)\]/g, (_, inner) => {
      const names = inner.trim().split(/\s+/).filter(Boolean).map((c) => named(c, tiles));
      return `[${names.join(", ")}]`;
    })
    .replace(/\b(\d+) card\(s\)/g, (_, n) => pieces(Number(n), tiles))
    .replace(/\b(\d+) joker\(s\)/g, (_, n) => plural(Number(n), "joker"))
    .replace(/\b(\d+) rank\(s\)/g, (_, n) => plural(Number(n), tiles ? "number" : "rank"))
    .replace(/\b(\d+) time\(s\)/g, (_, n) => plural(Number(n), "time"))
    .replace(/\bcard (JK|(?:10|[2-9AJQK])[SHDC])\b/g, (_, c) => `${piece(tiles)} ${named(c, tiles)}`)
    .replace(/\bsuit ([SHDC])\b/g, (_, s) => (tiles ? `colour ${SUITS[s].tile}` : `suit ${SUITS[s].name}`))
    .replace(CODE, (c) => named(c, tiles));
  if (tiles) {
    out = out
      .replace(/\bnatural card\b/g, "numbered tile")
      .replace(/\bcards of one rank\b/g, "tiles of one number")
      .replace(/\bcards of one suit\b/g, "tiles of one colour")
      .replace(/\bcards\b/g, "tiles")
      .replace(/\bcard\b/g, "tile")
      .replace(/\bsuits\b/g, "colours")
      .replace(/\bsuit\b/g, "colour")
      .replace(/\brank\b/g, "number");
  }
  return out;
}

function named(code, tiles) {
  return code === "JK" ? "joker" : shortName(code, tiles);
}

// Why a layout was refused, by the rules core's code: what the other seats are told (the reason
// itself names cards of the player's hand, so only that seat reads it while the game is live).
const REFUSALS = {
  table_card_missing: (p) => `a ${p} that was on the table was left out`,
  card_not_in_hand: (p) => `a ${p} neither on the table nor in the hand`,
  no_card_played: (p) => `no ${p} from the hand`,
  meld_too_small: () => "a meld too small",
  invalid_meld: () => "a meld that is neither a set nor a run",
  table_touched_before_opening: () => "the table changed before opening",
  opening_too_low: () => "an opening worth too few points",
  joker_left_table: () => "a joker taken off the table",
  joker_not_redeemed: () => "a joker taken without its replacement",
};

/** A refusal's code in the pieces' words, or "" for a code without words. */
export function refusalWords(code, tiles) {
  const words = REFUSALS[code];
  return words ? words(piece(tiles)) : "";
}
