// How games end and begin again: the host seats a bot or cancels a waiting game, a player leaves
// a waiting game or resigns one under way, returns after being away, and offers or joins a
// rematch of a finished game. Also the badges that say which seats are bots, away or resigned.

import { api } from "./api.js";
import { announce, h } from "./dom.js";
import { gameKeys, remember } from "./store.js";
import { onView, refresh } from "./sync.js";

// The bots a host can seat (shared/core/botnames.py BOT_NAMES; the server refuses any other).
const BOTS = ["greedy", "random", "solver", "patient", "hoarder"];

/** The badges of one seat: a bot plays it, its player is away, it resigned. */
export function seatBadges(seat) {
  return [
    seat.bot && !seat.away ? h("span", { class: "tag bot" }, `bot: ${seat.bot}`) : null,
    seat.away === "bot" ? h("span", { class: "tag away" }, `away (${seat.bot} plays)`) : null,
    seat.away === "skip" ? h("span", { class: "tag away" }, "away (turns skipped)") : null,
    seat.resigned ? h("span", { class: "tag resigned" }, "resigned") : null,
  ];
}

/** The words for a seat's state, for its accessible label. */
export function seatWords(seat) {
  if (seat.resigned) return "resigned";
  if (seat.away) return "away";
  return seat.bot ? `bot ${seat.bot}` : "";
}

async function act(game, work, failed) {
  const s = game.s;
  s.busy = true;
  game.render();
  try {
    await work();
  } catch (err) {
    s.message = { kind: "error", title: failed, text: err.message };
  } finally {
    s.busy = false;
    game.render();
  }
}

/** The host's controls while the game waits: seat a bot in the next free seat, cancel. */
export function hostWaiting(game, free) {
  const choice = h(
    "select",
    { id: "bot-name", name: "bot" },
    BOTS.map((name) => h("option", { value: name }, name)),
  );
  return h(
    "div",
    { class: "lifecycle host-waiting" },
    free > 0
      ? h(
          "div",
          { class: "bot-row" },
          h("label", { for: "bot-name" }, "Give the next free seat to a bot"),
          choice,
          h(
            "button",
            {
              type: "button",
              class: "button",
              "data-focus": "seat-bot",
              disabled: game.s.busy,
              onclick: () =>
                act(
                  game,
                  async () => {
                    const answer = await api.seatBot(game.id, game.keys.host, choice.value);
                    announce(`The ${choice.value} bot took seat ${answer.seat + 1}.`);
                    await refresh(game);
                  },
                  "The bot could not take a seat",
                ),
            },
            "Seat a bot",
          ),
        )
      : null,
    h(
      "button",
      {
        type: "button",
        class: "button danger",
        "data-focus": "cancel-game",
        disabled: game.s.busy,
        onclick: () =>
          act(
            game,
            async () => {
              onView(game, await api.cancel(game.id, game.keys.host));
              announce("The game is cancelled.");
            },
            "The game could not be cancelled",
          ),
      },
      "Cancel the game",
    ),
  );
}

/** A seated player's way out of a waiting game. */
export function leaveButton(game) {
  return h(
    "button",
    {
      type: "button",
      class: "button",
      "data-focus": "leave",
      disabled: game.s.busy,
      onclick: () =>
        act(
          game,
          async () => {
            await api.leave(game.id, game.keys.token);
            remember(game.id, { token: null, seat: null });
            game.keys = gameKeys(game.id);
            if (game.live) game.live.setToken(null);
            game.joinForm = null;
            announce("You left the game.");
            await refresh(game);
          },
          "Could not leave the game",
        ),
    },
    "Leave the game",
  );
}

/** A player's resign button (two clicks: the first asks to confirm) and, when away, Return. */
export function seatControls(game, view) {
  const me = view.seats[view.you];
  if (!me || me.resigned) return null;
  const s = game.s;
  const parts = [];
  if (me.away) {
    parts.push(
      h("p", { class: "note away-note" }, "You were away: your seat was played for you."),
      h(
        "button",
        {
          type: "button",
          class: "button primary",
          "data-focus": "return",
          disabled: s.busy,
          onclick: () =>
            act(
              game,
              async () => {
                await api.command(game.id, game.keys.token, { type: "return" });
                announce("You have your seat back.");
                await refresh(game);
              },
              "Could not take the seat back",
            ),
        },
        "I am back",
      ),
    );
  }
  const confirming = s.confirmResign === view.version;
  parts.push(
    h(
      "button",
      {
        type: "button",
        class: `button${confirming ? " danger" : ""}`,
        "data-focus": "resign",
        disabled: s.busy,
        onclick: () => {
          if (!confirming) {
            s.confirmResign = view.version;
            s.focusKey = "resign";
            game.render();
            return;
          }
          s.confirmResign = null;
          act(
            game,
            async () => {
              await api.command(game.id, game.keys.token, { type: "resign" });
              announce("You resigned.");
              await refresh(game);
            },
            "Could not resign",
          );
        },
      },
      confirming ? "Really resign? Click again" : "Resign",
    ),
  );
  return h("div", { class: "lifecycle seat-controls" }, parts);
}

/** After the game: offer a rematch, or join the one offered; both in one click. */
export function rematchPanel(game, view) {
  if (view.you === null || !game.keys.token) {
    return view.rematch
      ? h("p", { class: "note" }, h("a", { href: `#/game/${view.rematch}/watch` }, "Watch the rematch"))
      : null;
  }
  const offered = Boolean(view.rematch);
  return h(
    "div",
    { class: "lifecycle rematch" },
    h(
      "button",
      {
        type: "button",
        class: "button primary",
        "data-focus": offered ? "join-rematch" : "rematch",
        disabled: game.s.busy,
        onclick: () =>
          act(
            game,
            async () => {
              const call = offered ? api.joinRematch : api.rematch;
              const answer = await call(game.id, game.keys.token);
              remember(answer.game_id, {
                token: answer.token,
                seat: answer.seat,
                name: game.seatName(view.you),
              });
              location.hash = `#/game/${answer.game_id}`;
            },
            "The rematch could not be joined",
          ),
      },
      offered ? "Join the rematch" : "Offer a rematch",
    ),
    h(
      "p",
      { class: "help" },
      offered
        ? "A rematch is waiting: same rules, everyone one seat on."
        : "Same rules and options; everyone moves one seat on. The others join with one click.",
    ),
  );
}

/** The screen of a cancelled game. */
export function cancelledPanel(view) {
  return h(
    "section",
    { class: "panel cancelled", "aria-labelledby": "cancelled-title" },
    h("h1", { id: "cancelled-title" }, "This game was cancelled"),
    h(
      "p",
      {},
      view.cancelled === "expired"
        ? "Nobody kept it going, so it expired. It has no result."
        : "The host cancelled it before it started.",
    ),
    h("p", {}, h("a", { href: "#/" }, "Back to the lobby")),
  );
}
