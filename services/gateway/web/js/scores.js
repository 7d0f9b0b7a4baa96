// The players beside the table (cards in hand, score, whose turn, not yet opened) and the end of
// a round or of the game (who won, the scores, what was left in each hand, the revealed seed).

import { exportUrl } from "./api.js";
import { cardRow } from "./cards.js";
import { h } from "./dom.js";
import { plural } from "./format.js";
import { seatBadges, seatWords } from "./lifecycle.js";

/** The players' list. */
export function players(game, view, rulesNow) {
  const scored = rulesNow.scoring !== "none";
  return h(
    "section",
    { class: "players", "aria-label": "Players" },
    h(
      "ul",
      {},
      view.seats.map((seat) => {
        const turn = view.turn && view.turn.seat === seat.seat;
        const label = [
          seat.name || `Seat ${seat.seat + 1}`,
          seat.seat === view.you ? "(you)" : "",
          `${plural(seat.hand_count, game.tiles() ? "tile" : "card")}`,
          scored && seat.score !== null ? `score ${seat.score}` : "",
          turn ? "to play" : "",
          seatWords(seat),
        ]
          .filter(Boolean)
          .join(", ");
        return h(
          "li",
          {
            class: `player${turn ? " turn" : ""}${seat.seat === view.you ? " me" : ""}`,
            "aria-current": turn ? "true" : undefined,
            "aria-label": label,
          },
          h("span", { class: "player-name" }, seat.name || `Seat ${seat.seat + 1}`),
          seat.seat === view.you ? h("span", { class: "badge" }, "you") : null,
          h("span", { class: "count", title: `${game.tiles() ? "tiles" : "cards"} in hand` }, `${seat.hand_count}`),
          scored ? h("span", { class: "score", title: "score" }, seat.score === null ? "–" : `${seat.score} pts`) : null,
          rulesNow.opening_points > 0 && !seat.opened ? h("span", { class: "tag" }, "not opened") : null,
          ...seatBadges(seat),
        );
      }),
    ),
  );
}

function leftInHand(game, last, seat) {
  const hands = last && last.hands && last.hands[String(seat.seat)];
  if (hands) {
    return hands.length
      ? cardRow(hands, { tiles: game.tiles(), label: `${game.seatName(seat.seat)}'s ${game.tiles() ? "tiles" : "cards"} left` })
      : "none (went out)";
  }
  return last && last.hand_counts ? plural(last.hand_counts[String(seat.seat)] ?? 0, game.tiles() ? "tile" : "card") : "";
}

/** The round's or the game's result. */
export function result(game, view) {
  const last = view.last_round;
  const finished = view.status === "finished";
  const winners = (view.winner || []).map(game.seatName);
  const rows = view.seats.map((seat) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, seat.name || `Seat ${seat.seat + 1}`),
      h("td", {}, seat.score === null ? "–" : String(seat.score)),
      h("td", {}, leftInHand(game, last, seat)),
    ),
  );
  const head = ["Player", "Score", "Left in hand"].map((title) => h("th", { scope: "col" }, title));
  return h(
    "section",
    { class: "result panel", "aria-labelledby": "result-title" },
    h(
      "h2",
      { id: "result-title" },
      finished
        ? winners.length
          ? `Game over: ${winners.join(" and ")} ${winners.length > 1 ? "share the win" : "wins"}`
          : "Game over"
        : `Round ${view.round} is over`,
    ),
    last
      ? h(
          "p",
          {},
          last.reason === "out"
            ? `Round ${last.round}: ${game.seatName(last.out)} went out.`
            : `Round ${last.round} stalled: nobody could play, so ${game.seatName(last.winner)} won it.`,
        )
      : null,
    h("table", { class: "scores" }, h("thead", {}, h("tr", {}, head)), h("tbody", {}, rows)),
    !finished ? h("p", { class: "note" }, "The next round is being dealt…") : null,
    finished && view.seed
      ? h("p", { class: "help" }, "The deal's secret seed, now public: ", h("code", { class: "seed-text" }, view.seed))
      : null,
    finished
      ? h(
          "p",
          { class: "result-links" },
          h("a", { class: "button primary", href: `#/game/${game.id}/replay/1` }, "Step through the replay"),
          h(
            "a",
            { class: "button", href: exportUrl(game.id), download: `${game.id}.rrec` },
            "Download the game record (.rrec)",
          ),
        )
      : null,
  );
}
