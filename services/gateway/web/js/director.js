// A tournament director's controls on its page: open and close registration, start the next
// round (closing registration starts round 1), and record a ruling with its reason (annul a table's game, a
// forfeit against a player, a disputed turn's verdict). Built once per page, so a refresh of the
// standings never wipes a ruling half typed; what it offers follows the tournament's state.

import { announce, h } from "./dom.js";
import { tournaments } from "./tournament-api.js";

function labelled(label, input) {
  return h("label", {}, label, input);
}

/** The panel; ``current()`` gives the tournament as last read, ``reload()`` reads it again. */
export function directorPanel(current, reload) {
  const message = h("p", { class: "message", role: "alert" });
  const act = (what) => async (event) => {
    if (event) event.preventDefault();
    message.textContent = "";
    try {
      await what();
      await reload();
    } catch (err) {
      message.textContent = err.field ? `${err.field}: ${err.message}` : err.message;
    }
  };
  const open = h(
    "button",
    { class: "button", dataset: { director: "open" }, onclick: act(() => tournaments.registration(current().tournament_id, true)) },
    "Open registration",
  );
  const close = h(
    "button",
    { class: "button", dataset: { director: "close" }, onclick: act(() => tournaments.registration(current().tournament_id, false)) },
    "Close registration",
  );
  // The service pairs each round once the last is over (round 1 when registration closes):
  // this button is the director's own push, for a round that is due and not paired yet.
  const start = h(
    "button",
    {
      class: "button primary",
      dataset: { director: "round" },
      onclick: act(async () => {
        const view = current();
        if (view.status === "registering") {
          await tournaments.registration(view.tournament_id, false);
          announce("Registration closed: round 1 is being paired");
          return;
        }
        const paired = await tournaments.startRound(view.tournament_id, (view.round || 0) + 1);
        announce(`Round ${paired.round} paired`);
      }),
    },
    "Start the next round",
  );
  const kind = h(
    "select",
    { name: "kind" },
    h("option", { value: "annul" }, "annul a table's game"),
    h("option", { value: "forfeit" }, "a forfeit against a player"),
    h("option", { value: "verdict" }, "a disputed turn's verdict"),
  );
  const form = h(
    "form",
    {
      class: "ruling",
      "aria-label": "Record a ruling",
      onsubmit: act(async () => {
        const data = new FormData(form);
        const ruling = { kind: data.get("kind"), reason: data.get("reason") };
        for (const name of ["round", "table", "turn"]) {
          const value = data.get(name);
          if (value !== "" && value !== null) ruling[name] = Number(value);
        }
        if (data.get("player")) ruling.player = data.get("player");
        if (data.get("verdict")) ruling.verdict = data.get("verdict");
        await tournaments.rule(current().tournament_id, ruling);
        announce(`Ruling recorded: ${ruling.kind}`);
        form.reset();
      }),
    },
    h("h3", {}, "Record a ruling"),
    labelled("Kind", kind),
    labelled("Round", h("input", { name: "round", type: "number", min: 1 })),
    labelled("Table", h("input", { name: "table", type: "number", min: 1 })),
    labelled("Player (account id)", h("input", { name: "player" })),
    labelled("Turn", h("input", { name: "turn", type: "number", min: 1 })),
    labelled("Verdict", h("input", { name: "verdict", maxlength: 500 })),
    labelled("Reason", h("textarea", { name: "reason", required: true, maxlength: 500, rows: 2 })),
    h("button", { type: "submit", class: "button" }, "Record the ruling"),
  );
  return h(
    "section",
    { class: "panel director", "aria-label": "Director" },
    h("h2", {}, "Director"),
    h("p", { class: "controls" }, open, " ", close, " ", start),
    form,
    message,
  );
}
