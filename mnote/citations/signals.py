"""What the citations stage asks of the stages above it, which it never imports."""

from django.dispatch import Signal

# Sent by the mapper for each locator it makes, with ``source`` and ``locator``
# (and ``memo``: a dict that lives for one mapping, where a receiver may keep
# what it worked out per source). A receiver may answer with the cited words'
# place in the file's preview (``preview.views.cached_anchor``, when that
# preview is rendered already); the first answer that is not None becomes
# ``locator["anchor"]``. Receivers cached per sender: sent for every citation.
locator_anchor = Signal(use_caching=True)

# Sent by a citation's page when the cited file has changed, with
# ``request``, ``source`` and ``locator``. A receiver may answer with the
# text the file's preview shows now — ``{"sha256", "text", "anchor"}``, the
# anchor being the locator's place in that text or None
# (``preview.views.current_text_of``) — or None when there is no such text
# (no preview of this kind, the file unreadable). The citation is then
# re-anchored in that text (``citations.reanchor``).
current_text = Signal()
