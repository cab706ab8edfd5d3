from django.core.management.base import BaseCommand, CommandError

from mnote.library.actions import remove_root
from mnote.library.models import IndexedRoot


def find_root(name_or_id: str) -> IndexedRoot:
    root = IndexedRoot.objects.filter(name=name_or_id).first()
    if root is None and name_or_id.isdigit():
        root = IndexedRoot.objects.filter(pk=int(name_or_id)).first()
    if root is None:
        names = ", ".join(IndexedRoot.objects.values_list("name", flat=True)) or "none"
        raise CommandError(f"No root named or numbered “{name_or_id}” (roots: {names}).")
    return root


class Command(BaseCommand):
    help = "Take a root out of the library: its LightRAG documents are deleted; its files are never touched."

    def add_arguments(self, parser):
        parser.add_argument("root", metavar="NAME_OR_ID")
        parser.add_argument("--yes", action="store_true", help="Do not ask for confirmation.")

    def handle(self, *args, root, yes, **options):
        root = find_root(root)
        if not yes:
            question = (
                f"Remove root “{root.name}” ({root.path}) and its {root.sources.count()} registry rows? "
                "Its LightRAG documents are deleted; the files stay. [y/N] "
            )
            try:
                answer = input(question)
            except EOFError:
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                raise CommandError("Not removed. Pass --yes to remove without asking.")
        self.stdout.write(remove_root(root).line())
