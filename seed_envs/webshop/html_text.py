"""Visible text nodes of an HTML page, read the way the benchmark reads pages.

The benchmark parses pages with BeautifulSoup's ``html.parser`` builder and keeps every text
node whose parent is not ``style``, ``script``, ``head``, ``title``, ``meta`` or the document,
and that is not a comment. The builder first turns each text made only of ASCII whitespace
into ``"\\n"`` (if it has a newline) or ``" "``, except inside ``pre`` and ``textarea``.
A node's role comes from its parent: ``button``, ``label``, or a link whose class is
exactly ``product-link``. This module does the same with the standard library's parser,
so the browser env can turn a page source into the text modes.
"""

from __future__ import annotations

from html.parser import HTMLParser

from seed_envs.webshop.render import Node, collapse_whitespace

HIDDEN_PARENTS = frozenset({"style", "script", "head", "title", "meta", "[document]"})
PRESERVE_WHITESPACE = frozenset({"pre", "textarea"})
VOID_ELEMENTS = frozenset(
    "area base br col embed hr img input link meta param source track wbr".split()  # noqa: SIM905
)


class _NodeCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, tuple[str, ...]]] = [("[document]", ())]
        self.pending: list[str] = []
        self.nodes: list[Node] = []

    def _flush(self) -> None:
        if not self.pending:
            return
        text = "".join(self.pending)
        self.pending = []
        if not any(tag in PRESERVE_WHITESPACE for tag, _ in self.stack):
            text = collapse_whitespace(text)
        parent, classes = self.stack[-1]
        if parent in HIDDEN_PARENTS:
            return
        if parent == "button":
            role = "button"
        elif parent == "label":
            role = "label"
        elif classes == ("product-link",):
            role = "link"
        else:
            role = "text"
        self.nodes.append((text, role))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._flush()
        if tag in VOID_ELEMENTS:
            return
        classes = next((tuple((value or "").split()) for name, value in attrs if name == "class"), ())
        self.stack.append((tag, classes))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._flush()

    def handle_endtag(self, tag: str) -> None:
        self._flush()
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth][0] == tag:
                del self.stack[depth:]
                break

    def handle_data(self, data: str) -> None:
        self.pending.append(data)

    def handle_comment(self, data: str) -> None:
        self._flush()

    def handle_decl(self, decl: str) -> None:
        self._flush()


def html_nodes(html: str) -> list[Node]:
    """The page's visible text nodes with their roles (``"\\n"`` nodes, which no mode shows, dropped)."""
    collector = _NodeCollector()
    collector.feed(html)
    collector.close()
    collector._flush()
    return [node for node in collector.nodes if node[0] != "\n"]
