// Words the screens share: a rule set's name, the options that differ from its preset, and
// counted nouns. Plain text only, so the lobby, the game and the replay say things alike.

const RULE_NAMES = {
  robbers: "Robbers' Rummy",
  "robbers-classic": "Robbers' Rummy (classic)",
  rummikub: "Rummikub",
};

/** A rule set's name for people: "Robbers' Rummy (classic)". */
export function ruleSetName(name) {
  return RULE_NAMES[name] || name;
}

// The choices' values as a player reads them (the server's values stay in the form's values).
const VALUE_WORDS = {
  ace: { low: "low only (A-2-3)", wrap: "low or high (Q-K-A too)" },
  point_values: { cards: "card values (face cards 10, ace 1)", tiles: "tile numbers", none: "none" },
  joker_policy: {
    to_hand: "a replaced joker goes to the hand",
    never: "a joker never leaves the table",
    must_replay: "a replaced joker must be played again at once",
  },
  turn_shape: {
    play_or_draw: "play, or draw one",
    place_draw_place: "place, draw, place again, then end the turn",
  },
  stall_winner: { fewest_cards: "fewest cards left", lowest_total: "lowest total left in hand" },
  scoring: { penalty: "penalty points", plus_minus: "plus/minus (winner takes the others' points)", none: "no score" },
  match: {
    lowest_total: "rounds, lowest total wins",
    first_out: "first to go out a number of times",
    most_wins: "rounds, most rounds won",
    single: "a single round",
  },
  starter: { cut: "cut the deck", draw_tile: "each draws a tile, highest starts", random: "random" },
  absent: { bot: "a bot plays the seat", skip: "the seat's turns are skipped", forfeit: "the seat forfeits" },
};

/** An option's name for people: "opening_points" -> "Opening points". */
export function optionName(option) {
  const text = option.replace(/_/g, " ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** An option's value for people: "lowest_total" -> "lowest total left in hand". */
export function optionValue(option, value) {
  if (value === null || value === undefined) return "not set (see its explanation)";
  if (value === true) return "yes";
  if (value === false) return "no";
  const words = VALUE_WORDS[option] && VALUE_WORDS[option][value];
  return words || String(value).replace(/_/g, " ");
}

/** The options that differ from the preset, as "Name: value" text. */
export function optionsText(options) {
  const parts = Object.entries(options || {}).map(([k, v]) => `${optionName(k)}: ${optionValue(k, v)}`);
  return parts.length ? parts.join(", ") : "the preset's rules";
}

/** "1 card", "3 cards". */
export function plural(n, word, many = `${word}s`) {
  return `${n} ${n === 1 ? word : many}`;
}
