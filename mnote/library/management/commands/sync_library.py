from django.core.management.base import BaseCommand

from mnote.library.management.commands._settle import settle
from mnote.library.management.commands.remove_root import find_root
from mnote.library.models import IndexedRoot
from mnote.library.sync import sync_library


class Command(BaseCommand):
    help = "Bring the registry and LightRAG up to date with the files in the roots (all roots, or those named)."

    def add_arguments(self, parser):
        parser.add_argument("roots", nargs="*", metavar="ROOT", help="Root names or ids; all roots when none.")
        parser.add_argument(
            "--wait", type=float, metavar="SECONDS", help="Then send the work to LightRAG and follow it this long."
        )

    def handle(self, *args, roots, wait, **options):
        chosen = [find_root(name) for name in roots] if roots else list(IndexedRoot.objects.all())
        if not chosen:
            self.stdout.write("No roots to sync; add one with add_root.")
            return
        for summary in sync_library(chosen):
            self.stdout.write(summary.line())
        if wait is not None:
            settle(self.stdout, wait)
