"""Turning a fetched body into text a model reads: HTML to markdown or plain text, charsets.

This module owns the conversion of `web_fetch`'s bodies. HTML goes through BeautifulSoup and
markdownify (``kode-sdk[web]``): scripts, styles and other non-content elements are dropped, the
page's ``<main>`` (or its only ``<article>``) is preferred to the whole body, and links are made
absolute so the model can fetch them next. It does not fetch anything.
"""

from __future__ import annotations

import codecs
import functools
import importlib.util
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

__all__ = [
    "Converted",
    "TextFormat",
    "convert",
    "convert_html",
    "decode",
    "is_html",
    "is_text",
    "media_type_of",
]

TextFormat = Literal["markdown", "text", "raw"]
"""What `web_fetch` returns for HTML: markdown, plain text, or the HTML itself."""

# Cut before parsing: modern pages carry megabytes of inline script and style, which the parser
# would otherwise build trees for only to drop them. These are raw-text elements: as in a
# browser, one ends at its first closing tag, and one never closed runs to the end of the page.
_NOISE_OPEN = re.compile(r"<(script|style)\b|<!--", re.I)
_NOISE_CLOSE = {
    "script": re.compile(r"</script\s*>", re.I),
    "style": re.compile(r"</style\s*>", re.I),
}
_COMMENT_CLOSE = re.compile(r"-->")
_DROP = ("script", "style", "noscript", "template", "svg", "iframe", "canvas", "object", "embed")
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")
_TRAILING_SPACE = re.compile(r"[ \t]+\n")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
_TEXT_TYPES = (
    "application/json",
    "application/ld+json",
    "application/xml",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
    "application/x-sh",
    "application/sql",
    "application/graphql",
    "image/svg+xml",
)


@dataclass(kw_only=True, frozen=True, slots=True)
class Converted:
    """A body as text."""

    text: str
    """The text shown to the model."""
    title: str | None = None
    """The HTML page's ``<title>``, if any."""


def media_type_of(content_type: str | None) -> str:
    """``"text/html"`` from ``"text/html; charset=utf-8"`` (empty when unknown)."""
    return (content_type or "").split(";")[0].strip().lower()


def is_html(media_type: str, body: bytes) -> bool:
    """Whether a body of this media type (possibly unknown) is HTML."""
    if media_type in ("text/html", "application/xhtml+xml"):
        return True
    if media_type:
        return False
    head = body[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<html" in head


def is_text(media_type: str, body: bytes) -> bool:
    """Whether a body of this media type (possibly unknown) can be shown as text."""
    if media_type.startswith("text/") or media_type in _TEXT_TYPES:
        return True
    if media_type.endswith(("+json", "+xml")):
        return True
    if media_type and media_type not in ("application/octet-stream", "binary/octet-stream"):
        return False
    return b"\x00" not in body[:8192]


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode(body: bytes, *, charset: str | None, html: bool) -> str:
    """`body` as text: the header's charset, else an HTML ``<meta charset>``, else UTF-8."""
    encoding = _codec(charset)
    if encoding is None and html:
        found = _META_CHARSET.search(body[:4096])
        encoding = _codec(found.group(1).decode("ascii")) if found else None
    if body.startswith(codecs.BOM_UTF8):
        encoding, body = "utf-8", body[len(codecs.BOM_UTF8) :]
    return body.decode(encoding or "utf-8", errors="replace")


def _tidy(text: str) -> str:
    text = _TRAILING_SPACE.sub("\n", text.replace("\r\n", "\n"))
    return _BLANK_LINES.sub("\n\n", text).strip()


def _content_root(soup: BeautifulSoup) -> Tag:
    main = soup.find("main")
    if isinstance(main, Tag) and main.get_text(strip=True):
        return main
    articles = [a for a in soup.find_all("article") if isinstance(a, Tag)]
    if len(articles) == 1 and articles[0].get_text(strip=True):
        return articles[0]
    body = soup.find("body")
    return body if isinstance(body, Tag) else soup


def _absolutize(root: Tag, base_url: str) -> None:
    for tag in root.find_all(["a", "img"]):
        if not isinstance(tag, Tag):
            continue
        attr = "href" if tag.name == "a" else "src"
        value = tag.get(attr)
        if not isinstance(value, str):
            continue
        if tag.name == "img" and value.startswith("data:"):
            tag.decompose()  # inline image bytes are noise to a model
        elif not value.startswith(("#", "javascript:", "mailto:", "data:")):
            tag[attr] = urljoin(base_url, value)


def _strip_noise(source: str) -> str:
    """`source` without its comments, scripts and styles."""
    kept: list[str] = []
    pos = 0
    for opening in _NOISE_OPEN.finditer(source):
        if opening.start() < pos:
            continue  # inside what was just cut
        kept.append(source[pos : opening.start()])
        name = opening.group(1)
        closer = _COMMENT_CLOSE if name is None else _NOISE_CLOSE[name.lower()]
        closing = closer.search(source, opening.end())
        if closing is None:
            return "".join(kept)
        pos = closing.end()
    kept.append(source[pos:])
    return "".join(kept)


@functools.cache
def _parser() -> str:
    """The lxml parser when it is installed (several times faster), else Python's own."""
    return "lxml" if importlib.util.find_spec("lxml") is not None else "html.parser"


def convert_html(source: str, *, base_url: str, format: TextFormat) -> Converted:
    """An HTML page as markdown, plain text, or (``raw``) the HTML itself."""
    soup = BeautifulSoup(source, _parser())
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if isinstance(title_tag, Tag) else None
    if format == "raw":
        return Converted(text=source, title=title or None)
    for tag in soup.find_all(_DROP):
        if isinstance(tag, Tag) and not tag.decomposed:
            tag.decompose()
    root = _content_root(soup)
    if format == "text":
        return Converted(text=_tidy(root.get_text("\n")), title=title or None)
    _absolutize(root, base_url)
    # The reader is a model, not a renderer: backslashes before every _ and * are only noise.
    converter = MarkdownConverter(
        heading_style="ATX",
        bullets="-",
        escape_misc=False,
        escape_underscores=False,
        escape_asterisks=False,
    )
    return Converted(text=_tidy(converter.convert_soup(root)), title=title or None)


def convert(
    body: bytes, *, media_type: str, charset: str | None, base_url: str, format: TextFormat
) -> Converted | None:
    """A body as text for the model, or `None` when it is not text (an image, a PDF, ...)."""
    if is_html(media_type, body):
        source = decode(body, charset=charset, html=True)
        if format != "raw":
            source = _strip_noise(source)
        return convert_html(source, base_url=base_url, format=format)
    if is_text(media_type, body):
        text = decode(body, charset=charset, html=False)
        return Converted(text=text if format == "raw" else _tidy(text))
    return None
