"""Who a request comes from, for the limits kept per client address.

The direct peer's address, unless the peer is a trusted proxy (``RUMMY_TRUSTED_PROXIES``): then
the right-most ``X-Forwarded-For`` address that is not itself a trusted proxy. Each proxy appends
the address it got the request from, so everything left of the first untrusted entry (reading
from the right) is the client's own say and could be anything; from an untrusted peer the header
is ignored altogether, or any client could pick the address it is counted under.

An IPv6 client counts by its /64 (one subscriber's network: its host part is free to change, so
per address a client could open a fresh bucket per request); an IPv4-mapped IPv6 address counts
as the IPv4 address it maps.
"""

from __future__ import annotations

import ipaddress

from aiohttp import web

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
UNKNOWN = "unknown"  # a peer without an IP address (a Unix socket): they share one bucket

# A request's counted address once worked out, with the proxies it was worked out for.
COUNTED = web.RequestKey[tuple[tuple[Network, ...], str]]("counted_address")


def trusted_networks(text: str) -> tuple[Network, ...]:
    """``RUMMY_TRUSTED_PROXIES`` (addresses or CIDRs, comma-separated) as networks;
    ``ValueError`` naming an entry that is neither."""
    networks: list[Network] = []
    for part in text.split(","):
        entry = part.strip()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(
                f"RUMMY_TRUSTED_PROXIES: {entry!r} is not an IP address or CIDR (e.g. 10.0.0.0/8)"
            ) from None
    return tuple(networks)


def _parse(text: str) -> Address | None:
    """An address as a forwarding header or a peer gives it (maybe with a port), or None."""
    text = text.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _subject(address: Address) -> str:
    """What the limits count an address under."""
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network(f"{address}/64", strict=False))
    return str(address)


def _trusted(address: Address, trusted: tuple[Network, ...]) -> bool:
    return any(address in network for network in trusted)


def client_address(request: web.BaseRequest, trusted: tuple[Network, ...]) -> str:
    """The client address a request counts under (see the module's docstring)."""
    peer = _parse(request.remote or "")
    if peer is None:
        return UNKNOWN
    if not _trusted(peer, trusted):
        return _subject(peer)
    hops = ",".join(request.headers.getall("X-Forwarded-For", [])).split(",")
    nearest = peer  # the closest trusted hop so far
    for entry in reversed(hops):
        if not entry.strip():
            continue
        address = _parse(entry)
        if address is None:  # a trusted hop passed on garbage: count the hop that did
            break
        if not _trusted(address, trusted):
            return _subject(address)
        nearest = address
    return _subject(nearest)


def counted_address(request: web.BaseRequest, trusted: tuple[Network, ...]) -> str:
    """``client_address``, worked out once per request: the limits, the refusal's hold and the
    socket count all ask for it, and the forwarding header is parsed once."""
    known: tuple[tuple[Network, ...], str] | None = request.get(COUNTED)
    if known is not None and known[0] == trusted:
        return known[1]
    address = client_address(request, trusted)
    request[COUNTED] = (trusted, address)
    return address
