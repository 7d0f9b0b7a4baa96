// Moving cards by pointer (mouse, pen or touch: pointer events) and by keyboard.
//
// Sources are elements with data-uid (a card) or data-grip (a whole meld); targets are elements
// with data-drop. With a pointer: press on a source, move past a few pixels and a ghost follows
// the pointer; release over a target to drop. With the keyboard: Enter or Space on a source picks
// it up, the arrow keys choose a target (the focused target is outlined), Enter or Space drops,
// Escape puts it back. Arrow keys without a piece held move the focus between cards (left/right
// within a row, up/down between rows).

import { announce } from "./dom.js";

const THRESHOLD = 6; // pixels before a press becomes a drag

export function attachDragDrop(
  root,
  { canDrag, onDrop, describe, onIdle = () => {}, onDenied = () => {} },
) {
  let press = null; // {source, pointerId, x, y, dragging, ghost, dx, dy, over}
  let held = null; // keyboard: {source, targets, index}
  let swallowClick = false;

  const targetAt = (x, y) => {
    const el = document.elementFromPoint(x, y);
    const target = el && el.closest("[data-drop]");
    return target && root.contains(target) ? target : null;
  };

  const setOver = (target) => {
    if (press.over === target) return;
    if (press.over) press.over.classList.remove("drop-over");
    press.over = target;
    if (target) target.classList.add("drop-over");
  };

  function beginDrag(event) {
    const source = press.source;
    const shape = source.dataset.grip ? source.closest("[data-meld]") || source : source;
    const rect = shape.getBoundingClientRect();
    const ghost = shape.cloneNode(true);
    ghost.classList.add("ghost");
    ghost.removeAttribute("id");
    ghost.setAttribute("aria-hidden", "true");
    ghost.style.width = `${rect.width}px`;
    ghost.style.height = `${rect.height}px`;
    document.body.append(ghost);
    press.ghost = ghost;
    press.dx = press.x - rect.left;
    press.dy = press.y - rect.top;
    press.dragging = true;
    shape.classList.add("dragging");
    press.shape = shape;
    root.classList.add("is-dragging");
    moveGhost(event);
  }

  function moveGhost(event) {
    press.ghost.style.transform = `translate(${event.clientX - press.dx}px, ${event.clientY - press.dy}px)`;
  }

  function endPress() {
    if (!press) return;
    if (press.ghost) press.ghost.remove();
    if (press.shape) press.shape.classList.remove("dragging");
    if (press.over) press.over.classList.remove("drop-over");
    root.classList.remove("is-dragging");
    press = null;
    setTimeout(onIdle, 0);
  }

  function onPointerDown(event) {
    if (event.button !== 0 || press || held) return;
    const source = event.target.closest("[data-uid], [data-grip]");
    if (!source || !root.contains(source) || !canDrag(source)) return;
    press = { source, pointerId: event.pointerId, x: event.clientX, y: event.clientY, dragging: false };
  }

  function onPointerMove(event) {
    if (!press || event.pointerId !== press.pointerId) return;
    if (!press.dragging) {
      if (Math.hypot(event.clientX - press.x, event.clientY - press.y) < THRESHOLD) return;
      beginDrag(event);
    }
    event.preventDefault();
    moveGhost(event);
    setOver(targetAt(event.clientX, event.clientY));
  }

  function onPointerUp(event) {
    if (!press || event.pointerId !== press.pointerId) return;
    const { dragging, source } = press;
    const target = dragging ? targetAt(event.clientX, event.clientY) : null;
    endPress();
    if (!dragging) return;
    swallowClick = true;
    setTimeout(() => {
      swallowClick = false;
    }, 0);
    if (target) onDrop(source, target, { x: event.clientX, y: event.clientY });
  }

  function onPointerCancel(event) {
    if (press && event.pointerId === press.pointerId) endPress();
  }

  function onClickCapture(event) {
    if (swallowClick) {
      event.stopPropagation();
      event.preventDefault();
      swallowClick = false;
    }
  }

  // --- keyboard -----------------------------------------------------------------------------

  function keyboardTargets() {
    return [...root.querySelectorAll("[data-drop]:not([data-kbd-skip])")];
  }

  function showCursor() {
    held.targets.forEach((t) => t.classList.remove("drop-cursor"));
    const target = held.targets[held.index];
    if (!target) return;
    target.classList.add("drop-cursor");
    target.focus({ preventScroll: false });
    announce(`${target.getAttribute("aria-label") || "here"}`);
  }

  function pickUp(source) {
    const targets = keyboardTargets();
    const home = source.closest("[data-drop]");
    const start = Math.max(0, targets.indexOf(home));
    held = { source, targets, index: start };
    source.classList.add("held");
    root.classList.add("is-holding");
    announce(
      `Picked up ${describe(source)}. Arrow keys choose where it goes, Enter drops it, ` +
        "Escape puts it back.",
    );
    held.index = start;
    held.targets.forEach((t) => t.classList.remove("drop-cursor"));
    const target = held.targets[held.index];
    if (target) {
      target.classList.add("drop-cursor");
      target.focus();
    }
  }

  function putDown(drop) {
    const { source, targets, index } = held;
    targets.forEach((t) => t.classList.remove("drop-cursor"));
    source.classList.remove("held");
    root.classList.remove("is-holding");
    held = null;
    setTimeout(onIdle, 0);
    if (drop && targets[index]) onDrop(source, targets[index], null);
    else {
      announce(`${describe(source)} put back.`);
      if (source.isConnected) source.focus();
    }
  }

  function roving(event) {
    const item = event.target.closest("[data-uid], [data-grip]");
    if (!item || !root.contains(item)) return false;
    const row = item.closest("[data-roving]");
    if (!row) return false;
    const items = (el) => [...el.querySelectorAll("[data-uid], [data-grip]")];
    let next = null;
    if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
      const list = items(row);
      const at = list.indexOf(item) + (event.key === "ArrowLeft" ? -1 : 1);
      next = list[Math.max(0, Math.min(at, list.length - 1))];
    } else {
      const rows = [...root.querySelectorAll("[data-roving]")].filter((r) => items(r).length);
      const at = rows.indexOf(row) + (event.key === "ArrowUp" ? -1 : 1);
      const other = rows[at];
      if (other) {
        const list = items(other);
        next = list[Math.min(items(row).indexOf(item), list.length - 1)];
      }
    }
    if (next && next !== item) {
      item.tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
    }
    return true;
  }

  function onKeyDown(event) {
    const arrows = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown"];
    if (held) {
      if (arrows.includes(event.key)) {
        event.preventDefault();
        const step = event.key === "ArrowLeft" || event.key === "ArrowUp" ? -1 : 1;
        const count = held.targets.length;
        held.index = (held.index + step + count) % count;
        showCursor();
      } else if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        putDown(true);
      } else if (event.key === "Escape" || event.key === "Tab") {
        if (event.key === "Escape") event.preventDefault();
        putDown(false);
      }
      return;
    }
    const source = event.target.closest("[data-uid], [data-grip]");
    if ((event.key === "Enter" || event.key === " ") && source && root.contains(source)) {
      event.preventDefault();
      if (canDrag(source)) pickUp(source);
      else onDenied(source);
      return;
    }
    if (arrows.includes(event.key) && roving(event)) event.preventDefault();
  }

  root.addEventListener("pointerdown", onPointerDown);
  window.addEventListener("pointermove", onPointerMove, { passive: false });
  window.addEventListener("pointerup", onPointerUp);
  window.addEventListener("pointercancel", onPointerCancel);
  root.addEventListener("click", onClickCapture, true);
  root.addEventListener("keydown", onKeyDown);

  return {
    busy: () => Boolean(press || held),
    destroy() {
      endPress();
      root.removeEventListener("pointerdown", onPointerDown);
      window.removeEventListener("pointermove", onPointerMove);
      window.removeEventListener("pointerup", onPointerUp);
      window.removeEventListener("pointercancel", onPointerCancel);
      root.removeEventListener("click", onClickCapture, true);
      root.removeEventListener("keydown", onKeyDown);
    },
  };
}
