// The waiting room before a game starts: the link to share, the seats, the form to take one
// (a name and an optional seed of the player's own for the shuffle) and the host's Start.

import { api } from "./api.js";
import { announce, copyText, h } from "./dom.js";
import { optionsText, plural, ruleSetName } from "./format.js";
import { hostWaiting, leaveButton, seatBadges } from "./lifecycle.js";
import { messageBox } from "./message.js";
import { gameKeys, lastName, remember, setLastName } from "./store.js";
import { onView, refresh } from "./sync.js";

/** The waiting room's panel. */
export function waitingRoom(game) {
  const view = game.s.view;
  const gameId = game.id;
  const link = `${location.origin}${location.pathname}#/game/${gameId}`;
  const seated = view.seats.filter((seat) => seat.name !== null).length;
  const free = view.seats.length - seated;
  const mine = game.mySeat();
  const linkInput = h("input", {
    id: "share-link",
    class: "share-input",
    readonly: true,
    value: link,
    "aria-describedby": "share-help",
    onfocus: (e) => e.target.select(),
  });
  const copied = h("span", { class: "copied", role: "status" });
  const parts = [
    h("h1", { id: "waiting-title" }, `${ruleSetName(view.rules.name)}: waiting for players`),
    h(
      "p",
      { class: "subtle" },
      `Game ${gameId} · ${plural(view.seats.length, "seat")} · ${optionsText(view.rules.options)}`,
    ),
    h(
      "div",
      { class: "share" },
      h("label", { for: "share-link" }, "Invite players with this link"),
      h(
        "div",
        { class: "share-row" },
        linkInput,
        h(
          "button",
          {
            type: "button",
            class: "button",
            "data-focus": "copy",
            onclick: async () => {
              const done = await copyText(link, linkInput);
              copied.textContent = done ? "Copied." : "Select the link and copy it.";
            },
          },
          "Copy link",
        ),
        copied,
      ),
      h(
        "p",
        { id: "share-help", class: "help" },
        "Whoever opens it can take a free seat; once every seat is taken, the host starts the game.",
      ),
    ),
    h("h2", {}, `Seats (${seated} of ${view.seats.length} taken)`),
    h(
      "ol",
      { class: "seat-list" },
      view.seats.map((seat) =>
        h(
          "li",
          { class: seat.name === null ? "empty" : "taken" },
          seat.name === null ? "Free seat" : seat.name,
          seat.seat === mine ? h("span", { class: "badge" }, "you") : null,
          ...seatBadges(seat),
        ),
      ),
    ),
  ];
  if (mine === null && free > 0 && !game.watch) parts.push(joinForm(game));
  else if (mine !== null) {
    parts.push(
      h("p", { class: "note" }, `You have seat ${mine + 1} as ${game.seatName(mine)}. Keep this tab open.`),
      leaveButton(game),
    );
  } else if (free === 0) {
    parts.push(h("p", { class: "note" }, "Every seat is taken; you will watch the game."));
  }
  if (game.keys.host) parts.push(hostPanel(game, free), hostWaiting(game, free));
  else parts.push(h("p", { class: "help" }, "The host starts the game once every seat is taken."));
  if (game.s.message) parts.push(messageBox(game));
  parts.push(h("p", {}, h("a", { href: "#/" }, "Back to the lobby")));
  return h("section", { class: "panel waiting", "aria-labelledby": "waiting-title" }, parts);
}

function hostPanel(game, free) {
  return h(
    "div",
    { class: "host" },
    h(
      "button",
      {
        type: "button",
        class: "button primary",
        "data-focus": "start",
        disabled: free > 0 || game.s.busy,
        onclick: () => start(game),
      },
      "Start the game",
    ),
    h(
      "p",
      { class: "help" },
      free > 0
        ? `You are the host: start once every seat is taken (${plural(free, "seat")} still free).`
        : "Every seat is taken: start when you are ready.",
    ),
  );
}

// The form is kept across renders (on the game), so typing survives live updates.
function joinForm(game) {
  if (!game.joinForm) game.joinForm = buildJoinForm(game);
  return game.joinForm;
}

function buildJoinForm(game) {
  const s = game.s;
  const nameInput = h("input", {
    id: "join-name",
    name: "name",
    required: true,
    maxlength: 40,
    autocomplete: "nickname",
    value: lastName(),
  });
  const seedInput = h("input", { id: "join-seed", name: "seed", maxlength: 128, spellcheck: "false" });
  return h(
    "form",
    {
      class: "join-form",
      onsubmit: async (event) => {
        event.preventDefault();
        const chosen = nameInput.value.trim();
        if (!chosen) {
          nameInput.focus();
          return;
        }
        s.busy = true;
        try {
          const answer = await api.sit(game.id, chosen, seedInput.value.trim());
          setLastName(chosen);
          remember(game.id, { token: answer.token, seat: answer.seat, name: chosen });
          game.keys = gameKeys(game.id);
          s.message = { kind: "ok", text: `You took seat ${answer.seat + 1}.` };
          announce(`You took seat ${answer.seat + 1}.`);
          if (game.live) game.live.setToken(answer.token);
          await refresh(game);
        } catch (err) {
          s.message = { kind: "error", title: "Could not take a seat", text: err.message };
          game.render();
        } finally {
          s.busy = false;
          game.render();
        }
      },
    },
    h("h2", {}, "Take a seat"),
    h("label", { for: "join-name" }, "Your name"),
    nameInput,
    h(
      "details",
      { class: "seed" },
      h("summary", {}, "Add your own seed to the shuffle (optional)"),
      h(
        "p",
        { class: "help", id: "seed-help" },
        "Any text. It is mixed into every shuffle of this game with the server's secret seed, " +
          "so the server cannot choose the deal alone; the secret seed is published at the end.",
      ),
      h("label", { for: "join-seed" }, "Your seed"),
      seedInput,
    ),
    h("button", { type: "submit", class: "button primary", "data-focus": "join" }, "Take a seat"),
  );
}

async function start(game) {
  const s = game.s;
  s.busy = true;
  game.render();
  try {
    onView(game, await api.start(game.id, game.keys.host));
    await refresh(game);
  } catch (err) {
    s.message = { kind: "error", title: "The game did not start", text: err.message };
  } finally {
    s.busy = false;
    game.render();
  }
}
