"""The audit of one game's log: one verdict per check, each naming the first bad event.

Pure functions over a list of :class:`StoredEvent` (as read from a store, or parsed from a record)
and the receipts players kept; no I/O. The checks:

``chain``
    every hash recomputes from its envelope and links to its predecessor, versions contiguous
    from 1 (``shared.infra.chain.verify_chain``).
``head``
    the head the store (or the record's last line) claims is the chain's last event.
``header`` (records only)
    the record's header (rules, options, players, commitment, seed) says what the events say.
``receipts``
    each ``VERSION:HASH`` a player kept (the ``version`` and ``head`` of a view or a command
    answer) is still in the chain, and the chain up to it holds. A log rewritten with a
    consistently recomputed chain passes every other check but this one.
``replay``
    every command the log records is decided again by the rules engine (``decide``) on the
    state the events before it fold to, at its recorded time, and makes exactly the events
    recorded for it: plays re-judged with the same table, rejected attempts still illegal, draws
    of the top of the stock (or the pile), penalty draws after rejected attempts, passes only
    when nothing can be drawn (the pile's reshuffle limit included), timeouts after the deadline,
    deals to the seats and dealer due, round ends that state the facts. The shuffle's outcomes
    are taken from the log (``dealing.RecordedShuffle``), so this holds for a live game too.
``seed``
    once ``SeedRevealed`` is in the log, the seed hashes to ``GameCreated.commitment`` and every
    command decided again with it (``rr-shuffle-v1`` and the players' seeds) makes the recorded
    ``StarterChosen``, ``RoundDealt`` and ``StockReshuffled``; before the reveal the verdict is
    "not yet revealed" (no failure).
``scores``
    every ``ScoresRecorded`` is the pure score sheet of its round (``decide.round_sheet``),
    ``MatchEnded`` is the engine's match result of the sheets, and no round is dealt after the
    match was over.

The last three come from one walk over the events (``shared.audit.facts``).
"""

from __future__ import annotations

from collections.abc import Sequence

from shared.audit.facts import walk
from shared.audit.record import GameRecord, Header, RecordError, header_of
from shared.audit.verdicts import CHECKS, Audit, Receipt, Status, Verdict, short
from shared.infra.chain import compute_hash, verify_chain
from shared.infra.stored import GENESIS_HASH, StoredEvent

__all__ = [
    "CHECKS",
    "Audit",
    "Receipt",
    "Status",
    "Verdict",
    "audit_log",
    "audit_record",
    "check_chain",
    "check_head",
    "check_header",
    "check_receipts",
]


def _why_broken(events: Sequence[StoredEvent], index: int, game_id: str) -> tuple[int, str]:
    """The version to name and the reason ``verify_chain`` stopped at ``index``."""
    event = events[index].stored_form()
    expected = index + 1
    prev = events[index - 1].stored_form().hash if index else GENESIS_HASH
    if event.game_id != game_id:
        return expected, (
            f"the event at position {expected} belongs to game {event.game_id!r}, not {game_id!r}"
        )
    if event.version != expected:
        if event.version > expected:
            return expected, (
                f"version {expected} is missing: the event after version {expected - 1} is "
                f"version {event.version} (an event was removed, or events were reordered)"
            )
        return expected, (
            f"position {expected} holds version {event.version}: events were reordered or repeated"
        )
    if event.prev_hash != prev:
        if index == 0:
            return expected, (
                f"version 1 does not start the chain: its prev_hash is {short(event.prev_hash)}"
                f", not the genesis {short(GENESIS_HASH)}"
            )
        return expected, (
            f"version {expected} does not link to version {expected - 1}: its prev_hash is "
            f"{short(event.prev_hash)}, but version {expected - 1} hashes to {short(prev)} "
            f"(version {expected - 1} or {expected} was changed and re-hashed, or events were "
            "removed or reordered)"
        )
    if events[index].hash != event.hash or events[index].prev_hash != event.prev_hash:
        return expected, f"version {expected}'s upcast form disagrees with its stored form"
    try:
        digest = compute_hash(event.hashed_fields())
    except ValueError as err:
        return expected, f"version {expected} holds a value with no canonical encoding: {err}"
    return expected, (
        f"version {expected} ({event.type}) does not hash to its recorded hash "
        f"{short(event.hash)} but to {short(digest)}: its content was changed after it was "
        "appended"
    )


def check_chain(
    events: Sequence[StoredEvent], game_id: str, defects: Sequence[tuple[int, str]] = ()
) -> Verdict:
    """Verdict ``chain``; ``defects`` are (version, why) of entries a reader could not decode."""
    found: list[tuple[int, str]] = list(defects)
    index = verify_chain(events, game_id=game_id)
    if index is not None:
        found.append(_why_broken(events, index, game_id))
    if found:
        version, why = min(found, key=lambda f: f[0])
        return Verdict("chain", "failed", why, version)
    if not events:
        return Verdict("chain", "failed", "the log holds no events", 1)
    return Verdict(
        "chain",
        "ok",
        f"{len(events)} events: every hash recomputes and links to its predecessor, versions "
        f"1 to {len(events)}",
    )


