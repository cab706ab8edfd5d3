from django.core.management.base import BaseCommand

from mnote.library.failures import retry_failed
from mnote.library.management.commands._settle import settle
from mnote.library.management.commands.remove_root import find_root
from mnote.library.models import Source


class Command(BaseCommand):
    help = "Send failed files (of the roots named, or of the whole library) to LightRAG again, a few at a time."

    def add_arguments(self, parser):
        parser.add_argument("roots", nargs="*", metavar="ROOT", help="Root names or ids; the whole library when none.")
        parser.add_argument("--wait", type=float, metavar="SECONDS", help="Then follow LightRAG this long.")

    def handle(self, *args, roots, wait, **options):
        sources = Source.objects.all()
        if roots:
            sources = sources.filter(root__in=[find_root(name) for name in roots])
        count = retry_failed(sources)
        self.stdout.write(f"{count} failed files will be sent to LightRAG again.")
        if wait is not None:
            settle(self.stdout, wait)
