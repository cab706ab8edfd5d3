"""A sync started from a page or the admin, told to the user as a message."""

import logging

from django.contrib import messages
from django.utils.translation import gettext as _

from mnote.library.models import IndexedRoot
from mnote.library.sync import sync_root

log = logging.getLogger(__name__)


def sync_and_report(request, root: IndexedRoot) -> None:
    try:
        summary = sync_root(root)
    except Exception as e:
        # The root itself is saved; a failed sync must say so, not lose the page.
        log.exception("sync of root %s failed", root.pk)
        messages.error(request, _("Syncing “%(root)s” failed: %(error)s") % {"root": root.name, "error": e})
        return
    level = messages.WARNING if summary.error or summary.refused else messages.SUCCESS
    messages.add_message(request, level, summary.line())