def check_head(
    events: Sequence[StoredEvent], head: tuple[int, str] | None, what: str = "the store's head"
) -> Verdict:
    """Verdict ``head``: ``head`` (the store's, or the record's last line) is the last event."""
    if head is None:
        return Verdict("head", "skipped", f"{what} is unknown")
    last = events[-1].stored_form() if events else None
    last_version, last_hash = (last.version, last.hash) if last else (0, GENESIS_HASH)
    version, digest = head
    if (version, digest) == (last_version, last_hash):
        return Verdict(
            "head", "ok", f"{what} {version}:{short(digest)} is the last event of the chain"
        )
    if version > last_version:
        return Verdict(
            "head",
            "failed",
            f"{what} is version {version}, but the log ends at version {last_version}: "
            f"version {last_version + 1} onwards was removed",
            last_version + 1,
        )
    if version < last_version:
        return Verdict(
            "head",
            "failed",
            f"{what} is version {version}, but the log goes on to version {last_version}: "
            f"versions {version + 1}-{last_version} were not appended through the store",
            version + 1,
        )
    return Verdict(
        "head",
        "failed",
        f"{what} names hash {short(digest)} for version {version}, but that event hashes "
        f"to {short(last_hash)}: the last event was replaced",
        version,
    )


def check_receipts(
    events: Sequence[StoredEvent], receipts: Sequence[Receipt], chain_break: int | None
) -> Verdict:
    """Verdict ``receipts``: each receipt's event is in the chain with that hash, and the chain
    holds up to it (``chain_break`` is the first version where it does not, if any)."""
    if not receipts:
        return Verdict("receipts", "skipped", "no receipt given")
    by_version = {e.version: e for e in events}
    holding: list[Receipt] = []
    for receipt in sorted(set(receipts), key=lambda r: r.version):
        event = by_version.get(receipt.version)
        if event is None:
            last = events[-1].version if events else 0
            why = (
                f"receipt {receipt.version}:{short(receipt.hash)} is not in the chain: the log "
                f"ends at version {last}, so events up to version {receipt.version} were removed"
            )
        elif event.hash != receipt.hash:
            why = (
                f"receipt {receipt.version}:{short(receipt.hash)} is not in the chain: version "
                f"{receipt.version} now hashes to {short(event.hash)}, so the history up to it "
                "was rewritten"
            )
        elif chain_break is not None and chain_break <= receipt.version:
            why = (
                f"receipt {receipt.version}:{short(receipt.hash)} names an event still in the "
                f"log, but the chain breaks at version {chain_break}, before it: the history it "
                "pins was changed"
            )
            return Verdict("receipts", "failed", why, chain_break)
        else:
            holding.append(receipt)
            continue
        if holding:
            why += (
                f" after version {holding[-1].version}, whose receipt still holds (the change is"
                f" in versions {holding[-1].version + 1}-{receipt.version})"
            )
        else:
            why += f" (at or before version {receipt.version})"
        return Verdict("receipts", "failed", why, receipt.version)
    listed = ", ".join(str(r.version) for r in holding)
    return Verdict("receipts", "ok", f"{len(holding)} receipt(s) in the chain (versions {listed})")


# --- the audit ---------------------------------------------------------------------------------


def audit_log(
    events: Sequence[StoredEvent],
    *,
    game_id: str | None = None,
    head: tuple[int, str] | None = None,
    receipts: Sequence[Receipt] = (),
    defects: Sequence[tuple[int, str]] = (),
    head_label: str = "the store's head",
) -> Audit:
    """Every check on one game's log. ``head`` is what the store (or the record) claims as the
    chain head; ``defects`` are (version, why) of stored entries that could not be decoded."""
    gid = game_id if game_id is not None else (events[0].game_id if events else "")
    chain = check_chain(events, gid, defects)
    head_verdict = check_head(events, head, head_label)
    receipts_verdict = check_receipts(events, receipts, chain.version if chain.failed else None)
    replay, seed, scores = walk(gid, events)
    verdicts = (chain, head_verdict, receipts_verdict, replay, seed, scores)
    return Audit(gid, len(events), head, verdicts)


def check_header(header: Header, events: Sequence[StoredEvent]) -> Verdict:
    """Verdict ``header`` of a record: its header says what the events say."""
    try:
        implied = header_of(events, header.exported)
    except RecordError as err:
        return Verdict("header", "failed", str(err), 1)
    for name in ("rules", "options", "commitment"):
        if getattr(header, name) != getattr(implied, name):
            return Verdict(
                "header",
                "failed",
                f"the header's {name} {getattr(header, name)!r} is not the "
                f"{getattr(implied, name)!r} of GameCreated (version 1)",
                1,
            )
    if tuple(header.players) != implied.players:
        seated = [e.version for e in events if e.type == "PlayerSeated"]
        for i, version in enumerate(seated):
            if i >= len(header.players) or header.players[i] != implied.players[i]:
                return Verdict(
                    "header",
                    "failed",
                    f"the header's players {list(header.players)} are not the seated "
                    f"{list(implied.players)}: seat {i} sat down as {implied.players[i]!r} at "
                    f"version {version}",
                    version,
                )
        return Verdict(
            "header",
            "failed",
            f"the header names {len(header.players)} players; {len(seated)} were seated",
            None,
        )
    if header.seed != implied.seed:
        revealed = [e.version for e in events if e.type == "SeedRevealed"]
        where = f"at version {revealed[-1]}" if revealed else "(the log reveals none)"
        return Verdict(
            "header",
            "failed",
            f"the header's seed {header.seed!r} is not the seed revealed {where}: {implied.seed!r}",
            revealed[-1] if revealed else None,
        )
    return Verdict("header", "ok", "the header agrees with the events")


def audit_record(record: GameRecord, receipts: Sequence[Receipt] = ()) -> Audit:
    """Every check on a game record, with the header's agreement with its events (after
    ``head``)."""
    audit = audit_log(
        record.events,
        game_id=record.game_id,
        head=record.head,
        receipts=receipts,
        head_label="the record's head line",
    )
    header = check_header(record.header, record.events)
    verdicts = (*audit.verdicts[:2], header, *audit.verdicts[2:])
    return Audit(audit.game_id, audit.events, audit.head, verdicts)
