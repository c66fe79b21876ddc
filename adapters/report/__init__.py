"""The judge report (`judgecore summary --html FILE`, and the demo): one self-contained HTML file.

- `gather`: what the report reads from the checkpoint besides the summary (provenance, examples);
- `plots`: the plots, one colour per group;
- `sections`: each section's HTML;
- `page`: the page, its order and its CSS.
"""

from adapters.report.page import render_html, write_html_report

__all__ = ["render_html", "write_html_report"]
