"""Which URLs `web_fetch` may reach: schemes, domain lists, host names and resolved addresses.

This module owns the server-side request forgery (SSRF) rules and name resolution. It decides
whether one URL may be fetched and returns the checked addresses to connect to; it does not
make requests (see `kode.builtin.web._fetch`, which connects only to the addresses returned here,
so DNS cannot change between the check and the connection).

The rules, applied to every URL and every redirect hop:

- only ``http`` and ``https``;
- the host must pass the domain deny list, then the allow list (when one is set);
- cloud metadata hosts (``metadata.google.internal``, ``instance-data``, ...) and addresses
  (``169.254.169.254``, ``fd00:ec2::254``, ...) are always refused, and so is every link-local
  address (``169.254.0.0/16``, ``fe80::/10``), where metadata and credential services live;
- unspecified (``0.0.0.0``, ``::``), multicast, IPv4-mapped (``::ffff:127.0.0.1``),
  IPv4-translated (``::ffff:0:7f00:1``) and IPv4-compatible (``::127.0.0.1``, ``::a9fe:a9fe``)
  IPv6 addresses are always refused; so is an IPv6 address embedding a refused IPv4 one
  (6to4, Teredo, NAT64 ``64:ff9b::/96`` and ``64:ff9b:1::/48``);
- unless private networks are allowed: ``localhost`` and names under ``.localhost``, ``.local``,
  ``.internal`` and ``.home.arpa`` are refused, and so is every loopback, private,
  carrier-grade NAT (``100.64.0.0/10``), unique-local IPv6 (``fc00::/7``), site-local IPv6
  (``fec0::/10``), reserved or other non-public address;
- a name is resolved and EVERY address it resolves to must pass: one bad address refuses it.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import anyio

from kode.tools.errors import ToolError, ToolErrorType

__all__ = [
    "METADATA_ADDRESSES",
    "METADATA_HOSTS",
    "PRIVATE_NAME_SUFFIXES",
    "IPAddress",
    "ResolveFunc",
    "URLTarget",
    "address_problem",
    "check_target",
    "domain_matches",
    "host_problem",
    "normalize_domain",
    "system_resolve",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
"""An IPv4 or IPv6 address."""

ResolveFunc = Callable[[str, int], Awaitable[Sequence[str]]]
"""Resolves a host name and port to the IP addresses to connect to (as strings)."""

METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
"""Host names of cloud metadata services: always refused, even with private networks allowed."""

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
        "169.254.170.2",  # AWS ECS task credentials
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure wire server
    )
)
"""Addresses of cloud metadata services: always refused, even with private networks allowed."""

PRIVATE_NAME_SUFFIXES = ("localhost", "local", "internal", "home.arpa")
"""Names that are local by definition: the name itself and every name under it is refused
unless private networks are allowed."""

_HINT = " It does not fetch from private, local or cloud metadata addresses."
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")


def normalize_domain(name: str) -> str:
    """A host name or domain pattern in its comparable form.

    Lower-cased, without a trailing dot, without a leading ``*.`` or ``.`` (a pattern always
    covers the domain and its subdomains).
    """
    name = name.strip().lower().rstrip(".")
    if name.startswith("*."):
        name = name[2:]
    return name.lstrip(".")


def domain_matches(host: str, domain: str) -> bool:
    """Whether `host` is `domain` or a subdomain of it (both normalised)."""
    return host == domain or host.endswith("." + domain)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or ip in _NAT64_LOCAL:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_problem(ip: IPAddress, *, allow_private: bool = False) -> str | None:
    """Why `ip` may not be fetched from, as a noun phrase, or `None` when it may.

    Args:
        ip: The address.
        allow_private: Allow loopback, private, CGNAT, unique-local and other non-public
            addresses (metadata, link-local, unspecified, multicast and IPv6 addresses that
            stand for an IPv4 one stay refused).
    """
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        ip = ipaddress.IPv6Address(int(ip))  # "fe80::1%eth0": the zone changes nothing here
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_link_local:
        return "a link-local address"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return "an IPv4-mapped IPv6 address"
        v4 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip in _IPV4_TRANSLATED:
            return f"an IPv4-translated IPv6 address (for {v4})"
        if ip in _IPV4_COMPATIBLE and int(ip) > 1:  # "::" and "::1" are themselves
            return f"an IPv4-compatible IPv6 address (for {v4})"
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            inner = address_problem(embedded, allow_private=allow_private)
            if inner is not None:
                return f"an IPv6 address embedding {embedded}, {inner}"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_multicast:
        return "a multicast address"
    if allow_private:
        return None
    if ip.is_loopback:
        return "a loopback address"
    if ip in _CGNAT:
        return "a carrier-grade NAT address (100.64.0.0/10)"
    if ip in _UNIQUE_LOCAL:
        return "a unique-local IPv6 address (fc00::/7)"
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:
        return "a site-local IPv6 address (fec0::/10)"
    if ip.is_private:
        return "a private address"
    if ip.is_reserved:
        return "a reserved address"
    if not ip.is_global:
        return "a non-public address"
    return None


def host_problem(host: str, *, allow_private: bool = False) -> str | None:
    """Why the host name `host` (normalised) may not be fetched from, or `None`."""
    if host in METADATA_HOSTS:
        return "a cloud metadata host"
    if not allow_private and any(domain_matches(host, s) for s in PRIVATE_NAME_SUFFIXES):
        return "a local network name"
    return None


async def system_resolve(host: str, port: int) -> list[str]:
    """Resolve `host` with the system resolver (``getaddrinfo``), without blocking the loop."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _show(ip: IPAddress) -> str:
    """`ip` as text, with an IPv4-mapped address in its readable form (``::ffff:127.0.0.1``)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return f"::ffff:{ip.ipv4_mapped}"
    return str(ip)


def _parse_ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


@dataclass(kw_only=True, frozen=True, slots=True)
class URLTarget:
    """A URL's host, checked: where `web_fetch` may connect for it."""

    host: str
    """The host as the URL names it, normalised (IDNA-encoded, lower case, no trailing dot)."""
    port: int
    """The port to connect to."""
    addresses: tuple[str, ...]
    """Every address the host resolved to, all checked, in the resolver's order."""
    is_ip: bool
    """Whether the URL names an IP address rather than a host name."""


