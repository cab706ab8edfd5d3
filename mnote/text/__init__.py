"""Pure functions on strings: query terms, LaTeX to text, display cleaning, evidence windows, scores.

No Django here: every stage above (citations, answers, preview, workspace) may use it.
"""
