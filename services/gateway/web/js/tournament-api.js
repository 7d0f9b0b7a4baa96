// The tournaments' part of the HTTP API as the tournament pages call it. The session is the
// HttpOnly cookie the gateway sets (no script here sees it); every error is thrown with the
// published message and the field it names.

import { newId } from "./api.js";

export async function call(method, path, body, key) {
  const options = { method, headers: { Accept: "application/json" }, cache: "no-store" };
  if (key) options.headers["Idempotency-Key"] = key;
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    const failure = new Error(error.message || response.statusText || "the request failed");
    failure.status = response.status;
    failure.code = error.code;
    failure.field = data && data.option;
    throw failure;
  }
  return data;
}

const one = (id) => `/api/tournaments/${encodeURIComponent(id)}`;

export const tournaments = {
  me: () => call("GET", "/api/me"),
  rules: () => call("GET", "/api/rules"),
  lobby: (status, cursor) => {
    const query = new URLSearchParams({ limit: "50" });
    if (status) query.set("status", status);
    if (cursor) query.set("cursor", cursor);
    return call("GET", `/api/tournaments?${query}`);
  },
  create: (body) => call("POST", "/api/tournaments", body, newId()),
  view: (id) => call("GET", one(id)),
  events: (id) => call("GET", `${one(id)}/events`),
  registration: (id, open) => call("POST", `${one(id)}/registration`, { open }),
  register: (id) => call("POST", `${one(id)}/entrants`, {}),
  withdraw: (id) => call("DELETE", `${one(id)}/entrants`),
  startRound: (id, round) => call("POST", `${one(id)}/rounds`, { round }),
  rule: (id, ruling) => call("POST", `${one(id)}/rulings`, ruling),
  seatToken: (gameId) => call("POST", `/api/me/games/${encodeURIComponent(gameId)}/token`, {}),
};

/** Where the web client plays, watches and replays a game. */
export const links = {
  play: (gameId) => `/#/game/${encodeURIComponent(gameId)}`,
  watch: (gameId) => `/#/game/${encodeURIComponent(gameId)}/watch`,
  replay: (gameId) => `/#/game/${encodeURIComponent(gameId)}/replay/1`,
};
