"""Cell writing for the workbook: styles, safe text, formulas stored with their values, references."""

from __future__ import annotations

import math
import re
from typing import Any

from xlsxwriter.utility import xl_rowcol_to_cell

# Text from the plan must never turn into a formula, even after an edit in Excel: it is written
# as a string and, when it starts like a formula, with a quote prefix (Excel's leading ').
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")
_MAX_TEXT = 32_000  # Excel's cell limit is 32,767 characters

STYLES: dict[str, dict[str, Any]] = {
    "title": {"bold": True, "font_size": 15, "font_color": "#1f3864"},
    "subtitle": {"italic": True, "font_color": "#595959"},
    "h2": {"bold": True, "font_size": 12, "font_color": "#1f3864", "bottom": 1, "bottom_color": "#8EA9DB"},
    "head": {"bold": True, "bg_color": "#D9E1F2", "text_wrap": True, "valign": "top", "bottom": 1},
    "group": {"bold": True, "bg_color": "#B4C6E7", "align": "center"},
    "input": {"font_color": "#0000FF", "bg_color": "#FFF2CC", "border": 1, "border_color": "#BFBFBF"},
    "calc": {"font_color": "#000000"},
    "value": {"font_color": "#595959"},
    "total": {"bold": True, "top": 1},
    "big": {"bold": True, "font_size": 14},
    "note": {"italic": True, "font_color": "#595959", "text_wrap": True, "valign": "top"},
    "hint": {"italic": True, "font_color": "#595959"},
    "box": {"text_wrap": True, "valign": "top", "bg_color": "#FCE4D6", "border": 1, "border_color": "#F4B084"},
    "na": {"font_color": "#A6A6A6", "align": "center"},
    "short": {"bold": True, "font_color": "#9C0006", "bg_color": "#FFC7CE"},
    "wrap": {"text_wrap": True, "valign": "top"},
    "left": {"align": "left"},
    "center": {"align": "center"},
}


def number_formats(currency: str) -> dict[str, str]:
    cur = re.sub(r"[^A-Za-z]", "", currency)[:8] or "USD"
    if cur == "USD":
        money0, money2 = '"$"#,##0;[Red]-"$"#,##0', '"$"#,##0.00;[Red]-"$"#,##0.00'
    else:
        money0, money2 = f'#,##0 "{cur}";[Red]-#,##0 "{cur}"', f'#,##0.00 "{cur}";[Red]-#,##0.00 "{cur}"'
    return {"money0": money0, "money2": money2, "int": "#,##0", "dec1": "#,##0.0", "dec2": "#,##0.00",
            "dec3": "#,##0.000", "pct": "0.0%", "pct2": "0.00%", "hour": '00":00"', "days": '[=1]0" day";#,##0" days"',
            "tokens": "#,##0"}


def _sheet(name: str) -> str:
    """A sheet name as formulas write it: quoted when it holds a space ('Cash flow')."""
    return f"'{name}'" if not name.replace("_", "").isalnum() else name


def ref(sheet: str, row: int, col: int) -> str:
    """An absolute reference to one cell on another sheet."""
    return f"{_sheet(sheet)}!{xl_rowcol_to_cell(row, col, True, True)}"


def rng(sheet: str, first_row: int, last_row: int, col: int) -> str:
    a = xl_rowcol_to_cell(first_row, col, True, True)
    b = xl_rowcol_to_cell(last_row, col, True, True)
    return f"{_sheet(sheet)}!{a}:{b}"


def cell(row: int, col: int, abs_row: bool = False, abs_col: bool = False) -> str:
    return xl_rowcol_to_cell(row, col, abs_row, abs_col)


def excel_round(x: float, digits: int) -> float:
    """ROUND as Excel and LibreOffice do it: halves away from zero."""
    m = 10.0 ** digits
    return math.copysign(math.floor(abs(x) * m + 0.5) / m, x)


def ceil_clean(x: float) -> int:
    """CEILING(ROUND(x, 4), 1): round up, forgiving float noise and rounded inputs below 1e-4."""
    return int(math.ceil(excel_round(x, 4)))


def ceil_formula(expr: str) -> str:
    return f"CEILING(ROUND({expr},4),1)"


_NAME_OK = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def defined_name(*parts: str) -> str | None:
    """A workbook name from ids, or None when the ids do not make a clean name."""
    name = "_".join(re.sub(r"[^A-Za-z0-9]+", "_", p).strip("_") for p in parts)
    if not _NAME_OK.match(name) or len(name) > 200 or re.match(r"^[A-Za-z]{1,3}[0-9]+$", name):
        return None
    return name.lower()


