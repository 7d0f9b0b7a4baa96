// One game: the waiting room (share the link, take a seat, start) and then the table (melds and
// your hand, rearranged by dragging or with the keyboard, submitted as one layout), kept live
// over the WebSocket.

import { ApiError, api, exportUrl } from "./api.js";
import { cardElement, cardName, cardRow, shortName, sortCards } from "./cards.js";
import { announce, copyText, h, plural } from "./dom.js";
import * as Draft from "./draft.js";
import { attachDragDrop } from "./drag.js";
import { Live } from "./live.js";
import { gameKeys, lastName, remember, setLastName } from "./store.js";

const RULE_NAMES = {
  robbers: "Robbers' Rummy",
  "robbers-classic": "Robbers' Rummy (classic)",
  rummikub: "Rummikub",
};

export function ruleSetName(name) {
  return RULE_NAMES[name] || name;
}

/** The options that differ from the preset, as "name value" text. */
export function optionsText(options) {
  const parts = Object.entries(options || {}).map(([k, v]) => `${k} ${v === null ? "null" : v}`);
  return parts.length ? parts.join(", ") : "the preset's rules";
}

function describeEvent(event, seatName) {
  const who = (seat) => (seat === null || seat === undefined ? "someone" : seatName(seat));
  const count = (cards) => (Array.isArray(cards) ? cards.length : Number(cards) || 0);
  switch (event.type) {
    case "GameCreated":
      return "The game was created.";
    case "PlayerSeated":
      return `${event.name} took seat ${event.seat + 1}.`;
    case "GameStarted":
      return "The game started.";
    case "RoundDealt":
      return `Round ${event.round} was dealt.`;
    case "TurnStarted":
      return `Turn ${event.number}: ${who(event.seat)} to play.`;
    case "TurnPlayed":
      return `${who(event.seat)} played ${plural(count(event.played), "card")}${
        event.opening ? " (opening)" : ""
      }.`;
    case "CardDrawn":
      return `${who(event.seat)} drew ${plural(count(event.cards), "card")}${
        event.source === "pile" ? " from the pile" : ""
      }${event.penalty ? " (after a refused layout)" : ""}.`;
    case "CardDiscarded":
      return `${who(event.seat)} discarded ${event.card}.`;
    case "CommandRejected":
      return `${who(event.seat)}'s layout was refused${event.detail ? ` (${event.detail})` : ""}.`;
    case "TurnPassed":
      return `${who(event.seat)} passed.`;
    case "TurnTimedOut":
      return `${who(event.seat)}'s time ran out.`;
    case "TurnForfeited":
      return `${who(event.seat)}'s turn ended after ${plural(event.rejected, "refused layout")}.`;
    case "StockReshuffled":
      return "The pile was shuffled into the stock.";
    case "RoundEnded":
      return event.reason === "out"
        ? `Round ${event.round} is over: ${who(event.out)} went out.`
        : `Round ${event.round} is over: nobody could play (stalled).`;
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

export function showGame(root, gameId, { rules, watch = false, setConnection = () => {} }) {
  let keys = watch ? {} : gameKeys(gameId);
  const s = {
    view: null,
    draft: null,
    baseKey: "",
    baseTable: [],
    message: null, // {kind: "error"|"warn"|"ok"|"info", title?, text, meld?}
    busy: false,
    log: [],
    sort: "suit",
    selected: null, // uid of the hand card chosen for a discard
    focusUid: null,
    focusKey: null,
    expectChange: false,
    failure: null,
    pending: false,
  };
  let live = null;
  let stopped = false;

  const screen = h("div", { class: "game-screen" });
  root.replaceChildren(screen);

  // --- facts about the view ----------------------------------------------------------------

  const full = () => ({
    ...(rules.presets[s.view.rules.name] || rules.presets.robbers),
    ...s.view.rules.options,
  });
  const tiles = () => s.view && s.view.rules.name === "rummikub";
  const seatName = (seat) => {
    const entry = s.view && s.view.seats[seat];
    return (entry && entry.name) || `Seat ${seat + 1}`;
  };
  const mySeat = () => (s.view && typeof s.view.you === "number" ? s.view.you : null);
  const myTurn = () =>
    s.view &&
    s.view.status === "playing" &&
    s.view.turn &&
    mySeat() !== null &&
    s.view.turn.seat === mySeat();
  const stockEmpty = () => s.view.stock === 0 && s.view.discard_count <= 1;
  const draftChanged = () => s.draft && Draft.changed(s.draft, s.baseTable);
  const name = (card) => cardName(card, tiles());

  // --- loading and live updates --------------------------------------------------------------

  async function load() {
    try {
      const view = await api.view(gameId, keys.token);
      s.failure = null;
      onView(view);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401 && keys.token) {
        // A token this server does not know (a restarted demo server): watch instead.
        keys = { ...keys, token: undefined, seat: undefined };
        remember(gameId, { token: undefined, seat: undefined });
        return load();
      }
      s.failure = err;
      render();
      return undefined;
    }
    try {
      const after = Math.max(0, s.view.version - 30);
      const { events } = await api.events(gameId, keys.token, after);
      onEvents(events);
    } catch {
      // the log is a nicety
    }
    if (!stopped && !live) {
      live = new Live(gameId, keys.token, {
        onView,
        onEvents,
        onStatus: setConnection,
      }).start();
      live.saw(s.view.version);
    }
    return undefined;
  }

  async function refresh() {
    try {
      onView(await api.view(gameId, keys.token));
    } catch {
      // the socket will catch up
    }
  }

  function onView(view) {
    if (stopped) return;
    if (s.view && view.version < s.view.version) return;
    const before = s.view;
    s.view = view;
    if (live) live.saw(view.version);
    const key = JSON.stringify([view.table, view.hand || []]);
    if (key !== s.baseKey) {
      const lost = s.draft && draftChanged() && !s.expectChange;
      s.baseKey = key;
      s.baseTable = view.table;
      s.draft = Draft.fromView(view.table, view.hand || []);
      s.selected = null;
      if (lost) {
        s.message = {
          kind: "warn",
          text: "The table changed, so your moves that were not submitted were put back.",
        };
      } else if (s.message && s.message.kind === "error") {
        s.message = null;
      }
      s.expectChange = false;
    }
    if (before && before.status !== view.status) {
      if (view.status === "playing") announce("The game has started.");
      if (view.status === "finished") announce("The game is over.");
    }
    const turnNow = view.turn && view.turn.number;
    if (before && turnNow && (!before.turn || before.turn.number !== turnNow)) {
      // What was said stays through the turn change it caused, then it is old news (the log
      // keeps it).
      if (s.message && s.message.kind !== "error") {
        s.message.turns = (s.message.turns || 0) + 1;
        if (s.message.turns > 1) s.message = null;
      }
      if (myTurn()) announce("Your turn.");
      else announce(`${seatName(view.turn.seat)}'s turn.`);
    }
    render();
  }

  function onEvents(events) {
    for (const event of events) {
      if (s.log.some((entry) => entry.version === event.version)) continue;
      const text = describeEvent(event, seatName);
      if (text) s.log.push({ version: event.version, text });
    }
    s.log.sort((a, b) => a.version - b.version);
    s.log = s.log.slice(-40);
    render();
  }

  // --- commands ------------------------------------------------------------------------------

  async function command(body, { ok, refusedTitle = "The referee refused that" } = {}) {
    if (s.busy) return;
    s.busy = true;
    render();
    try {
      await api.command(gameId, keys.token, body);
      if (ok) ok();
    } catch (err) {
      s.expectChange = false;
      if (err instanceof ApiError && err.code === "illegal_layout") {
        const match = /meld (\d+)/.exec(err.message);
        s.message = {
          kind: "error",
          title: "The referee refused this layout",
          text: err.message,
          meld: match ? Number(match[1]) : null,
        };
        announce(`The referee refused this layout: ${err.message}`);
      } else {
        s.message = { kind: "error", title: refusedTitle, text: err.message };
        announce(`${refusedTitle}: ${err.message}`);
      }
    } finally {
      s.busy = false;
      await refresh();
      render();
    }
  }

  function play() {
    const layout = Draft.layout(s.draft);
    s.expectChange = true;
    s.focusKey = "play";
    return command(
      { type: "play", layout },
      {
        ok: () => {
          s.message = { kind: "ok", text: "The referee accepted your layout." };
          announce("The referee accepted your layout.");
        },
      },
    );
  }

  function undo() {
    s.draft = Draft.fromView(s.baseTable, s.view.hand || []);
    s.message = { kind: "info", text: "Back to the table as it was." };
    s.selected = null;
    announce("Back to the table as it was.");
    render();
  }

  function simple(type, extra = {}, done = "") {
    s.expectChange = true;
    s.focusKey = type;
    return command(
      { type, ...extra },
      {
        ok: () => {
          s.message = done ? { kind: "ok", text: done } : null;
          if (done) announce(done);
        },
      },
    );
  }

  function discard(uid) {
    const where = Draft.locate(s.draft, uid);
    if (!where || where.place !== "hand") {
      s.message = { kind: "warn", text: "Only a card from your hand can be discarded." };
      render();
      return undefined;
    }
    return simple("discard", { card: where.piece.card }, `You discarded ${name(where.piece.card)}.`);
  }

  // --- moving cards ----------------------------------------------------------------------------

  function beforeAt(meldEl, point, uid) {
    for (const el of meldEl.querySelectorAll("[data-uid]")) {
      if (el.dataset.uid === uid) continue;
      const r = el.getBoundingClientRect();
      if (point.y < r.top) return el.dataset.uid;
      if (point.y <= r.bottom && point.x < r.left + r.width / 2) return el.dataset.uid;
    }
    return null;
  }

  function onDrop(source, target, point) {
    if (!myTurn() || s.busy) return;
    const kind = target.dataset.drop;
    try {
      if (source.dataset.grip) {
        if (kind !== "meld") {
          throw new Draft.Refused("Drop a meld onto another meld to merge the two.");
        }
        const from = source.dataset.grip;
        const into = target.dataset.meld;
        if (from === into) return;
        s.draft = Draft.merge(s.draft, from, into);
        s.focusKey = `grip:${into}`;
        announce("The two melds are merged.");
      } else {
        const uid = source.dataset.uid;
        if (kind === "pile") {
          discard(uid);
          return;
        }
        let move;
        if (kind === "meld") {
          const before = point ? beforeAt(target, point, uid) : null;
          move = { to: "meld", id: target.dataset.meld, before };
        } else if (kind === "new") {
          move = { to: "new", at: Number(target.dataset.at) };
        } else {
          move = { to: "hand" };
        }
        s.draft = Draft.move(s.draft, uid, move, name);
        s.focusUid = uid;
        const where = Draft.locate(s.draft, uid);
        const meldIndex = s.draft.melds.findIndex((m) => m.id === where.place);
        announce(
          where.place === "hand"
            ? `${name(where.piece.card)} is back in your hand.`
            : `${name(where.piece.card)} is in meld ${meldIndex + 1}.`,
        );
      }
      if (s.message && s.message.kind !== "error") s.message = null;
      if (s.message && s.message.kind === "error") s.message = { ...s.message, meld: null };
    } catch (err) {
      if (!(err instanceof Draft.Refused)) throw err;
      s.message = { kind: "warn", text: err.message };
      announce(err.message);
    }
    render();
  }

  function cut(meldId, index) {
    if (!myTurn() || s.busy) return;
    s.draft = Draft.split(s.draft, meldId, index);
    const at = s.draft.melds.findIndex((m) => m.id === meldId);
    announce(`Meld ${at + 1} is split in two.`);
    const next = s.draft.melds[at + 1];
    if (next) s.focusUid = next.cards[0].uid;
    render();
  }

  const drag = attachDragDrop(screen, {
    canDrag: (el) => myTurn() && !s.busy && Boolean(el.dataset.uid || el.dataset.grip),
    onDrop,
    describe: (el) => {
      if (el.dataset.grip) return el.getAttribute("aria-label") || "the meld";
      const where = s.draft && Draft.locate(s.draft, el.dataset.uid);
      return where ? name(where.piece.card) : "the card";
    },
    onIdle: () => {
      if (s.pending) render();
    },
    onDenied: () => {
      if (s.view && s.view.status === "playing" && mySeat() !== null) {
        announce(s.busy ? "Wait for the referee's answer." : "You can move cards on your turn.");
      }
    },
  });

  screen.addEventListener("keydown", (event) => {
    // S splits the meld before the focused card (the keyboard's way to split).
    if ((event.key === "s" || event.key === "S") && !event.ctrlKey && !event.metaKey) {
      const card = event.target.closest && event.target.closest("[data-uid]");
      const meld = card && card.closest("[data-meld]");
      if (card && meld && myTurn()) {
        const cards = [...meld.querySelectorAll("[data-uid]")];
        const index = cards.indexOf(card);
        if (index > 0) {
          event.preventDefault();
          cut(meld.dataset.meld, index);
        }
      }
    }
  });

  // --- rendering -------------------------------------------------------------------------------

  function render() {
    if (stopped) return;
    if (drag.busy()) {
      s.pending = true;
      return;
    }
    s.pending = false;
    const active = document.activeElement;
    const keepKey =
      active && screen.contains(active)
        ? active.dataset.uid || active.dataset.focus || active.id || null
        : null;
    let content;
    if (s.failure && !s.view) content = failed();
    else if (!s.view) content = h("p", { class: "loading" }, "Loading the game…");
    else if (s.view.status === "waiting") content = waitingRoom();
    else content = table();
    screen.replaceChildren(content);
    document.title = s.view
      ? `${myTurn() ? "Your turn · " : ""}${ruleSetName(s.view.rules.name)} · ${gameId}`
      : "Robbers' Rummy";
    const wanted = s.focusUid
      ? screen.querySelector(`[data-uid="${CSS.escape(s.focusUid)}"]`)
      : s.focusKey
        ? screen.querySelector(`[data-focus="${CSS.escape(s.focusKey)}"]`)
        : keepKey
          ? screen.querySelector(
              `[data-uid="${CSS.escape(keepKey)}"], [data-focus="${CSS.escape(keepKey)}"], #${CSS.escape(keepKey)}`,
            )
          : null;
    s.focusUid = null;
    s.focusKey = null;
    if (wanted) {
      if (wanted.tabIndex < 0 && wanted.dataset.uid) {
        const row = wanted.closest("[data-roving]");
        if (row) row.querySelectorAll("[data-uid], [data-grip]").forEach((el) => (el.tabIndex = -1));
        wanted.tabIndex = 0;
      }
      if (!wanted.disabled) wanted.focus({ preventScroll: true });
    }
    tick();
  }

  function failed() {
    const err = s.failure;
    const missing = err instanceof ApiError && err.status === 404;
    return h(
      "section",
      { class: "panel" },
      h("h1", {}, missing ? "No such game" : "The game could not be loaded"),
      h(
        "p",
        {},
        missing
          ? `There is no game ${gameId} on this server. It may have been on a server that has since restarted.`
          : err.message,
      ),
      h("p", {}, h("a", { href: "#/" }, "Back to the lobby")),
    );
  }

  // The waiting room ----------------------------------------------------------------------------

  function waitingRoom() {
    const view = s.view;
    const link = `${location.origin}${location.pathname}#/game/${gameId}`;
    const seated = view.seats.filter((seat) => seat.name !== null).length;
    const free = view.seats.length - seated;
    const mine = mySeat();
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
          ),
        ),
      ),
    ];
    if (mine === null && free > 0 && !watch) parts.push(joinForm());
    else if (mine !== null) {
      parts.push(
        h("p", { class: "note" }, `You have seat ${mine + 1} as ${seatName(mine)}. Keep this tab open.`),
      );
    } else if (free === 0) {
      parts.push(h("p", { class: "note" }, "Every seat is taken; you will watch the game."));
    }
    if (keys.host) {
      parts.push(
        h(
          "div",
          { class: "host" },
          h(
            "button",
            {
              type: "button",
              class: "button primary",
              "data-focus": "start",
              disabled: free > 0 || s.busy,
              onclick: start,
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
        ),
      );
    } else {
      parts.push(h("p", { class: "help" }, "The host starts the game once every seat is taken."));
    }
    if (s.message) parts.push(messageBox());
    parts.push(h("p", {}, h("a", { href: "#/" }, "Back to the lobby")));
    return h("section", { class: "panel waiting", "aria-labelledby": "waiting-title" }, parts);
  }

  let joinFormEl = null; // kept across renders, so typing survives live updates

  function joinForm() {
    if (!joinFormEl) joinFormEl = buildJoinForm();
    return joinFormEl;
  }

  function buildJoinForm() {
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
            const answer = await api.sit(gameId, chosen, seedInput.value.trim());
            setLastName(chosen);
            remember(gameId, { token: answer.token, seat: answer.seat, name: chosen });
            keys = gameKeys(gameId);
            s.message = { kind: "ok", text: `You took seat ${answer.seat + 1}.` };
            announce(`You took seat ${answer.seat + 1}.`);
            if (live) live.setToken(answer.token);
            await refresh();
          } catch (err) {
            s.message = { kind: "error", title: "Could not take a seat", text: err.message };
            render();
          } finally {
            s.busy = false;
            render();
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

  async function start() {
    s.busy = true;
    render();
    try {
      onView(await api.start(gameId, keys.host));
      await refresh();
    } catch (err) {
      s.message = { kind: "error", title: "The game did not start", text: err.message };
    } finally {
      s.busy = false;
      render();
    }
  }

  // The table -----------------------------------------------------------------------------------

  function table() {
    const view = s.view;
    const rulesNow = full();
    const player = mySeat() !== null;
    const draftable = myTurn() && !s.busy;
    return h(
      "div",
      { class: `table-screen${draftable ? " my-turn" : ""}${tiles() ? " tiles" : ""}` },
      h(
        "div",
        { class: "main-col" },
        statusBar(view, rulesNow),
        s.message ? messageBox() : null,
        felt(view, draftable, rulesNow),
        player && view.status !== "finished" ? hand(view, draftable, rulesNow) : null,
        player && view.status === "playing" ? actions(view, rulesNow) : null,
        player && view.status === "playing"
          ? h("p", { class: "hint", id: "hint" }, hint(view, rulesNow))
          : null,
        !player && view.status === "playing"
          ? h("p", { class: "note spectator" }, "You are watching this game as a spectator.")
          : null,
        view.status === "finished" || (view.status === "playing" && !view.turn) ? result(view) : null,
        h(
          "nav",
          { class: "game-links", "aria-label": "This game" },
          h(
            "a",
            { href: `#/game/${gameId}/replay/1` },
            view.status === "finished" ? "Step through the replay" : "Replay the game so far",
          ),
          view.status === "finished"
            ? h("a", { href: exportUrl(gameId), download: `${gameId}.rrec` }, "Download the game record")
            : null,
          h("a", { href: "#/" }, "Lobby"),
        ),
      ),
      h("div", { class: "side-col" }, players(view, rulesNow), activity()),
    );
  }

  function statusBar(view, rulesNow) {
    let line;
    if (view.status === "finished") line = h("strong", {}, "The game is over.");
    else if (!view.turn) line = h("strong", {}, `Round ${view.round} is over.`);
    else if (myTurn()) line = h("strong", { class: "yours" }, "Your turn");
    else line = h("strong", {}, `${seatName(view.turn.seat)}'s turn`);
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

  function players(view, rulesNow) {
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
            `${plural(seat.hand_count, tiles() ? "tile" : "card")}`,
            scored && seat.score !== null ? `score ${seat.score}` : "",
            turn ? "to play" : "",
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
            h("span", { class: "count", title: "cards in hand" }, `${seat.hand_count}`),
            scored ? h("span", { class: "score", title: "score" }, seat.score === null ? "–" : `${seat.score} pts`) : null,
            rulesNow.opening_points > 0 && !seat.opened ? h("span", { class: "tag" }, "not opened") : null,
          );
        }),
      ),
    );
  }

  // Decision 14: a turn survives max_rejections refused layouts; say how many are left.
  function triesLeft() {
    const turn = s.view && s.view.turn;
    if (!myTurn() || !turn || typeof turn.rejections_left !== "number") return null;
    const left = turn.rejections_left;
    return h(
      "p",
      { class: "help" },
      left === 0
        ? "One more refused layout ends your turn (with the draw for a failed turn)."
        : `Your turn goes on: it can take ${plural(left, "more refused layout")}; the one after that ends it.`,
    );
  }

  function messageBox() {
    const m = s.message;
    const role = m.kind === "error" ? "alert" : "status";
    return h(
      "div",
      { class: `message ${m.kind}`, role },
      m.title ? h("strong", {}, m.title) : null,
      h("p", {}, m.text.charAt(0).toUpperCase() + m.text.slice(1)),
      m.kind === "error" && m.title === "The referee refused this layout" ? triesLeft() : null,
      m.kind === "error" && m.title === "The referee refused this layout"
        ? h(
            "button",
            { type: "button", class: "button", "data-focus": "undo-message", onclick: undo },
            "Undo: back to the table as it was",
          )
        : null,
    );
  }

  function felt(view, draftable, rulesNow) {
    const melds = s.draft ? s.draft.melds : [];
    const moved = s.draft ? Draft.moved(s.draft) : new Set();
    const invalid = s.message && s.message.kind === "error" ? s.message.meld : null;
    const children = [];
    melds.forEach((meld, i) => {
      if (draftable) children.push(gap(i));
      children.push(meldElement(meld, i, draftable, moved, invalid === i + 1));
    });
    if (draftable) {
      children.push(
        h(
          "div",
          {
            class: "new-meld",
            "data-drop": "new",
            "data-at": String(melds.length),
            tabindex: "-1",
            "aria-label": "New meld: drop a card here to start a new meld",
          },
          h("span", { "aria-hidden": "true" }, "+ New meld"),
        ),
      );
    }
    if (!melds.length && !draftable) {
      children.push(h("p", { class: "empty-table" }, "No melds on the table yet."));
    }
    const pile =
      rulesNow.discard_pile && view.status === "playing"
        ? h(
            "div",
            {
              class: "pile",
              "data-drop": "pile",
              tabindex: "-1",
              "aria-label": `Discard pile (${view.discard_count}): ${
                view.discard ? `top card ${name(view.discard)}` : "empty"
              }. Drop a card here to discard it.`,
            },
            view.discard ? cardElement(view.discard, { tiles: tiles() }) : h("span", { class: "pile-empty" }, "empty"),
            h("span", { class: "pile-label" }, "Pile"),
          )
        : null;
    return h(
      "section",
      { class: "felt", "aria-label": "The table" },
      h("h2", { class: "visually-hidden" }, "The table"),
      h("div", { class: "melds" }, children),
      pile,
    );
  }

  function gap(at) {
    return h("div", {
      class: "gap",
      "data-drop": "new",
      "data-at": String(at),
      "data-kbd-skip": "true",
      "aria-hidden": "true",
      title: "Drop here to start a new meld",
    });
  }

  function meldElement(meld, index, draftable, moved, invalid) {
    const names = meld.cards.map((p) => name(p.card)).join(", ");
    const label = `Meld ${index + 1}: ${names}${invalid ? " (refused)" : ""}`;
    const cards = [];
    meld.cards.forEach((piece, j) => {
      if (draftable && j > 0) {
        cards.push(
          h(
            "button",
            {
              type: "button",
              class: "cut",
              tabindex: "-1",
              "aria-label": `Split meld ${index + 1} before ${name(piece.card)}`,
              title: "Split the meld here",
              onclick: () => cut(meld.id, j),
            },
            h("span", { "aria-hidden": "true" }, "\u2702"),
          ),
        );
      }
      cards.push(pieceElement(piece, moved.has(piece.uid), draftable, j === 0));
    });
    return h(
      "div",
      {
        class: `meld${Draft.isNewMeld(meld) ? " new" : ""}${invalid ? " invalid" : ""}`,
        "data-drop": "meld",
        "data-meld": meld.id,
        "data-roving": "true",
        role: "group",
        tabindex: "-1",
        "aria-label": label,
      },
      draftable
        ? h(
            "button",
            {
              type: "button",
              class: "meld-grip draggable",
              "data-grip": meld.id,
              "data-focus": `grip:${meld.id}`,
              tabindex: "-1",
              "aria-label": `Meld ${index + 1}: pick up to merge it into another meld`,
              title: "Drag onto another meld to merge",
            },
            h("span", { "aria-hidden": "true" }, "\u283f"),
          )
        : null,
      h("span", { class: "meld-number", "aria-hidden": "true" }, String(index + 1)),
      cards,
      invalid ? h("span", { class: "meld-flag" }, "refused") : null,
    );
  }

  function pieceElement(piece, isMoved, draftable, first) {
    const classes = [];
    if (isMoved) classes.push("moved");
    if (draftable) classes.push("draggable");
    if (s.selected === piece.uid) classes.push("selected");
    const label = `${name(piece.card)}${isMoved ? ", moved" : ""}${
      s.selected === piece.uid ? ", selected" : ""
    }`;
    const el = cardElement(piece.card, {
      tiles: tiles(),
      tag: "button",
      classes,
      attrs: {
        "data-uid": piece.uid,
        "aria-label": label,
        tabindex: first ? "0" : "-1",
        "aria-roledescription": draftable ? "movable card" : undefined,
      },
    });
    if (piece.from === "hand" && full().discard_pile) {
      el.addEventListener("click", () => {
        if (!myTurn()) return;
        const where = Draft.locate(s.draft, piece.uid);
        if (!where || where.place !== "hand") return;
        s.selected = s.selected === piece.uid ? null : piece.uid;
        s.focusUid = piece.uid;
        render();
      });
    }
    return el;
  }

  function hand(view, draftable) {
    const pieces = s.draft ? s.draft.hand : [];
    const sorted = sortCards(pieces, s.sort, (p) => p.card);
    const noun = tiles() ? "tile" : "card";
    return h(
      "section",
      { class: "hand-area", "aria-labelledby": "hand-title" },
      h(
        "div",
        { class: "hand-head" },
        h("h2", { id: "hand-title" }, `Your hand (${plural(pieces.length, noun)})`),
        h(
          "button",
          {
            type: "button",
            class: "button small",
            "data-focus": "sort",
            onclick: () => {
              s.sort = s.sort === "suit" ? "rank" : "suit";
              s.focusKey = "sort";
              render();
            },
          },
          s.sort === "suit" ? (tiles() ? "Sort by number" : "Sort by rank") : tiles() ? "Sort by colour" : "Sort by suit",
        ),
      ),
      h(
        "div",
        {
          class: "hand",
          "data-drop": "hand",
          "data-roving": "true",
          role: "group",
          tabindex: "-1",
          "aria-label": `Your hand: ${plural(pieces.length, noun)}. Drop a card here to take it back.`,
        },
        sorted.length
          ? sorted.map((piece, i) => pieceElement(piece, false, draftable, i === 0))
          : h("span", { class: "empty-hand" }, view.status === "finished" ? "" : "No cards left."),
      ),
    );
  }

  function actions(view, rulesNow) {
    const mine = myTurn();
    const turn = view.turn || {};
    const busy = s.busy;
    const changed = draftChanged();
    const classic = rulesNow.turn_shape === "place_draw_place";
    const pile = rulesNow.discard_pile;
    const buttons = [
      h(
        "button",
        {
          type: "button",
          class: "button primary",
          "data-focus": "play",
          disabled: !mine || busy || !changed || (pile && !turn.drawn),
          onclick: play,
        },
        "Play",
      ),
      h(
        "button",
        {
          type: "button",
          class: "button",
          "data-focus": "undo",
          disabled: !changed || busy,
          onclick: undo,
        },
        "Undo",
      ),
      h(
        "button",
        {
          type: "button",
          class: "button",
          "data-focus": "draw",
          disabled: !mine || busy || turn.drawn || stockEmpty() || (pile && turn.placed),
          onclick: () => simple("draw", { source: "stock" }, "You drew a card."),
        },
        "Draw",
      ),
    ];
    if (pile) {
      buttons.push(
        h(
          "button",
          {
            type: "button",
            class: "button",
            "data-focus": "draw-pile",
            disabled: !mine || busy || turn.drawn || !view.discard,
            onclick: () => simple("draw", { source: "pile" }, "You took the top of the pile."),
          },
          view.discard ? `Take ${shortName(view.discard, tiles())} from the pile` : "Take from the pile",
        ),
        h(
          "button",
          {
            type: "button",
            class: "button",
            "data-focus": "discard",
            disabled: !mine || busy || !turn.drawn || !s.selected,
            onclick: () => discard(s.selected),
          },
          "Discard",
        ),
      );
    }
    if (classic && !pile) {
      buttons.push(
        h(
          "button",
          {
            type: "button",
            class: "button",
            "data-focus": "end",
            disabled: !mine || busy || !(turn.placed || turn.drawn),
            onclick: () => simple("end", {}, "You ended your turn."),
          },
          "End turn",
        ),
      );
    }
    if (stockEmpty()) {
      buttons.push(
        h(
          "button",
          {
            type: "button",
            class: "button",
            "data-focus": "pass",
            disabled: !mine || busy || turn.placed || turn.drawn,
            onclick: () => simple("pass", {}, "You passed."),
          },
          "Pass",
        ),
      );
    }
    return h(
      "section",
      { class: "actions", "aria-label": "Your moves", "aria-describedby": "hint" },
      h("div", { class: "action-buttons" }, buttons),
    );
  }

  function hint(view, rulesNow) {
    if (view.status !== "playing" || !view.turn) return "";
    if (!myTurn()) return `Wait for ${seatName(view.turn.seat)}: the table updates by itself.`;
    const parts = [];
    const me = view.seats[mySeat()];
    if (rulesNow.discard_pile) {
      parts.push(
        view.turn.drawn
          ? "Play if you can, then discard a card (select it and press Discard, or drag it onto the pile)."
          : "Start by drawing from the stock or taking the top of the pile.",
      );
    } else if (rulesNow.turn_shape === "place_draw_place") {
      parts.push(
        "Place cards (drag them, then Play), draw one card if you like (you must if you place nothing), then End turn.",
      );
    } else {
      parts.push(
        "Drag cards onto a meld or onto + New meld (drop on a gap between melds to start one there), then press Play. Or Draw a card to end your turn.",
      );
    }
    if (rulesNow.opening_points > 0 && me && !me.opened) {
      parts.push(`Your first play must be worth ${rulesNow.opening_points} points from your hand alone.`);
    }
    if (stockEmpty()) parts.push("The stock is empty: play or pass.");
    return [
      parts.join(" "),
      h(
        "span",
        { class: "keys" },
        " Keyboard: Enter picks a card up, the arrow keys choose a place, Enter drops it, " +
          "Escape puts it back; S splits a meld before the focused card.",
      ),
    ];
  }

  function result(view) {
    const last = view.last_round;
    const finished = view.status === "finished";
    const winners = (view.winner || []).map(seatName);
    const rows = view.seats.map((seat) =>
      h(
        "tr",
        {},
        h("th", { scope: "row" }, seat.name || `Seat ${seat.seat + 1}`),
        h("td", {}, seat.score === null ? "–" : String(seat.score)),
        h(
          "td",
          {},
          last && last.hands && last.hands[String(seat.seat)]
            ? last.hands[String(seat.seat)].length
              ? cardRow(last.hands[String(seat.seat)], { tiles: tiles(), label: `${seatName(seat.seat)}'s cards left` })
              : "none (went out)"
            : last && last.hand_counts
              ? plural(last.hand_counts[String(seat.seat)] ?? 0, "card")
              : "",
        ),
      ),
    );
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
              ? `Round ${last.round}: ${seatName(last.out)} went out.`
              : `Round ${last.round} stalled: nobody could play, so ${seatName(last.winner)} won it.`,
          )
        : null,
      h(
        "table",
        { class: "scores" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Player"), h("th", { scope: "col" }, "Score"), h("th", { scope: "col" }, "Left in hand"))),
        h("tbody", {}, rows),
      ),
      !finished ? h("p", { class: "note" }, "The next round is being dealt…") : null,
      finished && view.seed
        ? h("p", { class: "help" }, "The deal's secret seed, now public: ", h("code", { class: "seed-text" }, view.seed))
        : null,
      finished
        ? h(
            "p",
            { class: "result-links" },
            h("a", { class: "button primary", href: `#/game/${gameId}/replay/1` }, "Step through the replay"),
            h("a", { class: "button", href: exportUrl(gameId), download: `${gameId}.rrec` }, "Download the game record (.rrec)"),
          )
        : null,
    );
  }

  function activity() {
    if (!s.log.length) return null;
    return h(
      "section",
      { class: "activity", "aria-labelledby": "activity-title" },
      h("h2", { id: "activity-title" }, "What happened"),
      h(
        "ol",
        { class: "log" },
        s.log.slice(-12).reverse().map((entry) => h("li", {}, entry.text)),
      ),
    );
  }

  // --- the turn timer --------------------------------------------------------------------------

  function tick() {
    const el = screen.querySelector("#turn-timer");
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
  const ticker = setInterval(tick, 500);

  render();
  load();

  return {
    cleanup() {
      stopped = true;
      clearInterval(ticker);
      drag.destroy();
      if (live) live.stop();
    },
  };
}
