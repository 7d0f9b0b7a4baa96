// The lobby: create a game (rule set and options, each explained), join one by its link, and the
// games waiting, in progress and finished (join, watch, replay).

import { api } from "./api.js";
import { announce, h } from "./dom.js";
import { optionName as title, optionValue, ruleSetName } from "./format.js";
import { gameLists } from "./games.js";
import { remember } from "./store.js";

const ABOUT = {
  robbers:
    "Robbers' Rummy as played today: 13 cards each (11 with four or more players), four jokers, " +
    "a first play of at least 40 points, and penalty points over five rounds.",
  "robbers-classic":
    "The old rules: 13 cards, no opening minimum, place, draw and place again in a turn, jokers " +
    "stay on the table, one round and no score.",
  rummikub:
    "Rummikub: tiles numbered 1 to 13 in four colours, 14 tiles each, a first play of 30 points, " +
    "a 60-second turn timer and plus/minus scoring.",
};

// The options most games change first; the rest follow in the server's order.
const FIRST = ["hand_size", "opening_points", "jokers", "turn_seconds", "match", "match_rounds"];


export function showLobby(root, { rules, navigate }) {
  const optionNames = [
    ...FIRST.filter((n) => n in rules.options),
    ...Object.keys(rules.options).filter((n) => !FIRST.includes(n)),
  ];
  let preset = "robbers";

  // --- creating a game -------------------------------------------------------------------------

  const presetSelect = h(
    "select",
    { id: "rules", name: "rules", "aria-describedby": "rules-about" },
    Object.keys(rules.presets).map((name) =>
      h("option", { value: name, selected: name === preset }, `${ruleSetName(name)} (${name})`),
    ),
  );
  const about = h("p", { class: "help", id: "rules-about" });
  const seats = h("input", {
    id: "seats",
    name: "seats",
    type: "number",
    inputmode: "numeric",
    min: String(rules.seats.min),
    max: String(rules.seats.max),
    step: "1",
    value: "2",
    "aria-describedby": "seats-help",
  });
  const seatsHelp = h("p", { class: "help", id: "seats-help" });
  const seed = h("input", {
    id: "deal-seed",
    name: "seed",
    spellcheck: "false",
    autocomplete: "off",
    pattern: "[0-9a-fA-F]*",
    maxlength: "128",
    "aria-describedby": "deal-seed-help",
  });
  const controls = {};
  const helps = {};
  const formMessage = h("div", { class: "form-message", role: "alert" });

  function control(option, spec) {
    const id = `opt-${option}`;
    const describedBy = `help-${option}`;
    let el;
    if (spec.kind === "choice") {
      el = h(
        "select",
        { id, name: option, "aria-describedby": describedBy },
        spec.choices.map((c) => h("option", { value: c }, optionValue(option, c))),
      );
    } else if (spec.kind === "bool") {
      el = h("input", { id, name: option, type: "checkbox", "aria-describedby": describedBy });
    } else {
      el = h("input", {
        id,
        name: option,
        type: "number",
        inputmode: "numeric",
        min: String(spec.low),
        max: String(spec.high),
        step: "1",
        placeholder: spec.kind === "int?" ? "default" : "",
        "aria-describedby": describedBy,
      });
    }
    el.addEventListener("change", () => markChanged(option));
    el.addEventListener("input", () => markChanged(option));
    return el;
  }

  function valueOf(option) {
    const spec = rules.options[option];
    const el = controls[option];
    if (spec.kind === "bool") return el.checked;
    if (spec.kind === "choice") return el.value;
    if (el.value.trim() === "") return spec.kind === "int?" ? null : undefined;
    return Number(el.value);
  }

  function setValue(option, value) {
    const spec = rules.options[option];
    const el = controls[option];
    if (spec.kind === "bool") el.checked = Boolean(value);
    else if (spec.kind === "choice") el.value = value;
    else el.value = value === null ? "" : String(value);
  }

  function markChanged(option) {
    const row = controls[option].closest(".option");
    const base = rules.presets[preset][option];
    row.classList.toggle("changed", valueOf(option) !== base);
    if (row.classList.contains("refused")) {
      row.classList.remove("refused");
      formMessage.replaceChildren(); // the refusal was about this option: it is being fixed
    }
  }

  function applyPreset() {
    const values = rules.presets[preset];
    about.textContent = ABOUT[preset] || "";
    for (const option of optionNames) {
      setValue(option, values[option]);
      markChanged(option);
      const spec = rules.options[option];
      helps[option].replaceChildren(
        spec.help,
        ". ",
        h("span", { class: "allowed" }, `Allowed: ${spec.allowed}.`),
        " ",
        h("span", { class: "default" }, `Default for ${preset}: ${optionValue(option, values[option])}.`),
      );
    }
    seatsHelp.textContent = `${ruleSetName(preset)} is for ${values.min_players} to ${values.max_players} players (the options below can widen that).`;
    const n = Number(seats.value);
    if (!(n >= values.min_players && n <= values.max_players)) seats.value = String(values.min_players);
  }

  const optionRows = optionNames.map((option) => {
    const spec = rules.options[option];
    controls[option] = control(option, spec);
    helps[option] = h("p", { class: "help", id: `help-${option}` });
    return h(
      "div",
      { class: `option kind-${spec.kind === "bool" ? "bool" : "field"}`, "data-option": option },
      h("label", { for: `opt-${option}` }, title(option)),
      controls[option],
      helps[option],
    );
  });

  presetSelect.addEventListener("change", () => {
    preset = presetSelect.value;
    applyPreset();
    announce(`${ruleSetName(preset)}: the options are reset to its defaults.`);
  });

  const createButton = h("button", { type: "submit", class: "button primary" }, "Create game");

  const createForm = h(
    "form",
    {
      class: "create-form",
      novalidate: true,
      onsubmit: async (event) => {
        event.preventDefault();
        formMessage.replaceChildren();
        const options = {};
        for (const option of optionNames) {
          const value = valueOf(option);
          if (value === undefined) {
            refuse(option, `${title(option)} needs a value: ${rules.options[option].allowed}.`);
            return;
          }
          if (value !== rules.presets[preset][option]) options[option] = value;
        }
        const body = { rules: preset, seats: Number(seats.value), options };
        if (seed.value.trim()) body.seed = seed.value.trim();
        createButton.disabled = true;
        try {
          const created = await api.create(body);
          remember(created.game_id, { host: created.host_token });
          announce("The game is created. Share its link, then take a seat.");
          navigate(`#/game/${created.game_id}`);
        } catch (err) {
          const option = err.body && err.body.option;
          refuse(option, err.message);
        } finally {
          createButton.disabled = false;
        }
      },
    },
    h("div", { class: "field" }, h("label", { for: "rules" }, "Rule set"), presetSelect, about),
    h("div", { class: "field" }, h("label", { for: "seats" }, "Players"), seats, seatsHelp),
    h(
      "fieldset",
      { class: "options" },
      h("legend", {}, "Rule options (each explained; the ones you change are marked)"),
      h("div", { class: "option-grid" }, optionRows.slice(0, FIRST.length)),
      h(
        "details",
        { class: "more-options" },
        h("summary", {}, `More options (${optionRows.length - FIRST.length})`),
        h("div", { class: "option-grid" }, optionRows.slice(FIRST.length)),
      ),
    ),
    // Offered only where the server takes a seed (GET /api/rules seeded_games); elsewhere it
    // would only be refused.
    rules.seeded_games ? h(
      "details",
      { class: "advanced" },
      h("summary", {}, "Fixed deal (for tests and demos)"),
      h("label", { for: "deal-seed" }, "Server seed (hex)"),
      seed,
      h(
        "p",
        { class: "help", id: "deal-seed-help" },
        "Leave empty for a fair random deal. This server was started with " +
          "--allow-seeded-games: a fixed seed makes every deal of the game predictable.",
      ),
    ) : null,
    formMessage,
    createButton,
  );

  function refuse(option, text) {
    formMessage.replaceChildren(h("strong", {}, "The game was not created: "), text);
    const row = option && createForm.querySelector(`[data-option="${option}"]`);
    if (row) {
      const more = row.closest("details");
      if (more) more.open = true;
      row.classList.add("refused");
      controls[option].focus();
    } else if (option === "seats") seats.focus();
  }

  applyPreset();

  // --- joining by link -------------------------------------------------------------------------

  const joinInput = h("input", {
    id: "join-link",
    name: "link",
    placeholder: "https://…/#/game/g0123… or g0123…",
    autocomplete: "off",
    spellcheck: "false",
  });
  const joinMessage = h("p", { class: "form-message", role: "alert" });
  const joinForm = h(
    "form",
    {
      class: "join-by-link",
      onsubmit: (event) => {
        event.preventDefault();
        const text = joinInput.value.trim();
        const match = /(?:#\/game\/)?(g[0-9a-f]{4,64})/i.exec(text);
        if (!match) {
          joinMessage.textContent = "Paste a game link (…/#/game/g…) or a game id (g…).";
          joinInput.focus();
          return;
        }
        navigate(`#/game/${match[1]}`);
      },
    },
    h("label", { for: "join-link" }, "Game link or id"),
    h("div", { class: "share-row" }, joinInput, h("button", { type: "submit", class: "button" }, "Open")),
    joinMessage,
  );


  const lists = gameLists();
  root.replaceChildren(
    h(
      "div",
      { class: "lobby" },
      h(
        "section",
        { class: "panel create", "aria-labelledby": "create-title" },
        h("h1", { id: "create-title" }, "Start a game"),
        createForm,
      ),
      h(
        "div",
        { class: "lobby-side" },
        h(
          "section",
          { class: "panel", "aria-labelledby": "join-title" },
          h("h2", { id: "join-title" }, "Join by link"),
          h("p", { class: "help" }, "Got a link from a friend? Open it, or paste it here."),
          joinForm,
        ),
        h(
          "section",
          { class: "panel games-panel", "aria-labelledby": "games-title" },
          h("div", { class: "panel-head" }, h("h2", { id: "games-title" }, "Games"), lists.refreshButton),
          lists.tablist,
          lists.panel,
        ),
      ),
    ),
  );

  return {
    cleanup() {
      lists.stop();
    },
  };
}
