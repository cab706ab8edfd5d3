from django.core.management.base import BaseCommand

from mnote.library.models import Source
from mnote.lightrag.provider import lightrag_client
from mnote.library.actions import library_status


class Command(BaseCommand):
    help = "Sources per status in MNote's registry, documents in LightRAG, and LightRAG documents no source maps to."

    def handle(self, *args, **options):
        with lightrag_client() as client:
            status = library_status(client)
        labels = dict(Source.Status.choices)
        self.stdout.write(f"Registered in MNote: {status.registry_total} sources")
        for value, count in status.registry_counts.items():
            if count:
                self.stdout.write(f"  {labels[value]}: {count}")
        # LightRAG being down is a state to report, not a failure of this command.
        if status.lightrag_error:
            self.stdout.write(f"LightRAG unavailable: {status.lightrag_error}")
            return
        per_status = ", ".join(f"{n} {name}" for name, n in sorted(status.lightrag_counts.items()))
        in_lightrag = f"In LightRAG: {status.lightrag_total} documents"
        self.stdout.write(in_lightrag + (f" ({per_status})" if per_status else ""))
        self.stdout.write(f"LightRAG unmapped: {len(status.unmapped)}")
        for document in status.unmapped:
            self.stdout.write(f"  {document.id}  {document.file_path or '(no file name)'}  {document.status}")
