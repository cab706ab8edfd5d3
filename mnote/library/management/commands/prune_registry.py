from django.core.management.base import BaseCommand

from mnote.library.actions import prune_registry


class Command(BaseCommand):
    help = "Clear stale records: removed, failed and stale rows; rows whose delete is still submitted stay."

    def handle(self, *args, **options):
        count = prune_registry()
        self.stdout.write(
            f"Cleared {count} stale records (removed, failed or stale); rows whose delete is still submitted stay."
        )
