// Live updates over the game's WebSocket: the viewer's view after every change and the events in
// between. It reconnects by itself with backoff (0.5 s doubling to 15 s, with jitter) and asks
// for what it missed (?after=<the last version it saw>). Closed as too slow (the server's queue
// for this socket filled up), it reconnects at once: the server is there, this client fell behind.
// Told the server could not answer (an error frame: its Redis away, a catch-up it could not
// read), it asks again the same way rather than sit on a view that may be behind; the backoff
// starts over only once a view has come.

import { socketUrl } from "./api.js";

const TOO_SLOW = 4008; // the server's close code for a socket that let its queue fill up
const ASK_AGAIN = 4001; // this client's close code after the server said it could not answer
const SERVER_FAILED = new Set(["internal", "unavailable"]); // error frames worth asking again

export class Live {
  constructor(gameId, token, { onView, onEvents, onStatus }) {
    this.gameId = gameId;
    this.token = token || "";
    this.onView = onView;
    this.onEvents = onEvents || (() => {});
    this.onStatus = onStatus || (() => {});
    this.version = null; // the last version seen; null before the first view
    this.attempt = 0;
    this.socket = null;
    this.timer = null;
    this.stopped = false;
    this.wake = () => {
      if (!this.stopped && (!this.socket || this.socket.readyState > 1)) this.connectSoon(0);
    };
    window.addEventListener("online", this.wake);
    document.addEventListener("visibilitychange", this.wake);
  }

  /** Connect, asking for the events after `version` (the view already shown): the server sends
   * events only to a socket that asks with ?after, and the log lives on them. */
  start(version = null) {
    if (version !== null) this.saw(version);
    this.connect();
    return this;
  }

  /** Switch to another token (a seat just taken): reconnect as that viewer, still asking for
   * the events after the version seen (the new viewer's view comes first, even at that version). */
  setToken(token) {
    this.token = token || "";
    this.immediate = true;
    if (this.socket) this.socket.close(4000, "new token");
    else this.connectSoon(0);
  }

  connect() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.stopped) return;
    this.onStatus(this.attempt === 0 ? "connecting" : "reconnecting");
    let socket;
    try {
      socket = new WebSocket(socketUrl(this.gameId, this.token, this.version));
    } catch {
      this.connectSoon();
      return;
    }
    this.socket = socket;
    socket.addEventListener("open", () => this.onStatus("live"));
    socket.addEventListener("message", (message) => {
      let data;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      // A view comes alone, or with the answer to a command sent on this socket.
      if ((data.type === "view" || data.type === "answer") && data.view) {
        this.attempt = 0; // the server answers again: the next trouble starts the backoff over
        if (this.version === null || data.view.version >= this.version) {
          this.version = data.view.version;
          this.onView(data.view);
        }
      } else if (data.type === "events" && Array.isArray(data.events)) {
        this.onEvents(data.events);
        const last = data.events[data.events.length - 1];
        if (last && Number.isInteger(last.version)) this.saw(last.version); // got up to there
      } else if (data.type === "error" && data.error && SERVER_FAILED.has(data.error.code)) {
        socket.close(ASK_AGAIN, "asking again"); // "close" schedules it, with backoff
      }
    });
    socket.addEventListener("close", (event) => {
      if (this.socket === socket) this.socket = null;
      const now = this.immediate || event.code === TOO_SLOW;
      if (!this.stopped) this.connectSoon(now ? 0 : undefined);
      this.immediate = false;
    });
    socket.addEventListener("error", () => {
      // "close" follows and schedules the retry
    });
  }

  connectSoon(delay) {
    if (this.stopped || this.timer) return;
    const wait = delay ?? Math.min(15000, 500 * 2 ** this.attempt) * (0.75 + Math.random() / 2);
    this.attempt += 1;
    this.onStatus("reconnecting");
    this.timer = setTimeout(() => this.connect(), wait);
  }

  /** The version the view shown was read at (a fresher one may come from an HTTP answer). */
  saw(version) {
    if (this.version === null || version > this.version) this.version = version;
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    window.removeEventListener("online", this.wake);
    document.removeEventListener("visibilitychange", this.wake);
    if (this.socket) this.socket.close(1000, "leaving");
    this.socket = null;
    this.onStatus("");
  }
}
