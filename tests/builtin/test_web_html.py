"""Turning fetched bodies into text: HTML to markdown, charsets, what counts as text."""

from __future__ import annotations

from kode.builtin.web._html_to_text import _strip_noise, convert, decode, is_html, is_text

BASE = "https://site.example/docs/page"


def md(html: str, **options: str) -> str:
    converted = convert(
        html.encode(), media_type="text/html", charset="utf-8", base_url=BASE, format="markdown"
    )
    assert converted is not None
    return converted.text


def test_scripts_styles_and_comments_are_cut_like_a_browser_would() -> None:
    source = (
        'a<script>if (x < "</p>") {}</script>b<!-- <p>hidden</p> -->c'
        "<STYLE media=x>p { }</style >d<scripts>e"
    )
    assert _strip_noise(source) == "abcd<scripts>e"
    assert _strip_noise("text<script>never closed <p>more") == "text"


def test_the_main_element_is_preferred_and_links_are_absolute() -> None:
    html = (
        "<body><header>Site menu</header><main><h2>Install</h2>"
        '<p>See <a href="../guide#setup">the guide</a> or <a href="#top">top</a>.</p>'
        '<img src="/logo.png" alt="logo"></main><footer>(c)</footer></body>'
    )
    assert md(html) == (
        "## Install\n\nSee [the guide](https://site.example/guide#setup) or [top](#top).\n\n"
        "![logo](https://site.example/logo.png)"
    )


def test_a_single_article_is_preferred_and_otherwise_the_body() -> None:
    assert md("<body><nav>menu</nav><article><p>story</p></article></body>") == "story"
    two = md("<body><article><p>one</p></article><article><p>two</p></article></body>")
    assert two == "one\n\ntwo"


def test_tables_and_code_survive() -> None:
    html = (
        "<main><table><tr><th>name</th><th>kind</th></tr><tr><td>fs_read</td><td>read</td></tr>"
        "</table><pre><code>print('hi')</code></pre></main>"
    )
    text = md(html)
    assert "| name | kind |" in text and "| fs_read | read |" in text
    assert "```\nprint('hi')\n```" in text


def test_decoding() -> None:
    assert decode("é".encode("latin-1"), charset="iso-8859-1", html=False) == "é"
    assert decode("é".encode("cp1252"), charset="no-such-charset", html=False) == "\ufffd"
    assert decode(b"\xef\xbb\xbfhello", charset=None, html=False) == "hello"
    meta = b"<meta http-equiv='Content-Type' content='text/html; charset=windows-1252'>\x93q\x94"
    assert decode(meta, charset=None, html=True).endswith("\u201cq\u201d")


def test_what_is_html_and_what_is_text() -> None:
    assert is_html("", b"  <!DOCTYPE html><html>")
    assert not is_html("text/plain", b"<html>")
    assert is_text("application/vnd.api+json", b"{}")
    assert is_text("", b"plain words")
    assert not is_text("", b"\x00\x01binary")
    assert not is_text("application/pdf", b"%PDF")
    assert convert(b"\x00\x01", media_type="", charset=None, base_url=BASE, format="text") is None
