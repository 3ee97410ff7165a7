"""A site's hosting provider, guessed from its address: where takedowns are escalated.

:func:`provider_of` resolves the site's host (under :mod:`matcher.outbound`'s resolver and a
deadline), then names the provider by the reverse-DNS name of its first address, reduced to
the registered domain (``ec2-1-2-3-4.compute.amazonaws.com`` -> ``amazonaws.com``,
``x.bj.aliyun.com.cn`` -> ``aliyun.com.cn``); an address without one is named by its
network (``203.0.113.0/24``); loopback and private addresses say so. A guess: the team
edits it (``fptrack takedowns contact SITE --provider NAME``, the admin), and an edited
provider is never replaced. Once an RDAP lookup (:mod:`matcher.sites.hosting`) names the
owner of the site's network, that owner replaces the guess.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from urllib.parse import urlsplit

from matcher import outbound

DEADLINE_SECONDS = 5.0
"""How long resolving a site's host and its address's name may take."""
SECOND_LEVEL = frozenset({"com", "net", "org", "gov", "edu", "co", "ac", "ne", "or"})
"""Labels under which a country's registrations sit (``aliyun.com.cn``, ``example.co.jp``)."""
UNKNOWN = "unknown"


def registered_domain(name: str) -> str:
    """The registered domain of a host name (the last two labels, three under a country's
    second level such as ``com.cn``).

    >>> registered_domain("ec2-1-2-3-4.compute-1.amazonaws.com.")
    'amazonaws.com'
    >>> registered_domain("host.bj.aliyun.com.cn")
    'aliyun.com.cn'
    """
    labels = [x for x in name.lower().rstrip(".").split(".") if x]
    keep = 3 if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in SECOND_LEVEL else 2
    return ".".join(labels[-keep:])


def provider_of(url: str, deadline: float = DEADLINE_SECONDS) -> str:
    """The provider guessed for the site at ``url`` (see the module docstring)."""
    host = urlsplit(url).hostname or ""
    if not host:
        return UNKNOWN
    try:
        found = outbound.resolve(host, 80, allow_private=True, deadline=deadline)
    except (outbound.OutboundError, TimeoutError, OSError):
        return UNKNOWN
    if not found:
        return UNKNOWN
    address = ipaddress.ip_address(found[0][1][0])
    if address.is_loopback:
        return "loopback (this machine)"
    if address.is_private:
        return f"private network {ipaddress.ip_network(f'{address}/24', strict=False)}"
    name = _reverse(str(address), deadline)
    if name:
        return registered_domain(name)
    prefix = 24 if address.version == 4 else 48
    return f"{ipaddress.ip_network(f'{address}/{prefix}', strict=False)} network"


def _reverse(address: str, deadline: float) -> str:
    """The reverse-DNS name of ``address`` ("" when none answers within ``deadline``)."""
    answer: list[str] = []

    def ask() -> None:
        with contextlib.suppress(OSError):
            answer.append(socket.gethostbyaddr(address)[0])

    worker = threading.Thread(target=ask, daemon=True)
    worker.start()
    worker.join(deadline)
    return answer[0] if answer else ""
