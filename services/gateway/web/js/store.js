// What this browser remembers: per game, the host token and the seat token (localStorage).

const KEY = "rummy.games.v1";
const NAME = "rummy.name";

function load() {
  try {
    const data = JSON.parse(localStorage.getItem(KEY) || "{}");
    return data && typeof data === "object" ? data : {};
  } catch {
    return {};
  }
}

/** {host?, token?, seat?, name?} for one game. */
export function gameKeys(gameId) {
  return load()[gameId] || {};
}

export function remember(gameId, patch) {
  const all = load();
  all[gameId] = { ...(all[gameId] || {}), ...patch, at: Date.now() };
  // Keep the newest 200 games.
  const ids = Object.keys(all).sort((a, b) => (all[b].at || 0) - (all[a].at || 0));
  for (const id of ids.slice(200)) delete all[id];
  try {
    localStorage.setItem(KEY, JSON.stringify(all));
  } catch {
    // storage full or off: the tokens live for this page only
  }
}

export function lastName() {
  try {
    return localStorage.getItem(NAME) || "";
  } catch {
    return "";
  }
}

export function setLastName(name) {
  try {
    localStorage.setItem(NAME, name);
  } catch {
    // ignore
  }
}
