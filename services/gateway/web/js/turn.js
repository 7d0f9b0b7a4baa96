// The turn panel: whose turn it is with the turn's timer and the round's facts, the buttons for
// the current turn (Play, Undo, Draw, Take from the pile, Discard, End turn, Pass: each enabled
// only when the rules allow it now), and the hint that says what to do next.

import { shortName } from "./cards.js";
import { discard, play, simple, undo } from "./commands.js";
import { h } from "./dom.js";
import { ruleSetName } from "./format.js";
import { hintButton, hintsAllowed } from "./hint.js";
import { piece, pieces } from "./words.js";

/** What a draw from the stock costs now (Decision 5): after a refused layout, with nothing
 * placed, the draw for a failed turn (`failed_turn_draw`); else one. Capped by the stock. */
export function drawCost(game, view, rulesNow) {
  const turn = view.turn || {};
  const failed = turn.rejected > 0 && !turn.placed && !rulesNow.discard_pile;
  const count = Math.min(failed ? rulesNow.failed_turn_draw : 1, view.stock);
  return { failed: failed && count > 1, count };
}

/** The turn line, the timer's place and the facts (rule set, round, turn, stock, pile). */
export function statusBar(game, view, rulesNow) {
  let line;
  if (view.status === "finished") line = h("strong", {}, "The game is over.");
  else if (!view.turn) line = h("strong", {}, `Round ${view.round} is over.`);
  else if (game.myTurn()) line = h("strong", { class: "yours" }, "Your turn");
  else line = h("strong", {}, `${game.seatName(view.turn.seat)}'s turn`);
  const facts = [
    ruleSetName(view.rules.name),
    `round ${view.round}`,
    view.turn ? `turn ${view.turn.number}` : null,
    `stock ${view.stock}`,
    rulesNow.discard_pile ? `pile ${view.discard_count}` : null,
  ].filter(Boolean);
  return h(
    "section",
    { class: "status-bar", "aria-label": "Turn" },
    h("h1", { class: "turn-line", id: "turn-line", "aria-live": "polite" }, line),
    h("span", { class: "timer", id: "turn-timer", role: "timer", "aria-live": "off" }),
    h("span", { class: "facts" }, facts.join(" · ")),
  );
}

function moveButton(focus, { primary = false, disabled, onclick }, label) {
  return h(
    "button",
    { type: "button", class: primary ? "button primary" : "button", "data-focus": focus, disabled, onclick },
    label,
  );
}

