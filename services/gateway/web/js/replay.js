// The replay: a game turn by turn (forward and back), each command's verdict as the rules core
// judges it today, the table before and after with the moved cards highlighted, and the game
// record to download.

import { ApiError, api, exportUrl } from "./api.js";
import { cardName, cardRow, shortName } from "./cards.js";
import { announce, h } from "./dom.js";
import { ruleSetName } from "./format.js";
import { movedPositions, stayedMoves } from "./moved.js";
import { pieces, speak } from "./words.js";
import { gameKeys } from "./store.js";

const KIND = {
  play: "played",
  draw: "drew",
  discard: "discarded",
  pass: "passed",
  timeout: "ran out of time",
  end: "ended the turn",
  continue: "dealt the next round",
  record_scores: "recorded the scores",
};

async function allEvents(gameId, token) {
  const events = [];
  let after = 0;
  for (let page = 0; page < 200; page += 1) {
    const answer = await api.events(gameId, token, after);
    events.push(...answer.events);
    if (!answer.events.length || events[events.length - 1].version >= answer.version) break;
    after = events[events.length - 1].version;
  }
  return events;
}

export function showReplay(root, gameId, firstTurn, { navigate }) {
  const keys = gameKeys(gameId);
  const token = keys.token;
  const s = { turn: firstTurn || 1, turns: [], view: null, data: null, failure: null, loading: true };
  let stopped = false;
  let request = 0;
  const screen = h("div", { class: "replay-screen" });
  root.replaceChildren(screen);

  const tiles = () => s.view && s.view.rules.name === "rummikub";
  const names = () => (s.data && s.data.players) || (s.view ? s.view.seats.map((x) => x.name) : []);
  const seatName = (seat) =>
    seat === null || seat === undefined ? "—" : names()[seat] || `Seat ${seat + 1}`;
  // Who did it: a seat, or the referee (the scores, the next round's deal).
  const actor = (seat) => (seat === null || seat === undefined ? "The referee" : seatName(seat));
  const last = () => (s.turns.length ? s.turns[s.turns.length - 1].number : 1);

  async function start() {
    try {
      s.view = await api.view(gameId, token);
      const events = await allEvents(gameId, token);
      s.turns = events
        .filter((e) => e.type === "TurnStarted")
        .map((e) => ({ number: e.number, seat: e.seat }))
        .filter((t, i, all) => all.findIndex((o) => o.number === t.number) === i);
    } catch (err) {
      s.failure = err;
      s.loading = false;
      render();
      return;
    }
    if (!s.turns.length) {
      s.failure = new Error("This game has no turns yet: it starts once every seat is taken.");
      s.loading = false;
      render();
      return;
    }
    await show(Math.min(Math.max(1, s.turn), last()), false);
  }

  async function show(turn, focusNav = true) {
    const mine = ++request;
    s.turn = turn;
    s.loading = true;
    render(focusNav);
    try {
      const data = await api.replay(gameId, token, turn);
      if (mine !== request || stopped) return;
      s.data = data;
      s.failure = null;
    } catch (err) {
      if (mine !== request || stopped) return;
      s.failure = err;
    }
    s.loading = false;
    const wanted = `#/game/${gameId}/replay/${turn}`;
    if (location.hash !== wanted) history.replaceState(null, "", wanted);
    render(focusNav);
    if (s.data) announce(`Turn ${turn} of ${last()}: ${seatName(s.data.seat)}. ${summary(s.data)}`);
  }

  function go(turn) {
    const target = Math.min(Math.max(1, turn), last());
    if (target !== s.turn || !s.data) show(target);
  }

  function summary(data) {
    const parts = data.commands
      .filter((c) => c.kind !== "continue" && c.kind !== "record_scores")
      .map((c) => `${c.outcome === "rejected" ? "refused: " : ""}${KIND[c.kind] || c.kind}`);
    return parts.length ? parts.join(", ") : "nothing happened";
  }

  function verdictText(command) {
    const verdict = command.verdict;
    if (command.outcome === "rejected") {
      if (!verdict) return "Refused.";
      if (verdict.hidden) {
        return `Refused (${verdict.code}). The details stay hidden until the game ends.`;
      }
      const reason = verdict.reason || (command.recorded && command.recorded.reason) || "";
      return `Refused (${verdict.code}): ${speak(reason, tiles())}`;
    }
    if (command.kind === "play" && verdict) {
      const bits = [`Legal. Played ${cards(verdict.played) || "nothing"}`];
      if (verdict.to_hand && verdict.to_hand.length) bits.push(`took back ${cards(verdict.to_hand)}`);
      if (verdict.points !== null && verdict.points !== undefined) bits.push(`${verdict.points} points`);
      if (verdict.opening) bits.push("the opening");
      if (verdict.out) bits.push("went out");
      return `${bits.join("; ")}.`;
    }
    if (command.kind === "draw") {
      const moves = command.moves.filter((m) => m.from === "stock" || m.from === "pile");
      const drawn = moves.map((m) => (Array.isArray(m.cards) ? cards(m.cards) : pieces(m.cards, tiles())));
      return drawn.length ? `Drew ${drawn.join(", ")}.` : "Drew.";
    }
    if (command.kind === "discard") {
      return `Discarded ${command.moves.map((m) => cards(m.cards)).join(", ")}.`;
    }
    if (command.kind === "pass") return "Passed (the stock was empty).";
    if (command.kind === "timeout") return "The turn timer ran out; the referee ended the turn.";
    if (command.kind === "end") return "Ended the turn.";
    return "";
  }

  function place(text) {
    const hand = /^hand of seat (\d+)$/.exec(text);
    return hand ? `${seatName(Number(hand[1]))}'s hand` : text;
  }

  function cards(list) {
    return list.map((c) => shortName(c, tiles())).join(" ");
  }

  function describeMoves(moves) {
    const stayed = stayedMoves(moves);
    return moves
      .filter((m) => Array.isArray(m.cards) && m.cards.length)
      .filter((m) => !stayed.has(`${m.from}->${m.to}`))
      .map((m) => `${cards(m.cards)}: ${place(m.from)} \u2192 ${place(m.to)}`);
  }

  function tableBlock(title, table, highlight, id) {
    return h(
      "div",
      { class: "replay-table", "aria-labelledby": id },
      h("h3", { id }, title),
      table.length
        ? h(
            "ol",
            { class: "replay-melds" },
            table.map((meld, i) =>
              h(
                "li",
                { class: highlight && highlight[i].size ? "meld changed" : "meld" },
                h("span", { class: "meld-number", "aria-hidden": "true" }, String(i + 1)),
                cardRow(meld, {
                  tiles: tiles(),
                  highlight: highlight ? highlight[i] : new Set(),
                  label: `Meld ${i + 1}: ${meld.map((c) => cardName(c, tiles())).join(", ")}`,
                }),
              ),
            ),
          )
        : h("p", { class: "empty-table" }, "No melds."),
    );
  }

  function handsBlock(data) {
    const rows = Object.entries(data.after.hands || {}).filter(([, hand]) => hand !== null);
    if (!rows.length) return null;
    return h(
      "section",
      { class: "replay-hands", "aria-labelledby": "hands-title" },
      h("h3", { id: "hands-title" }, "Hands after the turn"),
      h(
        "ul",
        {},
        rows.map(([seat, hand]) =>
          h(
            "li",
            {},
            h("strong", {}, `${seatName(Number(seat))}: `),
            hand.length ? cardRow(hand, { tiles: tiles(), label: `${seatName(Number(seat))}'s hand` }) : `no ${tiles() ? "tiles" : "cards"}`,
          ),
        ),
      ),
    );
  }

  function stepper() {
    const at = s.turn;
    const max = last();
    const slider = h("input", {
      type: "range",
      id: "turn-slider",
      min: "1",
      max: String(max),
      value: String(at),
      "aria-valuetext": `turn ${at} of ${max}`,
      onchange: (e) => go(Number(e.target.value)),
    });
    const button = (label, text, turn, focus, disabled) =>
      h(
        "button",
        {
          type: "button",
          class: "button",
          "aria-label": label,
          "data-focus": focus,
          disabled,
          onclick: () => go(turn),
        },
        text,
      );
    return h(
      "nav",
      { class: "stepper", "aria-label": "Turns" },
      button("First turn", "\u00ab First", 1, "first", at <= 1),
      button("Previous turn", "\u25c0 Previous", at - 1, "prev", at <= 1),
      h("label", { for: "turn-slider", class: "slider" }, h("span", {}, `Turn ${at} of ${max}`), slider),
      button("Next turn", "Next \u25b6", at + 1, "next", at >= max),
      button("Last turn", "Last \u00bb", max, "last", at >= max),
    );
  }

  function render(focusNav = false) {
    if (stopped) return;
    const active = document.activeElement;
    const keep = active && screen.contains(active) ? active.dataset.focus || active.id : null;
    const parts = [];
    const status = s.view ? s.view.status : null;
    parts.push(
      h(
        "header",
        { class: "replay-head" },
        h("h1", {}, s.view ? `Replay: ${ruleSetName(s.view.rules.name)}` : "Replay"),
        h(
          "p",
          { class: "subtle" },
          `Game ${gameId}`,
          status && status !== "finished" ? " · still being played: you see it as the table showed it to you" : "",
        ),
      ),
    );
    if (s.turns.length) parts.push(stepper());
    if (s.failure && !(s.failure instanceof ApiError && s.failure.status === 404 && s.data)) {
      parts.push(h("p", { class: "message error", role: "alert" }, s.failure.message));
    }
    if (s.loading && !s.data) parts.push(h("p", { class: "loading" }, "Loading…"));
    const data = s.data;
    if (data) {
      const highlight = movedPositions(data.after.table, data.diff.moves);
      parts.push(
        h(
          "section",
          { class: `turn-facts${s.loading ? " stale" : ""}`, "aria-labelledby": "turn-title" },
          h("h2", { id: "turn-title" }, `Turn ${data.turn}: ${seatName(data.seat)}`, h("span", { class: "subtle" }, ` · round ${data.round}`)),
          h(
            "ol",
            { class: "commands" },
            data.commands.map((command) =>
              h(
                "li",
                { class: `command ${command.outcome}` },
                h("span", { class: `badge ${command.outcome}` }, command.outcome === "rejected" ? "refused" : "accepted"),
                " ",
                h(
                  "strong",
                  {},
                  command.outcome === "rejected" && command.kind === "play"
                    ? `${seatName(command.seat)} tried a layout`
                    : `${actor(command.seat)} ${KIND[command.kind] || command.kind}`,
                ),
                h("p", { class: "verdict" }, verdictText(command)),
                command.layout
                  ? h(
                      "div",
                      { class: "proposed" },
                      h("span", { class: "subtle" }, "The layout proposed: "),
                      command.layout.map((meld, i) =>
                        cardRow(meld, { tiles: tiles(), label: `Proposed meld ${i + 1}` }),
                      ),
                    )
                  : null,
                command.moves && command.moves.length && command.kind !== "play"
                  ? h("p", { class: "moves subtle" }, describeMoves(command.moves).join("; "))
                  : null,
              ),
            ),
          ),
          describeMoves(data.diff.moves).length
            ? h(
                "p",
                { class: "moves" },
                h("strong", {}, "Moved: "),
                describeMoves(data.diff.moves).join("; "),
              )
            : null,
        ),
        h(
          "section",
          { class: "replay-tables", "aria-label": "The table before and after the turn" },
          tableBlock("Table before", data.before.table, null, "before-title"),
          tableBlock("Table after (moved cards highlighted)", data.after.table, highlight, "after-title"),
        ),
        handsBlock(data),
      );
    }
    parts.push(
      h(
        "p",
        { class: "download" },
        status === "finished"
          ? h("a", { class: "button", href: exportUrl(gameId), download: `${gameId}.rrec`, id: "download" }, "Download the game record (.rrec)")
          : h("span", { class: "help" }, "The game record can be downloaded once the game has ended."),
        " ",
        h("a", { href: `#/game/${gameId}` }, "Back to the table"),
        " · ",
        h("a", { href: "#/" }, "Lobby"),
      ),
    );
    screen.replaceChildren(h("div", { class: "replay panel" }, parts));
    document.title = `Replay turn ${s.turn} · ${gameId}`;
    const target = keep ? screen.querySelector(`[data-focus="${keep}"], #${CSS.escape(keep)}`) : null;
    if (target && !target.disabled) target.focus({ preventScroll: true });
    else if (focusNav && keep) {
      const fallback = screen.querySelector('[data-focus="next"]:not([disabled]), [data-focus="prev"]:not([disabled])');
      if (fallback) fallback.focus({ preventScroll: true });
    }
  }

  function onKey(event) {
    if (event.target.closest && event.target.closest("input, select, textarea")) return;
    if (event.key === "ArrowRight") {
      event.preventDefault();
      go(s.turn + 1);
    } else if (event.key === "ArrowLeft") {
      event.preventDefault();
      go(s.turn - 1);
    } else if (event.key === "Home") {
      event.preventDefault();
      go(1);
    } else if (event.key === "End") {
      event.preventDefault();
      go(last());
    }
  }
  document.addEventListener("keydown", onKey);

  render();
  start();

  return {
    update(route) {
      if (route.turn && route.turn !== s.turn) go(route.turn);
    },
    cleanup() {
      stopped = true;
      document.removeEventListener("keydown", onKey);
    },
  };
}
