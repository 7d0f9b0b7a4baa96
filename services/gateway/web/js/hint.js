// The hint: where the game allows hints, a button that asks the server's solver for a play
// (GET /hint, from this seat's own view), shows it as a preview of the table with the cards it
// plays marked, and lets the player take it as their draft (still theirs to change or submit) or
// dismiss it. The solver's budget and the hint limit answer in plain words.

import { ApiError, api } from "./api.js";
import { cardRow } from "./cards.js";
import { announce, h } from "./dom.js";
import * as Draft from "./draft.js";
import { playMarks } from "./moved.js";
import { pieces } from "./words.js";

/** Whether this game lets seats ask for hints (the house rule `hints`). */
export function hintsAllowed(game) {
  return game.full().hints !== false;
}

/** The Hint button of the turn panel. */
export function hintButton(game) {
  const s = game.s;
  return h(
    "button",
    {
      type: "button",
      class: "button",
      "data-focus": "hint",
      disabled: !game.myTurn() || s.busy || s.hintBusy,
      onclick: () => ask(game),
    },
    s.hintBusy ? "Thinking…" : "Hint",
  );
}

async function ask(game) {
  const s = game.s;
  s.hintBusy = true;
  s.preview = null;
  if (s.message && s.message.title === "Hint") s.message = null; // the last answer is stale
  game.render();
  try {
    const answer = await api.hint(game.id, game.keys.token);
    if (!answer.found || !answer.played || !answer.played.length) {
      say(game, "info", "The solver finds no play for you from here: draw.");
    } else {
      s.preview = { version: answer.version, layout: answer.layout, played: answer.played, points: answer.points };
      s.message = null;
      announce(`Hint: ${summary(game, s.preview)} It is shown above the table.`);
      s.focusKey = "hint-apply";
    }
  } catch (err) {
    say(game, "warn", refusal(err));
  } finally {
    s.hintBusy = false;
    game.render();
  }
}

function say(game, kind, text) {
  game.s.message = { kind, title: "Hint", text };
  announce(`Hint: ${text}`);
}

/** The refusals in plain words: the solver's budget, a busy solver, the hint limit. */
function refusal(err) {
  if (!(err instanceof ApiError)) return "no hint: something went wrong.";
  const wait = err.retryAfter ? ` Try again in ${err.retryAfter} s.` : " Try again in a moment.";
  switch (err.code) {
    case "hint_timeout":
      return "this position is too costly to hint: the solver ran out of its time. Ask again once the game has moved on.";
    case "solver_busy":
      return `the solver is busy with other players' questions.${wait}`;
    case "rate_limited":
      return `you have asked for hints too often.${wait}`;
    case "hints_off":
      return "hints are switched off in this game.";
    default:
      return err.status === 429 ? `you have asked for hints too often.${wait}` : err.message;
  }
}

function summary(game, preview) {
  const points = preview.points ? ` (${preview.points} points)` : "";
  return `play ${pieces(preview.played.length, game.tiles())}${points}.`;
}

/** The preview of the solver's play (nothing when there is none, or the game moved on). */
export function hintPreview(game, view) {
  const s = game.s;
  const preview = s.preview;
  if (!preview) return null;
  if (preview.version !== view.version || !game.myTurn()) {
    s.preview = null;
    return null;
  }
  const marks = playMarks(view.table, preview.layout, preview.played);
  return h(
    "section",
    { class: "hint-preview", "aria-labelledby": "hint-title" },
    h("h2", { id: "hint-title" }, `Hint: ${summary(game, preview)}`),
    h(
      "div",
      { class: "hint-melds" },
      preview.layout.map((meld, i) =>
        cardRow(meld, { tiles: game.tiles(), highlight: marks[i], label: `Hinted meld ${i + 1}` }),
      ),
    ),
    h(
      "div",
      { class: "hint-buttons" },
      h("button", { type: "button", class: "button primary", "data-focus": "hint-apply", onclick: () => apply(game) }, "Use as my draft"),
      h("button", { type: "button", class: "button", "data-focus": "hint-dismiss", onclick: () => dismiss(game) }, "Dismiss"),
    ),
  );
}

function apply(game) {
  const s = game.s;
  try {
    s.draft = Draft.toward(s.baseTable, s.view.hand || [], s.preview.layout);
  } catch (err) {
    say(game, "warn", `the hint no longer fits your hand (${err.message}).`);
    s.preview = null;
    game.render();
    return;
  }
  s.preview = null;
  s.selected = null;
  s.message = { kind: "info", text: "The hint is your draft now: change it if you like, then press Play." };
  announce("The hint is your draft now: press Play to submit it.");
  s.focusKey = "play";
  game.render();
}

function dismiss(game) {
  game.s.preview = null;
  game.s.focusKey = "hint";
  game.render();
}