def _refused(url: str, why: str, tool: str, **details: object) -> ToolError:
    hint = "" if details.get("reason") in ("denied_domain", "not_allowed") else _HINT
    return ToolError(
        f"{tool} refused {url}: {why}.{hint}",
        type=ToolErrorType.PERMISSION_DENIED,
        details={"url": url, **details},
    )


async def check_target(
    url: str,
    *,
    scheme: str,
    host: str,
    port: int,
    allowed_domains: Sequence[str] = (),
    denied_domains: Sequence[str] = (),
    allow_private: bool = False,
    resolve: ResolveFunc | None = None,
    tool: str = "web_fetch",
) -> URLTarget:
    """Check one URL (already split into parts) against every rule; return where to connect.

    Args:
        url: The whole URL, for messages.
        scheme: Its scheme, lower case.
        host: Its host: a name (IDNA-encoded) or an IP address without brackets.
        port: The port to connect to.
        allowed_domains: When not empty, only these domains (and their subdomains).
        denied_domains: Never these domains (and their subdomains); wins over `allowed_domains`.
        allow_private: Allow local names and non-public addresses (see `address_problem`).
        resolve: The resolver (default: `system_resolve`).
        tool: The tool named in messages (``web_fetch``, ``browser``).

    Raises:
        ToolError: ``invalid_tool_params`` for a scheme other than http(s) or a URL without a
            host; ``permission_denied`` for a refused domain, name or address; ``tool_error``
            when the name does not resolve.
    """
    if scheme not in ("http", "https"):
        raise ToolError(
            f"{tool} only fetches http:// and https:// URLs, not {scheme}:// ({url})."
            if scheme
            else f"{tool} needs an absolute http:// or https:// URL, got {url!r}.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
            details={"url": url, "reason": "scheme"},
        )
    name = normalize_domain(host)
    if not name:
        raise ToolError(
            f"The URL {url} has no host.",
            type=ToolErrorType.INVALID_TOOL_PARAMS,
            details={"url": url, "reason": "no_host"},
        )
    if any(domain_matches(name, normalize_domain(d)) for d in denied_domains):
        raise _refused(url, f"{name} is on the denied domain list", tool, reason="denied_domain")
    if allowed_domains and not any(
        domain_matches(name, normalize_domain(d)) for d in allowed_domains
    ):
        raise _refused(url, f"{name} is not on the allowed domain list", tool, reason="not_allowed")
    literal = _parse_ip(name)
    if literal is not None:
        problem = address_problem(literal, allow_private=allow_private)
        if problem is not None:
            shown = _show(literal)
            raise _refused(url, f"{shown} is {problem}", tool, reason="address", address=shown)
        return URLTarget(host=name, port=port, addresses=(str(literal),), is_ip=True)
    problem = host_problem(name, allow_private=allow_private)
    if problem is not None:
        raise _refused(url, f"{name} is {problem}", tool, reason="host")
    resolver = resolve if resolve is not None else system_resolve
    try:
        found = list(await resolver(name, port))
    except OSError as exc:
        raise ToolError(
            f"{tool} could not resolve {name}: {exc.strerror or exc}.",
            type=ToolErrorType.TOOL_ERROR,
            details={"url": url, "reason": "resolve"},
        ) from None
    if not found:
        raise ToolError(
            f"{tool} could not resolve {name}: no addresses.",
            type=ToolErrorType.TOOL_ERROR,
            details={"url": url, "reason": "resolve"},
        )
    for text in found:
        ip = _parse_ip(text)
        if ip is None:
            raise _refused(
                url, f"{name} resolved to {text!r}, not an IP address", tool, reason="address"
            )
        problem = address_problem(ip, allow_private=allow_private)
        if problem is not None:
            shown = _show(ip)
            raise _refused(
                url,
                f"{name} resolves to {shown}, {problem}",
                tool,
                reason="address",
                address=shown,
            )
    return URLTarget(host=name, port=port, addresses=tuple(found), is_ip=False)
