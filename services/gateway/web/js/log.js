// The game's event log ("What happened"): each event the server sends told as one sentence in the
// words a player uses (tiles for rummikub, cards for the card games; a bot's move named as the
// bot's), the last few shown beside the table, so a player who looked away can catch up. The
// moves of the other seats that come live are also said aloud (the page's live region).

import { announce, h } from "./dom.js";
import { plural } from "./format.js";
import { piece, pieces, refusalWords, speak } from "./words.js";

const KEPT = 40; // entries remembered
const SHOWN = 12; // entries shown, newest first

const count = (cards) => (Array.isArray(cards) ? cards.length : Number(cards) || 0);

/** One sentence for an event, or null for an event not worth telling. `game` gives the seats'
 * names (`actor`) and the pieces' words (`tiles`). */
export function describeEvent(event, game) {
  const tiles = game.tiles();
  const who = (seat) => (seat === null || seat === undefined ? "someone" : game.actor(seat));
  switch (event.type) {
    case "GameCreated":
      return "The game was created.";
    case "PlayerSeated":
      return `${event.name} took seat ${event.seat + 1}.`;
    case "SeatLeft":
      return `Seat ${event.seat + 1} was left free.`;
    case "GameStarted":
      return "The game started.";
    case "GameCancelled":
      return "The game was cancelled.";
    case "RoundDealt":
      return `Round ${event.round} was dealt.`;
    case "TurnStarted":
      return `Turn ${event.number}: ${who(event.seat)} to play.`;
    case "TurnPlayed":
      return played(event, who(event.seat), tiles);
    case "CardDrawn":
      if (event.source === "pile") return `${who(event.seat)} took ${piece(tiles)} off the pile.`;
      return `${who(event.seat)} drew ${plural(
        count(event.cards),
        event.penalty ? `penalty ${piece(tiles)}` : piece(tiles),
      )}${event.penalty ? " for a refused layout" : ""}.`;
    case "CardDiscarded":
      return `${who(event.seat)} discarded ${speak(event.card, tiles)}.`;
    case "CommandRejected": {
      const why = event.reason ? speak(event.reason, tiles) : refusalWords(event.detail, tiles);
      const what = event.command === "play" ? "layout" : event.command;
      return `${who(event.seat)}'s ${what} was refused${why ? ` (${why})` : ""}.`;
    }
    case "TurnPassed":
      return `${who(event.seat)} passed.`;
    case "TurnTimedOut":
      return event.reason === "skipped"
        ? `${who(event.seat)} is away: the turn was skipped.`
        : `${who(event.seat)} timed out${event.reason === "absent" ? " (away)" : ""}.`;
    case "TurnForfeited":
      return `${who(event.seat)}'s turn ended after ${plural(event.rejected, "refused layout")}.`;
    case "SeatResigned":
      return event.reason === "absent"
        ? `${who(event.seat)} forfeited the game (away too long).`
        : `${who(event.seat)} resigned.`;
    case "SeatHandedToBot":
      return `${game.seatName(event.seat)} is away: the ${event.bot} bot plays for them.`;
    case "SeatSkipped":
      return `${game.seatName(event.seat)} is away: their turns are skipped.`;
    case "SeatReturned":
      return `${game.seatName(event.seat)} is back.`;
    case "RematchOffered":
      return `${who(event.seat)} offered a rematch.`;
    case "StockReshuffled":
      return "The pile was shuffled into the stock.";
    case "RoundEnded":
      if (event.reason === "out") return `Round ${event.round} is over: ${who(event.out)} went out.`;
      if (event.reason === "resigned") return `Round ${event.round} is over: one seat is left.`;
      return `Round ${event.round} is over: nobody could play (stalled).`;
    case "ScoresRecorded":
      return `The scores of round ${event.round} were recorded.`;
    case "MatchEnded":
      return "The game is over.";
    case "SeedRevealed":
      return "The deal's secret seed was revealed.";
    default:
      return null;
  }
}

function played(event, name, tiles) {
  const n = count(event.played);
  const parts = [`${name} played ${pieces(n, tiles)}`];
  const back = count(event.to_hand);
  if (back) parts.push(`took ${pieces(back, tiles)} back`);
  if (event.redeemed) parts.push(`redeemed ${event.redeemed === 1 ? "a joker" : plural(event.redeemed, "joker")}`);
  const opening = event.opening ? ` (opening${event.points ? `, ${event.points} points` : ""})` : "";
  return `${parts.join(", ")}${opening}.`;
}

const ANNOUNCED = new Set([
  "TurnPlayed",
  "CardDrawn",
  "CardDiscarded",
  "TurnPassed",
  "TurnTimedOut",
  "TurnForfeited",
  "SeatResigned",
]);

/** The log with `events` told and added (each version once, in order, the last KEPT). `live`:
 * they just happened, so the other seats' moves are announced (and kept in `game.s.heard` for
 * the turn's announcement that follows, which would otherwise cut them off). */
export function addEvents(log, events, game, live = false) {
  const next = [...log];
  const said = [];
  for (const event of events) {
    if (next.some((entry) => entry.version === event.version)) continue;
    const text = describeEvent(event, game);
    if (!text) continue;
    next.push({ version: event.version, text });
    if (live && ANNOUNCED.has(event.type) && event.seat !== game.mySeat()) said.push(text);
  }
  if (said.length) {
    game.s.heard = said.join(" ");
    announce(game.s.heard);
  }
  next.sort((a, b) => a.version - b.version);
  return next.slice(-KEPT);
}

/** The "What happened" section (nothing while the log is empty). */
export function activity(log) {
  if (!log.length) return null;
  return h(
    "section",
    { class: "activity", "aria-labelledby": "activity-title" },
    h("h2", { id: "activity-title" }, "What happened"),
    h(
      "ol",
      { class: "log", id: "log" },
      log.slice(-SHOWN).reverse().map((entry) => h("li", {}, entry.text)),
    ),
  );
}
