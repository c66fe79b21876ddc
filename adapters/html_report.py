"""The judge report's old home: `adapters.report` holds it now (kept so `adapters.html_report` imports)."""

from adapters.report import render_html, write_html_report

__all__ = ["render_html", "write_html_report"]
