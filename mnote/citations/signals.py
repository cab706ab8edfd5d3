"""What the citations stage asks of the stages above it, which it never imports."""

from django.dispatch import Signal

# Sent by the mapper for each locator it makes, with ``source`` and ``locator``
# (and ``memo``: a dict that lives for one mapping, where a receiver may keep
# what it worked out per source). A receiver may answer with the cited words'
# place in the file's preview (``preview.views.cached_anchor``, when that
# preview is rendered already); the first answer that is not None becomes
# ``locator["anchor"]``. Receivers cached per sender: sent for every citation.
locator_anchor = Signal(use_caching=True)
