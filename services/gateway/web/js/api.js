// The gateway's HTTP API (README "Playing over the API"). Every error is an ApiError with the
// published code and message.

export class ApiError extends Error {
  constructor(status, code, message, body = null, retryAfter = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
    this.retryAfter = retryAfter; // seconds, from a 429's or a 503's Retry-After
  }
}

/** A random command id (works on plain http too, where crypto.randomUUID is missing). */
export function newId() {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function call(method, path, { token, body, key } = {}) {
  const headers = { Accept: "application/json" };
  if (key) headers["Idempotency-Key"] = key;
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
  } catch {
    throw new ApiError(0, "network", "The server cannot be reached; check the connection.");
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiError(
      response.status,
      error.code || `http_${response.status}`,
      error.message || response.statusText || "the request failed",
      data,
      Number(response.headers.get("Retry-After")) || null,
    );
  }
  return data;
}

const game = (id) => `/api/games/${encodeURIComponent(id)}`;

/** A create or a sit, sent again once with the same Idempotency-Key when the answer is lost:
 * the retry gets the same game or seat (with a fresh token), never a second one. */
async function once(path, body) {
  const key = newId();
  try {
    return await call("POST", path, { body, key });
  } catch (err) {
    if (err instanceof ApiError && (err.status === 0 || err.code === "timeout")) {
      return call("POST", path, { body, key });
    }
    throw err;
  }
}

export const api = {
  rules: () => call("GET", "/api/rules"),
  games: (status, limit = 50) =>
    call("GET", `/api/games?status=${encodeURIComponent(status)}&limit=${limit}`),
  create: (body) => once("/api/games", body),
  view: (id, token) => call("GET", game(id), { token }),
  sit: (id, name, seed) => once(`${game(id)}/seats`, seed ? { name, seed } : { name }),
  start: (id, hostToken) => call("POST", `${game(id)}/start`, { token: hostToken }),
  seatBot: (id, hostToken, bot) =>
    call("POST", `${game(id)}/seats`, { token: hostToken, body: { bot } }),
  leave: (id, token, seat) =>
    call("POST", `${game(id)}/leave`, { token, body: seat === undefined ? {} : { seat } }),
  cancel: (id, hostToken) => call("POST", `${game(id)}/cancel`, { token: hostToken }),
  rematch: (id, token) => call("POST", `${game(id)}/rematch`, { token, body: {} }),
  joinRematch: (id, token) => call("POST", `${game(id)}/rematch/seat`, { token, body: {} }),
  events: (id, token, after = 0) => call("GET", `${game(id)}/events?after=${after}`, { token }),
  replay: (id, token, turn) => call("GET", `${game(id)}/replay?turn=${turn}`, { token }),
  hint: (id, token) => call("GET", `${game(id)}/hint`, { token }),

  /** A seat command; retried once with the same id when the answer is lost (the referee applies
   * a command id once, so a retry is safe). */
  async command(id, token, body) {
    const payload = { id: newId(), ...body };
    try {
      return await call("POST", `${game(id)}/commands`, { token, body: payload });
    } catch (err) {
      if (err instanceof ApiError && (err.status === 0 || err.code === "timeout")) {
        return call("POST", `${game(id)}/commands`, { token, body: payload });
      }
      throw err;
    }
  },
};

export const exportUrl = (id) => `${game(id)}/export`;
export const socketUrl = (id, token, after) => {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const query = new URLSearchParams();
  if (token) query.set("token", token);
  if (after !== null && after !== undefined) query.set("after", String(after));
  const text = query.toString();
  return `${scheme}//${location.host}${game(id)}/ws${text ? `?${text}` : ""}`;
};
