from pathlib import PurePosixPath

from django.core.management.base import BaseCommand, CommandError

from mnote.library.management.commands._settle import settle
from mnote.library.models import Source
from mnote.library.actions import reindex_source


def find_source(library_path: str) -> Source:
    wanted = PurePosixPath(library_path.strip().strip("/")).as_posix()
    name = PurePosixPath(wanted).name
    # Narrow by file name in SQL; library_path itself is computed, so compare it here.
    nearby = list(Source.objects.select_related("root").filter(relative_path__endswith=name))
    for source in nearby:
        if source.library_path == wanted:
            return source
    hint = f" Did you mean: {', '.join(s.library_path for s in nearby[:5])}?" if nearby else ""
    raise CommandError(
        f"No source at “{library_path}”. Give the root's path joined with the file's path in it, "
        f"e.g. papers/2024/report.txt, or --id.{hint}"
    )


class Command(BaseCommand):
    help = "Send one file to LightRAG again; its old document is deleted, never silently overwritten."

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", metavar="SOURCE_PATH", help="The source's library path.")
        parser.add_argument("--id", type=int, dest="source_id", help="The source's id instead of its path.")
        parser.add_argument("--wait", type=float, metavar="SECONDS", help="Then follow LightRAG this long.")

    def handle(self, *args, path, source_id, wait, **options):
        if (path is None) == (source_id is None):
            raise CommandError("Name the source by its library path or by --id, not both.")
        if source_id is not None:
            source = Source.objects.select_related("root").filter(pk=source_id).first()
            if source is None:
                raise CommandError(f"No source with id {source_id}.")
        else:
            source = find_source(path)
        outcome = reindex_source(source)
        if outcome == "missing":
            self.stdout.write(
                f"{source.library_path}: the file is gone; its LightRAG document is being removed instead."
            )
        else:
            self.stdout.write(f"{source.library_path}: queued for reindexing.")
        if wait is not None:
            settle(self.stdout, wait)
            source.refresh_from_db()
            chunks = f", {source.chunk_count} chunks" if source.chunk_count else ""
            error = f": {source.last_error}" if source.last_error else ""
            self.stdout.write(f"{source.library_path}: {source.get_status_display()}{chunks}{error}")
