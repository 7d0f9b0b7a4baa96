// Tiny DOM helpers: h() builds elements, announce() speaks through the live region, copyText()
// copies; so no screen builds elements or talks to assistive technology its own way.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "value" && "value" in el) el.value = value;
    else if (key === "checked" && "checked" in el) el.checked = Boolean(value);
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

let lastAnnouncement = "";

/** Say `text` to screen readers (the polite live region). */
export function announce(text) {
  const region = document.getElementById("announcer");
  if (!region) return;
  // The same text twice in a row would not be read again: vary it invisibly.
  const spoken = text === lastAnnouncement ? `${text}\u00a0` : text;
  lastAnnouncement = spoken;
  region.textContent = spoken;
}

/** Copy text to the clipboard (falls back to a selection where the API is not allowed). */
export async function copyText(text, input) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the selection
  }
  if (input) {
    input.focus();
    input.select();
    try {
      return document.execCommand("copy");
    } catch {
      return false;
    }
  }
  return false;
}
