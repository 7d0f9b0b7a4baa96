"""A small SVG document builder over ``xml.etree``: the pictures are built as elements, never as
pasted strings, so every name a player typed is escaped and the output is always well-formed XML
that any SVG viewer (and a dispute report) can open."""

from __future__ import annotations

import xml.etree.ElementTree as ET

NAMESPACE = "http://www.w3.org/2000/svg"
FONT = "DejaVu Sans, Verdana, Arial, sans-serif"

Attr = str | int | float


def _value(value: Attr) -> str:
    if isinstance(value, float):
        text = f"{value:.2f}".rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text
    return str(value)


def _attrs(attrs: dict[str, Attr]) -> dict[str, str]:
    """Keyword names to SVG names: ``font_size`` -> ``font-size``, ``class_`` -> ``class``;
    ``data_card`` -> ``data-card``."""
    return {name.rstrip("_").replace("_", "-"): _value(value) for name, value in attrs.items()}


class Drawing:
    """One SVG document ``width`` wide; its height is known only once everything is placed, so it
    is given to :meth:`text`."""

    def __init__(self, width: int, title: str, description: str = "") -> None:
        self.width = width
        self.root = ET.Element("svg", {"xmlns": NAMESPACE, "role": "img", "font-family": FONT})
        ET.SubElement(self.root, "title").text = title
        if description:
            ET.SubElement(self.root, "desc").text = description

    def add(self, parent: ET.Element | None, tag: str, **attrs: Attr) -> ET.Element:
        """A child element ``tag`` of ``parent`` (the document when None)."""
        return ET.SubElement(self.root if parent is None else parent, tag, _attrs(attrs))

    def group(self, parent: ET.Element | None = None, **attrs: Attr) -> ET.Element:
        return self.add(parent, "g", **attrs)

    def rect(
        self, parent: ET.Element | None, x: float, y: float, w: float, h: float, **attrs: Attr
    ) -> ET.Element:
        return self.add(parent, "rect", x=x, y=y, width=w, height=h, **attrs)

    def line(
        self, parent: ET.Element | None, x1: float, y1: float, x2: float, y2: float, **attrs: Attr
    ) -> ET.Element:
        return self.add(parent, "line", x1=x1, y1=y1, x2=x2, y2=y2, **attrs)

    def write(
        self, parent: ET.Element | None, x: float, y: float, content: str, **attrs: Attr
    ) -> ET.Element:
        """A line of text whose baseline starts at ``(x, y)``."""
        element = self.add(parent, "text", x=x, y=y, **attrs)
        element.text = content
        return element

    def titled(self, element: ET.Element, title: str) -> ET.Element:
        """``element`` with a tooltip (and a name for a screen reader)."""
        ET.SubElement(element, "title").text = title
        return element

    def text(self, height: float) -> str:
        """The document, ``height`` tall."""
        self.root.set("width", str(self.width))
        self.root.set("height", _value(float(height)))
        self.root.set("viewBox", f"0 0 {self.width} {_value(float(height))}")
        body = ET.tostring(self.root, encoding="unicode")
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
