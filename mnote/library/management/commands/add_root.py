from pathlib import PurePosixPath

from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from mnote.library.forms import IndexedRootForm
from mnote.library.sync import sync_root


class Command(BaseCommand):
    help = "Put a folder (or file) under the library base directory into the library, then sync it."

    def add_arguments(self, parser):
        parser.add_argument("path", help="Relative to the library base directory (MNOTE_LIBRARY_BASE_DIR).")
        parser.add_argument("--name", help="Defaults to the folder's name.")
        parser.add_argument("--no-recursive", action="store_true", help="Only the files directly in the folder.")
        parser.add_argument(
            "--exclude", action="append", default=[], metavar="GLOB", help="Repeatable, e.g. '**/drafts/**'."
        )
        parser.add_argument(
            "--no-run-on-change", action="store_true", help="Changed files wait as stale instead of being re-sent."
        )
        parser.add_argument("--disabled", action="store_true", help="Register the root without indexing it.")
        parser.add_argument(
            "--group", action="append", default=[], metavar="NAME", help="Visible only to these groups (repeatable)."
        )
        parser.add_argument("--no-sync", action="store_true", help="Register only; sync later with sync_library.")

    def handle(self, *args, path, name, no_recursive, exclude, no_run_on_change, disabled, group, no_sync, **options):
        groups = []
        for group_name in group:
            try:
                groups.append(Group.objects.get(name=group_name))
            except Group.DoesNotExist:
                raise CommandError(
                    f"No group named “{group_name}”; create it under Administration → Groups first."
                ) from None
        form = IndexedRootForm(
            data={
                "name": name or PurePosixPath(path.strip()).name,
                "path": path,
                "recursive": not no_recursive,
                "exclude_patterns": "\n".join(exclude),
                "run_on_change": not no_run_on_change,
                "enabled": not disabled,
                "visible_to_all": not groups,
                "visible_to_groups": [g.pk for g in groups],
            }
        )
        if not form.is_valid():
            problems = [
                f"{field}: {message}" if field != "__all__" else message
                for field, messages in form.errors.items()
                for message in messages
            ]
            raise CommandError("Cannot add the root. " + " ".join(problems))
        root = form.save()
        visibility = "all members" if root.visible_to_all else ", ".join(g.name for g in groups)
        self.stdout.write(f"Added root “{root.name}” ({root.path}), visible to {visibility}.")
        if no_sync:
            self.stdout.write("Not synced yet; run sync_library when ready.")
            return
        self.stdout.write(sync_root(root).line())