class Sheet:
    """One worksheet: writes text safely, numbers, inputs and formulas together with their values."""

    def __init__(self, book: "Book", name: str) -> None:
        self.book = book
        self.name = name
        self.ws = book.wb.add_worksheet(name)

    def fmt(self, *styles: str, num: str | None = None, **extra: Any):
        return self.book.fmt(*styles, num=num, **extra)

    def text(self, r: int, c: int, s: Any, *styles: str, **extra: Any) -> None:
        s = "" if s is None else str(s)[:_MAX_TEXT]
        if s.startswith(_FORMULA_START):
            extra["quote_prefix"] = True
        self.ws.write_string(r, c, s, self.fmt(*styles, **extra))

    def num(self, r: int, c: int, v: float | None, *styles: str, num: str | None = None) -> None:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            self.ws.write_string(r, c, "–", self.fmt("na"))
        else:
            self.ws.write_number(r, c, v, self.fmt(*(styles or ("value",)), num=num))

    def calc(self, r: int, c: int, formula: str, value: float, *styles: str, num: str | None = None) -> None:
        self.ws.write_formula(r, c, "=" + formula, self.fmt("calc", *styles, num=num), value)

    def inp(self, r: int, c: int, v: float, num: str | None = None, name: str | None = None) -> str:
        """An input cell; returns what formulas use to read it: its defined name, else its address."""
        self.ws.write_number(r, c, v, self.fmt("input", num=num))
        if name and self.book.name(name, self.name, r, c):
            return name
        return ref(self.name, r, c)

    def intro(self, r: int, text: str, last_col: int, lines: int = 2) -> None:
        """A paragraph under the title, merged across the table's width."""
        self.ws.merge_range(r, 0, r, last_col, "", self.fmt("note"))
        self.text(r, 0, text, "note")
        self.ws.set_row(r, 13.5 * lines + 2)

    def fit_row(self, r: int, text: str, width_chars: float) -> None:
        """Set a row's height for wrapped text (not every reader autofits rows on open)."""
        lines = sum(max(1, math.ceil(len(line) / max(width_chars * 1.3, 1))) for line in text.split("\n"))
        if lines > 1:
            self.ws.set_row(r, 13.0 * lines + 2)

    def header(self, r: int, c: int, labels: list[str], style: str = "head") -> None:
        for i, label in enumerate(labels):
            self.text(r, c + i, label, style)

    def widths(self, widths: list[float]) -> None:
        for i, w in enumerate(widths):
            self.ws.set_column(i, i, w)

    def page(self, last_row: int, last_col: int, header_rows: tuple[int, int] | None = None,
             landscape: bool = True) -> None:
        ws = self.ws
        if landscape:
            ws.set_landscape()
        ws.set_paper(9)  # A4; Letter users still get a one-page-wide fit
        ws.fit_to_pages(1, 0)
        ws.set_margins(left=0.4, right=0.4, top=0.5, bottom=0.5)
        ws.print_area(0, 0, max(last_row, 0), max(last_col, 0))
        if header_rows:
            ws.repeat_rows(*header_rows)
        ws.set_footer(f"&L{self.name}&RPage &P of &N")


class Book:
    """The workbook, its cached formats and its defined names."""

    def __init__(self, wb, currency: str) -> None:
        self.wb = wb
        self.nf = number_formats(currency)
        self._formats: dict[tuple, Any] = {}
        self.names: set[str] = set()

    def fmt(self, *styles: str, num: str | None = None, **extra: Any):
        key = (styles, num, tuple(sorted(extra.items())))
        if key not in self._formats:
            props: dict[str, Any] = {"font_name": "Calibri", "font_size": 10}
            for s in styles:
                props.update(STYLES[s])
            if num:
                props["num_format"] = self.nf.get(num, num)
            props.update(extra)
            self._formats[key] = self.wb.add_format(props)
        return self._formats[key]

    def name(self, name: str, sheet: str, r: int, c: int) -> bool:
        """Define a workbook name for one cell; False when the name is taken."""
        if name.lower() in self.names:
            return False
        self.names.add(name.lower())
        self.wb.define_name(name, "=" + ref(sheet, r, c))
        return True

    def sheet(self, name: str) -> Sheet:
        return Sheet(self, name)
