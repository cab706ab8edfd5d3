"""Pure functions on strings: query terms, LaTeX to text, display cleaning, evidence windows, scores.

No Django here: every stage above (citations, answers, preview, workspace) may use it.
"""

from mnote.text.display import clean_display_text, ensure_query_terms, is_unreadable
from mnote.text.evidence import evidence_sentences, evidence_window, fingerprint, lexical_score, mark_terms, with_heading
from mnote.text.latex import latex_to_text
from mnote.text.terms import content_units, is_cjk_unit, is_real_heading, query_terms, query_units, stemmed_words

__all__ = [
    "clean_display_text",
    "content_units",
    "ensure_query_terms",
    "evidence_sentences",
    "evidence_window",
    "fingerprint",
    "is_cjk_unit",
    "is_real_heading",
    "is_unreadable",
    "latex_to_text",
    "lexical_score",
    "mark_terms",
    "query_terms",
    "query_units",
    "stemmed_words",
    "with_heading",
]
