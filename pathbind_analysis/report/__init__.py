"""``pathbind report``: the paper's tables and figures from lmms-eval output folders, as Markdown and HTML."""

from pathbind_analysis.report.builder import build_report
from pathbind_analysis.report.runs import ReportError

__all__ = ["ReportError", "build_report"]
