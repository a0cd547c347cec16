"""web_fetch's address rules, with a resolver returning chosen addresses (nothing is fetched)."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from kode import ToolContext
from kode.builtin._shared._ssrf import (
    address_problem,
    check_target,
    domain_matches,
    normalize_domain,
)
from kode.builtin.web import WebConfig, web_fetch
from kode.tools.errors import ToolError, ToolErrorType

pytestmark = pytest.mark.anyio


class Resolver:
    """Answers from a table and records each question."""

    def __init__(self, table: dict[str, list[str]] | None = None) -> None:
        self.table = table or {}
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append((host, port))
        if host not in self.table:
            raise OSError(f"unknown host {host}")
        return self.table[host]


def context(resolver: Resolver, **options: Any) -> ToolContext[None]:
    return ToolContext(services={"web": WebConfig(resolver=resolver, timeout=5, **options)})


async def fetch(url: str, resolver: Resolver, **options: Any) -> Any:
    return await web_fetch.run({"url": url}, context(resolver, **options))


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.8.9.10", "a loopback address"),
        ("10.0.0.5", "a private address"),
        ("172.16.3.4", "a private address"),
        ("192.168.1.1", "a private address"),
        ("169.254.10.20", "a link-local address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("100.64.0.1", "a carrier-grade NAT address (100.64.0.0/10)"),
        ("100.127.255.254", "a carrier-grade NAT address (100.64.0.0/10)"),
        ("0.0.0.0", "the unspecified address"),
        ("224.0.0.251", "a multicast address"),
        ("::1", "a loopback address"),
        ("::", "the unspecified address"),
        ("fe80::1", "a link-local address"),
        ("fc00::1", "a unique-local IPv6 address (fc00::/7)"),
        ("fd12:3456::1", "a unique-local IPv6 address (fc00::/7)"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("::ffff:127.0.0.1", "an IPv4-mapped IPv6 address"),
        ("::ffff:169.254.169.254", "an IPv4-mapped IPv6 address"),
        ("2002:a00:1::", "an IPv6 address embedding 10.0.0.1, a private address"),
        ("64:ff9b::7f00:1", "an IPv6 address embedding 127.0.0.1, a loopback address"),
        ("64:ff9b:1::a00:1", "an IPv6 address embedding 10.0.0.1, a private address"),
        ("::a9fe:a9fe", "an IPv4-compatible IPv6 address (for 169.254.169.254)"),
        ("::7f00:1", "an IPv4-compatible IPv6 address (for 127.0.0.1)"),
        ("::ffff:0:a9fe:a9fe", "an IPv4-translated IPv6 address (for 169.254.169.254)"),
        ("febf::1", "a link-local address"),
        ("fec0::1", "a site-local IPv6 address (fec0::/10)"),
        ("ff02::1", "a multicast address"),
    ],
)
async def test_a_name_resolving_to_a_blocked_address_is_refused(address: str, problem: str) -> None:
    resolver = Resolver({"example.test": [address]})
    result = await fetch("http://example.test/page", resolver)
    assert result.is_error and result.error_type is ToolErrorType.PERMISSION_DENIED
    assert result.text == (
        f"web_fetch refused http://example.test/page: example.test resolves to {address}, "
        f"{problem}. It does not fetch from private, local or cloud metadata addresses."
    )
    assert result.details == {
        "url": "http://example.test/page",
        "reason": "address",
        "address": address,
    }
    assert resolver.calls == [("example.test", 80)]


@pytest.mark.parametrize(
    "addresses",
    [
        ["93.184.216.34", "10.0.0.1"],
        ["10.0.0.1", "93.184.216.34"],
        ["2606:2800:220:1::1", "::ffff:127.0.0.1"],
    ],
)
async def test_a_name_with_one_public_and_one_private_address_is_refused(
    addresses: list[str],
) -> None:
    resolver = Resolver({"mixed.test": addresses})
    result = await fetch("https://mixed.test/", resolver)
    assert result.is_error and result.error_type is ToolErrorType.PERMISSION_DENIED
    bad = next(a for a in addresses if a.startswith(("10.", "::ffff")))
    assert f"mixed.test resolves to {bad}" in result.text
    assert resolver.calls == [("mixed.test", 443)]


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
        ("http://[::1]:8080/", "::1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1 is an IPv4-mapped IPv6 address"),
        ("http://[::ffff:7f00:1]/", "::ffff:127.0.0.1 is an IPv4-mapped IPv6 address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata"),
        ("http://100.64.1.2/", "100.64.1.2 is a carrier-grade NAT address"),
        ("http://0.0.0.0:8000/", "0.0.0.0 is the unspecified address"),
        ("http://[fd00::1]/", "fd00::1 is a unique-local IPv6 address"),
        ("http://localhost:3000/", "localhost is a local network name"),
        ("http://LocalHost./", "localhost is a local network name"),
        ("http://app.localhost/", "app.localhost is a local network name"),
        ("http://printer.local/", "printer.local is a local network name"),
        ("http://db.internal/", "db.internal is a local network name"),
        ("http://router.home.arpa/", "router.home.arpa is a local network name"),
        ("http://metadata.google.internal/computeMetadata/v1/", "is a cloud metadata host"),
        ("http://metadata/", "metadata is a cloud metadata host"),
    ],
)
async def test_blocked_literals_and_names_are_refused_without_resolving(
    url: str, problem: str
) -> None:
    resolver = Resolver()
    result = await fetch(url, resolver)
    assert result.is_error and result.error_type is ToolErrorType.PERMISSION_DENIED
    assert result.text.startswith(f"web_fetch refused {url}: ")
    assert problem in result.text
    assert resolver.calls == []


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://metadata.google.internal/",
        "http://[fd00:ec2::254]/",
        "http://[::ffff:10.0.0.1]/",
        "http://0.0.0.0/",
        "http://[::a9fe:a9fe]/",  # IPv4-compatible form of the metadata address
        "http://[::169.254.169.254]/",
        "http://[::127.0.0.1]/",
        "http://[::ffff:0:a9fe:a9fe]/",  # IPv4-translated form
        "http://[64:ff9b:1::a9fe:a9fe]/",  # local-use NAT64
        "http://[fe80::1]/",
        "http://[fe80::a9fe:a9fe%25eth0]/",
        "http://[febf:ffff::1]/",
        "http://169.254.170.23/",  # link-local: EKS pod identity, not on the metadata list
        "http://compat.test/",  # resolves to ::a9fe:a9fe
        "http://linklocal.test/",  # resolves to fe80::1
        "http://aliased.test/",  # resolves to the metadata address
    ],
)
async def test_metadata_and_mapped_addresses_stay_refused_with_private_networks_allowed(
    url: str,
) -> None:
    resolver = Resolver(
        {
            "aliased.test": ["10.0.0.8", "169.254.169.254"],
            "compat.test": ["::a9fe:a9fe"],
            "linklocal.test": ["fe80::1"],
        }
    )
    result = await fetch(url, resolver, allow_private_networks=True)
    assert result.is_error and result.error_type is ToolErrorType.PERMISSION_DENIED
    assert result.text.startswith(f"web_fetch refused {url}: ")


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/file.txt",
        "gopher://example.com/",
        "javascript:alert(1)",
        "data:text/plain,hello",
        "ws://example.com/socket",
        "example.com/page",
    ],
)
async def test_only_http_and_https_are_fetched(url: str) -> None:
    resolver = Resolver()
    result = await fetch(url, resolver)
    assert result.is_error and result.error_type is ToolErrorType.INVALID_TOOL_PARAMS
    assert "http://" in result.text and "https://" in result.text
    assert resolver.calls == []


async def test_a_name_that_does_not_resolve_is_a_clear_error() -> None:
    result = await fetch("http://nowhere.test/", Resolver())
    assert result.is_error
    assert result.text == "web_fetch could not resolve nowhere.test: unknown host nowhere.test."


async def test_an_empty_answer_is_an_error() -> None:
    result = await fetch("http://empty.test/", Resolver({"empty.test": []}))
    assert result.text == "web_fetch could not resolve empty.test: no addresses."


async def test_a_public_name_is_checked_and_its_addresses_kept_for_the_connection() -> None:
    resolver = Resolver({"docs.example.com": ["93.184.216.34", "2606:2800:220:1::1"]})
    target = await check_target(
        "https://docs.example.com/",
        scheme="https",
        host="docs.example.com",
        port=443,
        allowed_domains=["example.com"],
        resolve=resolver,
    )
    assert target.addresses == ("93.184.216.34", "2606:2800:220:1::1")
    assert target.host == "docs.example.com" and not target.is_ip


@pytest.mark.parametrize(
    ("host", "allowed", "denied", "refusal"),
    [
        ("evil.test", ["example.com"], [], "evil.test is not on the allowed domain list"),
        ("notexample.com", ["example.com"], [], "is not on the allowed domain list"),
        ("ads.example.com", ["example.com"], ["ads.example.com"], "is on the denied domain list"),
        ("example.com", [], ["*.example.com"], "example.com is on the denied domain list"),
        ("93.184.216.34", ["example.com"], [], "is not on the allowed domain list"),
    ],
)
async def test_domain_lists(host: str, allowed: list[str], denied: list[str], refusal: str) -> None:
    with pytest.raises(ToolError) as caught:
        await check_target(
            f"http://{host}/",
            scheme="http",
            host=host,
            port=80,
            allowed_domains=allowed,
            denied_domains=denied,
            resolve=Resolver({host: ["93.184.216.34"]}),
        )
    assert caught.value.type is ToolErrorType.PERMISSION_DENIED
    assert refusal in caught.value.message
    assert "metadata" not in caught.value.message  # a list refusal is not an address refusal


def test_domain_matching() -> None:
    assert normalize_domain(" *.Example.COM. ") == "example.com"
    assert domain_matches("example.com", "example.com")
    assert domain_matches("a.b.example.com", "example.com")
    assert not domain_matches("badexample.com", "example.com")


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "2001:4860:4860::8888"]
)
def test_public_addresses_pass(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.1.1", "100.64.0.1", "fc00::1", "fec0::1"])
def test_private_networks_can_be_allowed(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert address_problem(ip) is not None
    assert address_problem(ip, allow_private=True) is None


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("fe80::1%eth0", "a link-local address"),
        ("169.254.1.1", "a link-local address"),
        ("::a9fe:a9fe", "an IPv4-compatible IPv6 address (for 169.254.169.254)"),
        ("::8.8.8.8", "an IPv4-compatible IPv6 address (for 8.8.8.8)"),
        ("::ffff:0:808:808", "an IPv4-translated IPv6 address (for 8.8.8.8)"),
    ],
)
def test_link_local_and_ipv4_in_ipv6_forms_stay_refused_with_private_networks_allowed(
    address: str, problem: str
) -> None:
    # Link-local is where metadata and credential services answer (169.254.170.23 and others
    # not on the metadata list); an old IPv4-in-IPv6 form is never a page worth fetching.
    ip = ipaddress.ip_address(address)
    assert address_problem(ip) == problem
    assert address_problem(ip, allow_private=True) == problem


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1", "017700000001"])
async def test_odd_spellings_of_loopback_are_caught_by_resolving_them(host: str) -> None:
    # No resolver injected: the system's getaddrinfo reads these numeric forms (no DNS query),
    # and the address it returns is what is checked.
    result = await web_fetch.run({"url": f"http://{host}/"}, ToolContext())
    assert result.is_error and result.error_type is ToolErrorType.PERMISSION_DENIED
    assert f"{host} resolves to 127.0.0.1, a loopback address" in result.text