/** The buttons of the current turn (the variant's: the pile's, End turn, Pass). */
export function actions(game, view, rulesNow) {
  const s = game.s;
  const mine = game.myTurn();
  const turn = view.turn || {};
  const busy = s.busy;
  const changed = game.draftChanged();
  const classic = rulesNow.turn_shape === "place_draw_place";
  const pile = rulesNow.discard_pile;
  const stockEmpty = game.stockEmpty();
  const tiles = game.tiles();
  const cost = drawCost(game, view, rulesNow);
  const buttons = [
    moveButton(
      "play",
      { primary: true, disabled: !mine || busy || !changed || (pile && !turn.drawn), onclick: () => play(game) },
      "Play",
    ),
    moveButton("undo", { disabled: !changed || busy, onclick: () => undo(game) }, "Undo"),
    moveButton(
      "draw",
      {
        disabled: !mine || busy || turn.drawn || stockEmpty || (pile && turn.placed),
        onclick: () =>
          simple(
            game,
            "draw",
            { source: "stock" },
            cost.failed
              ? `You drew ${pieces(cost.count, tiles)} for the refused layout.`
              : `You drew a ${piece(tiles)}.`,
          ),
      },
      cost.failed && mine ? `Draw ${cost.count} (penalty)` : "Draw",
    ),
  ];
  if (pile) {
    buttons.push(
      moveButton(
        "draw-pile",
        {
          disabled: !mine || busy || turn.drawn || !view.discard,
          onclick: () => simple(game, "draw", { source: "pile" }, "You took the top of the pile."),
        },
        view.discard ? `Take ${shortName(view.discard, game.tiles())} from the pile` : "Take from the pile",
      ),
      moveButton(
        "discard",
        { disabled: !mine || busy || !turn.drawn || !s.selected, onclick: () => discard(game, s.selected) },
        "Discard",
      ),
    );
  }
  if (classic && !pile) {
    buttons.push(
      moveButton(
        "end",
        {
          disabled: !mine || busy || !(turn.placed || turn.drawn),
          onclick: () => simple(game, "end", {}, "You ended your turn."),
        },
        "End turn",
      ),
    );
  }
  if (stockEmpty) {
    buttons.push(
      moveButton(
        "pass",
        {
          disabled: !mine || busy || turn.placed || turn.drawn,
          onclick: () => simple(game, "pass", {}, "You passed."),
        },
        "Pass",
      ),
    );
  }
  if (mine && hintsAllowed(game)) buttons.push(hintButton(game));
  const warn =
    mine && cost.failed && !turn.drawn && !stockEmpty
      ? h(
          "p",
          { class: "cost-warning", id: "draw-cost", role: "note" },
          `A layout was refused this turn: drawing now costs ${pieces(cost.count, tiles)}, not one. `,
          "Undo and play a layout the referee accepts to avoid it.",
        )
      : null;
  return h(
    "section",
    {
      class: "actions",
      "aria-label": "Your moves",
      "aria-describedby": warn ? "draw-cost hint" : "hint",
    },
    warn,
    h("div", { class: "action-buttons" }, buttons),
  );
}

/** What to do now (the variant's turn, the opening, an empty stock) and the keyboard's keys. */
export function hint(game, view, rulesNow) {
  if (view.status !== "playing" || !view.turn) return "";
  if (!game.myTurn()) return `Wait for ${game.seatName(view.turn.seat)}: the table updates by itself.`;
  const parts = [];
  const me = view.seats[game.mySeat()];
  const one = piece(game.tiles());
  if (rulesNow.discard_pile) {
    parts.push(
      view.turn.drawn
        ? `Play if you can, then discard a ${piece(game.tiles())} (select it and press Discard, or drag it onto the pile).`
        : "Start by drawing from the stock or taking the top of the pile.",
    );
  } else if (rulesNow.turn_shape === "place_draw_place") {
    parts.push(
      `Place ${one}s (drag them, then Play), draw one ${one} if you like (you must if you place nothing), then End turn.`,
    );
  } else {
    parts.push(
      `Drag ${one}s onto a meld or onto + New meld (drop on a gap between melds to start one there), then press Play. Or Draw a ${one} to end your turn.`,
    );
  }
  if (rulesNow.opening_points > 0 && me && !me.opened) {
    parts.push(`Your first play must be worth ${rulesNow.opening_points} points from your hand alone.`);
  }
  if (game.stockEmpty()) parts.push("The stock is empty: play or pass.");
  return [
    parts.join(" "),
    h(
      "span",
      { class: "keys" },
      ` Keyboard: Enter picks a ${one} up, the arrow keys choose a place, Enter drops it, ` +
        `Escape puts it back; S splits a meld before the focused ${one}.`,
    ),
  ];
}

/** Show the time left in the turn in the status bar's timer (called twice a second). */
export function tick(game) {
  const s = game.s;
  const el = game.screen.querySelector("#turn-timer");
  if (!el) return;
  const deadline = s.view && s.view.status === "playing" && s.view.turn && s.view.turn.deadline;
  if (!deadline) {
    el.textContent = "";
    el.className = "timer";
    return;
  }
  const left = Math.max(0, Math.round((Date.parse(deadline) - Date.now()) / 1000));
  const text = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
  el.textContent = left > 0 ? `${text} left` : "time is up";
  el.className = `timer${left <= 15 ? " urgent" : ""}`;
  el.setAttribute("aria-label", left > 0 ? `${left} seconds left in this turn` : "time is up");
}
